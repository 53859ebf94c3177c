//! The queue between an event stream's senders and its connection: the
//! events not yet written, the senders still there, whether the stream was
//! closed and why, and how a parked connection is woken when something
//! comes (see [`crate::events`], which builds on it, and `http1::stream`,
//! which writes it).

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

/// Who is told when a parked stream has something to write: the server,
/// which hands the connection to a worker.
pub(crate) trait Notify: Send + Sync {
    /// The connection whose readiness token is `token` has events queued.
    fn notify(&self, token: usize);

    /// The connections of `tokens` have events queued (a broadcast): one
    /// look at the engine for the lot.
    fn notify_all(&self, tokens: &[usize]) {
        tokens.iter().for_each(|&token| self.notify(token));
    }
}

/// A wake-up owed: the server to tell, and the connection's token.
type Wake = Option<(Weak<dyn Notify>, usize)>;

/// The wake-ups a broadcast owes, made together once its subscriber list
/// is let go: a lock of the engine per batch rather than per subscriber
/// (10,000 subscribers took it 10,000 times a second), and none while the
/// list is held (a handler subscribing meanwhile would wait for the
/// engine's lock; the monitor, finding its worker asleep, would start a
/// thread for it). A token a subscriber is owed costs 8 bytes until then.
#[derive(Default)]
pub(crate) struct Wakes {
    server: Option<Weak<dyn Notify>>,
    tokens: Vec<usize>,
}

/// Wake-ups made in one look at the engine, at most: the engine's lock is
/// let go between batches.
const WAKE_BATCH: usize = 256;

impl Wakes {
    fn add(&mut self, wake: Wake) {
        let Some((server, token)) = wake else { return };
        // Subscribers of two servers in one list (rare): the first
        // server's are woken now.
        if self.server.as_ref().is_some_and(|s| !Weak::ptr_eq(s, &server)) {
            self.fire();
        }
        self.server = Some(server);
        self.tokens.push(token);
    }

    /// Makes the wake-ups owed so far.
    pub(crate) fn fire(&mut self) {
        if self.tokens.is_empty() {
            return;
        }
        if let Some(server) = self.server.as_ref().and_then(Weak::upgrade) {
            self.tokens.chunks(WAKE_BATCH).for_each(|batch| server.notify_all(batch));
        }
        self.tokens.clear();
    }
}

impl Drop for Wakes {
    fn drop(&mut self) {
        self.fire();
    }
}

/// The protocol a parked connection speaks after switching to it
/// (WebSocket, in `crate::websocket`): what the connection loop
/// (`http1::stream`) asks of it. Bytes its senders queue through the feed
/// are whole frames, written between the session's own.
pub(crate) trait Session: Send {
    /// Handles `input` from the client (calling the application for each
    /// message), appending what goes back to `out`. Returns the bytes it
    /// holds of a message not yet whole (as near as one input tells), for
    /// the server-wide budget; `None` once the session is over (the close
    /// handshake done, or the client broke the protocol): the connection
    /// closes once `out` is written.
    fn input(&mut self, input: &[u8], out: &mut Vec<u8>) -> Option<usize>;

    /// The client has been silent for `silent`: appends a keep-alive to
    /// `out` (a ping), or, silent too long, a close, returning false.
    fn silent(&mut self, silent: Duration, out: &mut Vec<u8>) -> bool;

    /// Ends the session from this side: a close with `code` and `reason`
    /// to `out`.
    fn close(&mut self, code: u16, reason: &str, out: &mut Vec<u8>);
}

/// Why a stream can take no more events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Closed {
    /// The client went away, the request was a `HEAD` (no body to carry
    /// events), or the connection failed.
    Gone,
    /// The client fell its queue limit behind
    /// ([`EventStream::queue_limit`](crate::events::EventStream::queue_limit)): it was cut.
    FellBehind,
    /// The server is shutting down.
    Shutdown,
}

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Closed::Gone => "the event stream's client went away",
            Closed::FellBehind => "the event stream's client fell too far behind and was cut",
            Closed::Shutdown => "the server is shutting down",
        })
    }
}

