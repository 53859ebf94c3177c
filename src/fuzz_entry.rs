//! Entry points for the fuzz targets in `fuzz/` and for the benchmarks in
//! `benches/`. Not part of the public API.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::body::Body;
use crate::config::Config;
use crate::date::{DATE_LEN, DateCache, format_imf_fixdate};
use crate::encode::{encode_in_memory, plan};
use crate::handler::Handler;
use crate::http1::Driver;
use crate::io::Script;
use crate::net::Peer;
use crate::parse::{Head, HeaderSpan, parse_head};
use crate::proto::Version;
use crate::request::Request;
use crate::response::Response;

/// Parses `data` as a request head with the default limits.
pub fn parse(data: &[u8]) {
    // Built once: `Config::default` asks the OS for the core count.
    static LIMITS: std::sync::OnceLock<crate::parse::Limits> = std::sync::OnceLock::new();
    let limits = LIMITS.get_or_init(|| Config::default().limits);
    // The fast path takes only what the full parser accepts, alike.
    crate::parse::fast_path_agrees(data, limits);
    let mut spans = Vec::new();
    if let Ok(Some(head)) = parse_head(data, limits, &mut spans) {
        assert!(head.len <= data.len());
        for span in &spans {
            assert!((span.value.0 + span.value.1) as usize <= head.len);
        }
    }
}

/// Reads `data` as a `multipart/form-data` body, whole and cut into
/// reads, and asserts each reading gives the same parts and the same end
/// (the layout of `data` is in `src/multipart/replay.rs`).
#[cfg(feature = "multipart")]
pub fn multipart(data: &[u8]) {
    crate::multipart::fuzz_cuts(data);
}

/// Runs the connection loop over `chunks` (each arriving after the worker
/// parked), with a handler that reads the body and answers with it. Returns
/// the bytes written.
pub fn serve_chunks(chunks: &[&[u8]]) -> Vec<u8> {
    serve_chunks_with_room(chunks, None)
}

/// [`serve_chunks`], with a client that takes at most `room` bytes of the
/// answers each time the connection is served (`None`: all of them), so
/// that answers wait, parked, for the client to take them.
pub fn serve_chunks_with_room(chunks: &[&[u8]], room: Option<usize>) -> Vec<u8> {
    static CONFIG: std::sync::OnceLock<Config> = std::sync::OnceLock::new();
    // The transport never waits, so no budget of time is needed; a run
    // starved of CPU (a fuzzer beside other work) must not run one out, or
    // the same bytes would get other answers.
    let config = CONFIG.get_or_init(|| Config { drain_wait: Duration::from_secs(3600), ..Config::default() });
    let handler = |req: &mut Request<'_>| match req.read_body(64 * 1024) {
        Ok(body) => Response::bytes(body),
        Err(_) => Response::status(400),
    };
    let peer = crate::net::Peer::Ip(SocketAddr::from((Ipv4Addr::LOCALHOST, 1)));
    // Under both kinds of readiness: epoll's and kqueue's edges (with the
    // end of stream as an event of its own, and in one with the last
    // bytes), and mio's emulation on Windows; the same bytes must get the
    // same answers. The first ends its session as TLS does (a close_notify
    // that needs room), which must not change them either.
    let [edges, fin_with_last, completion] =
        [(false, false), (false, true), (true, false)].map(|(completion, fin_with_last)| {
            let mut io = Script::new(chunks);
            io.tls = !completion && !fin_with_last;
            io.eof = true;
            io.fin_with_last = fin_with_last;
            io.patient = true;
            io.completion = completion;
            let mut driver = Driver::with_config(&handler, config.clone());
            driver.peer = peer;
            driver.run(&mut io, room);
            io.written
        });
    assert_eq!(redact_dates(&edges), redact_dates(&completion), "readiness as on Windows changed the answers");
    assert_eq!(
        redact_dates(&edges),
        redact_dates(&fin_with_last),
        "the end of stream with the last bytes changed the answers"
    );
    edges
}

/// `out` with the value of every `Date` header replaced by `D`, so that
/// two runs that straddle a second compare equal.
pub fn redact_dates(out: &[u8]) -> Vec<u8> {
    const NAME: &[u8] = b"\r\nDate: ";
    let mut redacted = Vec::with_capacity(out.len());
    let mut rest = out;
    while let Some(at) = rest.windows(NAME.len()).position(|w| w == NAME) {
        let end = (at + NAME.len() + crate::date::DATE_LEN).min(rest.len());
        redacted.extend_from_slice(&rest[..at + NAME.len()]);
        redacted.push(b'D');
        rest = &rest[end..];
    }
    redacted.extend_from_slice(rest);
    redacted
}

/// Appends `resp` as the answer to a keep-alive HTTP/1.1 `GET` — status
/// line, headers and an in-memory body — as the connection loop encodes it.
/// `Err` when the response is invalid (the loop would answer `500`).
pub fn encode(resp: &Response, date: &[u8; DATE_LEN], out: &mut Vec<u8>) -> Result<(), &'static str> {
    let framing = plan(resp, Version::Http11, false)?;
    encode_in_memory(resp, framing, true, date, out);
    Ok(())
}

/// The per-worker `Date` cache.
#[derive(Debug)]
pub struct Date(DateCache);

impl Date {
    /// A cache holding the current second.
    pub fn new() -> Date {
        Date(DateCache::new())
    }

    /// The current time as IMF-fixdate, formatted again only when the
    /// second changed.
    pub fn now(&mut self) -> &[u8; DATE_LEN] {
        self.0.now()
    }
}

impl Default for Date {
    fn default() -> Date {
        Date::new()
    }
}

/// Formats `secs` since the epoch as IMF-fixdate: what a cache miss costs.
pub fn format_date(secs: u64) -> [u8; 29] {
    format_imf_fixdate(secs)
}

/// A request head parsed once, for benchmarks of what a handler does with
/// a request (a router's match): each [`ParsedHead::call`] builds the
/// `Request` the connection loop would, with an empty body, and calls the
/// handler on it.
#[derive(Debug)]
pub struct ParsedHead {
    raw: Vec<u8>,
    head: Head,
    spans: Vec<HeaderSpan>,
    config: Config,
}

impl ParsedHead {
    /// Parses `raw`, a whole request head without a body.
    ///
    /// # Panics
    ///
    /// When `raw` is not a whole, valid head.
    pub fn new(raw: &[u8]) -> ParsedHead {
        let (config, mut spans) = (Config::default(), Vec::new());
        let head = parse_head(raw, &config.limits, &mut spans).expect("a valid head").expect("a whole head");
        ParsedHead { raw: raw[..head.len].to_vec(), head, spans, config }
    }

    /// Calls `handler` on the request; returns the answer's status.
    pub fn call(&mut self, handler: &impl Handler) -> u16 {
        let mut io = Script { eof: true, ..Script::default() };
        let bounds = self.config.body_bounds();
        let body = Body::new(self.head.body, &mut io, &mut [], 0, &bounds, false);
        let peer = Peer::Ip(SocketAddr::from((Ipv4Addr::LOCALHOST, 1)));
        let mut req = Request::new(&self.raw, self.head, &self.spans, peer, false, body, &crate::proxy::NO_PROXIES);
        handler.handle(&mut req).status
    }
}
