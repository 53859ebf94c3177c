//! One connection, served by a worker: **the spine of the crate**.
//!
//! [`serve`] is the main loop. It reads what the socket has without
//! blocking, parses heads, calls the handler, queues responses, and returns
//! [`Next::Park`] as soon as the socket has nothing more for it — so idle and
//! slow clients hold no thread — or [`Next::Close`].

use std::borrow::Cow;
use std::fs::File;
use std::io;
use std::mem;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::body::{Body, BodyError};
use crate::config::Config;
use crate::date::DateCache;
use crate::handler::Handler;
use crate::io::{Transport, write_all_wait};
use crate::net::Peer;
use crate::parse::{
    BodyKind, ConnectionOption, Downgrade, Head, HeaderSpan, ParseError, downgrade_minor_version, parse_head,
    trim_empty_lines,
};
use crate::request::{Request, Version};
use crate::response::{Framing, Payload, Response, encode_closing, encode_head, plan};
use crate::stats::{Counters, Held};
use crate::stream::{BodyWriter, copy_body};
use crate::upgrade::{OnUpgrade, Upgraded};

/// Buffers a worker lends to its connections (none of it is kept while a
/// connection is parked, except the bytes of an unfinished head).
#[derive(Debug)]
pub(crate) struct Scratch {
    /// Responses not yet written; flushed before each read and before parking.
    pub(crate) out: Vec<u8>,
    pub(crate) spans: Vec<HeaderSpan>,
    pub(crate) date: DateCache,
    /// Read buffers returned by parked connections.
    pub(crate) buffers: Vec<Vec<u8>>,
}

/// Read buffers a worker keeps for reuse.
const POOLED_BUFFERS: usize = 8;

/// How long a connection closing after an error answer goes on reading
/// (and discarding) what the client still sends: [`close_lingering`].
const LINGER: Duration = Duration::from_secs(2);

/// Bodies up to this size are copied behind the head, for one write.
const INLINE_BODY: usize = 32 * 1024;

/// Queued answers to pipelined requests are written once they reach this
/// size, so the queue stays under it plus one answer.
const PIPELINE_FLUSH: usize = 64 * 1024;

impl Scratch {
    pub(crate) fn new(config: &Config) -> Scratch {
        Scratch {
            out: Vec::with_capacity(INLINE_BODY + 1024),
            spans: Vec::with_capacity(config.limits.max_headers),
            date: DateCache::new(),
            buffers: Vec::new(),
        }
    }
}

/// Per-connection state that survives parking.
#[derive(Debug, Default)]
pub(crate) struct ConnState {
    /// The read buffer; empty while parked with nothing unparsed.
    buf: Vec<u8>,
    /// `buf[start..end]` is received but not yet parsed.
    start: usize,
    end: usize,
    /// When the unfinished head now in the buffer was first parked.
    head_started: Option<Instant>,
    /// Requests answered on this connection.
    pub(crate) requests: u64,
    /// Closing after an error answer: what the client still sends is read
    /// and discarded until then (see [`close_lingering`]).
    linger_until: Option<Instant>,
    /// Response bytes the client has not taken yet: the connection waits
    /// for it parked, not on a worker.
    unsent: Option<Box<Unsent>>,
}

/// The rest of the answers a client is slow to take: encoded bytes, then
/// a large in-memory body or a file body, then what becomes of the
/// connection.
#[derive(Debug)]
struct Unsent {
    bytes: Vec<u8>,
    body: Cow<'static, [u8]>,
    /// A file body: the file at the first byte not sent, and how many are
    /// left.
    file: Option<(File, u64)>,
    /// Sent so far of `bytes`, then of `body`.
    bytes_at: usize,
    body_at: usize,
    then: Then,
    /// The last time the client took bytes: the write timeout runs from it.
    since: Instant,
    /// Counted against [`Config::max_unsent_bytes`] until dropped.
    _held: Held,
}

impl Unsent {
    /// Writes what the client takes now: `Ok(true)` once everything is
    /// out (a TLS session's records included).
    fn send<T: Transport>(&mut self, io: &mut T) -> io::Result<bool> {
        let file_left = |u: &Unsent| u.file.as_ref().map_or(0, |(_, left)| *left);
        let before = (self.bytes_at, self.body_at, file_left(self));
        let done = write_now(io, &self.bytes, &mut self.bytes_at)?
            && write_now(io, &self.body, &mut self.body_at)?
            && send_file_now(io, &mut self.file)?
            && flush_now(io)?;
        if (self.bytes_at, self.body_at, file_left(self)) != before {
            self.since = Instant::now();
        }
        Ok(done)
    }

