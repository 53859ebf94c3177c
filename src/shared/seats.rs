//! Seats: the readiness sets, and who watches each.
//!
//! A seat is one readiness set (epoll or kqueue). Each open connection is
//! watched by one seat from its first park on, registered once,
//! edge-triggered. The thread polling a seat moves the connections that
//! became readable to the seat's ready list; workers take them from there.
//!
//! **Seat ownership.** At most one thread polls a seat at a time: the one
//! that set its `polled` flag (under the hub lock) before polling, and
//! clears it after. A seat is *free* when it is neither polled nor
//! *claimed*; a claim records that a thread was asked to take the seat over
//! (woken or spawned) and lasts until some thread starts polling it. A
//! worker that finds its seat free polls it; the monitor hands a seat that
//! stays unpolled while work waits to another thread.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use mio::{Events, Poll, Registry, Token, Waker};

use super::slots::{Connection, Occupant};
use super::{LISTENER, WAKER};
use crate::sys::{ListenerWatch, ThreadRef};

/// One readiness set and the means to wake whoever polls it.
pub(crate) struct Seat {
    /// Locked only by the thread that set the seat's `polled` flag, so it is
    /// never contended.
    poll: Mutex<SeatPoll>,
    registry: Registry,
    waker: Waker,
    /// How this seat hears of new connections; locked by the thread that
    /// polls the seat when the listener is reported, and at shutdown.
    listener: Mutex<ListenerWatch>,
    /// The worker that polled the seat, or took work at it, last (a
    /// [`ThreadRef`], 0: unknown): while nobody polls the seat, the one
    /// whose handler it most likely waits for.
    worker: AtomicU32,
    /// What the monitor last found of that worker, with the seat stuck: its
    /// id, the tick, and whether it was asleep (see [`Finding`]).
    finding: AtomicU64,
    /// The waker was set for work queued here ([`Seat::wake_for_work`])
    /// and no poll has returned since: a broadcast to a thousand streams
    /// of one seat wakes its poller once, not a thousand times.
    woken: AtomicBool,
}

struct SeatPoll {
    poll: Poll,
    events: Events,
}

/// A finding of the monitor's, in one atomic word so that a worker never
/// reads one thread's id with another's state: the thread's id (32 bits),
/// the tick (its low 31 bits: looks, one a millisecond while the server is
/// busy) and whether the thread was asleep (1 bit).
struct Finding;

impl Finding {
    const TICK_BITS: u32 = 31;
    const TICK_MASK: u64 = (1 << Self::TICK_BITS) - 1;

    fn pack(worker: ThreadRef, tick: u64, asleep: bool) -> u64 {
        (u64::from(worker.raw()) << 32) | ((tick & Self::TICK_MASK) << 1) | u64::from(asleep)
    }

    /// The finding in `word` if it is of `worker`, made during a span of
    /// ticks: after `since`, at `now` at the latest. Ticks are compared
    /// modulo 2^31, within the span, so a finding older than the span never
    /// counts however long the server has run.
    fn unpack(word: u64, worker: ThreadRef, since: u64, now: u64) -> Option<bool> {
        if word >> 32 != u64::from(worker.raw()) {
            return None;
        }
        let after = Self::ticks_between(since, word >> 1);
        (after != 0 && after <= Self::ticks_between(since, now)).then_some(word & 1 == 1)
    }

    /// Ticks from `from` to `to`, modulo 2^31.
    fn ticks_between(from: u64, to: u64) -> u64 {
        (to & Self::TICK_MASK).wrapping_sub(from & Self::TICK_MASK) & Self::TICK_MASK
    }

    /// Whether `word` says `worker` was found asleep at the look before
    /// `tick`: the same call, most likely, still under way.
    fn asleep_just_before(word: u64, worker: ThreadRef, tick: u64) -> bool {
        word >> 32 == u64::from(worker.raw()) && word & 1 == 1 && Self::ticks_between(word >> 1, tick) == 1
    }
}

