//! ehttpd 0.14: a thread pool (up to 2048) whose job is one request of one
//! connection: a worker reads the request (blocking, with a timeout),
//! answers, and queues the connection again. The pool grows by one thread
//! when the queue is at least as long as the pool, and an idle thread leaves
//! with a 1-in-7 chance every 4 s.
//!
//! `/sleep` blocks its worker with `std::thread::sleep`: that is ehttpd's
//! model for blocking work.

use std::thread;
use std::time::Duration;

use ehttpd::Server;
use ehttpd::http::{Request, Response};

/// How long `GET /sleep` blocks: a stand-in for a database call.
const SLEEP: Duration = Duration::from_millis(50);

fn testolope(req: Request) -> Response {
    let mut resp = Response::new_200_ok();
    resp.set_content_type("text/plain");
    resp.set_body_data(b"Testolope");
    if req.target == "/testolope" {
        resp
    } else if req.target == "/testolope-nokeepalive" {
        resp.set_connection_close();
        resp
    } else if req.target == "/sleep" {
        thread::sleep(SLEEP);
        resp.set_body_data(b"Slept");
        resp
    } else {
        Response::new_404_notfound()
    }
}

fn main() {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:19003".into());
    let server: Server = Server::with_request_response(2048, testolope);
    eprintln!("peer-ehttpd listening on {addr}");
    let Err(e) = server.accept(addr);
    panic!("ehttpd failed: {e}");
}