    /// Writes the rest, waiting for the client up to `timeout` each time it
    /// stops taking bytes (at shutdown, when parking is over).
    fn send_waiting<T: Transport>(&mut self, io: &mut T, timeout: Duration) -> io::Result<()> {
        send_all_waiting(io, &self.bytes[self.bytes_at..], &self.body[self.body_at..], &mut self.file, timeout)
    }
}

/// Writes `bytes`, `body`, then the file body, waiting for the client up to
/// `timeout` each time it stops taking bytes.
fn send_all_waiting<T: Transport>(
    io: &mut T,
    bytes: &[u8],
    body: &[u8],
    file: &mut Option<(File, u64)>,
    timeout: Duration,
) -> io::Result<()> {
    write_all_wait(io, bytes, timeout)?;
    write_all_wait(io, body, timeout)?;
    match file {
        Some((file, left)) => io.send_file(file, *left, timeout),
        None => Ok(()),
    }
}

/// Sends what the socket takes now of a file body, if there is one.
fn send_file_now<T: Transport>(io: &mut T, file: &mut Option<(File, u64)>) -> io::Result<bool> {
    match file {
        Some((file, left)) => io.send_file_now(file, left),
        None => Ok(true),
    }
}

/// Writes `buf[*at..]` until done (`Ok(true)`) or the socket is full
/// (`Ok(false)`), advancing `at`.
fn write_now<T: Transport>(io: &mut T, buf: &[u8], at: &mut usize) -> io::Result<bool> {
    while *at < buf.len() {
        match io.write(&buf[*at..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => *at += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Sends what a TLS session holds: `Ok(false)` while the socket is full.
fn flush_now<T: Transport>(io: &mut T) -> io::Result<bool> {
    loop {
        match io.flush() {
            Ok(()) => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

impl ConnState {
    /// True when part of a request head is waiting for the rest.
    pub(crate) fn has_partial_head(&self) -> bool {
        self.start < self.end
    }

    /// True when the request in the buffer, whole or not, is a HEAD
    /// request: an error answer to it carries no body.
    pub(crate) fn holds_head_request(&self) -> bool {
        trim_empty_lines(self.unparsed()).starts_with(b"HEAD ")
    }

    /// When a connection closing after an error answer stops waiting for
    /// the client to close its side.
    pub(crate) fn linger_until(&self) -> Option<Instant> {
        self.linger_until
    }

    pub(crate) fn head_started(&self) -> Option<Instant> {
        self.head_started
    }

    /// When the client last took response bytes, while some are left to
    /// send: the connection waits to write, not to read.
    pub(crate) fn unsent_since(&self) -> Option<Instant> {
        self.unsent.as_ref().map(|u| u.since)
    }

    fn unparsed(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn unparsed_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.end]
    }

    /// Gives the connection a full-size read buffer, keeping unparsed bytes.
    fn attach(&mut self, pool: &mut Vec<Vec<u8>>, size: usize) {
        if self.buf.len() >= size {
            return;
        }
        let mut big = pool.pop().filter(|b| b.len() == size).unwrap_or_else(|| vec![0; size]);
        let pending = self.end - self.start;
        big[..pending].copy_from_slice(self.unparsed());
        self.buf = big;
        (self.start, self.end) = (0, pending);
    }

    /// Returns the read buffer to `pool`, keeping only unparsed bytes.
    fn detach(&mut self, pool: &mut Vec<Vec<u8>>, now: impl FnOnce() -> Instant) {
        // Empty lines before a request line are ignored (RFC 9112 §2.2);
        // kept, they would count as a head begun and earn a 408.
        self.start = self.end - trim_empty_lines(self.unparsed()).len();
        let keep = self.unparsed().to_vec();
        // A request pipelined behind an answer the client is slow to take
        // is not late: its head clock starts once the answer is out.
        if !keep.is_empty() && self.head_started.is_none() && self.unsent.is_none() {
            self.head_started = Some(now());
        }
        (self.start, self.end) = (0, keep.len());
        let big = mem::replace(&mut self.buf, keep);
        if pool.len() < POOLED_BUFFERS && !big.is_empty() {
            pool.push(big);
        }
    }

    /// Moves unparsed bytes to the front of the buffer, so the space after a
    /// head (at most `max_head_bytes`) is at least the 4 KiB of slack a body
    /// reader needs. Offsets from `parse_head` are relative to `start`, so
    /// they stay valid.
    fn make_body_room(&mut self) {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
    }

    fn consumed(&mut self, to: usize, end: usize) {
        (self.start, self.end) = if to == end { (0, 0) } else { (to, end) };
        self.head_started = None;
    }
}

/// What the worker does with the connection after [`serve`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Nothing to read now: park it at its seat.
    Park,
    Close,
}

/// What one worker brings to serving a connection.
pub(crate) struct Ctx<'w, H: ?Sized> {
    pub(crate) handler: &'w H,
    pub(crate) config: &'w Config,
    pub(crate) scratch: &'w mut Scratch,
    /// The server is shutting down: finish the request at hand, then close.
    pub(crate) stopping: &'w AtomicBool,
    pub(crate) counters: &'w Counters,
    pub(crate) peer: Peer,
}

/// The main loop of one connection: read → parse → handler → respond, for as
/// long as requests are buffered or readable; then park or close.
///
/// Responses to pipelined requests are queued and written together before
/// the next read. Any error answered by the crate ends with `Connection:
/// close`.
pub(crate) fn serve<T: Transport, H: Handler + ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Next {
    conn.attach(&mut cx.scratch.buffers, cx.config.read_buffer_size());
    if let Some(next) = resume_sending(conn, io, cx) {
        return next;
    }
    if let Some(until) = conn.linger_until {
        return linger(conn, io, cx, until);
    }
    if let Some(started) = conn.head_started {
        if started.elapsed() > cx.config.head_timeout {
            cx.counters.timeout();
            return finish(conn, io, cx, Some(408));
        }
    }
    loop {
        if conn.has_partial_head() {
            match parse_head(conn.unparsed(), &cx.config.limits, &mut cx.scratch.spans) {
                // Read on (or park) until the small body is all here.
                Ok(Some(head)) if awaits_body(conn, &head) => {}
                Ok(Some(head)) => {
                    // Earlier pipelined answers go out before a handler that
                    // may wait on the client for a body; a client slow to
                    // take them is waited for parked, the head kept unparsed.
                    if body_needs_socket(conn, &head) {
                        if let Some(next) = send_before_going_on(conn, io, cx) {
                            return next;
                        }
                    }
                    let then = respond(conn, io, cx, head);
                    if conn.unsent.is_some() {
                        // The client is slow to take the answer: it parks
                        // until it takes the rest, then goes on as `then`.
                        conn.detach(&mut cx.scratch.buffers, Instant::now);
                        return Next::Park;
                    }
                    match then {
                        Then::KeepAlive => {}
                        Then::Close => return finish(conn, io, cx, None),
                        Then::Linger => return close_lingering(conn, io, cx),
                    }
                    // Nothing buffered: a client that waits for each answer
                    // has not sent its next request yet, so a read now would
                    // almost always come back empty. Parking re-arms the
                    // socket, which reports bytes that did arrive at once.
                    if !conn.has_partial_head() && !io.holds_input() {
                        return park(conn, io, cx);
                    }
                    // Answers to pipelined requests are written together,
                    // but only up to a bound: a burst of small requests for
                    // large answers must not pile them all up in memory.
                    if cx.scratch.out.len() >= PIPELINE_FLUSH {
                        if let Some(next) = send_before_going_on(conn, io, cx) {
                            return next;
                        }
                    }
                    continue;
                }
                Ok(None) => {}
                Err(ParseError::Version) => match downgrade_minor_version(conn.unparsed_mut()) {
                    Downgrade::Rewritten => continue,
                    Downgrade::Unfinished => {}
                    Downgrade::Refused => return refuse(conn, io, cx, ParseError::Version),
                },
                Err(e) => return refuse(conn, io, cx, e),
            }
        }
        match fill(conn, io, cx) {
            Ok(true) => {}
            Ok(false) => return park(conn, io, cx),
            Err(()) => return finish(conn, io, cx, None),
        }
    }
}

/// True for a `Content-Length` body that is not all here, fits in the read
/// buffer behind its head, and is not held back for a `100 Continue`: it is
/// awaited like the rest of a head (parked, under the head deadline) rather
/// than by the handler on a worker, so a client trickling it holds no thread.
fn awaits_body(conn: &ConnState, head: &Head) -> bool {
    let BodyKind::Length(n) = head.body else { return false };
    let buffered = (conn.end - conn.start - head.len) as u64;
    n > buffered && !head.expect_continue && head.len as u64 + n <= conn.buf.len() as u64
}

/// Flushes queued responses, then reads more: `Ok(true)` after new bytes,
/// `Ok(false)` when the socket has nothing now, `Err` at end of stream or on
/// an error.
///
/// Each read is followed by a fresh parse of the unfinished head, so a bad
/// byte is refused as soon as it arrives; a head is at most
/// `max_head_bytes`, which bounds the work a trickling client causes.
fn fill<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Result<bool, ()> {
    if !send_queued(conn, io, cx, Then::KeepAlive)? {
        return Ok(false);
    }
    if conn.end == conn.buf.len() {
        conn.buf.copy_within(conn.start..conn.end, 0);
        (conn.start, conn.end) = (0, conn.end - conn.start);
    }
    match io.read(&mut conn.buf[conn.end..]) {
        Ok(0) => Err(()),
        Ok(n) => {
            conn.end += n;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(true),
        Err(e) => {
            debug!("{}: read failed: {e}", cx.peer);
            Err(())
        }
    }
}

/// Writes the queued responses, and whatever a TLS session still holds
/// (handshake records included), so nothing is left unsent when the
/// connection parks.
fn flush<T: Transport, H: ?Sized>(io: &mut T, cx: &mut Ctx<'_, H>) -> io::Result<()> {
    let result = write_all_wait(io, &cx.scratch.out, cx.config.write_timeout);
    cx.scratch.out.clear();
    if let Err(e) = &result {
        debug!("{}: write failed: {e}", cx.peer);
    }
    result
}

/// Writes the queued answers as far as the client takes them now. The rest
/// stays with the connection, which parks until the client can take more
/// (so a slow reader holds no worker); `then` is what becomes of the
/// connection once everything is out. `Ok(true)` when nothing is left. At
/// shutdown, when nothing parks any more, it waits for the client instead.
fn send_queued<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    then: Then,
) -> Result<bool, ()> {
    send_or_keep(conn, io, cx, Cow::Borrowed(&[]), None, then).map_err(|e| debug!("{}: write failed: {e}", cx.peer))
}

/// [`send_queued`] before the connection goes on to its next request:
/// `None` to go on, else what becomes of it (parked until the client takes
/// the rest, or closed).
fn send_before_going_on<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
) -> Option<Next> {
    match send_queued(conn, io, cx, Then::KeepAlive) {
        Ok(true) => None,
        Ok(false) => {
            conn.detach(&mut cx.scratch.buffers, Instant::now);
            Some(Next::Park)
        }
        Err(()) => Some(finish(conn, io, cx, None)),
    }
}

/// [`send_queued`], with `body`, then `file` (a file and the length to send
/// from its position), written after the queued answers.
fn send_or_keep<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    body: Cow<'static, [u8]>,
    mut file: Option<(File, u64)>,
    then: Then,
) -> io::Result<bool> {
    if conn.unsent.is_some() {
        // Already waiting for the client; nothing was queued since.
        debug_assert!(cx.scratch.out.is_empty() && body.is_empty() && file.is_none());
        return Ok(false);
    }
    let timeout = cx.config.write_timeout;
    if cx.stopping.load(Ordering::Relaxed) {
        let sent = send_all_waiting(io, &cx.scratch.out, &body, &mut file, timeout);
        cx.scratch.out.clear();
        return sent.map(|()| true);
    }
    let out = &mut cx.scratch.out;
    let (mut bytes_at, mut body_at) = (0, 0);
    let sent = write_now(io, out, &mut bytes_at).and_then(|done| {
        Ok(done && write_now(io, &body, &mut body_at)? && send_file_now(io, &mut file)? && flush_now(io)?)
    });
    let Ok(false) = sent else {
        out.clear();
        return sent;
    };
    // Only bytes that live in memory for this answer are counted (not a
    // static body, not a file).
    let owned = if let Cow::Owned(b) = &body { b.len() } else { 0 };
    let Some(held) = cx.counters.hold((out.len() - bytes_at + owned) as u64, cx.config.max_unsent_bytes) else {
        // Too much is held for slow clients already: this worker waits.
        let waited = send_all_waiting(io, &out[bytes_at..], &body[body_at..], &mut file, timeout);
        out.clear();
        return waited.map(|()| true);
    };
    let bytes = out[bytes_at..].to_vec();
    out.clear();
    let since = Instant::now();
    conn.unsent = Some(Box::new(Unsent { bytes, body, file, bytes_at: 0, body_at, then, since, _held: held }));
    Ok(false)
}

/// Sends what the client had not taken when the connection parked. `None`
/// once everything is out and the connection goes on to its next request;
/// else what becomes of it.
fn resume_sending<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Option<Next> {
    let unsent = conn.unsent.as_mut()?;
    let sent = if cx.stopping.load(Ordering::Relaxed) {
        // Nothing parks any more: the worker waits for the client.
        unsent.send_waiting(io, cx.config.write_timeout).map(|()| true)
    } else {
        unsent.send(io)
    };
    match sent {
        Ok(true) => {}
        Ok(false) => {
            conn.detach(&mut cx.scratch.buffers, Instant::now);
            return Some(Next::Park);
        }
        Err(e) => {
            debug!("{}: write failed: {e}", cx.peer);
            conn.unsent = None;
            conn.detach(&mut cx.scratch.buffers, Instant::now);
            return Some(Next::Close);
        }
    }
    match conn.unsent.take().map(|u| u.then)? {
        Then::KeepAlive => None,
        Then::Close => Some(finish(conn, io, cx, None)),
        Then::Linger => Some(close_lingering(conn, io, cx)),
    }
}

fn park<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Next {
    if send_queued(conn, io, cx, Then::KeepAlive).is_err() {
        return Next::Close;
    }
    conn.detach(&mut cx.scratch.buffers, Instant::now);
    Next::Park
}

/// Answers a request the parser refused, and closes.
fn refuse<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, e: ParseError) -> Next {
    debug!("{}: refusing request: {e:?}", cx.peer);
    cx.counters.parse_error();
    finish(conn, io, cx, Some(e.status()))
}

/// Ends the connection: optionally answers `status` first, flushes, closes.
fn finish<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, status: Option<u16>) -> Next {
    if let Some(code) = status {
        conn.requests += 1;
        cx.counters.requests(1);
        let date = *cx.scratch.date.now();
        // The answer to a HEAD request has no body, even when the request
        // is refused before its head is whole.
        encode_closing(&Response::error(code), conn.holds_head_request(), &date, &mut cx.scratch.out);
        return close_lingering(conn, io, cx);
    }
    let parked = send_queued(conn, io, cx, Then::Close) == Ok(false);
    conn.detach(&mut cx.scratch.buffers, Instant::now);
    if parked { Next::Park } else { Next::Close }
}

