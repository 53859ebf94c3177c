//! The poller thread: accepts connections, watches parked ones, enforces the
//! idle and head deadlines, and feeds readable connections to the workers.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_channel::{SendTimeoutError, Sender, TrySendError};
use mio::{Events, Interest, Poll};

use crate::config::Overload;
use crate::date::DateCache;
use crate::lot::{Conn, LISTENER, Shared, WAKER, token};
use crate::net::{Listener, Peer, Stream};
use crate::response::{Response, encode_closing};

/// Longest the poller sleeps: deadlines are enforced at least this often.
const TICK: Duration = Duration::from_millis(250);

/// Stale deadlines the heap may hold beyond two per parked connection
/// before it is compacted (it starts with room for twice this, so a few
/// connections never make it grow).
const TIMER_SLACK: usize = 1024;

/// Pause after an accept error such as `EMFILE`, so a full descriptor table
/// does not turn into a busy loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

pub(crate) struct Poller {
    poll: Poll,
    events: Events,
    listener: Option<Listener>,
    shared: Arc<Shared>,
    queue: Sender<Conn>,
    /// Readable connections the full queue could not take yet.
    backlog: VecDeque<Conn>,
    /// Connections taken from the lot in one wake-up (kept for its capacity).
    ready: Vec<Conn>,
    /// Deadlines of parked connections: (deadline, slot, generation).
    timers: BinaryHeap<Reverse<(Instant, u32, u32)>>,
    /// The listener may have connections waiting (edge-triggered).
    listener_ready: bool,
    accept_paused_until: Option<Instant>,
    date: DateCache,
}

impl Poller {
    pub(crate) fn new(
        poll: Poll,
        mut listener: Listener,
        shared: Arc<Shared>,
        queue: Sender<Conn>,
    ) -> io::Result<Poller> {
        poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
        Ok(Poller {
            poll,
            events: Events::with_capacity(1024),
            listener: Some(listener),
            shared,
            queue,
            backlog: VecDeque::new(),
            ready: Vec::new(),
            timers: BinaryHeap::with_capacity(2 * TIMER_SLACK),
            listener_ready: true,
            accept_paused_until: None,
            date: DateCache::new(),
        })
    }