/// The events of one poll (the seat's poll lock is held meanwhile).
pub(crate) struct Polled<'a>(std::sync::MutexGuard<'a, SeatPoll>);

impl Polled<'_> {
    /// True when the poll returned as many events as it had room for: more
    /// may be waiting.
    pub(crate) fn is_full(&self) -> bool {
        self.0.events.iter().count() == self.0.events.capacity()
    }

    /// The tokens of the events, the waker's left out, each with whether it
    /// said the input ended: the client's sending side closed (which may
    /// come in the same event as its last bytes), or the socket failed.
    pub(crate) fn tokens(&self) -> impl Iterator<Item = (Token, bool)> + '_ {
        self.0.events.iter().map(|e| (e.token(), e.is_read_closed() || e.is_error())).filter(|&(t, _)| t != WAKER)
    }
}

impl Seat {
    /// A readiness set watching the listener through `listener`: whichever
    /// worker is free accepts.
    pub(crate) fn new(mut listener: ListenerWatch) -> io::Result<Seat> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        listener.register(&registry, LISTENER)?;
        Ok(Seat {
            poll: Mutex::new(SeatPoll { poll, events: Events::with_capacity(256) }),
            registry,
            waker,
            listener: Mutex::new(listener),
            worker: AtomicU32::new(0),
            finding: AtomicU64::new(0),
            woken: AtomicBool::new(false),
        })
    }

    /// `worker` is about to poll the seat, or took work at it.
    #[inline]
    pub(crate) fn served_by(&self, worker: Option<ThreadRef>) {
        let raw = worker.map_or(0, ThreadRef::raw);
        // Written only when it changes: the same worker serving the seat
        // request after request leaves the line shared between cores.
        if self.worker.load(Ordering::Relaxed) != raw {
            self.worker.store(raw, Ordering::Relaxed);
        }
    }

    /// The worker that polled the seat, or took work at it, last.
    pub(crate) fn worker(&self) -> Option<ThreadRef> {
        ThreadRef::from_raw(self.worker.load(Ordering::Relaxed))
    }

    /// The monitor found the seat stuck at `tick`, and `worker` asleep or
    /// not. A worker found asleep at the look before stays so: a call that
    /// blocked, then computed, still blocked. (Only the monitor stores here.)
    pub(crate) fn found(&self, worker: ThreadRef, tick: u64, asleep: bool) {
        let asleep = asleep || Finding::asleep_just_before(self.finding.load(Ordering::Relaxed), worker, tick);
        self.finding.store(Finding::pack(worker, tick, asleep), Ordering::Relaxed);
    }

    /// What the monitor found of `worker` during a call from tick `since`
    /// to `now`, if its last finding here was of that worker: asleep
    /// (`Some(true)`) or running or waiting for a CPU (`Some(false)`).
    pub(crate) fn found_since(&self, worker: ThreadRef, since: u64, now: u64) -> Option<bool> {
        Finding::unpack(self.finding.load(Ordering::Relaxed), worker, since, now)
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Wakes the thread waiting for readiness here for a connection just
    /// queued in the seat's ready list, unless a wake is on its way already.
    pub(crate) fn wake_for_work(&self) {
        if !self.woken.swap(true, Ordering::AcqRel) {
            self.wake();
        }
    }

    /// Wakes the thread waiting for readiness here.
    pub(crate) fn wake(&self) {
        if let Err(e) = self.waker.wake() {
            error!("waking a worker failed: {e}");
        }
    }

    /// Waits up to `timeout` for readiness; the events stay readable
    /// through the returned guard. Only the thread that set the seat's
    /// `polled` flag calls this.
    pub(crate) fn poll(&self, timeout: Option<Duration>) -> io::Result<Polled<'_>> {
        let mut guard = self.poll.lock().unwrap_or_else(PoisonError::into_inner);
        let SeatPoll { poll, events } = &mut *guard;
        let polled = poll.poll(events, timeout);
        // A wake for work set before this returned is spent: the caller
        // looks at the ready list next. (One set meanwhile makes the next
        // poll return at once: never lost, at worst one more.)
        if self.woken.load(Ordering::Relaxed) {
            self.woken.swap(false, Ordering::AcqRel);
        }
        match polled {
            Err(e) if e.kind() != io::ErrorKind::Interrupted => Err(e),
            _ => Ok(Polled(guard)),
        }
    }

    /// The seat reported the listener (see [`ListenerWatch::reported`]).
    pub(crate) fn listener_reported(&self) {
        self.listener.lock().unwrap_or_else(PoisonError::into_inner).reported();
    }

    /// An accept pass emptied the listener: the seat is told of the next
    /// connection (see [`ListenerWatch::rearm`]).
    pub(crate) fn rearm_listener(&self) {
        self.listener.lock().unwrap_or_else(PoisonError::into_inner).rearm(&self.registry, LISTENER);
    }

    /// Stops watching the listener (shutdown).
    pub(crate) fn forget_listener(&self) {
        self.listener.lock().unwrap_or_else(PoisonError::into_inner).forget(&self.registry);
    }
}