/// Closes after an answer while the client may still be sending (the rest
/// of a refused request, a body nobody read): closing with unread input
/// would reset the connection, and the reset can destroy the answer before
/// the client reads it. So the answer is flushed, the write side shut (the
/// client reads to its end), and the connection parks to read and discard
/// whatever comes until the client closes or [`LINGER`] is over (RFC 9112
/// §9.6). Its unparsed bytes are dropped: nothing more is served on it.
fn close_lingering<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Next {
    let sent = send_queued(conn, io, cx, Then::Linger);
    if sent == Ok(false) {
        conn.detach(&mut cx.scratch.buffers, Instant::now);
        return Next::Park;
    }
    // At shutdown, parked connections are closed anyway.
    if sent.is_err() || cx.stopping.load(Ordering::Relaxed) {
        conn.detach(&mut cx.scratch.buffers, Instant::now);
        return Next::Close;
    }
    io.shutdown_write();
    conn.consumed(conn.end, conn.end);
    let until = Instant::now() + LINGER;
    conn.linger_until = Some(until);
    linger(conn, io, cx, until)
}

/// Reads and discards input of a connection closing after an error answer:
/// parks when there is none, closes at the end of stream or past `until`.
fn linger<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, until: Instant) -> Next {
    loop {
        match io.read(&mut conn.buf) {
            Ok(0) => break,
            Ok(_) if Instant::now() >= until => break,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                conn.detach(&mut cx.scratch.buffers, Instant::now);
                return Next::Park;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    conn.detach(&mut cx.scratch.buffers, Instant::now);
    Next::Close
}

/// What becomes of a connection after an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Then {
    KeepAlive,
    Close,
    /// Close, but the client may still be sending: [`close_lingering`].
    Linger,
}

/// True when the request's body is not all in the buffer: reading it waits
/// on the client.
fn body_needs_socket(conn: &ConnState, head: &Head) -> bool {
    match head.body {
        BodyKind::Empty => false,
        BodyKind::Length(n) => n > (conn.end - conn.start - head.len) as u64,
        BodyKind::Chunked => true,
    }
}

/// Answers one parsed request.
fn respond<T: Transport, H: Handler + ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    head: Head,
) -> Then {
    let buffered_body = conn.end - conn.start - head.len;
    let needs_socket = body_needs_socket(conn, &head);
    // Earlier pipelined responses went out before a `100 Continue` and
    // before a handler that may wait on the client (`serve`).
    debug_assert!(!needs_socket || cx.scratch.out.is_empty());
    if needs_socket {
        conn.make_body_room();
    }
    let head_end = conn.start + head.len;
    let tls = io.is_tls();
    let Scratch { out, spans, date, .. } = &mut *cx.scratch;
    let (before, rest) = conn.buf.split_at_mut(head_end);
    let bounds = cx.config.body_bounds();
    let body = Body::new(
        head.body,
        io,
        rest,
        buffered_body,
        bounds,
        // A body that is already here needs no `100 Continue` (RFC 9110
        // §10.1.1), and one sent now could overtake queued responses.
        head.expect_continue && needs_socket,
    );
    let mut req = Request::new(&before[conn.start..], head, spans, cx.peer, tls, body);
    let method = req.method();
    let (is_head, is_connect) = (method == "HEAD", method == "CONNECT");
    let resp = call(cx.handler, &mut req, cx.peer, cx.counters);
    let mut body = req.into_body();
    let drained = body.is_complete() || body.drain(cx.config.max_drain_bytes);
    let end = body.finish();
    conn.consumed(head_end + end.pos, head_end + end.end);
    conn.requests += 1;
    cx.counters.requests(1);
    if let Some(e) = end.error {
        match e {
            BodyError::TimedOut => cx.counters.timeout(),
            BodyError::Io => cx.counters.io_error(),
            BodyError::Malformed | BodyError::TooLarge => cx.counters.parse_error(),
        }
    }
    let resp = match end.error.map(|e| e.status()) {
        Some(None) => return Then::Close,
        Some(Some(code)) => Response::error(code),
        None => resp,
    };
    let body_done = drained && !end.continue_withheld;
    let (mut resp, mut framing) = checked(resp, &head, is_head, cx.peer);
    // A 2xx to CONNECT makes the connection a tunnel (RFC 9112 §6.3), which
    // this server does not run: the answer goes out with no framing header
    // and no body (RFC 9110 §9.3.6), and the connection closes rather than
    // read tunnelled bytes as requests.
    let tunnel = is_connect && (200..300).contains(&resp.status);
    if tunnel {
        framing = Framing::None { announce: None };
    }
    let stopping = cx.stopping.load(Ordering::Relaxed);
    let keep_alive = keep_alive(&head, &resp, framing, body_done, stopping) && !tunnel;
    let date = *date.now();
    encode_head(&resp, framing, keep_alive, head.version, &date, out);
    if let Some(on_upgrade) = resp.upgrade.take() {
        upgrade(conn, io, cx, on_upgrade);
        return Then::Close;
    }
    let then = match keep_alive {
        true => Then::KeepAlive,
        // Part of the body is still to come, or requests were pipelined
        // behind this one.
        false if !body_done || conn.has_partial_head() => Then::Linger,
        false => Then::Close,
    };
    if let Err(e) = write_body(conn, io, cx, resp.body, framing, then) {
        debug!("{}: response body failed: {e}", cx.peer);
        return Then::Close;
    }
    then
}

