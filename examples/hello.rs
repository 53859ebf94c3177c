//! The smallest httpool program: `GET /` answers a greeting, any other path
//! `404`.
//!
//! ```sh
//! cargo run --example hello            # 127.0.0.1:8000
//! ```

use httpool::{Request, Response, Server};

/// The handler; a function rather than a closure in `main` so that
/// `tests/examples.rs` can call it.
pub fn hello(req: &mut Request) -> Response {
    match req.path() {
        "/" => Response::text("Hello, world!\n"),
        _ => Response::status(404),
    }
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8000".into());
    Server::bind(addr)?.serve(hello)
}
