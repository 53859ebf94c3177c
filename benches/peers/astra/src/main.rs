//! astra 0.4: hyper's HTTP/1 on a blocking thread pool. Each connection
//! holds one pool thread for its whole life (the thread parks in the
//! connection's future between requests), and the pool is capped at astra's
//! default, 15 threads per CPU; connections past the cap wait in its queue
//! until a thread is free. An optional argv[2] sets that cap.
//!
//! `/sleep` blocks the handler's thread, as astra's README advises for
//! blocking work: that is its model.
//!
//! astra's `Body` gives hyper no size hint, so hyper would send every answer
//! chunked; the handler sets `Content-Length` itself, as the other peers'
//! answers carry it.

use std::thread;
use std::time::Duration;

use astra::{Body, Request, Response, ResponseBuilder, Server};

/// How long `GET /sleep` blocks: a stand-in for a database call.
const SLEEP: Duration = Duration::from_millis(50);

/// A 200 text/plain answer head for a body of `len` bytes.
fn plain(len: usize) -> ResponseBuilder {
    ResponseBuilder::new().header("Content-Type", "text/plain").header("Content-Length", len)
}

fn route(req: Request) -> Response {
    let answer = match req.uri().path() {
        "/testolope" => plain(9).body(Body::new("Testolope")),
        // hyper closes the connection after a response that says so.
        "/testolope-nokeepalive" => plain(9).header("Connection", "close").body(Body::new("Testolope")),
        "/sleep" => {
            thread::sleep(SLEEP);
            plain(5).body(Body::new("Slept"))
        }
        _ => ResponseBuilder::new().status(404).header("Content-Length", 0).body(Body::empty()),
    };
    // The builder only fails on an invalid header or status, and these are
    // constants.
    answer.expect("valid response")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:19007".into());
    let mut server = Server::bind(&addr);
    if let Some(workers) = args.next().and_then(|n| n.parse().ok()) {
        server = server.max_workers(workers);
    }
    eprintln!("peer-astra listening on {addr}");
    server.serve(|req, _info| route(req)).expect("astra failed");
}
