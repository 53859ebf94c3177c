//! One connection, served by a worker: **the spine of the crate**.
//!
//! [`serve`] is the main loop. It reads what the socket has without
//! blocking, parses heads, calls the handler, queues responses, and returns
//! as soon as the socket has nothing more for it — [`Next::Park`], so idle
//! and slow clients hold no thread — or when the connection has had its
//! turn ([`Next::Yield`]) or is done ([`Next::Close`]).
//!
//! Readiness is edge-triggered: a parked connection is served again only
//! when new bytes arrive. So it parks only after a read came back empty
//! (`WouldBlock`) or short (the socket had no more), never merely because
//! the buffer is empty: bytes still in the kernel would wait for an edge
//! that never comes.

mod phase;
mod read_buf;
mod state;

use std::borrow::Cow;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::body::{Body, BodyError};
use crate::body_writer::{BodyWriter, copy_body};
use crate::config::Config;
use crate::date::DateCache;
use crate::encode::{encode_error, encode_head, error_response, plan};
use crate::handler::Handler;
use crate::io::{Ready, Transport, now, write_all_wait};
use crate::net::Peer;
use crate::outbox::{self, Policy, Sent};
use crate::parse::{ConnectionOption, Downgrade, Head, HeaderSpan, ParseError, downgrade_minor_version, parse_head};
use crate::proto::Version;
use crate::proto::{BodyKind, ResponseFraming};
use crate::request::Request;
use crate::response::{Payload, Response};
use crate::stats::Counters;
use crate::upgrade::{OnUpgrade, Upgraded};

use phase::{Drain, Dry, Kind, after, earliest};
pub(crate) use phase::{Expiry, Then, is_past};
use state::ChunkScan;
pub(crate) use state::ConnState;

/// How long a connection closing after an error answer goes on reading
/// (and discarding) what the client still sends: [`close_lingering`].
const LINGER: Duration = Duration::from_secs(2);

/// Bodies up to this size are copied behind the head, for one write.
const INLINE_BODY: usize = 32 * 1024;

/// Queued answers to pipelined requests are written once they reach this
/// size, so the queue stays under it plus one answer.
const PIPELINE_FLUSH: usize = 64 * 1024;

/// Requests one connection is answered in a turn before the others of its
/// seat go first: a client that keeps pipelining cannot hold its worker.
const TURN_REQUESTS: u32 = 64;

/// Bytes one connection may have read in a turn (requests, or input
/// discarded while lingering) before the others of its seat go first.
const TURN_BYTES: usize = 256 * 1024;

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

/// Whether the server is shutting down, and since when.
#[derive(Debug, Default)]
pub(crate) struct Stop {
    stopping: AtomicBool,
    since: OnceLock<Instant>,
}

impl Stop {
    pub(crate) fn set(&self) {
        let _ = self.since.set(Instant::now());
        self.stopping.store(true, Ordering::Release);
    }

    pub(crate) fn is_set(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    fn since(&self) -> Option<Instant> {
        self.since.get().copied()
    }
}

/// What the worker does with the connection after [`serve`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Nothing to do until the socket reports readiness: park it.
    Park,
    /// It has had its turn and has more to do: serve the others of its
    /// seat first, then it again (it must not park: no edge would wake it).
    Yield,
    Close,
}

/// What the engine offers a worker around a handler call.
pub(crate) trait Seating {
    /// A handler expected to block is about to run: another thread should
    /// watch this worker's seat meanwhile.
    fn handler_may_block(&mut self);

    /// The monitor's tick count: a handler call across two ticks blocked.
    fn ticks(&self) -> u64;
}

/// A worker with no seat (tests and fuzzing).
#[derive(Debug, Default)]
pub(crate) struct NoSeat;

impl Seating for NoSeat {
    fn handler_may_block(&mut self) {}

    fn ticks(&self) -> u64 {
        0
    }
}

/// What one worker brings to serving a connection.
pub(crate) struct Ctx<'w, H: ?Sized> {
    pub(crate) handler: &'w H,
    pub(crate) config: &'w Config,
    pub(crate) scratch: &'w mut Scratch,
    /// The server is shutting down: finish the request at hand, then close.
    pub(crate) stopping: &'w Stop,
    pub(crate) counters: &'w Counters,
    pub(crate) peer: Peer,
    pub(crate) seat: &'w mut dyn Seating,
}

impl<'w, H: ?Sized> Ctx<'w, H> {
    fn is_stopping(&self) -> bool {
        self.stopping.is_set()
    }

