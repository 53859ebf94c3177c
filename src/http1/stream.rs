//! A connection that parks between messages: a server-sent event stream, or
//! a session after a `101` (WebSocket). What its senders queue ([`Feed`])
//! is written when it comes, as far as the client takes it, and between
//! messages the connection parks like an idle one, holding no worker. A
//! sender wakes it through the server (see `feed::Notify`); the monitor
//! hands it to a worker when a keep-alive is due, or cuts it when the
//! client stops taking bytes. A session also reads: what the client sends
//! wakes the connection as a request would, and the session calls the
//! application for each message, on the worker.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::close::{close, close_lingering};
use super::phase::Then;
use super::send::{pause, write_failed};
use super::state::ConnState;
use super::worker::{Ctx, Next, TURN_BYTES};
use crate::config::FREE_PENDING_BYTES;
use crate::feed::{Closed, Feed, Session, Taken};
use crate::io::{Ready, Transport, now};
use crate::stats::{Counters, Held};
use crate::stop::LINGER;

/// The keep-alive comment of an event stream, as a chunk and bare.
const BEAT_CHUNKED: &[u8] = b"3\r\n:\n\n\r\n";
const BEAT: &[u8] = b":\n\n";

/// The end of a chunked body.
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// A written-out buffer keeps at most this much capacity while parked.
const KEPT_CAPACITY: usize = 256;

/// The close code a session ends with at shutdown (RFC 6455 §7.4.1:
/// going away).
const GOING_AWAY: u16 = 1001;

/// The close code of a session whose message on its way found no room in
/// the server's budget (the IANA registry's "Try Again Later").
const TRY_AGAIN_LATER: u16 = 1013;

/// A stream or session under way on its connection.
pub(crate) struct Streaming {
    feed: Arc<Feed>,
    /// The protocol switched to; `None`: server-sent events.
    session: Option<Box<dyn Session>>,
    /// The body is chunked (HTTP/1.1); else it is delimited by the close.
    chunked: bool,
    /// What becomes of the connection once the stream has ended whole.
    then: Then,
    /// Bytes for the client, written from `at`: the response head first,
    /// then what is taken from the feed (taken only once these are out, so
    /// this holds at most the feed's limit and a chunk's framing) and what
    /// the session answers.
    pending: Vec<u8>,
    at: usize,
    /// Everything pending was written, but a TLS session holds records of
    /// it that the socket had no room for: the connection waits for room
    /// as if bytes were pending.
    unflushed: bool,
    /// When the client last took bytes, or bytes began to wait for it: the
    /// write timeout runs from it while bytes are pending.
    since: Instant,
    /// The last write left bytes pending (so `since` runs).
    waiting: bool,
    /// A keep-alive is due this long after this: the last bytes queued (a
    /// stream), or the last heard from the client or sent to it as a ping
    /// (a session).
    beat_from: Instant,
    /// When the client last sent bytes (a session).
    heard_at: Instant,
    /// A session closed from this side at this time: the client's close
    /// is awaited until [`LINGER`] after it.
    closing: Option<Instant>,
    /// The end is in `pending`: once it is out, the stream is over.
    ended: bool,
    /// Pending bytes of a parked stream, counted against `max_unsent_bytes`.
    held: Option<Held>,
    /// What a session holds of a message on its way past
    /// `FREE_PENDING_BYTES`, counted against `max_pending_head_bytes`.
    unfinished: Option<Held>,
}

