//! Handlers written against the `http` crate's types, routed with
//! `matchit` (feature `http`).
//!
//! ```sh
//! cargo run --features http --example http_router   # 127.0.0.1:8003
//! curl http://127.0.0.1:8003/users/7
//! ```

use httpool::{Request, Response, Server};

/// A handler written against the `http` crate.
pub type Route = fn(&http::Request<()>, &matchit::Params) -> http::Response<String>;

fn user(_req: &http::Request<()>, params: &matchit::Params) -> http::Response<String> {
    let id = params.get("id").unwrap_or("?");
    http::Response::builder()
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(format!("{{\"id\":\"{id}\"}}\n"))
        .unwrap_or_default()
}

fn health(_req: &http::Request<()>, _params: &matchit::Params) -> http::Response<String> {
    http::Response::new("ok\n".to_owned())
}

/// The routes.
pub fn router() -> Result<matchit::Router<Route>, matchit::InsertError> {
    let mut router = matchit::Router::<Route>::new();
    router.insert("/users/{id}", user)?;
    router.insert("/health", health)?;
    Ok(router)
}

/// Converts the request head, routes it, and converts the answer back.
pub fn dispatch(router: &matchit::Router<Route>, req: &mut Request) -> Response {
    let Ok(head) = req.to_http() else {
        return Response::status(400);
    };
    match router.at(head.uri().path()) {
        Ok(found) => Response::from((found.value)(&head, &found.params)),
        Err(_) => Response::status(404),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8003".into());
    let router = router()?;
    Server::bind(&addr)?.serve(move |req| dispatch(&router, req))?;
    Ok(())
}