    /// At shutdown, until when a connection reads requests its client had
    /// already sent, and waits for one begun: the shutdown grace from the
    /// stop, less the time a lingering close may take after it. `None`:
    /// no limit (or not stopping).
    fn drain_end(&self) -> Option<Instant> {
        let since = self.stopping.since()?;
        after(since, self.config.shutdown_grace.saturating_sub(LINGER))
    }

    /// Whether connections are being drained, and until when.
    fn drain(&self) -> Drain {
        if self.is_stopping() { Drain::Until(self.drain_end()) } else { Drain::No }
    }

    fn policy(&self) -> Policy<'w> {
        Policy {
            stopping: self.is_stopping(),
            timeout: self.config.write_timeout,
            counters: self.counters,
            cap: self.config.max_unsent_bytes,
        }
    }
}

/// How much of its turn a connection has used, and whether its socket was
/// read dry.
#[derive(Debug, Default)]
struct Turn {
    requests: u32,
    bytes: usize,
    /// The last read emptied the socket: parking is safe.
    dry: bool,
}

impl Turn {
    fn is_spent(&self) -> bool {
        self.requests >= TURN_REQUESTS || self.bytes >= TURN_BYTES
    }
}

/// The main loop of one connection: read → parse → handler → respond, for as
/// long as requests are buffered or readable and its turn lasts; then park,
/// yield or close.
///
/// Responses to pipelined requests are queued and written together before
/// the next read. Any error answered by the crate ends with `Connection:
/// close`.
#[inline]
pub(crate) fn serve<T: Transport, H: Handler + ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Next {
    conn.attach(&mut cx.scratch.buffers, cx.config.read_buffer_size());
    if let Some(next) = pick_up(conn, io, cx) {
        return next;
    }
    let mut turn = Turn::default();
    loop {
        let head = match parse_buffered(conn, cx) {
            Parsed::Head(head) => head,
            Parsed::More => match read_more(conn, io, cx, &mut turn) {
                Read::Got => continue,
                Read::Dry => return park(conn, io, cx),
                Read::Closed => return end_of_input(conn, io, cx),
                Read::Stop(next) => return next,
            },
            Parsed::Refused(e) => return refuse(conn, io, cx, e),
        };
        // Earlier answers go out before a handler that may wait on the
        // client for a body, or that is expected to block. (Not before
        // every handler: with 16 requests pipelined, a write per answer
        // cut throughput 4x, 875k to 200k req/s.)
        if body_needs_socket(conn, &head) || (conn.expects_slow_handler() && !cx.scratch.out.is_empty()) {
            if let Some(next) = send_before_going_on(conn, io, cx) {
                return next;
            }
        }
        turn.requests += 1;
        match respond(conn, io, cx, head) {
            _ if conn.is_sending() => return pause(conn, cx, Next::Park),
            Then::KeepAlive => {}
            Then::Close => return close(conn, io, cx, true),
            Then::Linger => return close_lingering(conn, io, cx),
            Then::Abort => return close(conn, io, cx, false),
        }
        // A client that waits for each answer has not sent its next request
        // yet: after a read that emptied the socket, park at once.
        if !conn.has_unparsed() && turn.dry {
            return park(conn, io, cx);
        }
        if turn.is_spent() {
            return match send_before_going_on(conn, io, cx) {
                Some(next) => next,
                None => pause(conn, cx, Next::Yield),
            };
        }
        // Answers to pipelined requests are written together, but only up
        // to a bound: a burst of small requests for large answers must not
        // pile them all up in memory.
        if cx.scratch.out.len() >= PIPELINE_FLUSH {
            if let Some(next) = send_before_going_on(conn, io, cx) {
                return next;
            }
        }
    }
}

/// The client closed its side (or the socket failed). An unfinished head
/// it left is judged once more — a trickled head is not parsed at every
/// byte — so a malformed one still gets its `400`, whatever the timing of
/// its bytes; then the connection closes.
fn end_of_input<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Next {
    if conn.has_unparsed() {
        conn.reparse_now();
        if let Parsed::Refused(e) = parse_buffered(conn, cx) {
            return refuse(conn, io, cx, e);
        }
    }
    close(conn, io, cx, false)
}