impl fmt::Debug for Streaming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Streaming")
            .field("feed", &self.feed)
            .field("session", &self.session.is_some())
            .field("pending", &(self.pending.len() - self.at))
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Streaming {
    /// A stream starting with `head` (the response's head, after any
    /// answers queued before it).
    pub(crate) fn new(
        feed: Arc<Feed>,
        session: Option<Box<dyn Session>>,
        chunked: bool,
        then: Then,
        head: &[u8],
        now: Instant,
    ) -> Streaming {
        Streaming {
            feed,
            session,
            chunked,
            then,
            pending: head.to_vec(),
            at: 0,
            unflushed: false,
            since: now,
            waiting: false,
            beat_from: now,
            heard_at: now,
            closing: None,
            ended: false,
            held: None,
            unfinished: None,
        }
    }

    /// The feed, which the server wakes the connection through.
    pub(crate) fn feed(&self) -> &Arc<Feed> {
        &self.feed
    }

    /// True while bytes wait for the client to take them: the connection
    /// parks watching for room to write.
    pub(crate) fn is_blocked(&self) -> bool {
        self.at < self.pending.len() || self.unflushed
    }

    /// When the park ends: the write timeout while bytes are pending, the
    /// end of the wait for the client's close after the server's, else when
    /// a keep-alive is due (`None`: never).
    pub(crate) fn deadline(&self, write_timeout: Duration) -> Option<Instant> {
        if self.is_blocked() {
            return self.since.checked_add(write_timeout);
        }
        if let Some(closing) = self.closing {
            return Some(closing + LINGER);
        }
        self.beat_from.checked_add(self.feed.keep_alive()?)
    }

    /// True when the deadline ends the connection rather than calls for a
    /// keep-alive: bytes pending (the client stopped taking them), or a
    /// close not answered.
    pub(crate) fn stalls(&self) -> bool {
        self.is_blocked() || self.closing.is_some()
    }

    /// Writes what the client takes now: `Ok(true)` once everything
    /// pending is out.
    fn write<T: Transport>(&mut self, io: &mut T) -> std::io::Result<bool> {
        if !self.waiting {
            // Bytes begin to wait for the client now, not when it last
            // took some (maybe long ago, before a silence).
            self.since = Instant::now();
        }
        while self.at < self.pending.len() {
            match now(|| io.write(&self.pending[self.at..]))? {
                Some(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Some(n) => {
                    self.at += n;
                    self.since = Instant::now();
                }
                None => {
                    self.waiting = true;
                    return Ok(false);
                }
            }
        }
        // Over TLS the last records may be held in the session for room.
        self.unflushed = now(|| io.flush())?.is_none();
        if self.unflushed {
            self.waiting = true;
            return Ok(false);
        }
        self.waiting = false;
        self.at = 0;
        self.pending.clear();
        if self.pending.capacity() > KEPT_CAPACITY {
            self.pending = Vec::new();
        }
        self.held = None;
        Ok(true)
    }

    /// Takes (or grows) the share of `max_pending_head_bytes` (`cap`) that
    /// `unfinished` bytes of a message on its way need past
    /// `FREE_PENDING_BYTES`, and gives it back once a message is whole.
    /// False when the budget has no room.
    fn hold_unfinished(&mut self, unfinished: usize, counters: &Counters, cap: u64) -> bool {
        let beyond = unfinished.saturating_sub(FREE_PENDING_BYTES) as u64;
        if beyond == 0 {
            self.unfinished = None;
            return true;
        }
        match &mut self.unfinished {
            Some(share) => share.grow_to(beyond, cap),
            None => {
                self.unfinished = counters.hold_pending(beyond, cap);
                self.unfinished.is_some()
            }
        }
    }

    /// Queues the end: an event stream's last chunk, a session's close
    /// (`why` gone: the close was the client's, or the session's own).
    fn end(&mut self, why: Option<Closed>) {
        if let Some(why) = why {
            self.feed.close(why);
        }
        match &mut self.session {
            Some(session) if why == Some(Closed::Shutdown) => {
                session.close(GOING_AWAY, "the server is shutting down", &mut self.pending);
            }
            Some(_) => {}
            None if self.chunked => self.pending.extend_from_slice(LAST_CHUNK),
            None => {}
        }
        self.ended = true;
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        // However the connection ends, its senders learn of it.
        self.feed.close(Closed::Gone);
    }
}

/// What one look at the stream found.
enum Step {
    /// Look again: more was queued or written.
    Again,
    /// Nothing to do until the client takes bytes, sends some, or a message
    /// comes.
    Park,
    /// The client sent its share of a turn: the others of its seat go first.
    Yield,
    /// At shutdown, the client has not taken everything: wait for room.
    WaitForRoom,
    /// The stream is over, as planned: the connection goes on as `then`.
    Over(Then),
    /// The connection closes at once (nothing is expected from the client,
    /// or it went away, or failed to take or answer in time).
    Cut,
}

/// Goes on with the stream or session of `conn`: writes what is queued,
/// takes more, reads what the client sent, writes a keep-alive when one is
/// due. `None` when an event stream is over and the connection goes on to
/// its next request; else what becomes of it.
pub(super) fn turn<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Option<Next> {
    // Bytes taken from the feed and read from the client this turn.
    let mut moved = 0;
    loop {
        match look(conn, io, cx, &mut moved) {
            Step::Again => {}
            Step::Park => {
                // What the client sent meanwhile (a request pipelined behind
                // an event stream) takes its share of the server's budget
                // for parked bytes, as an unfinished head does.
                if !conn.hold_parked_head(cx.counters, cx.config) {
                    debug!("{}: stream cut: max_pending_head_bytes is held", cx.peer);
                    return Some(cut(conn, io, cx));
                }
                return Some(pause(conn, cx, Next::Park));
            }
            Step::Yield => return Some(pause(conn, cx, Next::Yield)),
            Step::WaitForRoom => {
                if let Err(e) = io.wait(Ready::Writable, cx.config.write_timeout) {
                    write_failed(cx, &e);
                    return Some(cut(conn, io, cx));
                }
            }
            Step::Over(then) => {
                conn.phase.sent();
                return match then {
                    Then::KeepAlive => None,
                    Then::Close => Some(close(conn, io, cx, true)),
                    Then::Linger => Some(close_lingering(conn, io, cx)),
                    Then::Abort => Some(close(conn, io, cx, false)),
                };
            }
            Step::Cut => return Some(cut(conn, io, cx)),
        }
    }
}

fn cut<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Next {
    conn.phase.sent();
    conn.cut_short(Then::Close);
    close(conn, io, cx, false)
}

fn look<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>, moved: &mut usize) -> Step {
    let stopping = cx.is_stopping();
    let Some(stream) = conn.phase.streaming() else { return Step::Over(Then::KeepAlive) };
    if stopping && !stream.ended {
        // What was sent before the stop goes out, then the end: the
        // application's close if it asked for one, else the server's.
        loop {
            match stream.feed.take(&mut stream.pending, stream.chunked) {
                Taken::Some => {}
                Taken::Cut => return Step::Cut,
                Taken::Close(code, reason) if stream.session.is_some() => {
                    if let Some(session) = &mut stream.session {
                        session.close(code, &reason, &mut stream.pending);
                    }
                    stream.feed.close(Closed::Shutdown);
                    stream.ended = true;
                    break;
                }
                Taken::Close(..) | Taken::Ended | Taken::Nothing => {
                    stream.end(Some(Closed::Shutdown));
                    break;
                }
            }
        }
        stream.then = Then::Close;
    }
    match stream.write(io) {
        Err(e) => {
            write_failed(cx, &e);
            return Step::Cut;
        }
        Ok(false) if stopping => return Step::WaitForRoom,
        Ok(false) => {
            // Parked with bytes pending: they count against what the
            // server holds for slow clients; past that, the stream is cut.
            if stream.held.is_none() {
                let len = (stream.pending.len() - stream.at) as u64;
                match cx.counters.hold(len, cx.config.max_unsent_bytes) {
                    Some(held) => stream.held = Some(held),
                    None => {
                        debug!("{}: stream cut: max_unsent_bytes is held for slow clients", cx.peer);
                        stream.feed.close(Closed::FellBehind);
                        return Step::Cut;
                    }
                }
            }
            return Step::Park;
        }
        Ok(true) => {}
    }
    if stream.ended {
        return Step::Over(stream.then);
    }
    let now = Instant::now();
    let before = stream.pending.len();
    match stream.feed.take(&mut stream.pending, stream.chunked) {
        Taken::Some => {
            if stream.session.is_none() {
                stream.beat_from = now;
            }
            // A sender that keeps the queue full for a client that keeps
            // up would keep the worker for ever: past a turn's share, the
            // seat's others go first (what was taken is written next turn).
            *moved += stream.pending.len() - before;
            if *moved >= TURN_BYTES {
                return Step::Yield;
            }
            return Step::Again;
        }
        Taken::Ended => {
            stream.end(None);
            return Step::Again;
        }
        Taken::Cut => {
            debug!("{}: stream cut: the client fell behind", cx.peer);
            return Step::Cut;
        }
        Taken::Close(code, reason) => {
            if let Some(session) = &mut stream.session {
                session.close(code, &reason, &mut stream.pending);
                stream.closing = Some(now);
            }
            return Step::Again;
        }
        Taken::Nothing => {}
    }
    if stream.session.is_some() {
        return session_input(conn, io, cx, moved, now);
    }
    if stream.deadline(cx.config.write_timeout).is_some_and(|due| due <= now) {
        stream.pending.extend_from_slice(if stream.chunked { BEAT_CHUNKED } else { BEAT });
        stream.beat_from = now;
        return Step::Again;
    }
    if !client_still_there(conn, io, cx) {
        debug!("{}: event stream ended by the client", cx.peer);
        return Step::Cut;
    }
    Step::Park
}

