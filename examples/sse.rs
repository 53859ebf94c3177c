//! Server-sent events: `GET /events?n=5` sends one `tick` event a second,
//! `n` of them (at most 60), then ends the stream; `GET /` is a page that
//! shows them.
//!
//! ```sh
//! cargo run --example sse            # 127.0.0.1:8006
//! curl -N 'http://127.0.0.1:8006/events?n=3'
//! ```
//!
//! The body is written by a closure (`Response::stream`) while it is sent,
//! `chunked`, and `flush` pushes each event to the client at once. A
//! streaming response holds its worker until the closure returns, so size
//! the pool (`Server::workers`) for the streams you expect to have open at
//! once; a client that goes away is noticed at the next write.

use std::io::Write;
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use httpool::{Request, Response, Server};

/// The most ticks one stream may ask for.
pub const MAX_TICKS: u32 = 60;

/// The time between two ticks.
const TICK: Duration = Duration::from_secs(1);

const PAGE: &str = r#"<!doctype html>
<meta charset="utf-8"><title>ticks</title>
<ul id="ticks"></ul>
<script>
  const events = new EventSource("/events?n=10");
  events.addEventListener("tick", (e) => {
    const li = document.createElement("li");
    li.textContent = e.data;
    document.getElementById("ticks").append(li);
  });
  events.addEventListener("done", () => events.close());
</script>
"#;

/// The `n` query parameter, capped; 5 when absent or not a number.
pub fn ticks(req: &Request) -> u32 {
    let n = req.query_param("n").and_then(|n| n.parse().ok()).unwrap_or(5);
    n.min(MAX_TICKS)
}

/// A stream of `n` tick events, `interval` apart, then a `done` event.
pub fn events(n: u32, interval: Duration) -> Response {
    Response::stream(move |out| {
        // Tell EventSource clients how long to wait before reconnecting.
        out.write_all(b"retry: 5000\n\n")?;
        for i in 1..=n {
            if i > 1 {
                thread::sleep(interval);
            }
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
            write!(out, "id: {i}\nevent: tick\ndata: {{\"tick\":{i},\"of\":{n},\"unix\":{now}}}\n\n")?;
            out.flush()?;
        }
        out.write_all(b"event: done\ndata: bye\n\n")?;
        out.flush()
    })
    .with_content_type("text/event-stream")
    .with_header("Cache-Control", "no-cache")
}

/// The page at `/` and the stream at `/events`.
pub fn handler(req: &mut Request) -> Response {
    match (req.method(), req.path()) {
        ("GET" | "HEAD", "/") => Response::html(PAGE),
        ("GET", "/events") => events(ticks(req), TICK),
        (_, "/") => Response::status(405).with_header("Allow", "GET, HEAD"),
        (_, "/events") => Response::status(405).with_header("Allow", "GET"),
        _ => Response::status(404),
    }
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8006".into());
    // Each open stream holds a worker: allow a few dozen at once.
    let server = Server::bind(&addr)?.workers(32);
    eprintln!("server-sent events on http://{}/events?n=5", server.local_addr()?);
    server.serve(handler)
}