/// Goes on with what the connection's last turn left: an answer the client
/// was slow to take, a lingering close, a head whose time is up.
fn pick_up<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Option<Next> {
    match conn.phase.kind() {
        Kind::Sending => resume_sending(conn, io, cx),
        Kind::Lingering { until } => Some(linger(conn, io, cx, until)),
        // The head deadline, and what a body being collected has earned.
        Kind::Head if is_past(conn.deadline(cx.config), Instant::now()) => {
            cx.counters.timeout();
            Some(answer_error(conn, io, cx, 408))
        }
        Kind::Head | Kind::Waiting { .. } => None,
    }
}

/// What the bytes received so far make.
enum Parsed {
    Head(Head),
    /// An unfinished head, or a small body still arriving: read more.
    More,
    Refused(ParseError),
}

/// Parses the unparsed bytes, when that can tell more than last time.
fn parse_buffered<H: ?Sized>(conn: &mut ConnState, cx: &mut Ctx<'_, H>) -> Parsed {
    let limits = &cx.config.limits;
    conn.scan_awaited();
    loop {
        if !conn.has_unparsed() || !conn.worth_parsing(limits) {
            return Parsed::More;
        }
        match parse_head(conn.unparsed(), limits, &mut cx.scratch.spans) {
            Ok(Some(head)) => match awaited_body(conn, &head, cx) {
                Some(Await::Length(len)) => {
                    conn.await_body(head.len, len);
                    return Parsed::More;
                }
                Some(Await::Chunked(scan)) => {
                    conn.await_chunked(scan);
                    return Parsed::More;
                }
                None => return Parsed::Head(head),
            },
            Ok(None) => {
                conn.parsed_partial();
                return Parsed::More;
            }
            Err(ParseError::Version) => match downgrade_minor_version(conn.unparsed_mut()) {
                Downgrade::Rewritten => conn.reparse_now(),
                Downgrade::Unfinished => {
                    conn.parsed_partial();
                    return Parsed::More;
                }
                Downgrade::Refused => return Parsed::Refused(ParseError::Version),
            },
            Err(e) => return Parsed::Refused(e),
        }
    }
}

/// How many bytes of the request to collect before the handler runs, when
/// more than are here: its body, or the first `body_buffer_bytes` of it
/// (and at least what fits in the read buffer behind the head); with
/// `body_buffer_bytes` 0, only a body with a length that fits in the read
/// buffer behind its head. A body is
/// collected like the rest of a head (parked, under the head deadline plus
/// what its bytes earn at `body_min_rate`) rather than read by the handler
/// on a worker, so a client trickling it holds no thread; at shutdown, when
/// nothing parks, the worker waits for it under the same deadline (see
/// [`finishing_head`]). Not when the client waits for `100 Continue`.
/// Collecting past the read buffer's size takes a share
/// of the server-wide budget (`max_buffered_body_bytes`) when the buffer is
/// about to grow (see [`read_more`]), held until the buffer shrinks back
/// (`ConnState::detach`); with none left, it stops at the read buffer's
/// size.
fn awaited_body<H: ?Sized>(conn: &ConnState, head: &Head, cx: &Ctx<'_, H>) -> Option<Await> {
    if head.body == BodyKind::Empty || head.expect_continue {
        return None;
    }
    let buffer = cx.config.read_buffer_size();
    let limit =
        if conn.budget_spent() { buffer } else { buffer.max(head.len.saturating_add(cx.config.body_buffer_bytes)) };
    let here = conn.unparsed().len();
    let want = match head.body {
        BodyKind::Length(n) => {
            let whole = u64::try_from(head.len).ok()?.checked_add(n)?;
            // Collecting off: only a request that fits in the read buffer.
            if cx.config.body_buffer_bytes == 0 && whole > buffer as u64 {
                return None;
            }
            let want = usize::try_from(whole).unwrap_or(usize::MAX).min(limit);
            if here >= want {
                return None;
            }
            Await::Length(want)
        }
        BodyKind::Chunked if cx.config.body_buffer_bytes == 0 => return None,
        BodyKind::Chunked => {
            let mut scan = ChunkScan::new(head.len, limit, cx.config.limits.max_body_bytes);
            if scan.advance(conn.unparsed()) {
                return None;
            }
            Await::Chunked(scan)
        }
        BodyKind::Empty => return None,
    };
    Some(want)
}

/// What [`awaited_body`] collects.
enum Await {
    /// Until this many bytes, head included, are here.
    Length(usize),
    /// Until the chunked body ends or its limit is here.
    Chunked(ChunkScan),
}