impl std::error::Error for Closed {}

/// A stream's feed in its response, until the connection takes it: dropped
/// before that (the answer replaced by an error, its request's body failed,
/// the handler's wrapper dropped it, a panic), it closes the feed, so that
/// its senders learn at once rather than queue for nobody.
pub(crate) struct Unstarted(Option<Arc<Feed>>);

impl Unstarted {
    pub(crate) fn new(feed: Arc<Feed>) -> Unstarted {
        Unstarted(Some(feed))
    }

    /// The connection takes the feed.
    pub(crate) fn start(mut self) -> Arc<Feed> {
        self.0.take().expect("a feed is started once")
    }

    /// The feed (tests).
    #[cfg(test)]
    pub(crate) fn feed(&self) -> &Arc<Feed> {
        self.0.as_ref().expect("not started")
    }
}

impl Drop for Unstarted {
    fn drop(&mut self) {
        if let Some(feed) = self.0.take() {
            feed.close(Closed::Gone);
        }
    }
}

/// Queues `bytes` (one frame or event, shared) in the feed of every sender
/// in `list` (`feed` finds it), dropping the senders whose stream takes no
/// more, then makes the wake-ups that calls for, the list let go first:
/// a broadcast. Returns how many took it.
pub(crate) fn broadcast<S>(mut list: MutexGuard<'_, Vec<S>>, bytes: Arc<[u8]>, feed: impl Fn(&S) -> &Feed) -> usize {
    let mut wakes = Wakes::default();
    list.retain(|sender| feed(sender).push_deferred(Chunk::Shared(Arc::clone(&bytes)), &mut wakes).is_ok());
    let took = list.len();
    drop(list);
    wakes.fire();
    took
}

/// Queued bytes: an event of one stream, or one shared by a broadcast.
pub(crate) enum Chunk {
    Owned(Vec<u8>),
    Shared(Arc<[u8]>),
}

impl Chunk {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Chunk::Owned(b) => b,
            Chunk::Shared(b) => b,
        }
    }
}

/// What a stream's senders and its connection share.
pub(crate) struct Feed {
    state: Mutex<FeedState>,
    limit: usize,
    keep_alive: Option<Duration>,
}

struct FeedState {
    queue: VecDeque<Chunk>,
    queued: usize,
    senders: usize,
    closed: Option<Closed>,
    /// The connection is parked with nothing to write: the next change is
    /// to be told to `waker`.
    armed: bool,
    waker: Option<(Weak<dyn Notify>, usize)>,
    /// A sender asked the session to close, with this code and reason.
    close_asked: Option<(u16, String)>,
}

impl FeedState {
    /// The wake-up a change calls for: the connection's, once, if it is
    /// parked waiting for one.
    fn wake_up(&mut self) -> Wake {
        if !self.armed {
            return None;
        }
        self.armed = false;
        self.waker.clone()
    }
}

pub(crate) fn notify(wake: Wake) {
    if let Some((server, token)) = wake {
        if let Some(server) = server.upgrade() {
            server.notify(token);
        }
    }
}

/// What the connection found in its feed.
pub(crate) enum Taken {
    /// Bytes were appended.
    Some,
    /// Nothing queued; senders remain.
    Nothing,
    /// Nothing more will come: every sender is gone.
    Ended,
    /// The stream was cut (the client fell behind).
    Cut,
    /// A sender asked the session to close (after what it queued before).
    Close(u16, String),
}

impl Feed {
    pub(crate) fn new(limit: usize, keep_alive: Option<Duration>) -> Feed {
        let state = FeedState {
            queue: VecDeque::new(),
            queued: 0,
            senders: 1,
            closed: None,
            armed: false,
            waker: None,
            close_asked: None,
        };
        Feed { state: Mutex::new(state), limit, keep_alive }
    }

