//! The worker threads, counted: how many live, how many are idle, which
//! seats they were asked to take over, and when one may retire. Pure
//! bookkeeping under the hub lock; the threads themselves are started in
//! `pool.rs`.
//!
//! The pool is elastic and bounded: `core` threads live as long as the
//! server; more are started on demand when a seat needs a thread and none
//! is idle, never more than `max` in all, and an extra one retires after
//! waiting idle for the idle timeout.

/// Monitor ticks (about a millisecond each while the server is busy)
/// after a thread failed to start before another is tried: a failure that
/// lasts (a thread or memory limit) must not turn into a busy loop.
const SPAWN_RETRY_TICKS: u64 = 100;

/// How a seat that needs a thread gets one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HandOver {
    /// An idle thread was asked to adopt it: notify one.
    Adopt,
    /// A new thread must be started for it (counted already): start it,
    /// and report a failure with [`Crew::spawn_failed`].
    Spawn,
    /// Every thread there may be is busy: nobody takes it (backpressure).
    AtBound,
}

/// Thread counts and pending adoptions.
#[derive(Debug)]
pub(crate) struct Crew {
    /// Threads kept however idle.
    core: usize,
    /// Threads at most.
    max: usize,
    /// Threads started and not yet exited (those being started included).
    live: usize,
    /// Threads waiting for work, asleep.
    idle: usize,
    /// Seats idle threads were asked to take over, not yet taken.
    adoptions: Vec<usize>,
    spawned: u64,
    retired: u64,
    /// The tick before which no new thread is tried after a failure.
    retry_at: u64,
}

impl Crew {
    /// `seats`: a seat is handed over once until it is adopted, so no more
    /// adoptions than seats are ever pending.
    pub(crate) fn new(seats: usize, core: usize, max: usize) -> Crew {
        Crew {
            core,
            max: max.max(core),
            live: 0,
            idle: 0,
            // Sized up front (by the seats, not by `core`, whose extreme
            // values would be an allocation the system refuses): a first
            // hand-over under load allocates nothing (`tests/alloc.rs`
            // under Wine caught one, when a slow worker's seat was adopted
            // while requests were counted).
            adoptions: Vec::with_capacity(seats),
            spawned: 0,
            retired: 0,
            retry_at: 0,
        }
    }

    /// Counts a thread about to be started, if the bound allows.
    pub(crate) fn reserve(&mut self) -> bool {
        if self.live >= self.max {
            return false;
        }
        self.live += 1;
        self.spawned += 1;
        true
    }

    /// A thread counted by [`Crew::reserve`] could not be started at
    /// monitor tick `tick`: none is tried again for a while.
    pub(crate) fn spawn_failed(&mut self, tick: u64) {
        self.live -= 1;
        self.spawned -= 1;
        self.retry_at = tick + SPAWN_RETRY_TICKS;
    }

    /// Finds a thread for `seat` at monitor tick `tick`: an idle one
    /// (beyond those already asked to adopt a seat), else, when the pool
    /// may `grow`, a new one within the bound (unless one failed to start a
    /// moment ago).
    pub(crate) fn hand_over(&mut self, seat: usize, tick: u64, grow: bool) -> HandOver {
        if self.idle > self.adoptions.len() {
            self.adoptions.push(seat);
            HandOver::Adopt
        } else if grow && tick >= self.retry_at && self.reserve() {
            HandOver::Spawn
        } else {
            HandOver::AtBound
        }
    }

    /// A seat this idle thread should take over, if one was asked for.
    pub(crate) fn take_adoption(&mut self) -> Option<usize> {
        self.adoptions.pop()
    }

    /// True when `seat` waits for an idle thread to adopt it.
    pub(crate) fn is_adopting(&self, seat: usize) -> bool {
        self.adoptions.contains(&seat)
    }

    pub(crate) fn went_idle(&mut self) {
        self.idle += 1;
    }

    pub(crate) fn woke(&mut self) {
        self.idle -= 1;
    }

    /// True when an idle thread that waited its whole idle timeout should
    /// retire: it is beyond the core count and no seat waits for it.
    pub(crate) fn may_retire(&self) -> bool {
        self.live > self.core && self.adoptions.is_empty()
    }

    /// The calling thread leaves: retired when idle, or at shutdown.
    pub(crate) fn exited(&mut self, retired: bool) {
        self.live -= 1;
        self.retired += u64::from(retired);
    }

    /// True when threads beyond the core count are live: idle ones must
    /// wait with a timeout, to retire.
    pub(crate) fn has_extra(&self) -> bool {
        self.live > self.core
    }

    pub(crate) fn core(&self) -> usize {
        self.core
    }

    pub(crate) fn live(&self) -> usize {
        self.live
    }

    pub(crate) fn idle(&self) -> usize {
        self.idle
    }

    /// (spawned, retired) since start.
    pub(crate) fn totals(&self) -> (u64, u64) {
        (self.spawned, self.retired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_threads_adopt_first_then_new_ones_start_up_to_the_bound() {
        let mut crew = Crew::new(1, 1, 3);
        assert!(crew.reserve());
        crew.went_idle();
        assert_eq!(crew.hand_over(0, 0, true), HandOver::Adopt);
        // The idle thread is spoken for: the next seat needs a new one.
        assert_eq!(crew.hand_over(1, 0, true), HandOver::Spawn);
        assert_eq!(crew.hand_over(1, 0, true), HandOver::Spawn);
        assert_eq!(crew.hand_over(1, 0, true), HandOver::AtBound);
        assert_eq!(crew.live(), 3);
        crew.spawn_failed(7);
        assert_eq!((crew.live(), crew.totals()), (2, (2, 0)));
        // After a failure, no thread is tried for a while.
        assert_eq!(crew.hand_over(1, 8, true), HandOver::AtBound);
        assert_eq!(crew.hand_over(1, 7 + SPAWN_RETRY_TICKS, true), HandOver::Spawn);
        crew.spawn_failed(200);
        assert_eq!(crew.take_adoption(), Some(0));
        crew.woke();
        assert!(crew.may_retire());
        crew.exited(true);
        assert!(!crew.may_retire(), "the core thread stays");
        assert_eq!(crew.totals(), (2, 1));
    }

    #[test]
    fn a_thread_does_not_retire_while_a_seat_waits_for_adoption() {
        let mut crew = Crew::new(1, 0, 2);
        assert!(crew.reserve());
        crew.went_idle();
        assert_eq!(crew.hand_over(5, 0, true), HandOver::Adopt);
        assert!(!crew.may_retire());
        assert_eq!(crew.take_adoption(), Some(5));
        assert!(crew.may_retire());
    }
}
