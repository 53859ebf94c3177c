//! Answers every request with `200` and the request body: a target for
//! conformance tools.
//!
//! ```sh
//! cargo run --release --example echo -- 127.0.0.1:8080
//! cargo run --release --example echo -- unix:/tmp/echo.sock   # Unix only
//! ```

use std::io::{self, Read};

use httpool::{Request, Response, Server};

/// Echoes the body. A failed read answers `500` here, but the server
/// answers a bad, slow or oversized body itself (`400`, `408`, `413`).
pub fn echo(req: &mut Request) -> io::Result<Response> {
    let mut body = Vec::new();
    req.read_to_end(&mut body)?;
    Ok(Response::bytes(body))
}

fn main() -> io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".into());
    #[cfg(unix)]
    if let Some(path) = addr.strip_prefix("unix:") {
        let server = Server::bind_unix(path)?;
        eprintln!("echo listening on unix:{path}");
        return server.serve(echo);
    }
    let server = Server::bind(&addr)?;
    eprintln!("echo listening on http://{}", server.local_addr()?);
    server.serve(echo)
}
