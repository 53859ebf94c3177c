//! Graceful shutdown on SIGINT (Ctrl-C) or SIGTERM: stop accepting, finish
//! the requests in flight, close idle connections, join every thread.
//!
//! ```sh
//! cargo run --example shutdown            # 127.0.0.1:8001, then press Ctrl-C
//! ```

use std::time::Duration;

use httpool::{Request, Response, Server};

/// Answers every request; a request in flight at Ctrl-C still gets this,
/// with `Connection: close`.
pub fn still_here(_req: &mut Request) -> Response {
    Response::text("still here\n")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8001".into());
    let server = Server::bind(&addr)?.shutdown_grace(Duration::from_secs(5)).spawn(still_here)?;
    eprintln!("listening on http://{}; Ctrl-C to stop", server.local_addr());
    let signal = server.signal();
    ctrlc::set_handler(move || signal.shutdown())?;
    let clean = server.join();
    let outcome = if clean { "every request finished" } else { "grace period ran out" };
    eprintln!("stopped: {outcome}");
    Ok(())
}