/// The response and its framing, or a `500` in its place when the handler's
/// response cannot be sent as it is.
fn checked(resp: Response, head: &Head, is_head: bool, peer: Peer) -> (Response, Framing) {
    let upgrade_refused = resp.upgrade.is_some() && !(head.upgrade && head.version == Version::Http11);
    let planned = match plan(&resp, head.version, is_head) {
        Ok(_) if upgrade_refused => Err("upgrade response to a request that did not ask for one"),
        other => other,
    };
    match planned {
        Ok(framing) => (resp, framing),
        Err(why) => {
            error!("{peer}: handler response refused ({why}); answering 500");
            let resp = Response::error(500);
            let framing = plan(&resp, head.version, is_head).unwrap_or(Framing::CloseDelimited);
            (resp, framing)
        }
    }
}

/// Sends the `101` and hands the connection, with the bytes already received
/// after the request, to the handler's closure. The connection closes after.
fn upgrade<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, on_upgrade: OnUpgrade) {
    if flush(io, cx).is_err() {
        return;
    }
    io.leave_seat();
    let early = &conn.buf[conn.start..conn.end];
    let run = AssertUnwindSafe(|| on_upgrade(Upgraded::new(io, early)));
    if catch_unwind(run).is_err() {
        error!("{}: upgraded connection handler panicked", cx.peer);
        cx.counters.panic();
    }
    conn.consumed(conn.end, conn.end);
}