/// What a read brought.
enum Read {
    Got,
    /// The socket has nothing now.
    Dry,
    /// End of stream or an error.
    Closed,
    /// Sending queued answers decided what becomes of the connection.
    Stop(Next),
}

/// Flushes queued responses, then reads more.
///
/// Each read is followed by a parse of the unfinished head when it can tell
/// more ([`ConnState::worth_parsing`]), so a bad line is refused as soon as
/// it is whole, and a head trickled a byte at a time costs work linear in
/// its size.
fn read_more<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, turn: &mut Turn) -> Read {
    if let Some(next) = send_before_going_on(conn, io, cx) {
        return Read::Stop(next);
    }
    let size = cx.config.read_buffer_size();
    if conn.needs_budget(size) {
        // What the buffer may grow by: a body is collected up to
        // `body_buffer_bytes` past a head shorter than the read buffer.
        let share = cx.config.body_buffer_bytes as u64;
        match cx.counters.hold_body(share, cx.config.max_buffered_body_bytes) {
            Some(held) => conn.budget_given(held),
            None => {
                // The body's handler takes over from what is here.
                conn.budget_refused();
                return Read::Got;
            }
        }
    }
    let space = conn.read_space(size);
    let asked = space.len();
    if asked == 0 {
        // Unreachable: a head that fills the buffer is past
        // `max_head_bytes` and refused before this read.
        return Read::Stop(refuse(conn, io, cx, ParseError::HeadTooLarge));
    }
    match now(|| io.read(space)) {
        Ok(Some(0)) => Read::Closed,
        Ok(Some(n)) => {
            conn.filled(n);
            turn.bytes += n;
            turn.dry = n < asked && io.short_read_drains();
            Read::Got
        }
        Ok(None) => match finishing_head(conn, io, cx) {
            Some(read) => read,
            None => Read::Dry,
        },
        Err(e) => {
            debug!("{}: read failed: {e}", cx.peer);
            Read::Closed
        }
    }
}

/// At shutdown nothing parks, but a request begun is finished: the worker
/// waits for the rest of its head, or of a body being collected, within
/// the deadline it would have had parked and the end of the drain
/// ([`Phase::when_dry`](phase::Phase::when_dry)). `None` when not stopping,
/// or nothing is begun.
fn finishing_head<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Option<Read> {
    let drain = cx.drain();
    if drain == Drain::No {
        return None;
    }
    conn.begin_head(Instant::now(), io.input_begun());
    let Dry::Wait { until } = conn.when_dry(cx.config, drain) else { return None };
    let left = until.map(|d| d.saturating_duration_since(Instant::now()));
    match io.wait(Ready::Readable, left.unwrap_or(Duration::MAX)) {
        Ok(()) => Some(Read::Got),
        Err(e) if e.kind() == io::ErrorKind::TimedOut => {
            cx.counters.timeout();
            Some(Read::Stop(answer_error(conn, io, cx, 408)))
        }
        Err(_) => Some(Read::Closed),
    }
}

/// What writing the queued answers achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flushed {
    /// Everything is out.
    All,
    /// The client took what it could; the rest waits with the connection.
    Held,
    /// The write failed (logged): the connection closes.
    Failed,
}

/// Writes the queued answers as far as the client takes them now. The rest
/// stays with the connection, which parks until the client can take more
/// (so a slow reader holds no worker); `then` is what becomes of the
/// connection once everything is out. At shutdown, when nothing parks any
/// more, it waits for the client instead.
fn send_queued<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, then: Then) -> Flushed {
    match send_with(conn, io, cx, Cow::Borrowed(&[]), None, then) {
        Ok(true) => Flushed::All,
        Ok(false) => Flushed::Held,
        Err(e) => {
            write_failed(cx, &e);
            Flushed::Failed
        }
    }
}

/// [`send_queued`]: `None` once everything is out, else the turn ends —
/// parked until the client takes the rest (then the connection goes on as
/// `then`), or closed after a failed write.
fn flush<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, then: Then) -> Option<Next> {
    match send_queued(conn, io, cx, then) {
        Flushed::All => None,
        Flushed::Held => Some(pause(conn, cx, Next::Park)),
        Flushed::Failed => Some(pause(conn, cx, Next::Close)),
    }
}

/// Logs a failed write; one that waited too long on the client counts as a
/// timeout.
fn write_failed<H: ?Sized>(cx: &Ctx<'_, H>, e: &io::Error) {
    debug!("{}: write failed: {e}", cx.peer);
    if e.kind() == io::ErrorKind::TimedOut {
        cx.counters.timeout();
    }
}

