//! A server-sent event stream on its connection: the events its senders
//! queue ([`Feed`]) are written when they come, as far as the client takes
//! them, and between them the connection parks like an idle one, holding no
//! worker. A sender wakes it through the server (see `feed::Notify`); the
//! monitor hands it to a worker when a keep-alive comment is due, or cuts
//! it when the client stops taking bytes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{ConnState, Ctx, Next, Then, close, close_lingering, pause, write_failed};
use crate::feed::{Closed, Feed, Taken};
use crate::io::{Ready, Transport, now};
use crate::stats::Held;

/// The keep-alive comment, as a chunk and bare.
const BEAT_CHUNKED: &[u8] = b"3\r\n:\n\n\r\n";
const BEAT: &[u8] = b":\n\n";

/// The end of a chunked body.
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// A written-out buffer keeps at most this much capacity while parked.
const KEPT_CAPACITY: usize = 256;

/// An event stream under way on its connection.
#[derive(Debug)]
pub(crate) struct Streaming {
    feed: Arc<Feed>,
    /// The body is chunked (HTTP/1.1); else it is delimited by the close.
    chunked: bool,
    /// What becomes of the connection once the stream has ended whole.
    then: Then,
    /// Bytes for the client, written from `at`: the response head first,
    /// then events taken from the feed (taken only once these are out, so
    /// this holds at most the feed's limit and a chunk's framing).
    pending: Vec<u8>,
    at: usize,
    /// When the client last took bytes (or the stream began): the write
    /// timeout runs from it while bytes are pending.
    since: Instant,
    /// When bytes were last queued: a keep-alive comment is due after the
    /// feed's keep-alive interval of silence.
    queued_at: Instant,
    /// The end is in `pending`: once it is out, the stream is over.
    ended: bool,
    /// Pending bytes of a parked stream, counted against `max_unsent_bytes`.
    held: Option<Held>,
}

impl Streaming {
    /// A stream starting with `head` (the response's head, after any
    /// answers queued before it).
    pub(crate) fn new(feed: Arc<Feed>, chunked: bool, then: Then, head: &[u8], now: Instant) -> Streaming {
        Streaming {
            feed,
            chunked,
            then,
            pending: head.to_vec(),
            at: 0,
            since: now,
            queued_at: now,
            ended: false,
            held: None,
        }
    }

    /// The feed, which the server wakes the connection through.
    pub(crate) fn feed(&self) -> &Arc<Feed> {
        &self.feed
    }

    /// True while bytes wait for the client to take them: the connection
    /// parks watching for room to write.
    pub(crate) fn is_blocked(&self) -> bool {
        self.at < self.pending.len()
    }

    /// When the park ends: the write timeout while bytes are pending, else
    /// when a keep-alive comment is due (`None`: never).
    pub(crate) fn deadline(&self, write_timeout: Duration) -> Option<Instant> {
        if self.is_blocked() {
            return self.since.checked_add(write_timeout);
        }
        self.queued_at.checked_add(self.feed.keep_alive()?)
    }

    /// Writes what the client takes now: `Ok(true)` once everything
    /// pending is out.
    fn write<T: Transport>(&mut self, io: &mut T) -> std::io::Result<bool> {
        while self.at < self.pending.len() {
            match now(|| io.write(&self.pending[self.at..]))? {
                Some(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Some(n) => {
                    self.at += n;
                    self.since = Instant::now();
                }
                None => return Ok(false),
            }
        }
        if now(|| io.flush())?.is_none() {
            return Ok(false);
        }
        self.at = 0;
        self.pending.clear();
        if self.pending.capacity() > KEPT_CAPACITY {
            self.pending = Vec::new();
        }
        self.held = None;
        Ok(true)
    }

    /// Queues the end of the stream; `why` tells senders still there.
    fn end(&mut self, why: Option<Closed>) {
        if let Some(why) = why {
            self.feed.close(why);
        }
        if self.chunked {
            self.pending.extend_from_slice(LAST_CHUNK);
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
    /// Nothing to do until the client takes bytes or an event comes.
    Park,
    /// At shutdown, the client has not taken everything: wait for room.
    WaitForRoom,
    /// The stream is over, as planned: the connection goes on as `then`.
    Over(Then),
    /// The connection closes at once (no lingering: nothing is expected
    /// from the client, or it went away).
    Cut,
}

/// Goes on with the event stream of `conn`: writes what is queued, takes
/// more, writes a keep-alive comment when one is due, notices a client that
/// went away. `None` when the stream is over and the connection goes on to
/// its next request; else what becomes of it.
pub(super) fn turn<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Option<Next> {
    loop {
        let step = look(conn, io, cx);
        match step {
            Step::Again => {}
            Step::Park => return Some(pause(conn, cx, Next::Park)),
            Step::WaitForRoom => {
                if let Err(e) = io.wait(Ready::Writable, cx.config.write_timeout) {
                    write_failed(cx, &e);
                    conn.phase.sent();
                    conn.cut_short(Then::Close);
                    return Some(close(conn, io, cx, false));
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
            Step::Cut => {
                conn.phase.sent();
                conn.cut_short(Then::Close);
                return Some(close(conn, io, cx, false));
            }
        }
    }
}

fn look<T: Transport, H: ?Sized>(conn: &mut ConnState, io: &mut T, cx: &mut Ctx<'_, H>) -> Step {
    let stopping = cx.is_stopping();
    let Some(stream) = conn.phase.streaming() else { return Step::Over(Then::KeepAlive) };
    if stopping && !stream.ended {
        // What was sent before the stop goes out, then the end.
        if let Taken::Cut = stream.feed.take(&mut stream.pending, stream.chunked) {
            return Step::Cut;
        }
        stream.end(Some(Closed::Shutdown));
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
                        debug!("{}: event stream cut: max_unsent_bytes is held for slow clients", cx.peer);
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
    match stream.feed.take(&mut stream.pending, stream.chunked) {
        Taken::Some => {
            stream.queued_at = now;
            return Step::Again;
        }
        Taken::Ended => {
            stream.end(None);
            return Step::Again;
        }
        Taken::Cut => {
            debug!("{}: event stream cut: the client fell behind", cx.peer);
            return Step::Cut;
        }
        Taken::Nothing => {}
    }
    if stream.deadline(cx.config.write_timeout).is_some_and(|due| due <= now) {
        stream.pending.extend_from_slice(if stream.chunked { BEAT_CHUNKED } else { BEAT });
        stream.queued_at = now;
        return Step::Again;
    }
    if !client_still_there(conn, io, cx) {
        debug!("{}: event stream ended by the client", cx.peer);
        return Step::Cut;
    }
    Step::Park
}

/// Reads what the client sent while its stream runs — nothing, usually; a
/// request pipelined behind the stream's is kept, to be served once the
/// stream ends, as far as the read buffer holds it. False when the client
/// closed its side or the socket failed.
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
