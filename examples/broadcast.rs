//! The long-lived connections benchmark target: one broadcaster, many
//! subscribers, each holding no thread between messages.
//!
//! ```sh
//! cargo run --release --example broadcast -- 127.0.0.1:8011
//! curl -N http://127.0.0.1:8011/events
//! ```
//!
//! - `GET /` answers `ok` (plain text).
//! - `GET /events` is a server-sent event stream: once a second every
//!   subscriber receives `data: <unix time in milliseconds>`.
//! - `GET /ws` is a WebSocket that echoes every text message and receives
//!   the same time, as text, once a second.
//! - `GET /page` is a page that subscribes to both, for a browser.
//!
//! Default settings, except `max_connections`: 10,000 subscribers need
//! 10,000 connections (the default allows 10,000 in all), and the process
//! as many file descriptors (`ulimit -n`).

use std::sync::Arc;
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use httpool::events::{Broadcast, Event};
use httpool::websocket::{self, Message};
use httpool::{Request, Response, Server};

/// Connections this target accepts: subscribers and plain requests.
pub const MAX_CONNECTIONS: usize = 20_000;

const PAGE: &str = r#"<!doctype html>
<meta charset="utf-8"><title>broadcast</title>
<p>status: <span id="status">connecting</span></p>
<p>events: <span id="events">0</span></p>
<p>WebSocket broadcasts: <span id="ws-broadcasts">0</span></p>
<p>WebSocket echo: <span id="ws-echo"></span></p>
<script>
  const count = (id) => { const e = document.getElementById(id); e.textContent = Number(e.textContent) + 1; };
  let open = 0;
  const opened = () => { if (++open === 2) document.getElementById("status").textContent = "ready"; };
  const events = new EventSource("/events");
  events.onopen = opened;
  events.onmessage = () => count("events");
  const ws = new WebSocket("ws://" + location.host + "/ws");
  ws.onopen = () => { opened(); ws.send("hello from the page"); };
  ws.onmessage = (m) => {
    if (/^[0-9]+$/.test(m.data)) count("ws-broadcasts");
    else document.getElementById("ws-echo").textContent = m.data;
  };
</script>
"#;

/// The broadcast every subscriber receives.
pub struct Target {
    events: Broadcast,
    sockets: websocket::Broadcast,
}

impl Target {
    /// A target with no subscribers yet.
    pub fn new() -> Arc<Target> {
        Arc::new(Target { events: Broadcast::new(), sockets: websocket::Broadcast::new() })
    }

    /// Sends the time to every subscriber, stream or socket; returns how
    /// many took it.
    pub fn broadcast(&self) -> usize {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis().to_string();
        self.events.send(&Event::data(now.as_str())) + self.sockets.send(&Message::text(now))
    }

    /// A WebSocket that echoes text and joins the broadcast.
    fn socket(&self, req: &Request) -> Response {
        let echo = |ws: &websocket::Sender, message| {
            if let Message::Text(text) = message {
                let _ = ws.send(Message::Text(text));
            }
        };
        let (sender, resp) = websocket::accept(req, echo);
        if let Some(sender) = sender {
            self.sockets.add(sender);
        }
        resp
    }

    /// Answers one request.
    pub fn handle(&self, req: &mut Request) -> Response {
        match (req.method(), req.path()) {
            ("GET", "/") => Response::text("ok"),
            ("GET", "/events") => self.events.subscribe(),
            (_, "/ws") => self.socket(req),
            ("GET", "/page") => Response::html(PAGE),
            (_, "/" | "/events" | "/page") => Response::status(405).with_header("Allow", "GET"),
            _ => Response::status(404),
        }
    }
}

#[allow(dead_code)] // The tests include this file for `Target`.
fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8011".into());
    let target = Target::new();
    let ticker = Arc::clone(&target);
    thread::spawn(move || {
        loop {
            thread::sleep(Duration::from_secs(1));
            ticker.broadcast();
        }
    });
    let server = Server::bind(&addr)?.max_connections(MAX_CONNECTIONS);
    eprintln!("broadcast on http://{}/ (events: /events, WebSocket: /ws)", server.local_addr()?);
    server.serve(move |req: &mut Request| target.handle(req))
}