/// [`send_queued`], with `body`, then `file` (a file and the length to send
/// from its position), written after the queued answers.
fn send_with<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    body: Cow<'static, [u8]>,
    file: Option<(std::fs::File, u64)>,
    then: Then,
) -> io::Result<bool> {
    // Already waiting for the client: nothing is queued meanwhile.
    debug_assert!(!conn.is_sending() || (cx.scratch.out.is_empty() && body.is_empty() && file.is_none()));
    if conn.is_sending() {
        return Ok(false);
    }
    let policy = cx.policy();
    match outbox::send(io, &mut cx.scratch.out, body, file, policy)? {
        Sent::All => Ok(true),
        Sent::Held(unsent) => {
            conn.phase.sending(unsent, then);
            Ok(false)
        }
    }
}

/// [`flush`] before the connection goes on to its next request: `None` to
/// go on.
fn send_before_going_on<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
) -> Option<Next> {
    flush(conn, io, cx, Then::KeepAlive)
}

/// Sends what the client had not taken when the connection parked. `None`
/// once everything is out and the connection goes on to its next request;
/// else what becomes of it.
fn resume_sending<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Option<Next> {
    let policy = cx.policy();
    let (unsent, then) = conn.phase.unsent()?;
    match unsent.resume(io, policy) {
        Ok(true) => {}
        Ok(false) => return Some(pause(conn, cx, Next::Park)),
        Err(e) => {
            write_failed(cx, &e);
            conn.phase.sent();
            return Some(pause(conn, cx, Next::Close));
        }
    }
    conn.phase.sent();
    match then {
        Then::KeepAlive => None,
        Then::Close => Some(close(conn, io, cx, true)),
        Then::Linger => Some(close_lingering(conn, io, cx)),
        Then::Abort => Some(close(conn, io, cx, false)),
    }
}

/// Ends a turn: the worker's buffer goes back, the phase's clock starts.
fn pause<H: ?Sized>(conn: &mut ConnState, cx: &mut Ctx<'_, H>, next: Next) -> Next {
    conn.detach(&mut cx.scratch.buffers, cx.config.read_buffer_size(), Instant::now());
    next
}

fn park<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Next {
    // At shutdown an idle connection closes instead — like any close after
    // an answer, lingering if the client already sent more.
    if conn.when_dry(cx.config, cx.drain()) == Dry::Close {
        return close_idle(conn, io, cx);
    }
    match send_queued(conn, io, cx, Then::KeepAlive) {
        Flushed::All | Flushed::Held => pause(conn, cx, Next::Park),
        Flushed::Failed => pause(conn, cx, Next::Close),
    }
}

/// Answers a request the parser refused, and closes.
fn refuse<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, e: ParseError) -> Next {
    debug!("{}: refusing request: {e:?}", cx.peer);
    cx.counters.parse_error();
    answer_error(conn, io, cx, e.status())
}

/// Answers `status` on the server's behalf, then closes lingering.
fn answer_error<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, status: u16) -> Next {
    conn.requests += 1;
    cx.counters.requests(1);
    let date = *cx.scratch.date.now();
    // The answer to a HEAD request has no body, even when the request is
    // refused before its head is whole.
    encode_error(status, conn.holds_head_request(), &date, &mut cx.scratch.out);
    close_lingering(conn, io, cx)
}

/// Closes after the answers queued: once the client has taken them (the
/// connection parks meanwhile). After a whole answer (`answered`), input
/// the client sent that the worker has not read — requests pipelined behind
/// a `Connection: close` — would turn the close into a reset that can
/// destroy the answer: when a read finds any, the close lingers instead.
/// (After an answer cut short, or the end of the client's stream, it closes
/// at once.)
fn close<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, answered: bool) -> Next {
    if let Some(next) = flush(conn, io, cx, Then::Close) {
        return next;
    }
    if answered && has_unread_input(conn, io) {
        return close_lingering(conn, io, cx);
    }
    pause(conn, cx, Next::Close)
}

/// Closes a connection idle at shutdown (the sweep hands every parked one
/// to a worker, which read it once more: a request that came in the
/// meantime was served). Answers still queued go out, then the write side
/// shuts, so a request that races the close finds the end of stream before
/// anything else — a client may send it again on a new connection (RFC 9112
/// §9.3.1) — and not a reset; what came all the same is read and discarded
/// while lingering.
fn close_idle<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Next {
    if let Some(next) = flush(conn, io, cx, Then::Close) {
        return next;
    }
    io.shutdown_write();
    if has_unread_input(conn, io) {
        return close_lingering(conn, io, cx);
    }
    pause(conn, cx, Next::Close)
}

