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

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use mio::{Events, Poll, Registry, Token, Waker};

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