    /// Runs until shutdown.
    pub(crate) fn run(mut self) {
        while !self.shared.stopping.load(Ordering::Acquire) {
            let timeout = self.timeout();
            if let Err(e) = self.poll.poll(&mut self.events, Some(timeout)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    error!("poller wait failed: {e}");
                    std::thread::sleep(ACCEPT_BACKOFF);
                }
                continue;
            }
            self.wake_ready();
            self.dispatch_backlog();
            self.expire(Instant::now());
            self.accept();
            self.shared.backlog.store(self.backlog.len(), Ordering::Relaxed);
        }
        self.shut_down();
    }

    fn timeout(&self) -> Duration {
        let now = Instant::now();
        let next_timer = self.timers.peek().map(|Reverse((at, _, _))| at.saturating_duration_since(now));
        let accept_pause = self.accept_paused_until.map(|at| at.saturating_duration_since(now));
        [Some(TICK), next_timer, accept_pause].into_iter().flatten().min().unwrap_or(TICK)
    }

    /// Takes the parked connections that became readable and queues them.
    fn wake_ready(&mut self) {
        let mut ready = std::mem::take(&mut self.ready);
        {
            let mut lot = self.shared.lock();
            for event in self.events.iter() {
                match event.token() {
                    LISTENER => self.listener_ready = true,
                    WAKER => {}
                    token => ready.extend(lot.take(token)),
                }
            }
            self.timers.extend(lot.new_timers.drain(..).map(Reverse));
        }
        for conn in ready.drain(..) {
            self.dispatch(conn);
        }
        self.ready = ready;
    }

    fn dispatch(&mut self, conn: Conn) {
        if !self.backlog.is_empty() {
            self.backlog.push_back(conn);
            return;
        }
        match self.queue.try_send(conn) {
            Ok(()) => {}
            Err(TrySendError::Full(conn)) => {
                self.backlog.push_back(conn);
                self.wait_for_room();
            }
            Err(TrySendError::Disconnected(conn)) => self.shared.close(conn),
        }
    }

    /// Moves backlog into the queue while it has room.
    fn dispatch_backlog(&mut self) {
        while let Some(conn) = self.backlog.pop_front() {
            match self.queue.try_send(conn) {
                Ok(()) => {}
                Err(TrySendError::Full(conn)) => {
                    self.backlog.push_front(conn);
                    self.wait_for_room();
                    return;
                }
                Err(TrySendError::Disconnected(conn)) => self.shared.close(conn),
            }
        }
    }

    /// Asks the next worker that frees room to wake us. A worker may have
    /// freed some just before the flag went up, so look once more.
    fn wait_for_room(&mut self) {
        self.shared.poller_waiting.store(true, Ordering::Release);
        if !self.queue.is_full() && self.shared.poller_waiting.swap(false, Ordering::AcqRel) {
            let _ = self.shared.waker.wake();
        }
    }

    /// Closes parked connections whose deadline passed; one still sending
    /// its head gets `408` first.
    fn expire(&mut self, now: Instant) {
        let mut expired = Vec::new();
        {
            let mut lot = self.shared.lock();
            while let Some(&Reverse((at, slot, generation))) = self.timers.peek() {
                if at > now {
                    break;
                }
                self.timers.pop();
                if let Some(conn) = lot.take(token(slot, generation)) {
                    expired.push(conn);
                }
            }
            // Entries of connections that moved on are dropped lazily; keep
            // the heap proportional to what is parked.
            if self.timers.len() > 2 * lot.parked + TIMER_SLACK {
                self.timers.retain(|Reverse((_, slot, generation))| lot.is_parked(token(*slot, *generation)));
            }
        }
        for mut conn in expired {
            if conn.state.has_partial_head() {
                self.answer_timeout(&mut conn);
            }
            debug!("{}: closing after timeout", conn.peer);
            self.shared.counters.timeout();
            self.shared.close(conn);
        }
    }

    /// Best-effort `408` on a slow head: one non-blocking write, then close.
    fn answer_timeout(&mut self, conn: &mut Conn) {
        let mut out = Vec::with_capacity(160);
        encode_closing(&Response::error(408), self.date.now(), &mut out);
        let _ = conn.stream.write(&out);
    }

    /// Queue full or too many connections open.
    fn saturated(&self) -> bool {
        !self.backlog.is_empty() || self.shared.lock().open() >= self.shared.config.max_connections
    }

    fn accept(&mut self) {
        let now = Instant::now();
        if self.accept_paused_until.is_some_and(|until| now < until) {
            return;
        }
        while self.listener_ready {
            let saturated = self.saturated();
            if saturated && self.shared.config.overload == Overload::Wait {
                // Clients wait in the kernel backlog until a worker or a
                // connection slot frees up and wakes us.
                self.shared.poller_waiting.store(true, Ordering::Release);
                return;
            }
            let Some(listener) = &self.listener else {
                return;
            };
            match listener.accept() {
                Ok((stream, peer)) if saturated => self.reject(stream, peer),
                Ok((stream, peer)) => {
                    #[cfg(feature = "tls")]
                    let Some(stream) = self.secure(stream, peer) else { continue };
                    let conn = self.shared.admit(stream, peer);
                    self.dispatch(conn);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.listener_ready = false,
                Err(e) if is_transient(&e) => {}
                Err(e) => {
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM: back off, keep serving.
                    warn!("accept failed: {e}; pausing accepts for {ACCEPT_BACKOFF:?}");
                    self.shared.counters.io_error();
                    self.accept_paused_until = Some(now + ACCEPT_BACKOFF);
                    return;
                }
            }
        }
    }

    /// Wraps a new connection in TLS when the server is configured for it.
    #[cfg(feature = "tls")]
    fn secure(&self, stream: Stream, peer: Peer) -> Option<Stream> {
        match (&self.shared.config.tls, stream) {
            (Some(config), Stream::Tcp(tcp)) => match crate::tls::TlsStream::new(tcp, config.clone()) {
                Ok(tls) => Some(Stream::Tls(Box::new(tls))),
                Err(e) => {
                    warn!("{peer}: starting TLS failed: {e}");
                    None
                }
            },
            (_, stream) => Some(stream),
        }
    }

    /// `503` + `Retry-After` + close for a connection accepted while
    /// saturated. What the client already sent is read first so that the
    /// close does not reset the connection under the response.
    fn reject(&mut self, mut stream: Stream, peer: Peer) {
        let Overload::Reject { retry_after } = self.shared.config.overload else {
            return;
        };
        let mut sink = [0u8; 4096];
        while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
        let mut resp = Response::error(503);
        resp.set_header("Retry-After", retry_after.as_secs().max(1).to_string());
        let mut out = Vec::with_capacity(192);
        encode_closing(&resp, self.date.now(), &mut out);
        let _ = stream.write(&out);
        stream.shutdown_write();
        debug!("{peer}: saturated; answered 503");
        self.shared.counters.rejected();
    }

    /// Stop accepting, close idle connections, hand what is queued to the
    /// workers (they answer with `Connection: close`), then let the queue go.
    fn shut_down(mut self) {
        if let Some(mut listener) = self.listener.take() {
            let _ = self.poll.registry().deregister(&mut listener);
        }
        // Requests that already arrived on parked connections are served
        // (with `Connection: close`) rather than dropped.
        if self.poll.poll(&mut self.events, Some(Duration::ZERO)).is_ok() {
            self.wake_ready();
        }
        let idle = {
            let mut lot = self.shared.lock();
            lot.closed = true;
            lot.take_all()
        };
        for conn in idle {
            self.shared.close(conn);
        }
        let deadline = Instant::now() + self.shared.config.shutdown_grace;
        while let Some(conn) = self.backlog.pop_front() {
            let left = deadline.saturating_duration_since(Instant::now());
            if let Err(SendTimeoutError::Timeout(conn) | SendTimeoutError::Disconnected(conn)) =
                self.queue.send_timeout(conn, left)
            {
                self.shared.close(conn);
            }
        }
    }
}

/// Accept errors about one connection that went away; the next accept may
/// well succeed.
fn is_transient(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::Interrupted)
}
