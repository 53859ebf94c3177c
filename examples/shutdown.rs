//! Graceful shutdown on SIGINT (Ctrl-C) or SIGTERM: stop accepting, answer
//! the requests already received, close idle connections, join every thread.
//! `Server::serve` does it by itself; this example runs the server beside
//! other work with `spawn`, so it asks for it (`stop_on_signals(true)`).
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
    let server = Server::bind(&addr)?.shutdown_grace(Duration::from_secs(5)).stop_on_signals(true).spawn(still_here)?;
    eprintln!("listening on http://{}; Ctrl-C to stop", server.local_addr());
    // ... other work of the program here ...
    let clean = server.join();
    let outcome = if clean { "every request finished" } else { "grace period ran out" };
    eprintln!("stopped: {outcome}");
    Ok(())
}
