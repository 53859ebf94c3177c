//! Answers every request with `200` and the request body: a target for
//! conformance tools.
//!
//! ```sh
//! cargo run --release --example echo -- 127.0.0.1:8080
//! ```

use std::io::Read;

use httpool::{Request, Response, Server};

fn echo(req: &mut Request) -> Response {
    let mut body = Vec::new();
    match req.read_to_end(&mut body) {
        Ok(_) => Response::bytes(body),
        // The server answers a failed body read itself (400, 408 or 413).
        Err(_) => Response::status(400),
    }
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".into());
    let server = Server::bind(&addr)?;
    eprintln!("echo listening on http://{}", server.local_addr()?);
    server.serve(echo)
}
