//! One request answered: the handler called (a panic becomes a `500`), the
//! rest of its body read or drained, the response checked against the
//! request and framed, whether the connection stays open decided, and the
//! body written or queued behind the head.

use std::borrow::Cow;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::phase::Then;
use super::send::{send_with, write_failed};
use super::state::chunked_body_settled_in;
use super::state::{ConnState, Slow};
use super::stream::Streaming;
use super::worker::{BUSY_RETRY_AFTER, Ctx, INLINE_BODY, Ran, Seating};
use crate::body::{Body, BodyError};
use crate::body_writer::{BodyWriter, copy_body};
use crate::deadline::is_past;
use crate::encode::{encode_head, error_response, overloaded_response, plan};
use crate::feed::{Closed, Feed, Session};
use crate::handler::Handler;
use crate::io::{Transport, now, write_all_wait};
use crate::net::Peer;
use crate::parse::{ConnectionOption, Head, parse_head};
use crate::proto::{BodyKind, ResponseFraming, Version};
use crate::request::Request;
use crate::response::{Payload, Refusal, Response};
use crate::stats::Counters;
use crate::upgrade::{OnUpgrade, Upgraded};

/// What became of a request besides its response.
struct Exchange {
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
pub(super) fn respond<T: Transport, H: Handler + ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    head: Head,
    blocks: bool,
) -> Then {
    // The response stays where the handler's answer landed: changed in
    // place, never moved (a move of a `Response` is a copy of its 144
    // bytes, read back before the stores that made it have landed; three
    // of them were 5% of the server's CPU on pipelined requests).
    let mut answer = None;
    let Exchange { is_head, is_connect, body_error, body_done } = exchange(conn, io, cx, &head, blocks, &mut answer);
    conn.requests += 1;
    let resp = match body_error {
        // No answer can reach the client: none is counted.
        Some(None) => return Then::Abort,
        // Every place for a worker waiting on a body, or for an upgrade,
        // taken: as for a stream refused.
        Some(Some(503)) => answer.insert(busy_response()),
        Some(Some(code)) => answer.insert(error_response(code)),
        // `call` always leaves an answer (a panic's is a `500`).
        None => answer.get_or_insert_with(|| error_response(500)),
    };
    cx.counters.requests(cx.scratch.stripe, 1);
    let mut framing = checked(resp, &head, is_head, is_connect, &cx.peer);
    // An upgrade not made (the body before it not read, the handler's
    // `101` refused) gives back the place reading its body took, before
    // its answer and lingering close: held to the end of the turn, it
    // would turn other upgrades and streams away meanwhile.
    if head.upgrade && resp.upgrade.is_none() {
        io.end_streaming();
    }
    if holds_worker(&resp.body, framing) && !io.begin_streaming() {
        framing = refuse_streaming(resp, &head, is_head, cx);
    }
    let keep_alive = keep_alive(&head, resp, framing, body_done, body_done && closing(conn, io, cx));
    let date = *cx.scratch.date.now();
    encode_head(resp, framing, keep_alive, head.version, &date, Some(&mut cx.scratch.head_start), &mut cx.scratch.out);
    if let Some(on_upgrade) = resp.upgrade.take() {
        return upgrade(conn, io, cx, on_upgrade);
    }
    let then = match keep_alive {
        true => Then::KeepAlive,
        // Part of the body is still to come, or requests were pipelined
        // behind this one.
        false if !body_done || conn.has_unparsed() => Then::Linger,
        false => Then::Close,
    };
    if let Err(e) = write_body(conn, io, cx, &mut resp.body, framing, then) {
        write_failed(cx, &e);
        return conn.cut_short(then);
    }
    // Most answers hold nothing to free once sent (their body taken, no
    // header or type made at run time): left undropped, which spares the
    // drop's look at every field (30 instructions per request).
    if resp.holds_nothing() {
        std::mem::forget(answer);
    }
    then
}