/// Seats to wake, each once: a bit each for the first 64 (a server has a
/// seat per CPU), so that waking the seats of one event's stream
/// allocates nothing; a list for the rest.
#[derive(Default)]
pub(crate) struct SeatSet {
    low: u64,
    high: Vec<usize>,
}

impl SeatSet {
    pub(crate) fn insert(&mut self, seat: usize) {
        match seat {
            0..64 => self.low |= 1 << seat,
            _ if self.high.contains(&seat) => {}
            _ => self.high.push(seat),
        }
    }

    pub(crate) fn for_each(&self, mut f: impl FnMut(usize)) {
        (0..64).filter(|&seat| self.low & (1 << seat) != 0).for_each(&mut f);
        self.high.iter().copied().for_each(f);
    }
}

/// Room each ready list starts with, so that the first connections queued
/// there (a hand-over under load, say) allocate nothing; more grows it.
const READY_CAPACITY: usize = 16;

/// Connections taken from a seat's ready list in a row while some a sender
/// woke wait in its later list, at most: those are served after requests,
/// but not starved by them.
#[cfg(not(httpool_shuttle))]
const LATER_AFTER: u32 = 16;
/// Small in the model checks, whose few connections must reach it.
#[cfg(httpool_shuttle)]
const LATER_AFTER: u32 = 2;

/// Per seat: its ready list and who watches it. Lives under the hub lock.
pub(crate) struct SeatBoard<C = Box<Connection>> {
    /// Readable connections per seat, oldest first.
    ready: Vec<VecDeque<C>>,
    /// Per seat, streams a sender woke (their events to write), oldest
    /// first: served after the readable ones, as a request's answer is
    /// short and a broadcast to ten thousand streams must not queue the
    /// requests that come meanwhile behind it; but at least every
    /// [`LATER_AFTER`] + 1 connections taken from the seat.
    later: Vec<VecDeque<C>>,
    /// Per seat, connections taken from its ready list since one was taken
    /// from its later list (while some waited there).
    passed: Vec<u32>,
    /// Per seat, connections taken from its later list, or from other seats
    /// by its worker, since it was last polled: a worker draining a
    /// broadcast looks for new readiness every
    /// [`LATER_AFTER`] of them ([`SeatBoard::wants_look`]), so a request
    /// that comes meanwhile is not found only once the broadcast is out.
    unlooked: Vec<u32>,
    /// The monitor's looks so far ([`SeatBoard::tick`]), and per seat the
    /// look during which it was last polled: a worker draining woken
    /// streams, or other seats' work, polls its own seat at least once a
    /// look, so the seat is never left unwatched for a whole look.
    look_tick: u64,
    looked_at: Vec<u64>,
    /// Connections in the ready lists: what admission weighs against
    /// `queue_depth`.
    queued: usize,
    /// Connections in the later lists. Not weighed for admission: a
    /// broadcast to ten thousand streams must not hold back or refuse the
    /// clients that come meanwhile.
    woken: usize,
    /// A thread is polling the seat (or about to).
    polled: Vec<bool>,
    /// A thread was asked to take the seat over and has not yet.
    claimed: Vec<bool>,
    /// Work taken from each seat: the monitor's sign of life.
    progress: Vec<u64>,
    /// Seats being polled by workers (not the monitor).
    worker_pollers: usize,
    /// Round-robin seat for the next connection.
    next_seat: usize,
}

