//! Method and path routing with path parameters (`matchit`), over an
//! in-memory user store: `404` for an unknown path, `405` with `Allow` for a
//! known path and the wrong method.
//!
//! ```sh
//! cargo run --example routing            # 127.0.0.1:8004
//! curl -i -d alice http://127.0.0.1:8004/users          # 201, Location: /users/1
//! curl -i http://127.0.0.1:8004/users/1                 # 200 alice
//! curl -i -X DELETE http://127.0.0.1:8004/users/1       # 204
//! curl -i -X PUT http://127.0.0.1:8004/users            # 405, Allow: GET, HEAD, POST
//! ```

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use httpool::{Request, Response, Server};
use matchit::{Params, Router};

/// A route's handler: `?` on a body read answers `400` or `413`.
type Route = fn(&App, &mut Request, &Params) -> Result<Response, httpool::Error>;

/// The methods a path answers to, each with its handler.
type Methods = Vec<(&'static str, Route)>;

/// The routes and the state every handler shares.
pub struct App {
    router: Router<Methods>,
    users: Mutex<Users>,
}

#[derive(Default)]
struct Users {
    next_id: u64,
    names: HashMap<u64, String>,
}

fn list_users(app: &App, _req: &mut Request, _params: &Params) -> Result<Response, httpool::Error> {
    let users = app.users();
    let mut ids: Vec<_> = users.names.keys().collect();
    ids.sort();
    Ok(Response::text(ids.iter().map(|id| format!("{id} {}\n", users.names[id])).collect::<String>()))
}

fn create_user(app: &App, req: &mut Request, _params: &Params) -> Result<Response, httpool::Error> {
    let body = req.read_body_string(1024)?;
    let name = body.trim();
    if name.is_empty() {
        return Ok(Response::text("the body must be a name\n").with_status(400));
    }
    let mut users = app.users();
    users.next_id += 1;
    let id = users.next_id;
    users.names.insert(id, name.to_owned());
    Ok(Response::text(format!("{id}\n")).with_status(201).with_header("Location", format!("/users/{id}")))
}

/// The `{id}` parameter as a number; `None` for anything else.
fn id(params: &Params) -> Option<u64> {
    params.get("id")?.parse().ok()
}

fn get_user(app: &App, _req: &mut Request, params: &Params) -> Result<Response, httpool::Error> {
    Ok(match id(params).and_then(|id| app.users().names.get(&id).cloned()) {
        Some(name) => Response::text(name + "\n"),
        None => Response::status(404),
    })
}

fn delete_user(app: &App, _req: &mut Request, params: &Params) -> Result<Response, httpool::Error> {
    Ok(match id(params).and_then(|id| app.users().names.remove(&id)) {
        Some(_) => Response::status(204),
        None => Response::status(404),
    })
}

impl App {
    /// The routes, and no users yet.
    pub fn new() -> Result<App, matchit::InsertError> {
        let mut router = Router::new();
        router.insert("/users", vec![("GET", list_users as Route), ("POST", create_user)])?;
        router.insert("/users/{id}", vec![("GET", get_user as Route), ("DELETE", delete_user)])?;
        Ok(App { router, users: Mutex::default() })
    }

    fn users(&self) -> MutexGuard<'_, Users> {
        // A panicking handler cannot leave `Users` half-updated: keep going.
        self.users.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Finds the route, then the method; `HEAD` is served by the `GET`
    /// handler (the server drops the body).
    pub fn handle(&self, req: &mut Request) -> Result<Response, httpool::Error> {
        // The parameters borrow the path, and the handler borrows the request
        // mutably (to read its body): route on a copy of the path.
        let path = req.path().to_owned();
        let Ok(found) = self.router.at(&path) else {
            return Ok(Response::status(404));
        };
        let method = if req.method() == "HEAD" { "GET" } else { req.method() };
        match found.value.iter().find(|(m, _)| *m == method) {
            Some((_, route)) => route(self, req, &found.params),
            None => {
                let mut allow = Vec::new();
                for (m, _) in found.value {
                    allow.push(*m);
                    if *m == "GET" {
                        allow.push("HEAD");
                    }
                }
                Ok(Response::status(405).with_header("Allow", allow.join(", ")))
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8004".into());
    let app = App::new()?;
    let server = Server::bind(&addr)?;
    eprintln!("routing example on http://{}/users", server.local_addr()?);
    server.serve(move |req| app.handle(req))?;
    Ok(())
}
