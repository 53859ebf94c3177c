//! How far the pool may grow for handlers that block: as far as more
//! threads bring more completions, and no further.
//!
//! A thread is started for a seat whose worker is asleep in a handler.
//! That helps when each handler waits on something of its own (a sleep, a
//! call to another service): twice the threads, twice the calls finished
//! per second. It does not when the handlers wait in one queue (a pool of
//! database connections, a lock): every new thread joins the queue, the
//! calls finished per second stay the same, and each waits longer.
//!
//! So the calls expected to block (those handed over before they run, see
//! `http1::respond::call`) have a limit: one beyond it waits, parked, in a
//! queue ([`Admissions`]) until a call in flight ends and hands it its
//! place, and the worker that found it goes on with other connections.
//! Threads are started for the calls admitted as before, so the pool grows
//! only as far as the limit (and the threads that serve everything else).
//! The limit is found by measuring (a hill climb on the rate of blocking
//! calls finished, in the way of .NET's thread pool and of the adaptive
//! concurrency limiters; there is no setting). It starts at twice the core
//! threads, or [`START`] if more. While calls are held back by it (there is
//! demand beyond it), a window of measurement multiplies it by [`CLIMB`]
//! (or raises it to the calls in flight and waiting, if more) and compares the rate of calls finished at the new limit with the rate
//! at the old. A gain near the step's own size (calls that block each on
//! their own) keeps the step and climbs on. A smaller gain says how many
//! calls gain from running at once (the old limit times the gain, by
//! Little's law): the limit goes there, with a quarter more room, and stays
//! for [`SETTLE_FOR`]; then a step up by half is tried, and undone unless it
//! gains [`GAIN`]. A window whose calls are too long to count (fewer than
//! [`MIN_CALLS`] finish in [`MAX_WINDOW`]) steps up while calls wait, on
//! that alone; a limit more than twice what a window used comes back down
//! (to twice that, at least where it started). At shutdown nothing waits:
//! every call is admitted.
//!
//! A window lasts at least [`MIN_WINDOW`] and at least [`WINDOW_CALLS`]
//! times the mean call (by Little's law, the calls in flight over the rate
//! of calls finished), and its first part after a step, one mean call, is
//! not counted: calls begun before the step end in it. A window in which
//! fewer than [`MIN_CALLS`] calls finished is extended, up to
//! [`MAX_WINDOW`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::slots::Occupant;

/// How much a step of the climb multiplies the limit by.
const CLIMB: usize = 4;

/// A step whose gain in calls finished per second is at least this share
/// of its own (the gain over 1 against the step over 1) is kept whole:
/// calls that each block on their own gain in proportion, and the noise of
/// a busy machine does not make a flat rate look so.
const NEAR_LINEAR: f64 = 0.8;

/// The room given above the calls found to gain from running at once.
const HEADROOM: f64 = 1.25;

/// The least gain that keeps a try from a limit found.
pub(crate) const GAIN: f64 = 1.25;

/// How long a limit found stays before a step up is tried again.
pub(crate) const SETTLE_FOR: Duration = Duration::from_secs(5);

/// The shortest window of measurement.
pub(crate) const MIN_WINDOW: Duration = Duration::from_millis(100);

/// The longest: calls longer than that are judged on what finished.
pub(crate) const MAX_WINDOW: Duration = Duration::from_secs(10);

/// A window lasts at least this many mean calls.
pub(crate) const WINDOW_CALLS: u32 = 3;

/// The limit at first, at least (or twice the core threads).
const START: usize = 8;

/// The blocking calls a window must see finish to judge a step.
const MIN_CALLS: u64 = 8;

/// What a window of measurement saw.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seen {
    /// Blocking calls finished since the pool started (a running count).
    pub(crate) calls_done: u64,
    /// Calls the limit held back since the pool started (a running count):
    /// there was demand beyond it.
    pub(crate) held_back: u64,
    /// Calls in flight, as sampled now.
    pub(crate) busy: usize,
    /// Calls waiting for a place, as sampled now.
    pub(crate) waiting: usize,
}