/// Calls the handler; a panic becomes a `500` that closes the connection.
fn call<H: Handler + ?Sized>(handler: &H, req: &mut Request<'_>, peer: Peer, counters: &Counters) -> Response {
    match catch_unwind(AssertUnwindSafe(|| handler.handle(req))) {
        Ok(resp) => resp,
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("<non-string panic>");
            error!("{peer}: handler panicked: {text}; answering 500");
            counters.panic();
            Response::error(500)
        }
    }
}

/// RFC 9112 §9.3: persistence is the default for 1.1 and opt-in for 1.0;
/// either side's `close` ends it, and so does a body we could not frame or
/// finish reading.
fn keep_alive(head: &Head, resp: &Response, framing: Framing, body_done: bool, closing: bool) -> bool {
    let requested = match (head.version, head.connection) {
        (_, ConnectionOption::Close) => false,
        (Version::Http11, _) | (Version::Http10, ConnectionOption::KeepAlive) => true,
        (Version::Http10, ConnectionOption::Default) => false,
    };
    // Bytes after a request that asked for an upgrade may already be the
    // other protocol; when the handler declines it, they must not be read
    // as HTTP (RFC 9110 §7.8).
    let declined_upgrade = head.upgrade && resp.upgrade.is_none();
    requested && !resp.close && framing != Framing::CloseDelimited && body_done && !closing && !declined_upgrade
}

