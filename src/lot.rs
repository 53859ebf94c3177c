//! The parking lot, the ready lists and the seats: everything the workers
//! and the monitor share.
//!
//! A *seat* is one readiness set (epoll or kqueue). Each open connection is
//! watched by one seat from its first park on, registered once,
//! edge-triggered. A worker holding a seat polls it, moves the connections
//! that became readable from the lot to the seat's ready list, and serves
//! them itself, one after another: no thread hand-off on the way from the
//! socket to the handler. There are as many seats as cores (at most one per
//! worker); the other workers sleep until the monitor finds a seat whose
//! worker is stuck in a handler and hands the seat to one of them.
//!
//! One short-held lock protects the lot. A readiness event for a connection
//! a worker still holds marks its slot `pending`; parking sees the mark and
//! serves the connection again instead, so no event is lost between a
//! worker's last read and its park.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token, Waker};

use crate::config::{Config, Overload};
use crate::conn::ConnState;
use crate::date::DateCache;
use crate::encode::encode_overloaded;
use crate::net::{Listener, Peer, Stream};
use crate::stats::Counters;

/// Token of the listening socket.
pub(crate) const LISTENER: Token = Token(usize::MAX);
/// Token of a seat's waker.
pub(crate) const WAKER: Token = Token(usize::MAX - 1);

/// Pause after an accept error such as `EMFILE`, so a full descriptor table
/// does not turn into a busy loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// An open connection, owned by exactly one of: the lot (parked), a ready
/// list, a worker.
pub(crate) struct Conn {
    pub(crate) stream: Stream,
    pub(crate) peer: Peer,
    pub(crate) state: ConnState,
    slot: u32,
    /// The slot's generation when this connection took it: its readiness
    /// token, so events and deadlines of an earlier occupant never match.
    generation: u32,
    /// The seat that watches this connection once it has parked.
    seat: usize,
    /// What the seat watches for, once the connection is registered there.
    watching: Option<Interest>,
    /// When the current park ends (idle, head, write or linger deadline);
    /// `None`: never (a timeout of `Duration::MAX`).
    deadline: Option<Instant>,
}

impl Conn {
    /// The worker took the socket off its seat (see
    /// [`Transport::leave_seat`](crate::io::Transport::leave_seat)): the next
    /// park registers it again.
    pub(crate) fn left_seat(&mut self) {
        self.watching = None;
    }
}

/// The readiness token of a slot in one generation.
pub(crate) fn token(slot: u32, generation: u32) -> Token {
    Token((generation as usize) << 32 | slot as usize)
}

/// Splits a token into (slot, generation).
pub(crate) fn untoken(token: Token) -> (u32, u32) {
    ((token.0 & 0xffff_ffff) as u32, (token.0 >> 32) as u32)
}

enum Slot {
    Free,
    /// Ready or with a worker; `pending` when it became readable since.
    Busy {
        pending: bool,
    },
    Parked(Conn),
}

/// What the lock protects.
pub(crate) struct Lot {
    slots: Vec<Slot>,
    /// The latest generation handed out per slot.
    generations: Vec<u32>,
    free: Vec<u32>,
    /// Readable connections per seat, oldest first.
    ready: Vec<VecDeque<Conn>>,
    /// Connections in all ready lists.
    pub(crate) queued: usize,
    /// A thread is polling the seat (or about to).
    pub(crate) polling: Vec<bool>,
    /// Work taken from each seat by workers: the monitor's sign of life.
    pub(crate) progress: Vec<u64>,
    /// Workers asleep, waiting for work or a seat.
    pub(crate) sleepers: usize,
    /// Seats the monitor wants a sleeping worker to take over.
    pub(crate) adopt: Vec<usize>,
    /// Per slot, the deadline of its live entry in the monitor's heap (one
    /// per connection: a park pushes one only when none is due earlier).
    timer_at: Vec<Option<Instant>>,
    /// Deadlines the monitor has not moved to its heap yet: (deadline, slot, generation).
    pub(crate) new_timers: Vec<(Instant, u32, u32)>,
    /// Set at shutdown: parking closes instead.
    pub(crate) closed: bool,
    /// Shutdown has moved every request already received to a ready list:
    /// workers leave once those are served.
    pub(crate) swept: bool,
    /// Connections in `Slot::Parked`.
    pub(crate) parked: usize,
    /// Round-robin seat for the next connection.
    next_seat: usize,
    /// Accepting is paused after an error such as `EMFILE`.
    pub(crate) accept_paused_until: Option<Instant>,
}