/// The limit and the climb toward it. Driven by the monitor: [`Growth::look`]
/// at each of its looks while the server is busy.
#[derive(Debug)]
pub(crate) struct Growth {
    /// Calls expected to block that may run at once (at most `max`, at
    /// least `floor`).
    limit: usize,
    floor: usize,
    /// The limit at first: a limit not needed comes back down to it.
    start: usize,
    max: usize,
    /// The window under way: when it began, the counts then, and from when
    /// its calls count (after the settling part).
    window: Option<Window>,
    /// A step up under trial: the limit it came from, the rate there, and
    /// whether it tries again from a limit found (not a step of a climb).
    trial: Option<(usize, f64, bool)>,
    /// No step up before then.
    settled_until: Option<Instant>,
    /// The calls in flight summed over the window's looks, the looks, and
    /// the most in flight at one look.
    busy_sum: u64,
    looks: u64,
    busy_max: usize,
    /// The last mean call seen (zero until one was measured).
    mean_call: Duration,
    /// The simulated server's running counts (tests).
    #[cfg(test)]
    sim_done: u64,
    #[cfg(test)]
    sim_held: u64,
}

#[derive(Clone, Copy, Debug)]
struct Window {
    counts_from: Instant,
    calls_at_count: Option<u64>,
    held_at_start: u64,
}

