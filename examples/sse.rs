//! Server-sent events: `GET /events?n=5` sends one `tick` event a second,
//! `n` of them (at most 60), then a `done` event, and ends the stream;
//! `GET /` is a page that shows them.
//!
//! ```sh
//! cargo run --example sse            # 127.0.0.1:8006
//! curl -N 'http://127.0.0.1:8006/events?n=3'
//! ```
//!
//! One thread sends every stream its ticks (`Ticks::tick`); between them
//! the connections park like idle keep-alive ones, so a thousand open
//! streams cost no thousand threads. A stream whose client went away is
//! dropped at the next tick.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use httpool::events::{self, Event, EventSender};
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

/// One open stream: its sender, and how many ticks it has had of how many.
struct Stream {
    events: EventSender,
    sent: u32,
    of: u32,
}

impl Stream {
    /// Sends the next tick, or `done` after the last; false when the
    /// stream is over (the sender is then dropped, which ends it) or its
    /// client went away.
    fn next(&mut self) -> bool {
        if self.sent == self.of {
            let _ = self.events.send(&Event::data("bye").with_event("done"));
            return false;
        }
        self.sent += 1;
        let (i, n) = (self.sent, self.of);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let tick = Event::data(format!("{{\"tick\":{i},\"of\":{n},\"unix\":{now}}}")).with_event("tick");
        self.events.send(&tick.with_id(i.to_string())).is_ok()
    }
}

/// Every open stream.
#[derive(Default)]
pub struct Ticks {
    streams: Mutex<Vec<Stream>>,
}

impl Ticks {
    /// No stream open yet.
    pub fn new() -> Arc<Ticks> {
        Arc::default()
    }

    /// A stream of `n` ticks: the first at once, the others at each
    /// [`Ticks::tick`], then `done`.
    pub fn open(&self, n: u32) -> Response {
        let (events, resp) = events::channel();
        // Tell EventSource clients how long to wait before reconnecting.
        let _ = events.send(&Event::retry(Duration::from_secs(5)));
        let mut stream = Stream { events, sent: 0, of: n };
        if stream.next() {
            self.streams.lock().unwrap().push(stream);
        }
        resp
    }

    /// Sends every open stream its next tick.
    pub fn tick(&self) {
        self.streams.lock().unwrap().retain_mut(Stream::next);
    }

    /// The page at `/` and the stream at `/events`.
    pub fn handle(&self, req: &mut Request) -> Response {
        match (req.method(), req.path()) {
            ("GET" | "HEAD", "/") => Response::html(PAGE),
            ("GET", "/events") => self.open(ticks(req)),
            (_, "/") => Response::status(405).with_header("Allow", "GET, HEAD"),
            (_, "/events") => Response::status(405).with_header("Allow", "GET"),
            _ => Response::status(404),
        }
    }
}

#[allow(dead_code)] // The tests include this file for `Ticks`.
fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8006".into());
    let ticks = Ticks::new();
    let ticker = Arc::clone(&ticks);
    thread::spawn(move || {
        loop {
            thread::sleep(TICK);
            ticker.tick();
        }
    });
    let server = Server::bind(&addr)?;
    eprintln!("server-sent events on http://{}/events?n=5", server.local_addr()?);
    server.serve(move |req: &mut Request| ticks.handle(req))
}
