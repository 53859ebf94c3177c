//! Handlers written against the `http` crate's types, routed with
//! `matchit` (feature `http`).
//!
//! ```sh
//! cargo run --features http --example http_router   # 127.0.0.1:8003
//! curl http://127.0.0.1:8003/users/7
//! ```

use httpool::{Request, Response, Server};

type Route = fn(&http::Request<()>, &matchit::Params) -> http::Response<String>;

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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8003".into());
    let mut router = matchit::Router::<Route>::new();
    router.insert("/users/{id}", user)?;
    router.insert("/health", health)?;
    Server::bind(&addr)?.serve(move |req: &mut Request| {
        let Ok(head) = req.to_http() else {
            return Response::status(400);
        };
        match router.at(head.uri().path()) {
            Ok(found) => Response::from((found.value)(&head, &found.params)),
            Err(_) => Response::status(404),
        }
    })?;
    Ok(())
}