impl Lot {
    /// A readiness event: a parked connection moves to the seat's ready
    /// list; one a worker holds is marked to be served again.
    fn wake(&mut self, token: Token, seat: usize) {
        let (slot, generation) = untoken(token);
        if self.generations.get(slot as usize) != Some(&generation) {
            return;
        }
        match &mut self.slots[slot as usize] {
            Slot::Parked(_) => {
                let Some(conn) = self.unpark(slot as usize) else { return };
                self.push_ready(seat, conn);
            }
            Slot::Busy { pending } => *pending = true,
            Slot::Free => {}
        }
    }

    /// Queues `conn` to be served by whoever sits at `seat`.
    fn push_ready(&mut self, seat: usize, conn: Conn) {
        self.ready[seat].push_back(conn);
        self.queued += 1;
    }

    /// The oldest ready connection of `seat`.
    fn pop_ready(&mut self, seat: usize) -> Option<Conn> {
        let conn = self.ready[seat].pop_front()?;
        self.queued -= 1;
        self.progress[seat] += 1;
        // Events before this point were for bytes the worker will read.
        self.slots[conn.slot as usize] = Slot::Busy { pending: false };
        Some(conn)
    }

    /// A ready connection of any seat (a seat whose worker is busy).
    fn steal(&mut self) -> Option<Conn> {
        let seat = (0..self.ready.len()).find(|&s| !self.ready[s].is_empty())?;
        self.pop_ready(seat)
    }

    /// A heap entry `(at, slot, generation)` came due. Returns the
    /// connection if its deadline has passed; re-queues the entry (pushed to
    /// `later`) if the connection is parked with a later deadline; drops it
    /// if the connection is busy (its next park pushes a new one) or gone.
    pub(crate) fn timer_due(
        &mut self,
        (at, slot, generation): (Instant, u32, u32),
        now: Instant,
        later: &mut Vec<(Instant, u32, u32)>,
    ) -> Option<Conn> {
        let i = slot as usize;
        if self.generations.get(i) != Some(&generation) || self.timer_at[i] != Some(at) {
            return None;
        }
        match &self.slots[i] {
            Slot::Parked(Conn { deadline: Some(deadline), .. }) if *deadline > now => {
                self.timer_at[i] = Some(*deadline);
                later.push((*deadline, slot, generation));
                None
            }
            Slot::Parked(Conn { deadline: None, .. }) => {
                self.timer_at[i] = None;
                None
            }
            Slot::Parked(_) => {
                self.timer_at[i] = None;
                self.unpark(i)
            }
            _ => {
                self.timer_at[i] = None;
                None
            }
        }
    }

    /// True when `(at, slot, generation)` is a slot's live heap entry (the
    /// monitor drops the others when it compacts the heap).
    pub(crate) fn is_live_timer(&self, at: Instant, slot: u32, generation: u32) -> bool {
        let i = slot as usize;
        self.generations.get(i) == Some(&generation) && self.timer_at[i] == Some(at)
    }

    /// Takes every parked connection (shutdown), but for those with a
    /// request in flight (a head or small body arriving, an answer the
    /// client is still taking): they join their seat's ready list, for a
    /// worker to finish the request.
    pub(crate) fn take_idle(&mut self) -> Vec<Conn> {
        let mut idle = Vec::new();
        for i in 0..self.slots.len() {
            match self.unpark(i) {
                Some(conn) if conn.state.has_request_in_flight() => self.push_ready(conn.seat, conn),
                Some(conn) => idle.push(conn),
                None => {}
            }
        }
        idle
    }

    /// Takes the connection parked in slot `i`, if any; the slot stays busy.
    fn unpark(&mut self, i: usize) -> Option<Conn> {
        match std::mem::replace(&mut self.slots[i], Slot::Busy { pending: false }) {
            Slot::Parked(conn) => {
                self.parked -= 1;
                Some(conn)
            }
            other => {
                self.slots[i] = other;
                None
            }
        }
    }

    pub(crate) fn has_ready(&self, seat: usize) -> bool {
        !self.ready[seat].is_empty()
    }