impl Growth {
    /// `core`: the threads kept however idle; `max`: the bound.
    pub(crate) fn new(core: usize, max: usize) -> Growth {
        let floor = core.max(1).min(max);
        let start = (2 * floor).max(START).clamp(floor, max);
        Growth {
            limit: start,
            floor,
            start,
            max,
            window: None,
            trial: None,
            settled_until: None,
            busy_sum: 0,
            looks: 0,
            busy_max: 0,
            mean_call: Duration::ZERO,
            #[cfg(test)]
            sim_done: 0,
            #[cfg(test)]
            sim_held: 0,
        }
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// One look at `now`: returns the limit, changed when a window ended.
    pub(crate) fn look(&mut self, now: Instant, seen: Seen) -> usize {
        let Some(window) = self.window.as_mut() else {
            self.begin(now, seen, Duration::ZERO);
            return self.limit;
        };
        // Nothing in flight, nothing held back, nothing finished: a quiet
        // server measures nothing, and the window begins with the calls.
        let quiet = seen.busy == 0
            && seen.held_back == window.held_at_start
            && window.calls_at_count.is_none_or(|at| at == seen.calls_done);
        if quiet && self.trial.is_none() {
            self.begin(now, seen, Duration::ZERO);
            return self.limit;
        }
        if window.calls_at_count.is_none() && now >= window.counts_from {
            window.calls_at_count = Some(seen.calls_done);
            self.busy_sum = 0;
            self.looks = 0;
        }
        let Some(calls_at_count) = window.calls_at_count else { return self.limit };
        self.busy_sum += seen.busy as u64;
        self.looks += 1;
        self.busy_max = self.busy_max.max(seen.busy);
        let window = *window;
        let counted = now.saturating_duration_since(window.counts_from);
        let calls = seen.calls_done.wrapping_sub(calls_at_count);
        let long_enough = counted >= MIN_WINDOW && counted >= self.mean_call * WINDOW_CALLS;
        if !(long_enough && calls >= MIN_CALLS || counted >= MAX_WINDOW) {
            return self.limit;
        }
        let rate = calls as f64 / counted.as_secs_f64();
        let busy = self.busy_sum as f64 / self.looks.max(1) as f64;
        if calls > 0 && rate > 0.0 {
            self.mean_call = Duration::from_secs_f64((busy / rate).min(MAX_WINDOW.as_secs_f64()));
        }
        let held_back = seen.held_back != window.held_at_start;
        let before = self.limit;
        let demand = seen.busy + seen.waiting;
        if calls < MIN_CALLS {
            // Calls too long to measure in a window: while more wait than
            // run, the limit grows on that alone (as the pool did before
            // it had one), a trial under way is kept.
            self.trial = None;
            if held_back {
                self.limit = self.limit.saturating_mul(CLIMB).max(demand).min(self.max);
            }
        } else if !held_back && self.trial.is_none() && self.busy_max.saturating_mul(2) < self.limit {
            // A limit far above what was used comes down (toward the start):
            // a later burst climbs again, in a window or two.
            self.limit = self.busy_max.saturating_mul(2).max(self.start);
        } else {
            self.judge(now, rate, held_back, demand);
        }
        // After a step, the calls begun before it are not counted.
        let settle = if self.limit != before { self.mean_call } else { Duration::ZERO };
        self.begin(now, seen, settle);
        self.limit
    }

    /// The end of a window with blocking calls finished at `rate`;
    /// `held_back`: growth was wanted beyond the limit.
    /// `demand`: the calls in flight and waiting now.
    fn judge(&mut self, now: Instant, rate: f64, held_back: bool, demand: usize) {
        if let Some((from, rate_from, again)) = self.trial.take() {
            let gain = rate / rate_from;
            let ideal = self.limit as f64 / from as f64;
            if rate_from <= 0.0 || gain - 1.0 >= (ideal - 1.0) * NEAR_LINEAR {
                // The step paid in full: keep it, and try the next if still
                // wanted.
                if held_back {
                    self.step_up(rate, false, demand);
                }
                return;
            }
            // It did not: the calls that gain from running at once are
            // about `from × gain` (Little's law: as many as finish the
            // more), given some room; a try from a limit found that gained
            // too little goes back to it. Either stays a while.
            let knee = (from as f64 * gain * HEADROOM).ceil() as usize;
            self.limit = if again && gain < GAIN { from } else { knee.clamp(from, self.limit) };
            self.settled_until = Some(now + SETTLE_FOR);
            return;
        }
        if !held_back || self.limit >= self.max {
            return;
        }
        if self.settled_until.is_some_and(|until| now < until) {
            return;
        }
        let again = self.settled_until.take().is_some();
        self.step_up(rate, again, demand);
    }

    /// Tries a higher limit: in a climb, [`CLIMB`] times this one or the
    /// whole `demand` if more (calls that block each on their own are then
    /// held back for one window only); from a limit found, half as much
    /// again (a try that fails costs less).
    fn step_up(&mut self, rate: f64, again: bool, demand: usize) {
        let next = match again {
            true => self.limit.saturating_add(self.limit / 2),
            false => self.limit.saturating_mul(CLIMB).max(demand),
        };
        let next = next.max(self.limit + 1).min(self.max);
        if next > self.limit {
            self.trial = Some((self.limit, rate, again));
            self.limit = next;
        }
    }

    fn begin(&mut self, now: Instant, seen: Seen, settle: Duration) {
        self.window = Some(Window { counts_from: now + settle, calls_at_count: None, held_at_start: seen.held_back });
        self.busy_sum = 0;
        self.looks = 0;
        self.busy_max = 0;
        if self.limit < self.floor {
            self.limit = self.floor;
        }
    }
}

/// The hub's side: blocking calls in flight, the limit, and the
/// connections whose call waits for a place. Under the hub lock.
pub(crate) struct Admissions<C> {
    in_flight: usize,
    limit: usize,
    /// Running counts: calls held back, calls finished.
    held_back: u64,
    done: u64,
    /// Connections whose next call waits for a place, oldest first; each
    /// is held (as by a worker) while here.
    waiting: VecDeque<C>,
}

impl<C: Occupant> Admissions<C> {
    pub(crate) fn new(limit: usize) -> Admissions<C> {
        Admissions { in_flight: 0, limit: limit.max(1), held_back: 0, done: 0, waiting: VecDeque::new() }
    }

    /// A place for a call expected to block, unless every place is taken
    /// (`stopping`: always).
    pub(crate) fn admit(&mut self, stopping: bool) -> bool {
        if self.in_flight < self.limit || stopping {
            self.in_flight += 1;
            true
        } else {
            self.held_back += 1;
            false
        }
    }

    /// Queues `conn`, whose call was not admitted; or, when a place came
    /// free meanwhile (or at shutdown), gives it one at once and returns it
    /// to be served.
    pub(crate) fn wait(&mut self, mut conn: C, stopping: bool) -> Option<C> {
        if self.in_flight < self.limit || stopping {
            self.in_flight += 1;
            conn.admitted();
            return Some(conn);
        }
        self.waiting.push_back(conn);
        None
    }