impl<C: Occupant> SeatBoard<C> {
    pub(crate) fn new(seats: usize) -> SeatBoard<C> {
        SeatBoard {
            ready: (0..seats).map(|_| VecDeque::with_capacity(READY_CAPACITY)).collect(),
            later: (0..seats).map(|_| VecDeque::new()).collect(),
            passed: vec![0; seats],
            unlooked: vec![0; seats],
            look_tick: 0,
            looked_at: vec![0; seats],
            queued: 0,
            woken: 0,
            polled: vec![false; seats],
            claimed: vec![false; seats],
            progress: vec![0; seats],
            worker_pollers: 0,
            next_seat: 0,
        }
    }

    pub(crate) fn seats(&self) -> usize {
        self.ready.len()
    }

    /// Connections waiting in ready lists.
    pub(crate) fn queued(&self) -> usize {
        self.queued
    }

    /// Connections waiting in ready and later lists: work for a worker.
    pub(crate) fn pending(&self) -> usize {
        self.queued + self.woken
    }

    /// A look of the monitor's begins.
    pub(crate) fn tick(&mut self) {
        self.look_tick += 1;
    }

    pub(crate) fn has_ready(&self, seat: usize) -> bool {
        !self.ready[seat].is_empty() || !self.later[seat].is_empty()
    }

    /// Queues `conn` at the back of `seat`'s ready list.
    #[inline]
    pub(crate) fn push_ready(&mut self, seat: usize, conn: C) {
        self.ready[seat].push_back(conn);
        self.queued += 1;
    }

    /// Queues `conn`, woken by a sender, at the back of `seat`'s later list.
    pub(crate) fn push_later(&mut self, seat: usize, conn: C) {
        self.later[seat].push_back(conn);
        self.woken += 1;
    }

    /// The oldest ready connection of `seat`, or of its later list when the
    /// ready one is empty or has gone first [`LATER_AFTER`] times; taken by
    /// the seat's own worker, which is progress at the seat.
    #[inline]
    pub(crate) fn pop_ready(&mut self, seat: usize) -> Option<C> {
        // The common case, on every request: no stream woken here.
        if self.later[seat].is_empty() {
            let conn = self.ready[seat].pop_front()?;
            self.queued -= 1;
            self.progress[seat] += 1;
            return Some(conn);
        }
        let conn = self.take_ready_or_later(seat)?;
        self.progress[seat] += 1;
        Some(conn)
    }

    /// [`SeatBoard::pop_ready`] while woken streams wait at `seat`, with no
    /// progress counted.
    #[inline(never)]
    fn take_ready_or_later(&mut self, seat: usize) -> Option<C> {
        let later_waits = !self.later[seat].is_empty();
        if later_waits && (self.ready[seat].is_empty() || self.passed[seat] >= LATER_AFTER) {
            let conn = self.later[seat].pop_front()?;
            self.woken -= 1;
            self.passed[seat] = 0;
            self.unlooked[seat] = self.unlooked[seat].saturating_add(1);
            self.shrink_later(seat);
            return Some(conn);
        }
        let conn = self.ready[seat].pop_front()?;
        self.queued -= 1;
        if later_waits {
            self.passed[seat] += 1;
        }
        Some(conn)
    }

    /// Gives back what a broadcast grew an emptied later list to (a
    /// pointer per stream: some 80 KiB for ten thousand).
    fn shrink_later(&mut self, seat: usize) {
        let later = &mut self.later[seat];
        if later.is_empty() && later.capacity() > 4 * READY_CAPACITY {
            later.shrink_to(READY_CAPACITY);
        }
    }