    fn lock(&self) -> MutexGuard<'_, FeedState> {
        // Nothing panics while holding it; a poisoned feed is still whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `chunk`, and wakes the connection when it is parked waiting.
    /// Fails once the stream takes no more; the chunk that puts the queue
    /// past its limit (unless it is alone in it) cuts the stream.
    pub(crate) fn push(&self, chunk: Chunk) -> Result<(), Closed> {
        let (pushed, wake) = self.push_quietly(chunk);
        notify(wake);
        pushed
    }

    /// [`Feed::push`], the wake-up it calls for added to `wakes` (made
    /// when they are fired) rather than made now.
    pub(crate) fn push_deferred(&self, chunk: Chunk, wakes: &mut Wakes) -> Result<(), Closed> {
        let (pushed, wake) = self.push_quietly(chunk);
        wakes.add(wake);
        pushed
    }

    fn push_quietly(&self, chunk: Chunk) -> (Result<(), Closed>, Wake) {
        let mut state = self.lock();
        if let Some(closed) = state.closed {
            return (Err(closed), None);
        }
        let len = chunk.bytes().len();
        if state.queued > 0 && state.queued.saturating_add(len) > self.limit {
            state.closed = Some(Closed::FellBehind);
            state.queue = VecDeque::new();
            state.queued = 0;
            return (Err(Closed::FellBehind), state.wake_up());
        }
        state.queue.push_back(chunk);
        state.queued += len;
        (Ok(()), state.wake_up())
    }

    /// Why the stream takes no more, once it does not.
    pub(crate) fn closed(&self) -> Option<Closed> {
        self.lock().closed
    }

    /// One more sender.
    pub(crate) fn add_sender(&self) {
        self.lock().senders += 1;
    }

    /// A sender is gone; the last one ends the stream (its connection is
    /// woken to write the end).
    pub(crate) fn drop_sender(&self) {
        let wake = {
            let mut state = self.lock();
            state.senders -= 1;
            if state.senders > 0 {
                return;
            }
            state.wake_up()
        };
        notify(wake);
    }

    /// A sender asks the session to close with `code` and `reason`, once
    /// what it queued is out; the connection is woken for it. Nothing once
    /// the stream takes no more.
    #[cfg_attr(not(feature = "websocket"), allow(dead_code))] // Only a WebSocket's sender asks.
    pub(crate) fn ask_close(&self, code: u16, reason: String) {
        let wake = {
            let mut state = self.lock();
            if state.closed.is_some() || state.close_asked.is_some() {
                return;
            }
            state.close_asked = Some((code, reason));
            state.wake_up()
        };
        notify(wake);
    }

    /// How long the stream may stay silent.
    pub(crate) fn keep_alive(&self) -> Option<Duration> {
        self.keep_alive
    }

    /// The connection that will write this stream: told through `server`
    /// when it has something to write while parked.
    pub(crate) fn attach(&self, server: Weak<dyn Notify>, token: usize) {
        let mut state = self.lock();
        if state.waker.as_ref().is_none_or(|(_, t)| *t != token) {
            state.waker = Some((server, token));
        }
    }

    /// Moves what is queued into `out`, framed as one chunk when `chunked`.
    pub(crate) fn take(&self, out: &mut Vec<u8>, chunked: bool) -> Taken {
        let mut state = self.lock();
        if state.closed == Some(Closed::FellBehind) {
            return Taken::Cut;
        }
        if state.queue.is_empty() {
            if let Some((code, reason)) = state.close_asked.take() {
                state.closed.get_or_insert(Closed::Gone);
                return Taken::Close(code, reason);
            }
            return if state.senders == 0 { Taken::Ended } else { Taken::Nothing };
        }
        if chunked {
            out.extend_from_slice(format!("{:x}\r\n", state.queued).as_bytes());
        }
        for chunk in state.queue.drain(..) {
            out.extend_from_slice(chunk.bytes());
        }
        state.queued = 0;
        if chunked {
            out.extend_from_slice(b"\r\n");
        }
        Taken::Some
    }