/// Runs the handler on the request at the front of the buffer, its
/// response put in `answer`, and reads or drains what it left of the body;
/// the buffer then starts after it.
#[inline(always)]
fn exchange<T: Transport, H: Handler + ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    head: &Head,
    blocks: bool,
    answer: &mut Option<Response>,
) -> Exchange {
    conn.make_full(&mut cx.scratch.buffers, cx.config.read_buffer_size());
    let needs_socket = body_needs_socket(conn, head);
    if needs_socket {
        conn.make_body_room();
    }
    let buffered_body = conn.unparsed().len() - head.len;
    let (start, _) = conn.bounds();
    let slow_before = conn.slow_handler();
    let (head_bytes, rest) = conn.split_at_head(head.len);
    // A body that is already here (or the part that dooms it) needs no
    // `100 Continue` (RFC 9110 §10.1.1), and one sent now could overtake
    // queued responses.
    let continue_due = head.expect_continue
        && needs_socket
        && !(head.body == BodyKind::Chunked
            && chunked_body_settled_in(&rest[..buffered_body], cx.config.limits.max_body_bytes));
    let tls = io.is_tls();
    let body = Body::new(head.body, io, rest, buffered_body, &cx.scratch.body_bounds, continue_due);
    let mut req = Request::new(head_bytes, *head, &cx.scratch.spans, cx.peer, tls, body, &cx.config.trusted_proxies);
    let method = req.method();
    let (is_head, is_connect) = (method == "HEAD", method == "CONNECT");
    // A connection with no blocking past may still call a route that
    // blocked for others (its first call, behind a proxy that opens a
    // connection per request): `blocks`, as the loop found.
    let expect_block = match slow_before {
        Slow::No if blocks => Slow::Slept,
        slow => slow,
    };
    let ran = call(cx.handler, &mut req, cx.peer, cx.counters, &mut *cx.seat, expect_block, answer);
    // A place among the calls expected to block is held for the call only,
    // not while the client takes the answer or an upgraded connection runs.
    if expect_block != Slow::No {
        cx.seat.blocking_done();
    }
    let switching = match answer {
        Some(resp) if resp.switches() => match crate::response::refusal(&req, resp) {
            Some(refusal) => {
                refuse_upgrade(resp, &cx.peer, refusal);
                false
            }
            None => true,
        },
        _ => false,
    };
    // A switch whose connection holds its worker (a closure) takes a place
    // among those; a session that parks takes none.
    let upgrading = switching && answer.as_ref().is_some_and(|resp| resp.upgrade.is_some());
    // A quick call not expected to block tells the routes nothing: its
    // route is not marked (else it would have been expected to).
    if ran != Ran::Quick || expect_block != Slow::No {
        cx.seat.route_ran(req.method(), req.path(), ran);
    }
    let body = req.body_mut();
    // Before an upgrade the body comes before the other protocol's bytes:
    // it is read whole (after a `100 Continue` when asked, RFC 9110 §7.8)
    // before the switch, or the switch is off. (Settled already when the
    // handler is wrapped in `access_log`: the same answer again.)
    let drained = body.settle(upgrading);
    let end = body.finish();
    let head_end = start + head.len;
    conn.consumed(head_end + end.pos, head_end + end.end);
    conn.handler_ran(ran);
    if let Some(e) = end.error {
        match e {
            BodyError::TimedOut => cx.counters.timeout(),
            BodyError::Busy => cx.counters.rejected(),
            BodyError::UpgradesFull => {
                warn!(
                    "{}: upgrade refused: {} workers stream bodies or run upgrades (max_streaming_workers); \
                     answering 503",
                    cx.peer,
                    cx.config.streaming_workers()
                );
                cx.counters.rejected();
            }
            BodyError::Io => cx.counters.io_error(),
            BodyError::Malformed | BodyError::TooLarge => cx.counters.parse_error(),
        }
    }
    let mut body_error = end.error.map(BodyError::status);
    if switching && !drained && body_error.is_none() {
        debug!("{}: upgrade refused: the request body could not be read first; answering 413", cx.peer);
        body_error = Some(Some(413));
    }
    Exchange { is_head, is_connect, body_error, body_done: drained && !end.continue_withheld }
}

/// Replaces a handler's response that cannot be sent as it is (`why`) with
/// a `500`.
#[cold]
fn refuse_response(resp: &mut Response, peer: &Peer, why: &str) {
    error!("{peer}: handler response refused ({why}); answering 500");
    *resp = error_response(500);
}

