//! How a connection closes: after its answers are out, at once or
//! lingering (reading and discarding what the client still sends, so that
//! the close does not reset the connection under its answer), and how an
//! idle one closes at shutdown.

use std::io;
use std::time::{Duration, Instant};

use super::phase::{Dry, Then};
use super::send::{flush, pause};
use super::state::ConnState;
use super::worker::{Ctx, Next, TURN_BYTES};
use crate::deadline::{after, earliest};
use crate::io::{Ready, Transport, now};
use crate::stop::LINGER;

/// At shutdown, how long a lingering close waits on its socket at a time
/// while other connections wait for a worker (see [`linger`]).
pub(super) const LINGER_SLICE: Duration = Duration::from_millis(10);

/// Closes after the answers queued: once the client has taken them (the
/// connection parks meanwhile). After an answer (`answered`: whole, or cut
/// short by a failing body), input the client sent that the worker has not
/// read — requests pipelined behind a `Connection: close`, or behind the
/// cut answer — would turn the close into a reset that can destroy the
/// answers the client has not read: when a read finds any, or the client
/// has pipelined on this connection (its next request may be on the way),
/// the close lingers instead. (After the end of the client's stream, or a
/// failed read of its body, it closes at once.)
pub(super) fn close<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    answered: bool,
) -> Next {
    if let Some(next) = flush(conn, io, cx, Then::Close) {
        return next;
    }
    if answered && has_unread_input(conn, io) {
        return close_lingering(conn, io, cx);
    }
    if let Some(next) = end_whole(conn, io, cx, Then::Close) {
        return next;
    }
    // A client that pipelined may have sent more that no read has seen
    // yet: lingering, once close_notify is out as after any whole answer
    // (the lingering close's own is best effort, lost on a full socket,
    // and a close-delimited answer would look truncated).
    if answered && conn.pipelined {
        return close_lingering(conn, io, cx);
    }
    // At shutdown the server chose the close, and a client that pipelines
    // may send more once it has read this answer: as after an idle one.
    // (An answer cut short has no tail to protect.)
    if answered && cx.is_stopping() && !conn.is_torn() {
        // close_notify went out with `end_whole` when the answers did.
        io.shutdown_write_torn();
        return linger_after_recent(conn, io, cx, Instant::now());
    }
    pause(conn, cx, Next::Close)
}

/// After answers that went out whole, ends a TLS session with close_notify
/// (RFC 8446 §6.1; by it a close-delimited answer is known whole, RFC 9112
/// §9.8), sent as the answers are: when the socket has no room for it,
/// the connection parks until it has (then goes on as `then`), so that a
/// full socket does not lose it. `None` once it is out, or when an answer
/// was cut short (the session must end torn); nothing on other streams.
fn end_whole<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    then: Then,
) -> Option<Next> {
    if conn.is_torn() {
        return None;
    }
    io.close_notify();
    flush(conn, io, cx, then)
}

/// Closes a connection idle at shutdown (the sweep hands every parked one
/// to a worker, which read it once more: a request that came in the
/// meantime was served). Answers still queued go out, then the write side
/// shuts, so a request that races the close finds the end of stream before
/// anything else — a client may send it again on a new connection (RFC 9112
/// §9.3.1) — and not a reset; what came all the same is read and discarded
/// while lingering.
pub(super) fn close_idle<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Next {
    if let Some(next) = flush(conn, io, cx, Then::Close) {
        return next;
    }
    // close_notify is best effort here, as when the idle timeout closes
    // the connection: no answer of a connection gone idle is
    // close-delimited, so the alert vouches for none, and a client that
    // stopped reading must not hold the worker (the flush waits at
    // shutdown) for the write timeout.
    io.shutdown_write();
    if has_unread_input(conn, io) {
        return close_lingering(conn, io, cx);
    }
    match conn.phase.answered_at(Instant::now()) {
        Some(at) => linger_after_recent(conn, io, cx, at),
        None => pause(conn, cx, Next::Close),
    }
}

/// Closes, its write side shut, a connection that answered at `answered`
/// and has sent nothing more: no read tells whether the kernel still holds
/// the tail of that answer, and a request the client sends once it has
/// read part of it would meet a closed socket, whose reset discards the
/// tail. So the close lingers until [`LINGER`] after the answer (the client
/// reads to the end of stream and closes, most often much sooner); long
/// idle, it closes at once. The end is fixed by the answer, not by when the
/// lingering begins; and a worker lingering at shutdown yields to the
/// other connections ready (see [`linger`]), whose answers, and so whose
/// lingers, then do not wait for this one to end.
fn linger_after_recent<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    answered: Instant,
) -> Next {
    match after(answered, LINGER).filter(|&end| end > Instant::now()) {
        Some(end) => linger_until(conn, io, cx, end),
        None => pause(conn, cx, Next::Close),
    }
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
pub(super) fn close_lingering<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Next {
    if let Some(next) = flush(conn, io, cx, Then::Linger) {
        return next;
    }
    // close_notify goes with the shutdown, best effort: waiting for room
    // for it would stop the reads that keep a client still sending (an
    // upload it finishes before it reads) from a reset.
    match conn.is_torn() {
        true => io.shutdown_write_torn(),
        false => io.shutdown_write(),
    }
    linger_until(conn, io, cx, Instant::now() + LINGER)
}

/// Lingers, the write side shut, until `end` (at shutdown no later than
/// the grace allows: [`linger`] holds every linger to it).
fn linger_until<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, end: Instant) -> Next {
    conn.linger_after_answer(end);
    linger(conn, io, cx, end)
}

/// Reads and discards input of a connection closing after an error answer:
/// parks when there is none (at shutdown, when nothing parks, waits for it
/// instead), yields after its turn's share of bytes, closes at the end of
/// stream or past `until`.
///
/// At shutdown a wait lasts [`LINGER_SLICE`] at a time, and when other
/// connections wait for a worker (requests sent before the stop, other
/// closes lingering; the sweep may queue them only after the linger has
/// begun) the connection then yields: the worker serves them and comes
/// back to it. Waited out whole, lingers followed one another on
/// a worker — the next connection's last answer, which fixes the end of
/// its linger, made only once the linger before it was over — so they
/// added up (to the whole grace), and a request behind them was served
/// only at the end of the grace, too late for `shutdown` to see it done.
pub(super) fn linger<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    until: Instant,
) -> Next {
    // A linger begun before the stop (parked, handed back by the sweep)
    // ends by the grace as one begun at shutdown does.
    let until = earliest(Some(until), cx.stopping.linger_end(cx.config.shutdown_grace)).unwrap_or(until);
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
                    let left = until.saturating_duration_since(Instant::now());
                    let wait = match cx.seat.others_ready() {
                        Some(_) => left.min(LINGER_SLICE),
                        None => left,
                    };
                    match io.wait(Ready::Readable, wait) {
                        Ok(()) => {}
                        // Time is left: others waiting go first (after a
                        // wait, so that lingers yielding to one another do
                        // not spin), else a read once more.
                        Err(e) if wait < left && e.kind() == io::ErrorKind::TimedOut => {
                            if cx.seat.others_ready() == Some(true) {
                                return pause(conn, cx, Next::Yield);
                            }
                        }
                        Err(_) => break,
                    }
                }
                Dry::Park | Dry::Close => return pause(conn, cx, Next::Park),
            },
        }
    }
    pause(conn, cx, Next::Close)
}