    /// Moves what is queued into `out`, unframed, and nothing else (a
    /// session writes what its application sent in answer to a message
    /// before what follows the message).
    #[cfg_attr(not(feature = "websocket"), allow(dead_code))] // Only a WebSocket session takes so.
    pub(crate) fn take_queued(&self, out: &mut Vec<u8>) {
        let mut state = self.lock();
        for chunk in state.queue.drain(..) {
            out.extend_from_slice(chunk.bytes());
        }
        state.queued = 0;
    }

    /// The connection parks with nothing to write: the next event (or the
    /// last sender leaving, or a cut) is to wake it. False when one came
    /// since it looked: it must look again instead.
    pub(crate) fn arm(&self) -> bool {
        let mut state = self.lock();
        if !state.queue.is_empty()
            || state.senders == 0
            || state.closed == Some(Closed::FellBehind)
            || state.close_asked.is_some()
        {
            return false;
        }
        state.armed = true;
        true
    }

    /// The connection is done with the stream (`why`): senders are told at
    /// their next send, and what is queued is dropped.
    pub(crate) fn close(&self, why: Closed) {
        let mut state = self.lock();
        state.closed.get_or_insert(why);
        state.queue = VecDeque::new();
        state.queued = 0;
        state.armed = false;
        state.waker = None;
    }
}

impl fmt::Debug for Feed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("Feed").field("queued", &state.queued).field("closed", &state.closed).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex, Weak};

    use super::{Feed, Notify, WAKE_BATCH, broadcast};

    /// A server that records the wake-ups it is asked for, and whether the
    /// broadcast's subscriber list was free to lock at each.
    struct Recorder {
        list: Arc<Mutex<Vec<Arc<Feed>>>>,
        batches: Mutex<Vec<(usize, bool)>>,
    }

    impl Notify for Recorder {
        fn notify(&self, token: usize) {
            self.notify_all(&[token]);
        }

        fn notify_all(&self, tokens: &[usize]) {
            let list_free = self.list.try_lock().is_ok();
            self.batches.lock().unwrap().push((tokens.len(), list_free));
        }
    }

    /// A broadcast to more parked subscribers than one batch wakes them all,
    /// in batches, and only once its list is let go: a handler subscribing
    /// meanwhile never waits for the engine.
    #[test]
    fn a_broadcast_wakes_its_subscribers_in_batches_once_the_list_is_let_go() {
        let list = Arc::new(Mutex::new(Vec::new()));
        let server = Arc::new(Recorder { list: Arc::clone(&list), batches: Mutex::new(Vec::new()) });
        let n = 2 * WAKE_BATCH + 88;
        for token in 0..n {
            let feed = Arc::new(Feed::new(1 << 16, None));
            let weak: Weak<dyn Notify> = Arc::downgrade(&server) as Weak<dyn Notify>;
            feed.attach(weak, token);
            assert!(feed.arm(), "nothing queued yet: the stream parks");
            list.lock().unwrap().push(feed);
        }
        let took = broadcast(list.lock().unwrap(), Arc::from(&b"data: 1\n\n"[..]), |f| f);
        assert_eq!(took, n);
        let batches = server.batches.lock().unwrap().clone();
        assert_eq!(batches, [(WAKE_BATCH, true), (WAKE_BATCH, true), (88, true)]);
        // Nothing more is owed: a second broadcast finds the streams
        // unarmed (not parked since), and wakes nobody.
        broadcast(list.lock().unwrap(), Arc::from(&b"data: 2\n\n"[..]), |f| f);
        assert_eq!(server.batches.lock().unwrap().len(), 3);
    }
}
