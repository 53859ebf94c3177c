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

mod close;
mod driver;
mod head;
mod phase;
mod read_buf;
mod respond;
mod routes;
mod send;
mod state;
mod stream;
mod worker;

pub(crate) use driver::Driver;
pub(crate) use routes::Routes;

use std::io;
use std::time::{Duration, Instant};

use crate::deadline::is_past;
use crate::encode::{encode_error, encode_overloaded};
use crate::handler::Handler;
use crate::io::{Ready, Transport, now};
use crate::parse::{Head, ParseError};

use close::{close, close_idle, close_lingering, linger};
use head::{Parsed, parse_buffered};
use phase::{Drain, Dry, Kind};
pub(crate) use phase::{Expiry, Then};
use respond::{body_needs_socket, respond};
use send::{Flushed, pause, send_before_going_on, send_queued, write_failed};
pub(crate) use state::ConnState;
use worker::{BUSY_RETRY_AFTER, PIPELINE_FLUSH, TURN_BYTES, TURN_REQUESTS};
pub(crate) use worker::{Ctx, Next, NoSeat, Ran, Scratch, Seating};

/// How much of its turn a connection has used, and whether its socket was
/// read dry.
#[derive(Debug, Default)]
struct Turn {
    requests: u32,
    bytes: usize,
    /// The last read emptied the socket: parking is safe.
    dry: bool,
    /// The last read began once the shutdown was seen: a socket it found
    /// empty held nothing sent before the shutdown began.
    read_stopping: bool,
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
    cx.routes_remembered = cx.seat.routes_remembered();
    if let Some(next) = pick_up(conn, io, cx) {
        return next;
    }
    let mut turn = Turn::default();
    loop {
        let head = match parse_buffered(conn, cx) {
            Parsed::Head(head) => head,
            Parsed::More => match read_more(conn, io, cx, &mut turn) {
                // A client that sends faster than the worker reads (empty
                // lines, a large body collected) must not hold it either.
                Read::Got if turn.is_spent() => return read_turn_spent(conn, io, cx, &turn),
                Read::Got => continue,
                Read::Dry => match park(conn, io, cx, &mut turn) {
                    Some(next) => return next,
                    None => continue,
                },
                Read::Closed => return end_of_input(conn, io, cx),
                Read::Stop(next) => return next,
            },
            Parsed::Refused(e) => return refuse(conn, io, cx, e),
        };
        // Earlier answers go out before a handler that may wait on the
        // client for a body, or that is expected to block: on this
        // connection, or on a route seen blocking. (Not before every
        // handler: with 16 requests pipelined, a write per answer cut
        // throughput 4x, 875k to 200k req/s.)
        let answers_wait = !cx.scratch.out.is_empty();
        // (A request given a place while it waited uses it, whatever the
        // route's memory says now: else the place would be lost.)
        let blocks = conn.waits_for_place() || conn.expects_slow_handler() || route_expected_to_block(conn, cx, &head);
        if body_needs_socket(conn, &head) || (answers_wait && blocks) {
            if let Some(next) = send_before_going_on(conn, io, cx) {
                return next;
            }
        }
        // A call expected to block runs only with a place among those
        // (`shared/growth.rs`); without one, the request waits parked.
        let placed = blocks && cx.seat.admit_blocking(conn.take_place());
        if blocks && !placed {
            conn.wait_for_place();
            return pause(conn, cx, Next::WaitForPlace);
        }
        turn.requests += 1;
        let then = respond(conn, io, cx, head, blocks);
        // Given back after the handler's call (`respond::exchange`); here
        // in case the answer ended before it.
        if placed {
            cx.seat.blocking_done();
        }
        match then {
            _ if conn.phase.holds_answer() => {
                if conn.is_sending() {
                    return pause(conn, cx, Next::Park);
                }
                if let Some(next) = stream::turn(conn, io, cx) {
                    return next;
                }
            }
            Then::KeepAlive => {}
            Then::Close => return close(conn, io, cx, true),
            Then::Linger => return close_lingering(conn, io, cx),
            Then::Abort => return close(conn, io, cx, false),
        }
        if conn.has_unparsed() {
            // The next request came before this answer.
            conn.pipelined = true;
        } else if turn.dry {
            // A client that waits for each answer has not sent its next
            // request yet: after a read that emptied the socket, park at
            // once.
            match park(conn, io, cx, &mut turn) {
                Some(next) => return next,
                None => continue,
            }
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
        Kind::Streaming => stream::turn(conn, io, cx),
        // The head deadline, and what a body being collected has earned
        // (not for a request that waited for a place to run).
        Kind::Head if !conn.waits_for_place() && is_past(conn.deadline(cx.config), Instant::now()) => {
            cx.counters.timeout();
            Some(answer_error(conn, io, cx, 408))
        }
        Kind::Head | Kind::Waiting { .. } => None,
    }
}

/// Ends a turn that read its share of bytes before the socket ran dry:
/// the others of its seat go first. A connection that has sent nothing but
/// empty lines since its clock started never parks, so the monitor never
/// sees its deadline: it is judged here (see [`past_deadline_unrequested`]),
/// and at shutdown it closes as an idle one does.
fn read_turn_spent<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    turn: &Turn,
) -> Next {
    // At shutdown, only once the drain is over: a request the client sent
    // behind the lines before the stop is still to be read, in a later
    // turn (the close would read it and discard it).
    if cx.is_stopping() && turn.read_stopping && conn.awaits_request() && is_past(cx.drain_end(), Instant::now()) {
        return close_idle(conn, io, cx);
    }
    if let Some(next) = past_deadline_unrequested(conn, io, cx) {
        return next;
    }
    match send_before_going_on(conn, io, cx) {
        Some(next) => next,
        None => pause(conn, cx, Next::Yield),
    }
}