    /// A call admitted ended: its place goes to the connection that waited
    /// longest, returned to be served, or is free.
    pub(crate) fn done(&mut self) -> Option<C> {
        self.done += 1;
        // Within the limit (lowered meanwhile, the places beyond it end).
        if self.in_flight <= self.limit {
            if let Some(mut conn) = self.waiting.pop_front() {
                conn.admitted();
                return Some(conn);
            }
        }
        self.in_flight = self.in_flight.saturating_sub(1);
        None
    }

    /// Sets the limit; returns what the monitor measures by: calls
    /// finished and held back so far, in flight and waiting now.
    pub(crate) fn set_limit(&mut self, limit: usize) -> (u64, u64, usize, usize) {
        self.limit = limit.max(1);
        (self.done, self.held_back, self.in_flight, self.waiting.len())
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Every waiting connection, admitted (at shutdown, or a limit raised).
    pub(crate) fn admit_waiting(&mut self, all: bool) -> impl Iterator<Item = C> + '_ {
        let free = if all { usize::MAX } else { self.limit.saturating_sub(self.in_flight) };
        let n = free.min(self.waiting.len());
        self.in_flight += n;
        self.waiting.drain(..n).map(|mut conn| {
            conn.admitted();
            conn
        })
    }

    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::shared::slots::Numbered as Conn;

    #[test]
    fn a_place_that_ends_goes_to_the_longest_waiting_and_none_is_lost() {
        let mut places = Admissions::new(2);
        assert!(places.admit(false) && places.admit(false));
        assert!(!places.admit(false));
        assert_eq!(places.wait(Conn(1, false), false), None);
        assert_eq!(places.wait(Conn(2, false), false), None);
        // A place ends: it goes to the first waiting, still counted.
        assert_eq!(places.done(), Some(Conn(1, true)));
        assert_eq!(places.set_limit(2), (1, 1, 2, 1));
        // A newcomer does not pass the one waiting.
        assert!(!places.admit(false));
        assert_eq!(places.done(), Some(Conn(2, true)));
        assert_eq!(places.done(), None);
        assert_eq!(places.set_limit(2), (3, 2, 1, 0));
        // A place that came free between the refusal and the wait is taken
        // at once: the connection is not left waiting for an end to come.
        assert!(places.admit(false));
        assert!(!places.admit(false));
        assert_eq!(places.done(), None);
        assert_eq!(places.wait(Conn(3, false), false), Some(Conn(3, true)));
    }

    #[test]
    fn a_lowered_limit_lets_places_end_and_shutdown_admits_everyone() {
        let mut places = Admissions::new(3);
        for _ in 0..3 {
            assert!(places.admit(false));
        }
        places.set_limit(1);
        assert_eq!(places.wait(Conn(1, false), false), None);
        // Beyond the lowered limit, an ending place is not passed on.
        assert_eq!(places.done(), None);
        assert_eq!(places.done(), None);
        assert_eq!(places.set_limit(1).2, 1);
        assert_eq!(places.done(), Some(Conn(1, true)));
        // A raised limit admits those waiting it makes room for.
        assert_eq!(places.wait(Conn(2, false), false), None);
        assert_eq!(places.wait(Conn(3, false), false), None);
        places.set_limit(2);
        assert_eq!(places.admit_waiting(false).collect::<Vec<_>>(), [Conn(2, true)]);
        // At shutdown, everyone.
        assert!(places.admit(true));
        assert_eq!(places.wait(Conn(4, false), true), Some(Conn(4, true)));
        assert_eq!(places.admit_waiting(true).collect::<Vec<_>>(), [Conn(3, true)]);
        assert_eq!(places.waiting(), 0);
    }