/// True when the client sent bytes nobody has read (they are discarded).
fn has_unread_input<T: Transport>(conn: &mut ConnState, io: &mut T) -> bool {
    conn.has_unparsed() || matches!(io.read(conn.scratch_space()), Ok(n) if n > 0) || io.input_begun()
}

/// Closes after an answer while the client may still be sending (the rest
/// of a refused request, a body nobody read): closing with unread input
/// would reset the connection, and the reset can destroy the answer before
/// the client reads it. So the answer is flushed, the write side shut (the
/// client reads to its end), and the connection parks to read and discard
/// whatever comes until the client closes or [`LINGER`] is over (RFC 9112
/// §9.6). Its unparsed bytes are dropped: nothing more is served on it.
fn close_lingering<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Next {
    if let Some(next) = flush(conn, io, cx, Then::Linger) {
        return next;
    }
    io.shutdown_write();
    conn.discard_unparsed();
    // At shutdown, no later than the grace allows.
    let end = cx.stopping.since().and_then(|since| after(since, cx.config.shutdown_grace));
    let until = earliest(Some(Instant::now() + LINGER), end).unwrap_or_else(Instant::now);
    conn.phase.linger(until);
    linger(conn, io, cx, until)
}

/// Reads and discards input of a connection closing after an error answer:
/// parks when there is none (at shutdown, when nothing parks, waits for it
/// instead), yields after its turn's share of bytes, closes at the end of
/// stream or past `until`.
fn linger<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, until: Instant) -> Next {
    let mut read = 0;
    loop {
        match now(|| io.read(conn.scratch_space())) {
            Ok(Some(0)) | Err(_) => break,
            Ok(Some(_)) if Instant::now() >= until => break,
            Ok(Some(n)) => {
                read += n;
                if read >= TURN_BYTES {
                    return pause(conn, cx, Next::Yield);
                }
            }
            Ok(None) => match conn.when_dry(cx.config, cx.drain()) {
                Dry::Wait { .. } => {
                    if io.wait(Ready::Readable, until.saturating_duration_since(Instant::now())).is_err() {
                        break;
                    }
                }
                Dry::Park | Dry::Close => return pause(conn, cx, Next::Park),
            },
        }
    }
    pause(conn, cx, Next::Close)
}

/// True when the request's body is not all in the buffer: reading it waits
/// on the client.
fn body_needs_socket(conn: &ConnState, head: &Head) -> bool {
    match head.body {
        BodyKind::Empty => false,
        BodyKind::Length(n) => n > (conn.unparsed().len() - head.len) as u64,
        BodyKind::Chunked => true,
    }
}

/// A request and what its handler made of it.
struct Exchange {
    resp: Response,
    is_head: bool,
    is_connect: bool,
    /// The body ended in an error the client is answered for (or, `None`
    /// inside, one no answer can reach).
    body_error: Option<Option<u16>>,
    /// The body was read to its end, so the connection can be reused.
    body_done: bool,
}

/// Answers one parsed request: runs the handler, then writes or queues its
/// response. Returns what becomes of the connection once the answer is out
/// (the connection is [sending](ConnState::is_sending) when the client has
/// not taken it all yet).
fn respond<T: Transport, H: Handler + ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    head: Head,
) -> Then {
    let Exchange { resp, is_head, is_connect, body_error, body_done } = exchange(conn, io, cx, &head);
    conn.requests += 1;
    cx.counters.requests(1);
    let resp = match body_error {
        Some(None) => return Then::Abort,
        Some(Some(code)) => error_response(code),
        None => resp,
    };
    let (mut resp, framing) = checked(resp, &head, is_head, is_connect, cx.peer);
    let keep_alive = keep_alive(&head, &resp, framing, body_done, body_done && closing(conn, io, cx));
    let date = *cx.scratch.date.now();
    encode_head(&resp, framing, keep_alive, head.version, &date, &mut cx.scratch.out);
    if let Some(on_upgrade) = resp.upgrade.take() {
        upgrade(conn, io, cx, on_upgrade);
        return Then::Close;
    }
    let then = match keep_alive {
        true => Then::KeepAlive,
        // Part of the body is still to come, or requests were pipelined
        // behind this one.
        false if !body_done || conn.has_unparsed() => Then::Linger,
        false => Then::Close,
    };
    if let Err(e) = write_body(conn, io, cx, resp.body, framing, then) {
        write_failed(cx, &e);
        return Then::Abort;
    }
    then
}