/// A session reads what the client sent (bytes that came behind the
/// `101`'s request first) and answers it; with nothing more, it pings a
/// silent client or gives up on one silent too long, or on a close not
/// answered in time.
fn session_input<T: Transport, H: ?Sized>(
    conn: &mut ConnState,
    io: &mut T,
    cx: &mut Ctx<'_, H>,
    moved: &mut usize,
    now: Instant,
) -> Step {
    if let Some(stream) = conn.phase.streaming() {
        // A client that keeps sending does not put off the end of the wait
        // for its close.
        if stream.closing.is_some_and(|closing| now >= closing + LINGER) {
            debug!("{}: session closed: the client did not answer the close", cx.peer);
            return Step::Cut;
        }
    }
    if !conn.has_unparsed() {
        if *moved >= TURN_BYTES {
            return Step::Yield;
        }
        let space = conn.read_space(cx.config.read_buffer_size());
        match crate::io::now(|| io.read(space)) {
            Ok(Some(0)) | Err(_) => {
                debug!("{}: session ended by the client", cx.peer);
                return Step::Cut;
            }
            Ok(Some(n)) => {
                conn.filled(n);
                *moved += n;
            }
            Ok(None) => {}
        }
    }
    let (Some(stream), input) = conn.stream_and_input() else { return Step::Over(Then::Close) };
    if !input.is_empty() {
        stream.heard_at = now;
        stream.beat_from = now;
        let session = stream.session.as_mut().expect("a session reads");
        match session.input(input, &mut stream.pending) {
            None => stream.end(None),
            Some(unfinished) => {
                if !stream.hold_unfinished(unfinished, cx.counters, cx.config.max_pending_head_bytes) {
                    debug!("{}: session closed: max_pending_head_bytes is held", cx.peer);
                    let session = stream.session.as_mut().expect("a session reads");
                    session.close(TRY_AGAIN_LATER, "the server is busy", &mut stream.pending);
                    stream.end(None);
                }
            }
        }
        conn.discard_unparsed();
        return Step::Again;
    }
    if stream.closing.is_some() {
        return Step::Park;
    }
    if stream.deadline(cx.config.write_timeout).is_some_and(|due| due <= now) {
        let silent = now.saturating_duration_since(stream.heard_at);
        stream.beat_from = now;
        let session = stream.session.as_mut().expect("a session reads");
        if !session.silent(silent, &mut stream.pending) {
            debug!("{}: session closed: the client was silent too long", cx.peer);
            stream.end(None);
        }
        return Step::Again;
    }
    Step::Park
}

/// Reads what the client sent while its event stream runs — nothing,
/// usually; a request pipelined behind the stream's is kept, to be served
/// once the stream ends, as far as the read buffer holds it. False when the
/// client closed its side or the socket failed.
fn client_still_there<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> bool {
    let size = cx.config.read_buffer_size();
    loop {
        let space = conn.read_space(size);
        if space.is_empty() {
            // Full: read no more until the stream ends (a failed write
            // tells of a client gone meanwhile).
            return true;
        }
        match now(|| io.read(space)) {
            Ok(Some(0)) | Err(_) => return false,
            Ok(Some(n)) => conn.filled(n),
            Ok(None) => return true,
        }
    }
}