    pub(crate) fn open(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub(crate) fn seats(&self) -> usize {
        self.ready.len()
    }

    fn free(&mut self, slot: u32) {
        self.slots[slot as usize] = Slot::Free;
        self.free.push(slot);
    }

    fn saturated(&self, config: &Config) -> bool {
        self.queued >= config.queue_depth || self.open() >= config.max_connections
    }
}

/// One readiness set and the means to wake whoever polls it.
pub(crate) struct Seat {
    /// Locked only by the thread that set the seat's `polling` flag, so it
    /// is never contended.
    poll: Mutex<SeatPoll>,
    registry: Registry,
    waker: Waker,
}

struct SeatPoll {
    poll: Poll,
    events: Events,
}

impl Seat {
    fn new(listener: &Listener) -> io::Result<Seat> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        // Every seat watches the listener: whichever worker is free accepts.
        registry.register(&mut SourceFd(&listener.as_raw_fd()), LISTENER, Interest::READABLE)?;
        Ok(Seat { poll: Mutex::new(SeatPoll { poll, events: Events::with_capacity(256) }), registry, waker })
    }
}

/// State shared by the workers, the monitor and the server handle.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) seats: Vec<Seat>,
    listener: Listener,
    lot: Mutex<Lot>,
    /// Accepts run on one thread at a time.
    accepting: OnePass,
    /// Sleeping workers wait here.
    pub(crate) work: Condvar,
    /// Shutdown has begun.
    pub(crate) stopping: AtomicBool,
    /// An accept was held back (saturated or paused): the next thread to
    /// free room accepts.
    pub(crate) accept_waiting: AtomicBool,
    /// The monitor sleeps for long (no seat busy); a worker that starts
    /// serving wakes it.
    pub(crate) monitor_dozing: AtomicBool,
    pub(crate) monitor: OnceLock<Thread>,
    pub(crate) counters: Counters,
}