/// Runs the handler on the request at the front of the buffer and reads or
/// drains what it left of the body; the buffer then starts after it.
#[inline(always)]
fn exchange<T: Transport, H: Handler + ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    head: &Head,
) -> Exchange {
    conn.make_full(&mut cx.scratch.buffers, cx.config.read_buffer_size());
    let needs_socket = body_needs_socket(conn, head);
    if needs_socket {
        conn.make_body_room();
    }
    let buffered_body = conn.unparsed().len() - head.len;
    let (start, _) = conn.bounds();
    let slow_before = conn.expects_slow_handler();
    let (head_bytes, rest) = conn.split_at_head(head.len);
    // A body that is already here needs no `100 Continue` (RFC 9110
    // §10.1.1), and one sent now could overtake queued responses.
    let continue_due = head.expect_continue && needs_socket;
    let tls = io.is_tls();
    let body = Body::new(head.body, io, rest, buffered_body, cx.config.body_bounds(), continue_due);
    let mut req = Request::new(head_bytes, *head, &cx.scratch.spans, cx.peer, tls, body);
    let method = req.method();
    let (is_head, is_connect) = (method == "HEAD", method == "CONNECT");
    let (resp, blocked) = call(cx.handler, &mut req, cx.peer, cx.counters, &mut *cx.seat, slow_before);
    let mut body = req.into_body();
    let drained = if resp.upgrade.is_some() {
        // The body comes before the other protocol's bytes: it is read
        // whole (after a `100 Continue` when asked, RFC 9110 §7.8) before
        // the switch, or the switch is off.
        body.drain_before_upgrade(cx.config.max_drain_bytes)
    } else {
        body.is_complete() || body.drain(cx.config.max_drain_bytes)
    };
    let end = body.finish();
    let head_end = start + head.len;
    conn.consumed(head_end + end.pos, head_end + end.end);
    conn.handler_ran(blocked);
    if let Some(e) = end.error {
        match e {
            BodyError::TimedOut => cx.counters.timeout(),
            BodyError::Busy => cx.counters.rejected(),
            BodyError::Io => cx.counters.io_error(),
            BodyError::Malformed | BodyError::TooLarge => cx.counters.parse_error(),
        }
    }
    let mut body_error = end.error.map(BodyError::status);
    if resp.upgrade.is_some() && !drained && body_error.is_none() {
        warn!("{}: upgrade refused: the request body could not be read first", cx.peer);
        body_error = Some(Some(413));
    }
    Exchange { resp, is_head, is_connect, body_error, body_done: drained && !end.continue_withheld }
}

/// The response and its framing, or a `500` in its place when the handler's
/// response cannot be sent as it is.
#[inline(always)]
fn checked(resp: Response, head: &Head, is_head: bool, is_connect: bool, peer: Peer) -> (Response, ResponseFraming) {
    let upgrade_refused = resp.upgrade.is_some() && !(head.upgrade && head.version == Version::Http11);
    let planned = match plan(&resp, head.version, is_head) {
        Ok(_) if upgrade_refused => Err("upgrade response to a request that did not ask for one"),
        other => other,
    };
    let (resp, framing) = match planned {
        Ok(framing) => (resp, framing),
        Err(why) => {
            error!("{peer}: handler response refused ({why}); answering 500");
            let resp = error_response(500);
            let framing = plan(&resp, head.version, is_head).unwrap_or(ResponseFraming::CloseDelimited);
            (resp, framing)
        }
    };
    // A 2xx to CONNECT makes the connection a tunnel (RFC 9112 §6.3), which
    // this server does not run: the answer goes out with no framing header
    // and no body (RFC 9110 §9.3.6), and the connection closes rather than
    // read tunnelled bytes as requests.
    if is_connect && (200..300).contains(&resp.status) {
        return (resp.with_close(), ResponseFraming::None { announce: None });
    }
    (resp, framing)
}