    /// True when the worker at `seat`, which has served woken streams or
    /// other seats' work since it last polled its seat and has no
    /// readable connection there to serve, should first look (without
    /// waiting) for readiness: after [`LATER_AFTER`] of them, and at least
    /// once per look of the monitor's. Its seat is then neither left
    /// unwatched while a broadcast drains (a request that comes meanwhile
    /// is found at once), nor taken by the monitor for one whose worker is
    /// stuck (and, catching the worker waiting for a lock, for one
    /// blocked, starting a thread for it).
    pub(crate) fn wants_look(&self, seat: usize) -> bool {
        let unlooked = self.unlooked[seat];
        unlooked > 0
            && (unlooked >= LATER_AFTER || self.looked_at[seat] != self.look_tick)
            && self.ready[seat].is_empty()
            && !self.polled[seat]
    }

    /// Work of another seat (one whose worker is busy) for the worker of
    /// `own`, whose own lists are empty: readable connections first, then
    /// woken streams, each searched from the seat after `own` on. It counts
    /// as progress at `own`, not at the seat it came from: taking its work
    /// polls nobody's seat, and a seat whose worker is stuck must still be
    /// seen stuck, and handed over, however busy thieves keep its lists.
    /// `own` counts it among those taken since it was last polled
    /// ([`SeatBoard::wants_look`]).
    pub(crate) fn steal(&mut self, own: usize) -> Option<C> {
        // The common case, a worker that served its seat's last request:
        // nothing queued anywhere.
        if self.queued == 0 && self.woken == 0 {
            return None;
        }
        let n = self.ready.len();
        let order = (1..=n).map(|i| (own + i) % n);
        let seat = order
            .clone()
            .find(|&s| !self.ready[s].is_empty())
            .or_else(|| order.clone().find(|&s| !self.later[s].is_empty()))?;
        let conn = match self.later[seat].is_empty() {
            true => {
                let conn = self.ready[seat].pop_front()?;
                self.queued -= 1;
                conn
            }
            false => self.take_ready_or_later(seat)?,
        };
        self.progress[own] += 1;
        if !self.polled[own] {
            self.unlooked[own] = self.unlooked[own].saturating_add(1);
        }
        Some(conn)
    }

    pub(crate) fn is_polled(&self, seat: usize) -> bool {
        self.polled[seat]
    }

    pub(crate) fn any_polled(&self) -> bool {
        self.polled.iter().any(|&p| p)
    }

    /// A seat some worker waits at, other than those in `except`.
    pub(crate) fn polled_seat_except(&self, except: &[usize]) -> Option<usize> {
        (0..self.seats()).find(|&s| self.polled[s] && !except.contains(&s))
    }

    /// True when nobody polls the seat and nobody was asked to.
    pub(crate) fn is_free(&self, seat: usize) -> bool {
        !self.polled[seat] && !self.claimed[seat]
    }

    /// The caller will poll the seat (it was free, or claimed for it).
    pub(crate) fn begin_poll(&mut self, seat: usize, by_worker: bool) {
        debug_assert!(!self.polled[seat], "two threads polling one seat");
        self.polled[seat] = true;
        self.claimed[seat] = false;
        self.worker_pollers += usize::from(by_worker);
    }

    /// The caller stopped polling the seat; a worker's poll is progress.
    pub(crate) fn end_poll(&mut self, seat: usize, by_worker: bool) {
        self.polled[seat] = false;
        self.unlooked[seat] = 0;
        self.looked_at[seat] = self.look_tick;
        if by_worker {
            self.worker_pollers -= 1;
            self.progress[seat] += 1;
        }
    }

    /// Records that a thread was asked to take the seat over.
    pub(crate) fn claim(&mut self, seat: usize) {
        self.claimed[seat] = true;
    }

    /// The thread asked to take the seat over could not be had, or has
    /// arrived: it takes the seat's ready work or polls it, and a seat that
    /// is left unpolled again (its new worker blocked in turn) may be
    /// handed over again.
    pub(crate) fn unclaim(&mut self, seat: usize) {
        self.claimed[seat] = false;
    }