impl Shared {
    pub(crate) fn new(config: Config, listener: Listener, seats: usize) -> io::Result<Shared> {
        let seats = (0..seats.max(1)).map(|_| Seat::new(&listener)).collect::<io::Result<Vec<_>>>()?;
        let n = seats.len();
        let lot = Lot {
            slots: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
            ready: (0..n).map(|_| VecDeque::new()).collect(),
            queued: 0,
            polling: vec![false; n],
            progress: vec![0; n],
            sleepers: 0,
            adopt: Vec::with_capacity(n),
            timer_at: Vec::new(),
            new_timers: Vec::with_capacity(256),
            closed: false,
            swept: false,
            parked: 0,
            next_seat: 0,
            accept_paused_until: None,
        };
        Ok(Shared {
            config,
            seats,
            listener,
            lot: Mutex::new(lot),
            accepting: OnePass::default(),
            work: Condvar::new(),
            stopping: AtomicBool::new(false),
            accept_waiting: AtomicBool::new(false),
            monitor_dozing: AtomicBool::new(false),
            monitor: OnceLock::new(),
            counters: Counters::default(),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Lot> {
        // Nothing panics while holding the lock; a poisoned lot is still whole.
        self.lot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next connection for the worker sitting at `seat` (which may
    /// change when the worker adopts another seat); `None` when the server
    /// has shut down and nothing is left to serve.
    pub(crate) fn next(&self, seat: &mut usize) -> Option<Conn> {
        let mut lot = self.lock();
        loop {
            if let Some(adopted) = lot.adopt.pop() {
                *seat = adopted;
            }
            if let Some(conn) = lot.pop_ready(*seat) {
                return Some(conn);
            }
            if let Some(conn) = lot.steal() {
                return Some(conn);
            }
            let stopping = self.stopping.load(Ordering::Acquire);
            if !stopping && !lot.polling[*seat] {
                lot.polling[*seat] = true;
                drop(lot);
                self.poll_seat(*seat, None, true);
                lot = self.lock();
                continue;
            }
            if stopping && lot.swept {
                return None;
            }
            lot.sleepers += 1;
            lot = self.work.wait(lot).unwrap_or_else(PoisonError::into_inner);
            lot.sleepers -= 1;
        }
    }

    /// Polls `seat` (whose `polling` flag the caller set) and moves what
    /// became readable to its ready list; accepts new connections. The
    /// monitor polls (with a zero timeout) a seat whose worker is stuck and
    /// no worker is free to take over.
    pub(crate) fn poll_seat(&self, seat: usize, timeout: Option<Duration>, by_worker: bool) {
        let mut listener_ready = false;
        {
            let mut guard = self.seats[seat].poll.lock().unwrap_or_else(PoisonError::into_inner);
            let SeatPoll { poll, events } = &mut *guard;
            if let Err(e) = poll.poll(events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    error!("waiting for readiness failed: {e}");
                    std::thread::sleep(ACCEPT_BACKOFF);
                }
            }
            let mut lot = self.lock();
            for event in events.iter() {
                match event.token() {
                    LISTENER => listener_ready = true,
                    WAKER => {}
                    token => lot.wake(token, seat),
                }
            }
            lot.polling[seat] = false;
            if by_worker {
                lot.progress[seat] += 1;
            }
            if self.stopping.load(Ordering::Relaxed) {
                // The monitor waits for every seat to be free before its sweep.
                self.work.notify_all();
            }
        }
        if by_worker && self.monitor_dozing.load(Ordering::Relaxed) && self.monitor_dozing.swap(false, Ordering::AcqRel)
        {
            if let Some(monitor) = self.monitor.get() {
                monitor.unpark();
            }
        }
        let retry = self.take_accept_waiting();
        if listener_ready || retry {
            self.accept(seat);
        }
        if !by_worker {
            // Nobody may be sitting at this seat: wake a worker for its work.
            let lot = self.lock();
            if lot.queued > 0 && lot.sleepers > 0 {
                self.work.notify_one();
            }
        }
    }

    /// True (once) when an accept was held back (saturated or paused): the
    /// caller, having freed room or waited, should accept.
    pub(crate) fn take_accept_waiting(&self) -> bool {
        self.accept_waiting.load(Ordering::Relaxed) && self.accept_waiting.swap(false, Ordering::AcqRel)
    }

    /// Accepts until the listener is empty or the server saturated; each new
    /// connection is admitted as [`Shared::admit`] says, `seat` being the
    /// one whose ready list takes it when it has bytes to read.
    pub(crate) fn accept(&self, seat: usize) {
        self.accepting.run(|| self.accept_until_empty(seat));
    }

    fn accept_until_empty(&self, seat: usize) {
        let mut date = None;
        loop {
            if self.stopping.load(Ordering::Relaxed) {
                return;
            }
            let saturated = {
                let mut lot = self.lock();
                if let Some(until) = lot.accept_paused_until {
                    if Instant::now() < until {
                        self.accept_waiting.store(true, Ordering::Release);
                        return;
                    }
                    lot.accept_paused_until = None;
                }
                lot.saturated(&self.config)
            };
            if saturated && self.config.overload == Overload::Wait {
                // Clients wait in the kernel backlog until room frees up.
                self.accept_waiting.store(true, Ordering::Release);
                return;
            }
            match self.listener.accept() {
                Ok((stream, peer)) if saturated => self.reject(stream, peer, &mut date),
                Ok((stream, peer)) => {
                    #[cfg(feature = "tls")]
                    let Some(stream) = self.secure(stream, peer) else { continue };
                    self.admit(stream, peer, seat);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if is_transient(&e) => {}
                Err(e) => {
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM: back off, keep serving.
                    warn!("accept failed: {e}; pausing accepts for {ACCEPT_BACKOFF:?}");
                    self.counters.io_error();
                    self.lock().accept_paused_until = Some(Instant::now() + ACCEPT_BACKOFF);
                    self.accept_waiting.store(true, Ordering::Release);
                    return;
                }
            }
        }
    }

    /// Gives a newly accepted connection a slot and a seat. Where the
    /// listener defers accepts until the first bytes arrive (Linux), the
    /// connection joins the accepting seat's ready list and is read at
    /// once; it registers with its seat when it first parks. Elsewhere it
    /// parks now: the seat reports its first bytes (at once if they are
    /// here), which costs less than a read that would most often find
    /// nothing.
    fn admit(&self, stream: Stream, peer: Peer, accepted_at: usize) {
        self.counters.accepted();
        let to_park = {
            let mut lot = self.lock();
            let slot = match lot.free.pop() {
                Some(slot) => slot,
                None => {
                    lot.slots.push(Slot::Free);
                    lot.generations.push(0);
                    lot.timer_at.push(None);
                    (lot.slots.len() - 1) as u32
                }
            };
            let generation = lot.generations[slot as usize].wrapping_add(1);
            lot.generations[slot as usize] = generation;
            lot.timer_at[slot as usize] = None;
            lot.slots[slot as usize] = Slot::Busy { pending: false };
            let seat = lot.next_seat;
            lot.next_seat = (seat + 1) % lot.seats();
            let state = ConnState::new(Some(Instant::now()));
            let conn = Conn { stream, peer, state, slot, generation, seat, watching: None, deadline: None };
            if self.listener.delivers_data() {
                lot.push_ready(accepted_at, conn);
                None
            } else {
                Some(conn)
            }
        };
        if let Some(conn) = to_park.and_then(|conn| self.park(conn)) {
            self.lock().push_ready(accepted_at, conn);
        }
    }

    /// Wraps a new connection in TLS when the server is configured for it.
    #[cfg(feature = "tls")]
    fn secure(&self, stream: Stream, peer: Peer) -> Option<Stream> {
        match (&self.config.tls, stream) {
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
    /// close does not reset the connection under the response. A TLS
    /// client is closed without one: there is no session to send it in
    /// (a plaintext answer would only corrupt its handshake).
    fn reject(&self, mut stream: Stream, peer: Peer, date: &mut Option<DateCache>) {
        let Overload::Reject { retry_after } = self.config.overload else {
            return;
        };
        self.counters.rejected();
        if self.serves_tls() {
            debug!("{peer}: saturated; closed a TLS client without an answer");
            return;
        }
        // At most 16 reads: a client that keeps sending cannot hold the
        // accepting thread here.
        let mut sink = [0u8; 4096];
        for _ in 0..16 {
            if !matches!(stream.read(&mut sink), Ok(n) if n > 0) {
                break;
            }
        }
        let mut out = Vec::with_capacity(192);
        encode_overloaded(retry_after, date.get_or_insert_with(DateCache::new).now(), &mut out);
        let _ = stream.write(&out);
        stream.shutdown_write();
        debug!("{peer}: saturated; answered 503");
    }

    /// True when connections are wrapped in TLS.
    fn serves_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.config.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// Hands a connection with nothing to read back to its seat. Returns it
    /// when bytes arrived while the worker held it: serve it again.
    pub(crate) fn park(&self, mut conn: Conn) -> Option<Conn> {
        conn.deadline = conn.state.deadline(&self.config);
        let sending = conn.state.is_sending();
        // Only room to write matters while an answer is unsent: what the
        // client sends meanwhile waits until it is out.
        let interest = if sending { Interest::WRITABLE } else { Interest::READABLE };
        if conn.watching != Some(interest) {
            let registry = &self.seats[conn.seat].registry;
            let token = token(conn.slot, conn.generation);
            let watched = match conn.watching {
                None => registry.register(&mut conn.stream, token, interest),
                Some(_) => registry.reregister(&mut conn.stream, token, interest),
            };
            if let Err(e) = watched {
                debug!("{}: watching for readiness failed: {e}", conn.peer);
                self.close(conn);
                return None;
            }
            conn.watching = Some(interest);
        }
        let mut lot = self.lock();
        if lot.closed {
            drop(lot);
            if conn.state.has_request_in_flight() {
                // Shutting down: the worker finishes the request, waiting.
                return Some(conn);
            }
            self.close(conn);
            return None;
        }
        let slot = conn.slot as usize;
        if let Slot::Busy { pending: true } = lot.slots[slot] {
            lot.slots[slot] = Slot::Busy { pending: false };
            return Some(conn);
        }
        if let Some(deadline) = conn.deadline {
            if lot.timer_at[slot].is_none_or(|at| deadline < at) {
                lot.timer_at[slot] = Some(deadline);
                lot.new_timers.push((deadline, conn.slot, conn.generation));
            }
        }
        lot.slots[slot] = Slot::Parked(conn);
        lot.parked += 1;
        None
    }

    /// The readiness set watching `conn`, once it has been registered.
    pub(crate) fn registry_of(&self, conn: &Conn) -> Option<&Registry> {
        conn.watching.map(|_| &self.seats[conn.seat].registry)
    }

    /// Puts a connection that yielded its turn at the back of its seat's
    /// ready list: it has more to do, and no readiness edge will say so.
    pub(crate) fn requeue(&self, conn: Conn) {
        let seat = conn.seat;
        self.lock().push_ready(seat, conn);
    }

    /// Closes a connection and frees its slot.
    pub(crate) fn close(&self, conn: Conn) {
        let slot = conn.slot;
        drop(conn);
        self.lock().free(slot);
        self.counters.closed();
    }

    /// Wakes the worker waiting for readiness at `seat`.
    pub(crate) fn nudge(&self, seat: usize) {
        if let Err(e) = self.seats[seat].waker.wake() {
            error!("waking a worker failed: {e}");
        }
    }

    /// Wakes every thread that may be waiting: shutdown.
    pub(crate) fn wake_all(&self) {
        for seat in &self.seats {
            if let Err(e) = seat.waker.wake() {
                error!("waking a worker for shutdown failed: {e}");
            }
        }
        let _guard = self.lock();
        self.work.notify_all();
        drop(_guard);
        if let Some(monitor) = self.monitor.get() {
            monitor.unpark();
        }
    }

    /// Stops watching the listener (shutdown).
    pub(crate) fn forget_listener(&self) {
        for seat in &self.seats {
            let _ = seat.registry.deregister(&mut SourceFd(&self.listener.as_raw_fd()));
        }
    }
}

/// Runs a task on one thread at a time without making any thread wait: a
/// thread that asks while another runs it leaves its request with the
/// running one, which runs the task again before it stops. Every request is
/// followed by a whole run that began after it, so none is lost (the
/// listener reports readiness once per change: a lost accept leaves clients
/// in the backlog until another one connects).
#[derive(Default)]
pub(crate) struct OnePass {
    /// Requests not yet covered by a run; the thread that raised it from
    /// zero runs the task until it is zero again.
    requests: AtomicUsize,
}

impl OnePass {
    pub(crate) fn run(&self, mut task: impl FnMut()) {
        if self.requests.fetch_add(1, Ordering::AcqRel) > 0 {
            return;
        }
        let mut covered = 1;
        loop {
            task();
            // One read-modify-write on one counter: a request either lands
            // before it (and is counted in `left`) or finds the count zero
            // and runs the task itself.
            let left = self.requests.fetch_sub(covered, Ordering::AcqRel) - covered;
            if left == 0 {
                return;
            }
            covered = left;
        }
    }
}

/// Accept errors about one connection that went away; the next accept may
/// well succeed.
fn is_transient(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::Interrupted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In each round, threads at once add work and ask for a pass that
    /// takes it all: once every thread's request has returned, nothing is
    /// left, and no two passes overlapped. (A try-lock with a "missed" flag
    /// loses a request whose flag is set just after the running thread last
    /// looked at it.)
    #[test]
    fn one_pass_loses_no_request_and_never_overlaps() {
        use std::sync::{Arc, Barrier};
        const THREADS: usize = 4;
        const ROUNDS: usize = 20_000;
        let one = Arc::new(OnePass::default());
        let pending = Arc::new(AtomicUsize::new(0));
        let inside = Arc::new(AtomicBool::new(false));
        let overlaps = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (one, pending, inside, barrier) = (one.clone(), pending.clone(), inside.clone(), barrier.clone());
                let overlaps = overlaps.clone();
                std::thread::spawn(move || {
                    for round in 0..ROUNDS {
                        barrier.wait();
                        pending.fetch_add(1, Ordering::SeqCst);
                        one.run(|| {
                            if inside.swap(true, Ordering::SeqCst) {
                                overlaps.fetch_add(1, Ordering::SeqCst);
                            }
                            pending.store(0, Ordering::SeqCst);
                            inside.store(false, Ordering::SeqCst);
                        });
                        barrier.wait();
                        assert_eq!(pending.load(Ordering::SeqCst), 0, "work left behind in round {round}");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two passes at once");
    }

    #[test]
    fn tokens_round_trip_and_never_collide_with_reserved_ones() {
        for (slot, generation) in [(0, 0), (7, 1), (u32::MAX - 2, u32::MAX)] {
            let t = token(slot, generation);
            assert_eq!(untoken(t), (slot, generation));
            assert_ne!(t, LISTENER);
            assert_ne!(t, WAKER);
        }
    }
}
