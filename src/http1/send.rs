//! The way out of a turn: the queued answers written as far as the client
//! takes them (the rest held with the connection, which parks until it can
//! take more), and the turn paused, the worker's buffers given back.

use std::borrow::Cow;
use std::io;
use std::time::Instant;

use super::phase::Then;
use super::state::ConnState;
use super::worker::{Ctx, INLINE_BODY, KEPT_OUT_CAPACITY, Next};
use crate::io::{Transport, now};
use crate::outbox::{self, Sent};

/// What writing the queued answers achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flushed {
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
pub(super) fn send_queued<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    then: Then,
) -> Flushed {
    if let Some(flushed) = send_whole(conn, io, cx) {
        return flushed;
    }
    match send_with(conn, io, cx, Cow::Borrowed(&[]), None, then) {
        Ok(true) => Flushed::All,
        Ok(false) => Flushed::Held,
        Err(e) => {
            write_failed(cx, &e);
            Flushed::Failed
        }
    }
}

/// The common cases of [`send_queued`] on their own: nothing queued, or
/// one write takes all the queued answers (a client waiting for each
/// answer has room for it). `None` when the general way must go on: an
/// answer already waiting on the client, the shutdown (which waits for the
/// client), a write the client took only part of (what it took is dropped
/// from the queue first) or none of, or a TLS session that could not pass
/// on all it holds. The general way costs some 100 instructions more per
/// keep-alive request (its body and file arguments, and the held answer's
/// set-up, at each of the turn's two flushes).
#[inline(always)]
fn send_whole<T: Transport, H: ?Sized>(conn: &ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Option<Flushed> {
    if conn.is_sending() || cx.is_stopping() {
        return None;
    }
    let out = &mut cx.scratch.out;
    if !out.is_empty() {
        match now(|| io.write(out)) {
            Ok(Some(n)) if n == out.len() => out.clear(),
            Ok(Some(n)) => {
                out.drain(..n);
                return None;
            }
            Ok(None) => return None,
            Err(e) => {
                write_failed(cx, &e);
                return Some(Flushed::Failed);
            }
        }
    }
    match now(|| io.flush()) {
        Ok(Some(())) => Some(Flushed::All),
        // What a TLS session could not pass on yet is held as any rest.
        Ok(None) => None,
        Err(e) => {
            write_failed(cx, &e);
            Some(Flushed::Failed)
        }
    }
}

/// [`send_queued`]: `None` once everything is out, else the turn ends —
/// parked until the client takes the rest (then the connection goes on as
/// `then`), or closed after a failed write.
pub(super) fn flush<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    then: Then,
) -> Option<Next> {
    match send_queued(conn, io, cx, then) {
        Flushed::All => None,
        Flushed::Held => Some(pause(conn, cx, Next::Park)),
        Flushed::Failed => Some(pause(conn, cx, Next::Close)),
    }
}

/// Logs a failed write; one that waited too long on the client counts as a
/// timeout.
pub(super) fn write_failed<H: ?Sized>(cx: &Ctx<'_, H>, e: &io::Error) {
    debug!("{}: write failed: {e}", cx.peer);
    if e.kind() == io::ErrorKind::TimedOut {
        cx.counters.timeout();
    }
}

/// [`send_queued`], with `body`, then `file` (a file and the length to send
/// from its position), written after the queued answers.
pub(super) fn send_with<T: Transport, H: ?Sized>(
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
pub(super) fn send_before_going_on<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
) -> Option<Next> {
    flush(conn, io, cx, Then::KeepAlive)
}

/// Ends a turn: the worker's buffer goes back, the phase's clock starts.
/// A yielded turn's wait in the ready list is the server's, not the
/// client's: it starts no head clock (requests it left whole must not be
/// answered `408` for a queue's delay).
pub(super) fn pause<H: ?Sized>(conn: &mut ConnState, cx: &mut Ctx<'_, H>, next: Next) -> Next {
    conn.detach(&mut cx.scratch.buffers, cx.config.read_buffer_size(), Instant::now(), next != Next::Yield);
    // Queued answers reach `PIPELINE_FLUSH` and one more; a handler's huge
    // head (or a stream's write) may have grown the buffer far past that,
    // and a worker keeps its scratch for life.
    if cx.scratch.out.is_empty() && cx.scratch.out.capacity() > KEPT_OUT_CAPACITY {
        cx.scratch.out = Vec::with_capacity(INLINE_BODY + 1024);
    }
    next
}