    /// Work taken from the seat so far.
    pub(crate) fn progress(&self, seat: usize) -> u64 {
        self.progress[seat]
    }

    /// Workers waiting for readiness at a seat.
    pub(crate) fn worker_pollers(&self) -> usize {
        self.worker_pollers
    }

    /// The seat a new connection is watched by: round-robin.
    pub(crate) fn next_seat(&mut self) -> usize {
        let seat = self.next_seat;
        self.next_seat = (seat + 1) % self.seats();
        seat
    }
}

#[cfg(test)]
mod finding_tests {
    use super::Finding;
    use crate::sys::ThreadRef;

    /// A finding counts for its own thread only, and only if it was made
    /// during the call asked about, across the wrap of the tick's 31 bits
    /// too; one older than the call never counts, however old.
    #[test]
    fn a_finding_is_read_back_for_its_thread_and_during_the_call_only() {
        let (a, b) = (ThreadRef::from_raw(7).unwrap(), ThreadRef::from_raw(u32::MAX).unwrap());
        let word = Finding::pack(a, 5, true);
        assert_eq!(Finding::unpack(word, a, 4, 5), Some(true));
        assert_eq!(Finding::unpack(word, a, 4, 4), None, "after the call");
        assert_eq!(Finding::unpack(word, a, 5, 9), None, "not after the call began");
        assert_eq!(Finding::unpack(word, a, 9, 12), None);
        assert_eq!(Finding::unpack(word, b, 4, 5), None, "another thread's");
        assert_eq!(Finding::unpack(Finding::pack(b, 5, false), b, 0, 6), Some(false));
        let wrap = 1u64 << 31;
        assert_eq!(Finding::unpack(Finding::pack(a, wrap + 2, false), a, wrap - 3, wrap + 4), Some(false));
        assert_eq!(Finding::unpack(Finding::pack(a, 3 * wrap + 2, true), a, 3 * wrap - 1, 3 * wrap + 2), Some(true));
        // Older than the call by more than half the tick's range: modulo
        // 2^31 it would look recent.
        for old in [(1 << 30) + 1, wrap - 5, wrap + 3] {
            assert_eq!(Finding::unpack(Finding::pack(a, 10 * wrap - old, true), a, 10 * wrap, 10 * wrap + 3), None);
        }
        // Asleep at the look before, by the same thread: the call blocked.
        assert!(Finding::asleep_just_before(Finding::pack(a, 8, true), a, 9));
        assert!(!Finding::asleep_just_before(Finding::pack(a, 7, true), a, 9));
        assert!(!Finding::asleep_just_before(Finding::pack(a, 8, false), a, 9));
        assert!(!Finding::asleep_just_before(Finding::pack(b, 8, true), a, 9));
        // Nothing found yet: the word is 0, no thread's id.
        assert_eq!(Finding::unpack(0, a, 0, 1), None);
    }
}

#[cfg(test)]
mod board_tests {
    use std::time::Instant;

    use super::{LATER_AFTER, SeatBoard};
    use crate::shared::slots::Occupant;

    /// A stand-in connection, known by its number.
    struct Conn(u32);

    impl Occupant for Conn {
        fn place(&self) -> (u32, u32) {
            (self.0, 0)
        }
        fn deadline(&self) -> Option<Instant> {
            None
        }
        fn seat(&self) -> usize {
            0
        }
        fn idle_kept_alive(&self) -> bool {
            false
        }
    }

