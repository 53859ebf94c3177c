//! The connection loop over in-memory I/O: chunks arrive one at a time, the
//! loop parks between them as it would with the poller.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::Driver;
use super::state::Slow;
use super::worker::{INLINE_BODY, KEPT_OUT_CAPACITY};
use super::*;
use crate::config::Config;
use crate::io::{Script, Transport};
use crate::request::Request;
use crate::response::Response;
use crate::stop::{LINGER, Stop};

mod basics;
mod blocking;
mod bodies;
mod heads;
mod places;
mod shutdown;
mod slow_clients;
mod streams;
mod tls;
mod upgrade;

struct Run {
    /// What the server wrote, `Date` values replaced by `D`.
    wire: String,
    /// The outcome of each `serve` call.
    outcomes: Vec<Next>,
    requests: u64,
    /// The server shut its sending side and reads on to discard what the
    /// client still sends (a lingering close).
    lingering: bool,
}

impl Run {
    /// The run wrote exactly `wire` (dates as `D`), and each call of
    /// `serve` came out as `outcomes` says.
    #[track_caller]
    fn is(&self, wire: impl AsRef<str>, outcomes: &[Next]) {
        assert_eq!(self.wire, wire.as_ref());
        assert_eq!(self.outcomes, outcomes);
    }

    /// The connection closes with the client possibly still sending: it
    /// parks in a lingering close.
    #[track_caller]
    fn closes_lingering(&self) {
        assert_eq!(self.outcomes, [Next::Park], "{}", self.wire);
        assert!(self.lingering, "{}", self.wire);
    }
}

fn run_with(config: Config, handler: &dyn Handler, chunks: &[&[u8]], eof: bool) -> Run {
    let mut s = Served::with_config(handler, config);
    let mut io = Script::new(chunks);
    io.eof = eof;
    // The client keeps sending while a handler waits for body bytes.
    io.patient = true;
    s.run(&mut io, None);
    let lingering = io.shut_write && matches!(s.conn.phase.kind(), Kind::Lingering { .. });
    Run { wire: redact_dates(&io.written), outcomes: s.outcomes, requests: s.conn.requests, lingering }
}

fn run(handler: &dyn Handler, chunks: &[&[u8]]) -> Run {
    run_with(Config::default(), handler, chunks, false)
}

fn redact_dates(wire: &[u8]) -> String {
    let text = String::from_utf8_lossy(wire).into_owned();
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("Date: ") {
        out.push_str(&rest[..at + 6]);
        out.push('D');
        rest = &rest[at + 6 + crate::date::DATE_LEN..];
    }
    out.push_str(rest);
    out
}

fn hello(_: &mut Request<'_>) -> Response {
    Response::text("hello").with_content_type("text/plain")
}

const HELLO: &str = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";

fn echo(req: &mut Request<'_>) -> Response {
    let mut body = Vec::new();
    match req.read_to_end(&mut body) {
        Ok(_) => Response::bytes(body).with_content_type("text/plain"),
        Err(_) => Response::status(400),
    }
}

/// Serves a connection call after call, the way a worker would after each
/// readiness event.
type Served<'h> = Driver<'h, dyn Handler>;

fn big(_: &mut Request<'_>) -> Response {
    Response::bytes(vec![b'x'; 100_000])
}

const BIG_HEAD: &str =
    "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n";

/// `wire` is `expected` (compared without printing 100 kB on failure).
fn assert_wire(wire: &[u8], expected: &str) {
    let wire = redact_dates(wire);
    let at = wire.bytes().zip(expected.bytes()).position(|(a, b)| a != b).unwrap_or(wire.len().min(expected.len()));
    assert!(
        wire == expected,
        "wire differs at byte {at} of {} (expected {}): {:?}",
        wire.len(),
        expected.len(),
        &wire[at.saturating_sub(40)..(at + 40).min(wire.len())]
    );
}

/// The `503` answered when every place of a server-wide bound on workers
/// is taken.
const BUSY: &str = "HTTP/1.1 503 Service Unavailable\r\nDate: D\r\nContent-Type: text/plain; charset=utf-8\r\n\
    Retry-After: 1\r\nContent-Length: 19\r\nConnection: close\r\n\r\nService Unavailable";

/// A handler that opens an event stream and hands its sender over.
fn opening_streams() -> (impl Handler, std::sync::mpsc::Receiver<crate::events::EventSender>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    let handler = move |_: &mut Request<'_>| {
        let (events, resp) = crate::events::channel();
        tx.lock().unwrap().send(events).unwrap();
        resp
    };
    (handler, rx)
}
