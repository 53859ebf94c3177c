//! Access logs (feature `log`): [`access_log`] wraps a handler and logs
//! one line per request in the Common or Combined Log Format.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::date::{MONTHS, civil_from_days};
use crate::encode::plan;
use crate::handler::Handler;
use crate::proto::ResponseFraming;
use crate::request::Request;
use crate::response::{Payload, Response};

/// The `log` target of access lines, to route them apart from the crate's
/// other messages (e.g. `RUST_LOG=httpool::access=info` with env_logger).
pub const ACCESS_LOG_TARGET: &str = "httpool::access";

/// Wraps `handler` so that each request it answers is logged at `info`
/// under the target [`ACCESS_LOG_TARGET`], in the Combined Log Format
/// followed by the time the handler took in microseconds (Apache's `%D`):
///
/// ```text
/// 192.0.2.7 - - [23/Nov/2026:16:29:14 +0000] "GET /index.html HTTP/1.1" 200 3072 "https://example.com/" "curl/8.5.0" 152
/// ```
///
/// Fields: client address ([`Request::client_addr`]: the peer's, or the
/// one a trusted proxy forwards; `-` on a Unix socket), identity and user (always
/// `-`), the time the request reached the handler (UTC), the request line,
/// the status sent, the body bytes (`-` for none, or a streamed body of
/// unknown length; none for a `HEAD` request or a `2xx` to `CONNECT`), `Referer` and `User-Agent` (`-` when absent; quotes,
/// backslashes and bytes outside printable ASCII written as `\"`, `\\` and
/// `\xHH`, so a client cannot forge a line), and the duration.
/// [`LogFormat::Common`] leaves out `Referer` and `User-Agent`. Under
/// [`request_id`](crate::request_id) (inside or around this wrapper) the
/// request's id follows the duration.
///
/// The status is the one the client gets: `500` for a response the crate
/// refuses (an invalid header) or a handler that panicked, the crate's own
/// `400`/`413`/`408` when reading the request body failed (the handler's
/// read, or the server's of a body the handler left unread: the wrapper
/// reads that rest itself, after the handler, as the server would next).
/// The duration is the handler's: a body the crate sends afterwards (a
/// file, a stream) is not in it. The byte count is the body's length as
/// answered, written before it is sent: an answer the client stops taking,
/// or a stream that fails, is logged at the length it would have had (a
/// stream of unknown length is `-`). Wrap `httpool::compress` (feature
/// `compression`) inside it, `access_log(compress(handler))`, to log the
/// bytes actually sent.
///
/// **The lines go to the `log` facade, which writes nothing until the
/// program installs a logger** (`env_logger`, `simplelog`, a
/// `log::Log` of its own); the level must let `info` through for
/// [`ACCESS_LOG_TARGET`].
///
/// ```no_run
/// use httpool::{Request, Response, Server};
///
/// /// Every record to stderr (a program would rather use a logging crate).
/// struct Stderr;
///
/// impl log::Log for Stderr {
///     fn enabled(&self, metadata: &log::Metadata) -> bool {
///         metadata.level() <= log::Level::Info
///     }
///     fn log(&self, record: &log::Record) {
///         eprintln!("{}", record.args());
///     }
///     fn flush(&self) {}
/// }
///
/// # fn main() -> std::io::Result<()> {
/// log::set_logger(&Stderr).expect("the first logger");
/// log::set_max_level(log::LevelFilter::Info);
/// // A closure written straight into a wrapper needs its argument's type.
/// Server::bind("127.0.0.1:8000")?.serve_handler(httpool::access_log(|_req: &mut Request| Response::text("hi\n")))
/// # }
/// ```
pub fn access_log<H: Handler>(handler: H) -> AccessLog<H> {
    AccessLog { inner: handler, format: LogFormat::Combined }
}

/// Which fields an access line has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// The Common Log Format (NCSA): address, identity, user, time, request
    /// line, status, bytes; then the duration.
    Common,
    /// Common plus `"Referer" "User-Agent"`; then the duration.
    Combined,
}

/// A handler whose requests are logged; see [`access_log`].
#[derive(Debug)]
pub struct AccessLog<H> {
    inner: H,
    format: LogFormat,
}

impl<H> AccessLog<H> {
    /// Logs in `format` ([`LogFormat::Combined`] by default).
    pub fn format(mut self, format: LogFormat) -> AccessLog<H> {
        self.format = format;
        self
    }
}