    /// Streams a sender woke go after readable connections, but one goes
    /// every `LATER_AFTER + 1` while both wait; alone, they go at once.
    #[test]
    fn woken_streams_go_after_readable_connections_but_are_not_starved() {
        let mut board = SeatBoard::new(1);
        for n in 0..3 {
            board.push_later(0, Conn(1000 + n));
        }
        for n in 0..40 {
            board.push_ready(0, Conn(n));
        }
        assert_eq!((board.queued(), board.pending()), (40, 43));
        let order: Vec<u32> = std::iter::from_fn(|| board.pop_ready(0).map(|c| c.0)).collect();
        let first_later = LATER_AFTER as usize;
        assert_eq!(order[..first_later], (0..LATER_AFTER).collect::<Vec<_>>()[..]);
        assert_eq!(order[first_later], 1000);
        assert_eq!(order[2 * first_later + 1], 1001);
        assert_eq!(order.len(), 43);
        assert_eq!(board.pending(), 0);
        board.push_later(0, Conn(7));
        assert!(board.has_ready(0));
        assert_eq!(board.steal(0).map(|c| c.0), Some(7));
    }

    /// Streams a sender woke wait for a worker, but not for admission: a
    /// broadcast to more streams than `queue_depth` must not hold back or
    /// refuse new clients.
    #[test]
    fn woken_streams_are_work_but_not_weighed_for_admission() {
        let mut board = SeatBoard::new(2);
        for n in 0..5 {
            board.push_later(n % 2, Conn(n as u32));
        }
        board.push_ready(0, Conn(10));
        assert_eq!((board.queued(), board.pending()), (1, 6));
        assert!(board.pop_ready(0).is_some());
        assert_eq!((board.queued(), board.pending()), (0, 5));
        while board.steal(0).is_some() {}
        assert_eq!((board.queued(), board.pending()), (0, 0));
    }

    /// A thief takes other seats' readable connections before their woken
    /// streams, from the seat after its own on; what it takes is progress
    /// at its own seat, not at the seat it came from (whose worker may be
    /// stuck, and must still be seen so).
    #[test]
    fn a_thief_takes_requests_first_and_credits_its_own_seat() {
        let mut board = SeatBoard::new(3);
        board.push_later(1, Conn(1));
        board.push_ready(2, Conn(2));
        board.push_ready(0, Conn(0));
        let before = (0..3).map(|s| board.progress(s)).collect::<Vec<_>>();
        assert_eq!(board.steal(1).map(|c| c.0), Some(2), "seat 2's request, before seat 1's stream");
        assert_eq!(board.steal(1).map(|c| c.0), Some(0));
        assert_eq!(board.steal(1).map(|c| c.0), Some(1));
        assert_eq!(board.progress(0), before[0], "taken from seat 0, but no progress there");
        assert_eq!(board.progress(2), before[2]);
        assert_eq!(board.progress(1), before[1] + 3);
    }

    /// A worker draining woken streams looks at its seat after
    /// `LATER_AFTER` of them, and at least once per look of the monitor's;
    /// a worker that only serves requests never needs to.
    #[test]
    fn a_worker_draining_woken_streams_looks_at_its_seat_each_monitor_look() {
        let mut board = SeatBoard::new(1);
        for n in 0..100 {
            board.push_later(0, Conn(n));
        }
        board.push_ready(0, Conn(1000));
        assert!(board.pop_ready(0).is_some());
        board.tick();
        assert!(!board.wants_look(0), "a request served: nothing unlooked");
        assert!(board.pop_ready(0).is_some());
        assert!(board.wants_look(0), "the monitor looked since the seat was polled");
        board.begin_poll(0, true);
        assert!(!board.wants_look(0), "polled now");
        board.end_poll(0, true);
        for _ in 1..LATER_AFTER {
            assert!(board.pop_ready(0).is_some());
            assert!(!board.wants_look(0));
        }
        assert!(board.pop_ready(0).is_some());
        assert!(board.wants_look(0), "LATER_AFTER streams since the last poll");
        board.begin_poll(0, true);
        board.end_poll(0, true);
        assert!(board.pop_ready(0).is_some());
        assert!(!board.wants_look(0));
        board.tick();
        assert!(board.wants_look(0));
        // The count saturates: a worker stealing for ever never overflows it.
        board.unlooked[0] = u32::MAX;
        board.push_ready(0, Conn(7));
        assert!(board.steal(0).is_some());
        assert_eq!(board.unlooked[0], u32::MAX);
    }
}
