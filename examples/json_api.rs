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
//! `Content-Type` other than JSON.

use std::sync::{Mutex, PoisonError};

use httpool::{ErrorKind, Request, Response, Server};
use serde::{Deserialize, Serialize};

/// Largest request body accepted.
const MAX_BODY: usize = 64 * 1024;

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

#[derive(Default)]
struct Todos {
    next_id: u64,
    items: Vec<Todo>,
}

fn json(status: u16, value: &impl Serialize) -> Response {
    Response::json(value).with_status(status)
}

fn error(status: u16, message: impl std::fmt::Display) -> Response {
    json(status, &serde_json::json!({ "error": message.to_string() }))
}

fn create(todos: &Mutex<Todos>, req: &mut Request) -> Response {
    let new: NewTodo = match req.json_within(MAX_BODY) {
        Ok(new) => new,
        Err(e) => match e.kind() {
            ErrorKind::UnsupportedMediaType => return error(415, "expected Content-Type: application/json"),
            ErrorKind::BodyTooLarge => return error(413, format!("body over {MAX_BODY} bytes")),
            // Not a to-do, or a failed body read (which the server answers
            // itself: 400, 408 or 413).
            _ => return error(400, format!("invalid to-do: {e}")),
        },
    };
    let mut todos = todos.lock().unwrap_or_else(PoisonError::into_inner);
    todos.next_id += 1;
    let todo = Todo { id: todos.next_id, title: new.title, done: new.done };
    todos.items.push(todo.clone());
    json(201, &todo).with_header("Location", format!("/todos/{}", todo.id))
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8008".into());
    let todos = Mutex::new(Todos::default());
    let server = Server::bind(&addr)?;
    eprintln!("JSON API on http://{}/todos", server.local_addr()?);
    server.serve(move |req: &mut Request| match (req.method(), req.path()) {
        ("GET" | "HEAD", "/todos") => json(200, &todos.lock().unwrap_or_else(PoisonError::into_inner).items),
        ("POST", "/todos") => create(&todos, req),
        (_, "/todos") => error(405, "use GET or POST").with_header("Allow", "GET, HEAD, POST"),
        _ => error(404, "not found"),
    })
}