/// Writes or queues the body after its head: one in memory up to
/// [`INLINE_BODY`] is copied behind the head; a larger one, or a file, goes
/// out as far as the client takes it now, and the connection parks with the
/// rest (then goes on as `then`) rather than hold the worker; a stream is
/// written by the worker as it is produced.
fn write_body<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    body: Payload,
    framing: Framing,
    then: Then,
) -> io::Result<()> {
    if let Framing::None { .. } = framing {
        return Ok(());
    }
    let (out, timeout) = (&mut cx.scratch.out, cx.config.write_timeout);
    let (body, file) = match body {
        Payload::Static(b) => (Cow::Borrowed(b), None),
        Payload::Owned(b) => (Cow::Owned(b), None),
        Payload::File { file, len } => (Cow::Borrowed(&[][..]), Some((file, len))),
        Payload::Reader { reader, .. } => return copy_body(reader, BodyWriter::new(io, out, framing, timeout)),
        Payload::Writer(write) => {
            let mut writer = BodyWriter::new(io, out, framing, timeout);
            write(&mut writer)?;
            return writer.finish();
        }
    };
    if file.is_none() && body.len() <= INLINE_BODY {
        out.extend_from_slice(&body);
        return Ok(());
    }
    send_or_keep(conn, io, cx, body, file, then).map(drop)
}

#[cfg(test)]
mod tests;