impl<H: Handler> Handler for AccessLog<H> {
    fn handle(&self, req: &mut Request<'_>) -> Response {
        let (at, started) = (SystemTime::now(), Instant::now());
        let outcome = catch_unwind(AssertUnwindSafe(|| self.inner.handle(req)));
        let took = started.elapsed();
        // What the handler left of the body is read once it returns, and a
        // failure there changes the answer: read it now (as the connection
        // loop would next, which then finds it done) to log that answer.
        let resp = outcome.as_ref().ok();
        let upgrading = resp.is_some_and(|r| r.upgrade.is_some() && crate::response::refusal(req, r).is_none());
        let drained = req.settle_body(upgrading);
        let (status, bytes) = sent(req, resp, drained);
        let line = Line { remote: req.client_addr(), at, request: req, status, bytes, took };
        log::info!(target: ACCESS_LOG_TARGET, "{}", line.format(self.format));
        match outcome {
            Ok(resp) => resp,
            Err(panic) => resume_unwind(panic),
        }
    }
}

/// The status and body length the client will get for `resp` (`None`: the
/// handler panicked), the request body read to its end or not (`drained`).
fn sent(req: &Request<'_>, resp: Option<&Response>, drained: bool) -> (u16, Option<u64>) {
    let is_head = req.method() == "HEAD";
    let crate_answer = |code| (code, (!is_head).then(|| reason_len(code)));
    if let Some(code) = req.body_failure_status() {
        return crate_answer(code);
    }
    // The crate answers a panic with its 500, after logging it.
    let Some(resp) = resp else { return crate_answer(500) };
    if resp.switches() {
        if let Some(refusal) = crate::response::refusal(req, resp) {
            return crate_answer(refusal.status());
        }
        // The switch is off when the body before it could not be read.
        if !drained {
            return crate_answer(413);
        }
    }
    match plan(resp, req.version(), is_head) {
        Err(_) => crate_answer(500),
        // A `2xx` to `CONNECT` goes out with no body: the server runs no
        // tunnel (`http1::respond::checked`).
        Ok(_) if req.method() == "CONNECT" && (200..300).contains(&resp.status) => (resp.status, None),
        Ok(ResponseFraming::Length(n)) if n > 0 => (resp.status, Some(n)),
        Ok(ResponseFraming::Chunked | ResponseFraming::CloseDelimited) => match &resp.body {
            Payload::Reader { len: Some(n), .. } => (resp.status, Some(*n)),
            _ => (resp.status, None),
        },
        Ok(_) => (resp.status, None),
    }
}

/// The length of the short body of an answer the crate makes itself.
fn reason_len(code: u16) -> u64 {
    crate::status::reason(code).len() as u64
}

/// One access line's fields.
struct Line<'r, 'a> {
    remote: Option<IpAddr>,
    at: SystemTime,
    request: &'r Request<'a>,
    status: u16,
    bytes: Option<u64>,
    took: Duration,
}

impl Line<'_, '_> {
    fn format(&self, format: LogFormat) -> String {
        let req = self.request;
        let mut out = String::with_capacity(160);
        match self.remote {
            Some(ip) => write!(out, "{ip}"),
            None => write!(out, "-"),
        }
        .ok();
        out.push_str(" - - [");
        push_clf_time(&mut out, self.at);
        out.push_str("] \"");
        push_escaped(&mut out, req.method().as_bytes());
        out.push(' ');
        push_escaped(&mut out, req.target().as_bytes());
        out.push(' ');
        out.push_str(req.version().as_str());
        write!(out, "\" {} ", self.status).ok();
        match self.bytes {
            Some(n) => write!(out, "{n}").ok(),
            None => write!(out, "-").ok(),
        };
        if format == LogFormat::Combined {
            for name in ["referer", "user-agent"] {
                out.push_str(" \"");
                match req.header_all(name).next() {
                    Some(value) => push_escaped(&mut out, value),
                    None => out.push('-'),
                }
                out.push('"');
            }
        }
        write!(out, " {}", self.took.as_micros()).ok();
        // Visible ASCII, whoever made it (`request_id`).
        if let Some(id) = req.request_id() {
            out.push(' ');
            out.push_str(id);
        }
        out
    }
}

/// `dd/Mon/yyyy:hh:mm:ss +0000`.
fn push_clf_time(out: &mut String, at: SystemTime) {
    let secs = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (year, month, day) = civil_from_days(secs / 86_400);
    let month = std::str::from_utf8(MONTHS[(month - 1) as usize]).unwrap_or("???");
    let rem = secs % 86_400;
    write!(out, "{day:02}/{month}/{year}:{:02}:{:02}:{:02} +0000", rem / 3600, rem / 60 % 60, rem % 60).ok();
}

/// Printable ASCII as it is, but `"` and `\` escaped, and other bytes as
/// `\xHH`: one request, one line, whatever it holds.
fn push_escaped(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                write!(out, "\\x{b:02x}").ok();
            }
        }
    }
}

#[cfg(test)]
mod tests;
