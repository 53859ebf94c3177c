//! A small JSON API with `Request::json` and `Response::json` (feature
//! `json`): a to-do list in memory.
//!
//! ```sh
//! cargo run --features json --example json_api            # 127.0.0.1:8008
//! curl -i -H 'Content-Type: application/json' -d '{"title":"write docs"}' http://127.0.0.1:8008/todos
//! curl -i http://127.0.0.1:8008/todos
//! ```
//!
//! `POST /todos` answers `201` with the new item, `400` with a JSON error
//! for a body that is not a to-do, `413` for one over 64 KiB and `415` for a
//! `Content-Type` other than JSON. Handlers return `Result<Response,
//! ApiError>` and use `?`; `ApiError` says how an error is answered.

use std::fmt::Display;
use std::sync::{Mutex, PoisonError};

use httpool::{IntoResponse, Request, Response, Server};
use serde::{Deserialize, Serialize};

/// Largest request body accepted.
pub const MAX_BODY: usize = 64 * 1024;

#[derive(Clone, Serialize)]
struct Todo {
    id: u64,
    title: String,
    done: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewTodo {
    title: String,
    #[serde(default)]
    done: bool,
}

/// The to-do list.
#[derive(Default)]
pub struct Todos {
    next_id: u64,
    items: Vec<Todo>,
}

/// An error, answered as `{"error": message}` with its status.
#[derive(Debug)]
pub struct ApiError {
    status: u16,
    message: String,
}

impl ApiError {
    fn new(status: u16, message: impl Display) -> ApiError {
        ApiError { status, message: message.to_string() }
    }
}

/// A body that could not be read or is not a to-do: `415` for another
/// `Content-Type`, `413` past the limit, `400` for JSON that is not a
/// to-do, and so on (see `httpool::Error::status`).
impl From<httpool::Error> for ApiError {
    fn from(e: httpool::Error) -> ApiError {
        ApiError::new(e.status(), e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json(self.status, &serde_json::json!({ "error": self.message }))
    }
}

fn json(status: u16, value: &impl Serialize) -> Response {
    Response::json(value).with_status(status)
}

fn lock(todos: &Mutex<Todos>) -> std::sync::MutexGuard<'_, Todos> {
    // A panicking handler cannot leave `Todos` half-updated: keep going.
    todos.lock().unwrap_or_else(PoisonError::into_inner)
}

fn create(todos: &Mutex<Todos>, req: &mut Request) -> Result<Response, ApiError> {
    let new: NewTodo = req.json_within(MAX_BODY)?;
    let mut todos = lock(todos);
    todos.next_id += 1;
    let todo = Todo { id: todos.next_id, title: new.title, done: new.done };
    todos.items.push(todo.clone());
    Ok(json(201, &todo).with_header("Location", format!("/todos/{}", todo.id)))
}

/// The API: `GET`/`HEAD`/`POST` on `/todos`.
pub fn api(todos: &Mutex<Todos>, req: &mut Request) -> Result<Response, ApiError> {
    match (req.method(), req.path()) {
        ("GET" | "HEAD", "/todos") => Ok(json(200, &lock(todos).items)),
        ("POST", "/todos") => create(todos, req),
        (_, "/todos") => {
            Ok(ApiError::new(405, "use GET or POST").into_response().with_header("Allow", "GET, HEAD, POST"))
        }
        _ => Err(ApiError::new(404, "not found")),
    }
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8008".into());
    let todos = Mutex::new(Todos::default());
    let server = Server::bind(&addr)?;
    eprintln!("JSON API on http://{}/todos", server.local_addr()?);
    server.serve(move |req| api(&todos, req))
}