/// Replaces a handler's `101` that may not be sent with the answer the
/// refusal gives: a `500` for the handler's fault (logged as an error),
/// a `4xx` for a request that asked for no such switch (the client's: at
/// debug).
#[cold]
fn refuse_upgrade(resp: &mut Response, peer: &Peer, refusal: Refusal) {
    match refusal {
        Refusal::Handler(why) => refuse_response(resp, peer, why),
        Refusal::Client(_) => {
            debug!("{peer}: upgrade refused ({}); answering {}", refusal.why(), refusal.status());
            *resp = refusal.answer(resp);
        }
    }
}

/// The framing of the response, which is replaced by a `500` when the
/// handler's cannot be sent as it is.
#[inline(always)]
pub(super) fn checked(
    resp: &mut Response,
    head: &Head,
    is_head: bool,
    is_connect: bool,
    peer: &Peer,
) -> ResponseFraming {
    let framing = match plan(resp, head.version, is_head) {
        Ok(framing) => framing,
        Err(why) => {
            refuse_response(resp, peer, why);
            plan(resp, head.version, is_head).unwrap_or(ResponseFraming::CloseDelimited)
        }
    };
    // A 2xx to CONNECT makes the connection a tunnel (RFC 9112 §6.3), which
    // this server does not run: the answer goes out with no framing header
    // and no body (RFC 9110 §9.3.6), and the connection closes rather than
    // read tunnelled bytes as requests.
    if is_connect && (200..300).contains(&resp.status) {
        resp.close = true;
        return ResponseFraming::None { announce: None };
    }
    framing
}

/// True when `body` is written on the worker for as long as it lasts (a
/// stream's closure, a reader), so that it takes a place among the
/// server's streaming workers (`Server::max_streaming_workers`). Bodies in
/// memory and files go out as far as the client takes them now and park
/// with the rest; an answer with no body to write never runs its code.
#[inline(always)]
fn holds_worker(body: &Payload, framing: ResponseFraming) -> bool {
    matches!(body, Payload::Writer(_) | Payload::Reader { .. }) && !matches!(framing, ResponseFraming::None { .. })
}

/// Replaces an answer whose body would hold a worker, while every place
/// for one is taken, with a `503` that closes the connection; its closure
/// or reader is dropped unrun. Returns the `503`'s framing.
#[cold]
#[inline(never)]
fn refuse_streaming<H: ?Sized>(resp: &mut Response, head: &Head, is_head: bool, cx: &Ctx<'_, H>) -> ResponseFraming {
    warn!(
        "{}: streamed body refused: {} workers stream bodies or run upgrades (max_streaming_workers); answering 503",
        cx.peer,
        cx.config.streaming_workers()
    );
    cx.counters.rejected();
    *resp = busy_response();
    checked(resp, head, is_head, false, &cx.peer)
}

/// `503` with `Retry-After` and a close: the answer when every place of a
/// server-wide bound on workers is taken.
#[cold]
#[inline(never)]
fn busy_response() -> Response {
    overloaded_response(BUSY_RETRY_AFTER)
}

/// Sends the `101` and hands the connection, with the bytes already received
/// after the request, to the handler's closure, then gives back the place
/// among the server's upgraded connections that reading the body took
/// ([`Body::settle`](crate::body::Body::settle)). The connection closes
/// after; when the `101` could not be sent, as after an answer cut short.
fn upgrade<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    on_upgrade: OnUpgrade,
) -> Then {
    let flushed = write_all_wait(io, &cx.scratch.out, cx.config.write_timeout);
    cx.scratch.out.clear();
    if let Err(e) = flushed {
        io.end_streaming();
        write_failed(cx, &e);
        return conn.cut_short(Then::Close);
    }
    io.leave_seat();
    io.stop_pacing();
    let early = conn.take_unparsed();
    let (read_timeout, write_timeout) = (cx.config.upgrade_idle_timeout, cx.config.write_timeout);
    let run = AssertUnwindSafe(|| on_upgrade(Upgraded::new(io, &early, read_timeout, write_timeout)));
    if catch_unwind(run).is_err() {
        error!("{}: upgraded connection handler panicked", cx.peer);
        cx.counters.panic();
    }
    io.end_streaming();
    Then::Close
}

