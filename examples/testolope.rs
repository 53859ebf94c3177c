//! The wrk target.
//!
//! ```sh
//! cargo run --release --example testolope            # 127.0.0.1:9999
//! cargo run --release --example testolope -- 127.0.0.1:9999 8   # 8 workers
//! wrk -t2 -c64 -d10s http://127.0.0.1:9999/testolope
//! ```
//!
//! `GET /testolope` answers `Testolope` and keeps the connection;
//! `GET /testolope-nokeepalive` answers the same and closes it;
//! `GET /sleep` blocks its worker for 50 ms, then answers `Slept`
//! (benches/scripts/mixed.sh loads it beside `/testolope`).

use std::thread;
use std::time::Duration;

use httpool::{Request, Response, Server};

/// How long `GET /sleep` blocks: a stand-in for a database call.
const SLEEP: Duration = Duration::from_millis(50);

/// The handler (also used by the socket tests): `/sleep` blocks like a
/// handler waiting on a database; the others answer at once. One match on
/// the path, so the trivial routes cost what they cost alone.
pub fn testolope(req: &mut Request) -> Response {
    match req.path() {
        "/testolope" => Response::text("Testolope").with_content_type("text/plain"),
        "/testolope-nokeepalive" => Response::text("Testolope").with_content_type("text/plain").with_close(),
        "/sleep" => {
            thread::sleep(SLEEP);
            Response::text("Slept").with_content_type("text/plain")
        }
        _ => Response::status(404),
    }
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:9999".into());
    let mut server = Server::bind(&addr)?;
    // An optional worker count, for scale runs (default: httpool's; a count
    // leaves workers unpinned), `pinned` (one worker per CPU, pinned to it:
    // `Server::pin_workers`, the default on Linux), or `unpinned`.
    match args.next() {
        Some(arg) if arg == "pinned" => server = server.pin_workers(true),
        Some(arg) if arg == "unpinned" => server = server.pin_workers(false),
        Some(arg) => {
            if let Ok(workers) = arg.parse() {
                server = server.workers(workers);
            }
        }
        None => {}
    }
    eprintln!("testolope listening on http://{}/testolope", server.local_addr()?);
    // Until SIGINT or SIGTERM (Ctrl-C on Windows): then every request
    // already sent is answered before `serve` returns.
    server.serve(testolope)?;
    eprintln!("testolope stopped");
    Ok(())
}
