//! may_minihttp 0.1: stackful coroutines on `may`'s scheduler.
//!
//! Its service cannot close a connection (the connection loop only ends on
//! an I/O error), so `/testolope-nokeepalive` sends `Connection: close` and
//! the client (wrk) closes.

use std::io;

use may_minihttp::{HttpServer, HttpService, Request, Response};

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