/// Calls the handler; a panic becomes a `500` that closes the connection.
/// A handler that blocked lately on this connection (`expect_block`: one
/// was seen asleep, or ran long, see [`Slow`]) first lets another thread
/// take the worker's seat. The response is put in `answer`, empty until
/// then (so it is made where it stays, not moved there); returns how the
/// call went.
pub(super) fn call<H: Handler + ?Sized>(
    handler: &H,
    req: &mut Request<'_>,
    peer: Peer,
    counters: &Counters,
    seat: &mut dyn Seating,
    expect_block: Slow,
    answer: &mut Option<Response>,
) -> Ran {
    debug_assert!(answer.is_none());
    // A call handed over before it runs is not watched by the monitor (its
    // seat is another thread's): how it went is read from its thread.
    let usage_before = if expect_block != Slow::No {
        seat.handler_may_block(expect_block == Slow::Slept);
        seat.sleeps_and_cpu().map(|usage| (usage, Instant::now()))
    } else {
        None
    };
    let clock = seat.ticks();
    let before = clock.load(Ordering::Relaxed);
    // `answer` is empty here: filled without dropping what it held (an
    // assignment, or `get_or_insert_with`, called the drop of an empty
    // response on every request). Forgetting `None` leaks nothing.
    let result = catch_unwind(AssertUnwindSafe(|| {
        std::mem::forget(answer.replace(handler.handle(req)));
    }));
    // `Some(true)`: it slept, and ran for less than half of it (it
    // blocked); `Some(false)`: it did not (it computed, maybe waiting a
    // moment for a lock); `None`: not read. Read at once: logging a panic
    // may wait too.
    let slept = match (usage_before, usage_before.and_then(|_| seat.sleeps_and_cpu())) {
        (Some(((sleeps, cpu), at)), Some((sleeps_after, cpu_after))) => {
            Some(sleeps_after > sleeps && cpu_after.saturating_sub(cpu) * 2 < at.elapsed())
        }
        _ => None,
    };
    if let Err(panic) = result {
        let text = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("<non-string panic>");
        error!("{peer}: handler panicked: {text}; answering 500");
        counters.panic();
        *answer = Some(error_response(500));
    }
    if clock.load(Ordering::Relaxed).wrapping_sub(before) < 2 {
        return Ran::Quick;
    }
    // What the monitor found of this worker, if it looked: not at a call
    // its seat was let go for, nor at one by a worker whose seat another
    // had taken over. Else the clock decides.
    match seat.seen_since(before) {
        Some(true) => Ran::Asleep,
        Some(false) => Ran::Quick,
        // A call handed over: what its thread tells, as if seen.
        None => match slept {
            Some(true) => Ran::Asleep,
            Some(false) => Ran::Quick,
            None => Ran::Long,
        },
    }
}

