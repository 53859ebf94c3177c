//! The smallest httpool program.

use httpool::{Request, Response, Server};

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8000".into());
    Server::bind(addr)?.serve(|req: &mut Request| match req.path() {
        "/" => Response::text("Hello, world!\n"),
        _ => Response::status(404),
    })
}