/// Sends the `101` and hands the connection, with the bytes already received
/// after the request, to the handler's closure. The connection closes after.
fn upgrade<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, on_upgrade: OnUpgrade) {
    let flushed = write_all_wait(io, &cx.scratch.out, cx.config.write_timeout);
    cx.scratch.out.clear();
    if let Err(e) = flushed {
        write_failed(cx, &e);
        return;
    }
    io.leave_seat();
    io.stop_pacing();
    let early = conn.take_unparsed();
    let run = AssertUnwindSafe(|| on_upgrade(Upgraded::new(io, early)));
    if catch_unwind(run).is_err() {
        error!("{}: upgraded connection handler panicked", cx.peer);
        cx.counters.panic();
    }
}

/// Calls the handler; a panic becomes a `500` that closes the connection.
/// A handler that blocked last time on this connection (`expect_block`)
/// first lets another thread take the worker's seat. Returns the response
/// and whether the call blocked (ran across two monitor ticks).
fn call<H: Handler + ?Sized>(
    handler: &H,
    req: &mut Request<'_>,
    peer: Peer,
    counters: &Counters,
    seat: &mut dyn Seating,
    expect_block: bool,
) -> (Response, bool) {
    if expect_block {
        seat.handler_may_block();
    }
    let before = seat.ticks();
    let resp = match catch_unwind(AssertUnwindSafe(|| handler.handle(req))) {
        Ok(resp) => resp,
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("<non-string panic>");
            error!("{peer}: handler panicked: {text}; answering 500");
            counters.panic();
            error_response(500)
        }
    };
    (resp, seat.ticks().wrapping_sub(before) >= 2)
}

/// RFC 9112 §9.3: persistence is the default for 1.1 and opt-in for 1.0;
/// either side's `close` ends it, and so does a body we could not frame or
/// finish reading.
fn keep_alive(head: &Head, resp: &Response, framing: ResponseFraming, body_done: bool, closing: bool) -> bool {
    let requested = match (head.version, head.connection) {
        (_, ConnectionOption::Close) => false,
        (Version::Http11, _) | (Version::Http10, ConnectionOption::KeepAlive) => true,
        (Version::Http10, ConnectionOption::Default) => false,
    };
    // Bytes after a request that asked for an upgrade may already be the
    // other protocol; when the handler declines it, they must not be read
    // as HTTP (RFC 9110 §7.8).
    let declined_upgrade = head.upgrade && resp.upgrade.is_none();
    requested && !resp.close && framing != ResponseFraming::CloseDelimited && body_done && !closing && !declined_upgrade
}

/// True when the answer at hand must be the connection's last: at
/// shutdown, once the client has sent nothing more. What it already sent is
/// served — requests buffered, a head begun (finished within its
/// deadline), and what a read finds in the socket now — each answer keeping
/// the connection open until the last one; but only until the end of the
/// drain ([`Ctx::drain_end`]), so that a client that keeps sending cannot
/// hold a worker past the shutdown grace (after it, only requests whole in
/// the buffer are served). Requests that arrive after the answer saying
/// `Connection: close` are not served (the close lingers over them); a
/// client may send them again on a new connection (RFC 9112 §9.3.1).
fn closing<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> bool {
    if !cx.is_stopping() {
        return false;
    }
    if is_past(cx.drain_end(), Instant::now()) {
        return !matches!(parse_head(conn.unparsed(), &cx.config.limits, &mut cx.scratch.spans), Ok(Some(_)));
    }
    if conn.has_unparsed() {
        return false;
    }
    let space = conn.read_space(cx.config.read_buffer_size());
    match now(|| io.read(space)) {
        Ok(Some(n)) if n > 0 => {
            conn.filled(n);
            false
        }
        Ok(None) => !io.input_begun(),
        _ => true,
    }
}

/// Writes or queues the body after its head: one in memory up to
/// [`INLINE_BODY`] is copied behind the head; a larger one, or a file, goes
/// out as far as the client takes it now, and the connection keeps the
/// rest (then goes on as `then`) rather than hold the worker; a stream is
/// written by the worker as it is produced.
fn write_body<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    body: Payload,
    framing: ResponseFraming,
    then: Then,
) -> io::Result<()> {
    if let ResponseFraming::None { .. } = framing {
        return Ok(());
    }
    let (out, timeout) = (&mut cx.scratch.out, cx.config.write_timeout);
    let (body, file) = match body {
        Payload::Static(b) => (Cow::Borrowed(b), None),
        Payload::Inline { bytes, len } => {
            out.extend_from_slice(&bytes[..usize::from(len)]);
            return Ok(());
        }
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
    send_with(conn, io, cx, body, file, then).map(drop)
}

#[cfg(test)]
mod tests;
