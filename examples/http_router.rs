//! Handlers written against the `http` crate's types, routed by
//! `httpool::Router` (features `http` and `router`).
//!
//! ```sh
//! cargo run --features http --example http_router   # 127.0.0.1:8003
//! curl http://127.0.0.1:8003/users/7
//! ```

use httpool::{Request, Response, Router, Server};

/// A handler written against the `http` crate, with its route's `id`: a
/// number, or no such user (the id goes into JSON, so it is checked
/// before it is written there).
fn user(_req: &http::Request<()>, id: &str) -> http::Response<String> {
    let builder = http::Response::builder();
    match id.parse::<u64>() {
        Ok(id) => builder.header(http::header::CONTENT_TYPE, "application/json").body(format!("{{\"id\":{id}}}\n")),
        Err(_) => builder.status(http::StatusCode::NOT_FOUND).body("no such user\n".to_owned()),
    }
    .unwrap_or_default()
}

fn health(_req: &http::Request<()>) -> http::Response<String> {
    http::Response::new("ok\n".to_owned())
}

/// Gives `handle` the request head as the `http` crate's, and converts its
/// answer back; a head `http` refuses gets `400`.
fn with_http(
    req: &mut Request,
    handle: impl FnOnce(&http::Request<()>, &Request) -> http::Response<String>,
) -> Response {
    match req.to_http() {
        Ok(head) => Response::from(handle(&head, req)),
        Err(_) => Response::status(400),
    }
}

/// The routes.
pub fn app() -> Router {
    Router::new()
        .get("/users/{id}", |req| with_http(req, |head, req| user(head, &req.param("id").unwrap_or_default())))
        .get("/health", |req| with_http(req, |head, _| health(head)))
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8003".into());
    Server::bind(&addr)?.serve_handler(app())
}
