//! may_minihttp 0.1: stackful coroutines on `may`'s scheduler.
//!
//! Its service cannot close a connection (the connection loop only ends on
//! an I/O error), so `/testolope-nokeepalive` sends `Connection: close` and
//! the client (wrk) closes.
//!
//! `/sleep` waits with `may::coroutine::sleep`, not `std::thread::sleep`:
//! may's caveats document says never to call a thread-blocking API in a
//! coroutine (it halts the worker thread and every coroutine on it) and to
//! call may's own APIs, or may-compatible ports of libraries, instead. So
//! this stands for a database call made through a may-aware driver: it parks
//! the coroutine and holds no thread, which is cheaper than what the other
//! peers do (their 50 ms occupy a thread each).

use std::io;
use std::time::Duration;

use may_minihttp::{HttpServer, HttpService, Request, Response};

/// How long `GET /sleep` waits: a stand-in for a database call.
const SLEEP: Duration = Duration::from_millis(50);

#[derive(Clone)]
struct Testolope;

impl HttpService for Testolope {
    fn call(&mut self, req: Request, rsp: &mut Response) -> io::Result<()> {
        match req.path() {
            "/testolope" => {
                rsp.header("Content-Type: text/plain").body("Testolope");
            }
            "/testolope-nokeepalive" => {
                rsp.header("Content-Type: text/plain").header("Connection: close").body("Testolope");
            }
            "/sleep" => {
                may::coroutine::sleep(SLEEP);
                rsp.header("Content-Type: text/plain").body("Slept");
            }
            _ => {
                rsp.status_code(404, "Not Found").body("");
            }
        }
        Ok(())
    }
}

fn main() {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:19004".into());
    let server = HttpServer(Testolope).start(&addr).expect("bind");
    eprintln!("peer-may-minihttp listening on {addr}");
    server.join().expect("server coroutine");
}