/// Closes a connection that has sent nothing but empty lines since its
/// clock started, once its deadline has passed, as the monitor closes one
/// parked past it; `None` otherwise. The monitor may never find it parked:
/// one whose bytes come faster than they are read never parks, and one
/// whose bytes come between its last read and its park goes back to its
/// worker at once (`Shared::park`), turn after turn. What the client still
/// sends is read and discarded while the close lingers (`close`).
#[inline]
fn past_deadline_unrequested<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
) -> Option<Next> {
    // A connection parking after an answer has no clock running yet: it
    // reads neither its bytes nor the time.
    let due = conn.phase.waiting_deadline(cx.config)?;
    close_unrequested(conn, io, cx, due)
}

/// [`past_deadline_unrequested`] for a connection whose clock runs.
#[inline(never)]
fn close_unrequested<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    due: Instant,
) -> Option<Next> {
    if !conn.awaits_request() || due > Instant::now() {
        return None;
    }
    debug!("{}: closing after timeout: no request came", cx.peer);
    cx.counters.timeout();
    Some(close(conn, io, cx, true))
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
    turn.read_stopping = cx.is_stopping();
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

/// Sends what the client had not taken when the connection parked. `None`
/// once everything is out and the connection goes on to its next request;
/// else what becomes of it.
fn resume_sending<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Option<Next> {
    let policy = cx.policy();
    let (unsent, then) = conn.phase.unsent()?;
    let then = match unsent.resume(io, policy) {
        Ok(true) => then,
        Ok(false) => return Some(pause(conn, cx, Next::Park)),
        Err(e) => {
            write_failed(cx, &e);
            conn.cut_short(then)
        }
    };
    conn.phase.sent();
    match then {
        Then::KeepAlive => None,
        Then::Close => Some(close(conn, io, cx, true)),
        Then::Linger => Some(close_lingering(conn, io, cx)),
        Then::Abort => Some(close(conn, io, cx, false)),
    }
}

/// Parks a connection whose socket was read dry; `None`: read it once more
/// first.
fn park<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    turn: &mut Turn,
) -> Option<Next> {
    // Part of a TLS record read (rustls holds it; the socket shows nothing
    // more) is a request on its way, like the first bytes of a head in the
    // buffer: a kept-alive connection starts its head clock. Left waiting
    // as an idle one, it would be closed at the idle deadline under the
    // request (the monitor looks for one in the socket, not in rustls).
    if conn.phase.kind() == (Kind::Waiting { first: false }) && io.input_begun() {
        conn.begin_head(Instant::now(), true);
    }
    // At shutdown an idle connection closes instead — like any close after
    // an answer, lingering if the client already sent more. But only after
    // a read that began once the shutdown was seen: a request that arrived
    // after the last read but before the shutdown began was sent before it,
    // and must be served, not met by the end of stream (`close_idle`).
    if conn.when_dry(cx.config, cx.drain()) == Dry::Close {
        if !turn.read_stopping {
            turn.dry = false;
            return None;
        }
        return Some(close_idle(conn, io, cx));
    }
    if let Some(next) = past_deadline_unrequested(conn, io, cx) {
        return Some(next);
    }
    if !conn.hold_parked_head(cx.counters, cx.config) {
        return Some(refuse_busy(conn, io, cx));
    }
    Some(match send_queued(conn, io, cx, Then::KeepAlive) {
        Flushed::All | Flushed::Held => pause(conn, cx, Next::Park),
        Flushed::Failed => pause(conn, cx, Next::Close),
    })
}

/// Answers a request the parser refused, and closes.
fn refuse<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, e: ParseError) -> Next {
    debug!("{}: refusing request: {e:?}", cx.peer);
    cx.counters.parse_error();
    answer_error(conn, io, cx, e.status())
}

/// Answers `503` with `Retry-After` ([`BUSY_RETRY_AFTER`]) to a request
/// whose unfinished head would have parked past the server-wide
/// `max_pending_head_bytes`, then closes lingering.
fn refuse_busy<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Next {
    debug!("{}: unfinished head past the server-wide max_pending_head_bytes; answered 503", cx.peer);
    cx.counters.rejected();
    conn.requests += 1;
    cx.counters.requests(cx.scratch.stripe, 1);
    let date = *cx.scratch.date.now();
    encode_overloaded(BUSY_RETRY_AFTER, &date, &mut cx.scratch.out);
    close_lingering(conn, io, cx)
}

/// Answers `status` on the server's behalf, then closes lingering.
fn answer_error<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, status: u16) -> Next {
    conn.requests += 1;
    cx.counters.requests(cx.scratch.stripe, 1);
    let date = *cx.scratch.date.now();
    // The answer to a HEAD request has no body, even when the request is
    // refused before its head is whole.
    encode_error(status, conn.holds_head_request(), &date, &mut cx.scratch.out);
    close_lingering(conn, io, cx)
}

/// True when the request's route was seen blocking lately (on any
/// connection): its call will be handed over before it runs.
fn route_expected_to_block<H: ?Sized>(conn: &ConnState, cx: &Ctx<'_, H>, head: &Head) -> bool {
    if !cx.routes_remembered {
        return false;
    }
    let (method, path) = crate::request::route(&conn.unparsed()[..head.len], head);
    cx.seat.route_blocks(method, path)
}

#[cfg(test)]
mod tests;