    /// A simulated server: `wanted` calls, as many running as the limit
    /// lets, finishing at `rate(running)` per second; looks every
    /// millisecond for `secs`, from where the last run of this `growth`
    /// left the clock. Returns the limit.
    fn run(growth: &mut Growth, wanted: usize, secs: f64, rate: impl Fn(usize) -> f64) -> usize {
        thread_local!(static CLOCK: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) });
        let start = CLOCK.get().unwrap_or_else(Instant::now);
        let (mut done, mut held, mut fraction) = (growth.sim_done, growth.sim_held, 0.0);
        let steps = (secs * 1000.0) as u64;
        for ms in 1..=steps {
            let now = start + Duration::from_millis(ms);
            let threads = wanted.min(growth.limit());
            if wanted > growth.limit() {
                held += 1;
            }
            fraction += rate(threads) / 1000.0;
            done += fraction as u64;
            fraction -= fraction.floor();
            let waiting = wanted.saturating_sub(threads);
            growth.look(now, Seen { calls_done: done, held_back: held, busy: threads, waiting });
        }
        CLOCK.set(Some(start + Duration::from_millis(steps)));
        (growth.sim_done, growth.sim_held) = (done, held);
        growth.limit()
    }

    #[test]
    fn calls_that_block_each_on_their_own_grow_the_pool_to_what_they_want() {
        // 50 ms each: N threads finish N × 20 a second.
        let mut growth = Growth::new(4, 512);
        let limit = run(&mut growth, 256, 3.0, |n| n as f64 * 20.0);
        assert!(limit >= 256, "limit {limit}");
        assert!(limit <= 512);
    }

    #[test]
    fn calls_that_wait_in_one_queue_stop_the_pool_near_the_queue_s_width() {
        // 16 connections of a database pool, 5 ms a query: at most 3,200 a
        // second, however many threads wait for them.
        let mut growth = Growth::new(4, 512);
        let limit = run(&mut growth, 64, 3.0, |n| n.min(16) as f64 * 200.0);
        assert!((16..=24).contains(&limit), "limit {limit}");
        // It stays there: steps up tried after a while find nothing more.
        let limit = run(&mut growth, 64, 12.0, |n| n.min(16) as f64 * 200.0);
        assert!((16..=24).contains(&limit), "limit {limit}");
    }

    #[test]
    fn a_step_that_gains_less_than_its_share_is_not_climbed_on() {
        // One queue of 16; past 20 at once the rate looks 30% better (a
        // busier moment of the machine's, say): a try of half again gains
        // 1.3, short of the 1.4 it must, and is not climbed on from.
        let mut growth = Growth::new(2, 512);
        let rate = |n: usize| n.min(16) as f64 * 200.0 * if n > 20 { 1.3 } else { 1.0 };
        let limit = run(&mut growth, 64, 60.0, rate);
        assert!(limit <= 30, "limit {limit}");
    }

    #[test]
    fn calls_limited_by_the_cpus_add_no_threads() {
        let mut growth = Growth::new(4, 512);
        let limit = run(&mut growth, 64, 3.0, |n| n.min(2) as f64 * 1000.0);
        assert!(limit <= 12, "limit {limit}");
        assert!(limit >= 4);
    }

    #[test]
    fn a_limit_found_is_tried_upward_again_once_settled() {
        let mut growth = Growth::new(4, 512);
        run(&mut growth, 64, 2.0, |n| n.min(16) as f64 * 200.0);
        assert!(growth.limit() <= 24);
        // The shared resource widens: after settling, the pool grows again.
        let limit = run(&mut growth, 64, 15.0, |n| n as f64 * 200.0);
        assert!(limit >= 64, "limit {limit}");
    }

    #[test]
    fn calls_too_long_to_measure_grow_the_limit_while_more_wait() {
        // 20 s each: in a window of 10 s, fewer than eight finish.
        let mut growth = Growth::new(2, 512);
        let limit = run(&mut growth, 64, 25.0, |n| n as f64 / 20.0);
        assert!(limit >= 64, "limit {limit}");
    }

    #[test]
    fn a_limit_far_above_what_is_used_comes_back_down() {
        let mut growth = Growth::new(2, 512);
        assert!(run(&mut growth, 256, 3.0, |n| n as f64 * 20.0) >= 256);
        let limit = run(&mut growth, 10, 2.0, |n| n as f64 * 20.0);
        assert_eq!(limit, 20);
        let limit = run(&mut growth, 2, 2.0, |n| n as f64 * 20.0);
        assert_eq!(limit, 8, "not below where it started");
    }

    #[test]
    fn without_demand_beyond_it_the_limit_stays() {
        let mut growth = Growth::new(4, 512);
        let limit = run(&mut growth, 6, 2.0, |n| n as f64 * 20.0);
        assert_eq!(limit, 8);
        // A bound below twice the core threads is the limit.
        let mut growth = Growth::new(4, 6);
        assert_eq!(run(&mut growth, 64, 1.0, |n| n as f64 * 20.0), 6);
    }
}
