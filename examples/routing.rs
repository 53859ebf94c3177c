//! Method and path routing with `httpool::Router`, over an in-memory user
//! store shared by every handler (`Router::with_state`): path parameters,
//! `HEAD` from the `GET` route, `404` for an unknown path and `405` with
//! `Allow` for a known path and the wrong method.
//!
//! ```sh
//! cargo run --example routing            # 127.0.0.1:8004
//! curl -i -d alice http://127.0.0.1:8004/users          # 201, Location: /users/1
//! curl -i http://127.0.0.1:8004/users/1                 # 200 alice
//! curl -i http://127.0.0.1:8004/users/x                 # 400: `id` is not a number
//! curl -i -X DELETE http://127.0.0.1:8004/users/1       # 204
//! curl -i -X PUT http://127.0.0.1:8004/users            # 405, Allow: GET, HEAD, POST, OPTIONS
//! ```

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use httpool::router::State;
use httpool::{Request, Response, Router, Server};

/// The state every handler shares.
#[derive(Default)]
pub struct Users {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    names: BTreeMap<u64, String>,
}

impl Users {
    fn table(&self) -> MutexGuard<'_, Table> {
        // A panicking handler cannot leave the table half-updated: go on.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `?` on a body read or a parameter answers as `httpool::Error::status`
/// says (`400`, `413`).
type Answer = Result<Response, httpool::Error>;

fn list(_req: &mut Request, users: &Users) -> Response {
    let table = users.table();
    Response::text(table.names.iter().map(|(id, name)| format!("{id} {name}\n")).collect::<String>())
}

fn create(req: &mut Request, users: &Users) -> Answer {
    let body = req.read_body_string(1024)?;
    let name = body.trim();
    if name.is_empty() {
        return Ok(Response::text("the body must be a name\n").with_status(400));
    }
    let mut table = users.table();
    table.next_id += 1;
    let id = table.next_id;
    table.names.insert(id, name.to_owned());
    Ok(Response::text(format!("{id}\n")).with_status(201).with_header("Location", format!("/users/{id}")))
}

fn get(req: &mut Request, users: &Users) -> Answer {
    let id: u64 = req.param_as("id")?;
    Ok(match users.table().names.get(&id) {
        Some(name) => Response::text(format!("{name}\n")),
        None => Response::status(404),
    })
}

fn delete(req: &mut Request, users: &Users) -> Answer {
    let id: u64 = req.param_as("id")?;
    Ok(match users.table().names.remove(&id) {
        Some(_) => Response::status(204),
        None => Response::status(404),
    })
}

/// The routes, and no users yet.
pub fn app() -> Router<State<Users>> {
    Router::with_state(Users::default())
        .get("/users", list)
        .post("/users", create)
        .get("/users/{id}", get)
        .delete("/users/{id}", delete)
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8004".into());
    let server = Server::bind(&addr)?;
    eprintln!("routing example on http://{}/users", server.local_addr()?);
    server.serve_handler(app())
}