/// RFC 9112 §9.3: persistence is the default for 1.1 and opt-in for 1.0;
/// either side's `close` ends it, and so does a body we could not frame or
/// finish reading.
pub(super) fn keep_alive(
    head: &Head,
    resp: &Response,
    framing: ResponseFraming,
    body_done: bool,
    closing: bool,
) -> bool {
    let requested = match (head.version, head.connection) {
        (_, ConnectionOption::Close) => false,
        (Version::Http11, _) | (Version::Http10, ConnectionOption::KeepAlive) => true,
        (Version::Http10, ConnectionOption::Default) => false,
    };
    // Bytes after a request that asked for an upgrade may already be the
    // other protocol; when the handler declines it, they must not be read
    // as HTTP (RFC 9110 §7.8).
    let declined_upgrade = head.upgrade && !resp.switches();
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
    body: &mut Payload,
    framing: ResponseFraming,
    then: Then,
) -> io::Result<()> {
    if let ResponseFraming::None { .. } = framing {
        // A session after its `101`; or an event stream with no body to
        // carry it (the answer to a `HEAD`), whose senders are told so.
        if let Payload::Events(..) = body {
            if let Payload::Events(feed, session) = std::mem::replace(body, Payload::Static(b"")) {
                start_stream(conn, cx, feed.start(), session, framing, then);
            }
        }
        return Ok(());
    }
    let (out, timeout) = (&mut cx.scratch.out, cx.config.write_timeout);
    // A short body is copied from where it is; any other is taken out of
    // the response (a move of the whole body, which a short one is spared).
    if let Payload::Inline(short) = body {
        short.append_to(out);
        return Ok(());
    }
    let (body, file) = match std::mem::replace(body, Payload::Static(b"")) {
        Payload::Static(b) => (Cow::Borrowed(b), None),
        // (Appended above.)
        Payload::Inline(short) => {
            short.append_to(out);
            return Ok(());
        }
        Payload::Owned(b) => (Cow::Owned(b), None),
        // Copied from where it is kept: behind the head when it fits, else
        // into a body the connection may keep while the client is slow.
        Payload::Shared(shared) if shared.bytes().len() <= INLINE_BODY => {
            out.extend_from_slice(shared.bytes());
            return Ok(());
        }
        Payload::Shared(shared) => (Cow::Owned(shared.bytes().to_vec()), None),
        Payload::File { file, len } => (Cow::Borrowed(&[][..]), Some((file, len))),
        // Each gives back its place among the streaming workers (taken in
        // `respond`) once its code has run: what it left is sent as any
        // answer's rest.
        Payload::Reader { reader, .. } => {
            let written =
                streamed(cx.counters, &cx.peer, || copy_body(reader, BodyWriter::new(io, out, framing, timeout)));
            io.end_streaming();
            return written;
        }
        // The connection parks between its messages (`http1::stream`).
        Payload::Events(feed, session) => {
            start_stream(conn, cx, feed.start(), session, framing, then);
            return Ok(());
        }
        Payload::Writer(write) => {
            let written = streamed(cx.counters, &cx.peer, || {
                let mut writer = BodyWriter::new(io, out, framing, timeout);
                write(&mut writer)?;
                writer.finish()
            });
            io.end_streaming();
            return written;
        }
    };
    if file.is_none() && body.len() <= INLINE_BODY {
        out.extend_from_slice(&body);
        return Ok(());
    }
    send_with(conn, io, cx, body, file, then).map(drop)
}

/// Begins an event stream, or a session after its `101`, behind its head:
/// the connection parks between messages (see `http1::stream`). A stream
/// with no body (the answer to a `HEAD`, or of a status that has none)
/// carries no events: its senders are told the client is gone. A session
/// ends with the connection.
fn start_stream<H: ?Sized>(
    conn: &mut ConnState,
    cx: &mut Ctx<'_, H>,
    feed: Arc<Feed>,
    session: Option<Box<dyn Session>>,
    framing: ResponseFraming,
    then: Then,
) {
    let (chunked, then) = match framing {
        _ if session.is_some() => (false, Then::Close),
        ResponseFraming::Chunked => (true, then),
        ResponseFraming::CloseDelimited => (false, then),
        ResponseFraming::None { .. } | ResponseFraming::Length(_) => {
            feed.close(Closed::Gone);
            return;
        }
    };
    let stream = Streaming::new(feed, session, chunked, then, &cx.scratch.out, Instant::now());
    cx.scratch.out.clear();
    conn.phase.stream(stream);
}

/// Runs a body's own code (a reader's `read`, a stream's closure): a panic
/// there is an error that cuts this answer short, like one it returns.
/// The answers queued before it still go out (the connection closes after
/// them), where a panic left to the worker would drop them with it.
fn streamed(counters: &Counters, peer: &Peer, send: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
    catch_unwind(AssertUnwindSafe(send)).unwrap_or_else(|_| {
        error!("{peer}: panic while producing a response body; cutting it short");
        counters.panic();
        Err(io::Error::other("the body's code panicked"))
    })
}

/// True when the request's body is not all in the buffer: reading it waits
/// on the client.
pub(super) fn body_needs_socket(conn: &ConnState, head: &Head) -> bool {
    match head.body {
        BodyKind::Empty => false,
        BodyKind::Length(n) => n > (conn.unparsed().len() - head.len) as u64,
        BodyKind::Chunked => true,
    }
}
