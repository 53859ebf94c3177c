//! The monitor thread: enforces the deadlines of parked connections, hands
//! the seat of a worker stuck in a handler to another thread (an idle one,
//! or one started for it, up to `max_workers`; past that it polls the seat
//! itself so connections are still accepted, queued or refused), and runs
//! the shutdown sweep.
//!
//! It never serves a request. While every seat's worker is waiting for
//! readiness it sleeps until the next deadline; while some worker is busy it
//! looks every [`STALL_TICK`], and each look is a tick of the clock by which
//! workers tell a handler call that blocked.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::date::DateCache;
use crate::encode::encode_error;
use crate::http1::Expiry;
use crate::pool::Workers;
use crate::shared::growth::{Growth, Seen};
use crate::shared::slots::Timer;
use crate::shared::{CloseWhy, Connection, HandOver, IdleClose, Shared};
use crate::stop::LINGER;
use crate::sys;

/// Longest the monitor sleeps: deadlines are enforced at least this often.
const TICK: Duration = Duration::from_millis(250);

/// How often a busy server is looked at. A seat whose worker took no new
/// work and polled no events for a whole tick is stuck (in a handler that
/// blocks, or on one connection that keeps sending): another thread takes
/// it over.
pub(crate) const STALL_TICK: Duration = Duration::from_millis(1);

/// How long the monitor keeps looking every [`STALL_TICK`] after it last
/// saw a busy seat, before it sleeps until the next deadline (and a worker
/// that starts serving has to wake it). Under steady traffic it never
/// sleeps long, so no request pays for waking it.
const AWAKE_AFTER_BUSY: Duration = Duration::from_millis(50);

/// Looks in a row that may find a seat stuck behind a worker that computes
/// (or waits for a CPU) before a thread may be started for it after all:
/// its other connections wait behind the computation no longer than this
/// (some 20 ms) when every thread computes. Shorter computations, and
/// preempted workers, add no thread.
const COMPUTING_LOOKS: u32 = 20;

/// How long after the last extra thread retired the monitor gives back the
/// stacks of the extra threads: they have all exited by then.
const SETTLE: Duration = Duration::from_millis(200);

/// Stale deadlines the heap may hold beyond two per open connection before
/// it is compacted.
const TIMER_SLACK: usize = 1024;

pub(crate) struct Monitor {
    shared: Arc<Shared>,
    workers: Arc<dyn Workers>,
    /// Deadlines of parked connections.
    timers: BinaryHeap<Reverse<Timer>>,
    /// Entries that came due for connections whose deadline moved on.
    later: Vec<Timer>,
    /// Seats found stuck by the last look, seats to poll, seats to wake.
    stuck: Vec<usize>,
    orphans: Vec<usize>,
    nudge: Vec<usize>,
    /// Each seat's progress count at the last look.
    seen: Vec<u64>,
    /// For each seat, the looks in a row that found it stuck with its
    /// worker running or waiting for a CPU.
    computing: Vec<u32>,
    date: DateCache,
    /// When the monitor first saw that the last extra thread retired.
    retired_seen: Option<Instant>,
    /// How far the pool may grow for handlers that block.
    growth: Growth,
}

impl Monitor {
    pub(crate) fn new(shared: Arc<Shared>, workers: Arc<dyn Workers>) -> Monitor {
        let seats = shared.seats.len();
        let growth = Growth::new(shared.config.workers, shared.config.max_workers);
        shared.engine.limit_blocking(growth.limit());
        Monitor {
            shared,
            workers,
            timers: BinaryHeap::with_capacity(2 * TIMER_SLACK),
            // Sized up front, like the other lists here: a first use under
            // load allocates nothing (`tests/alloc.rs`).
            later: Vec::with_capacity(64),
            stuck: Vec::with_capacity(seats),
            orphans: Vec::with_capacity(seats),
            nudge: Vec::with_capacity(seats),
            // Every seat counts as moved at the first look: a worker that
            // has not begun polling its seat yet is given a tick to, and no
            // thread is started for it meanwhile.
            seen: vec![u64::MAX; seats],
            computing: vec![0; seats],
            date: DateCache::new(),
            retired_seen: None,
            growth,
        }
    }

    /// Runs until shutdown, then sweeps.
    pub(crate) fn run(mut self) {
        let mut last_busy = Instant::now();
        while !self.shared.is_stopping() {
            if self.look() {
                last_busy = Instant::now();
            }
            self.expire(Instant::now());
            self.give_back_stacks(Instant::now());
            // Accepting checks the pause itself (and waits again if it is on).
            if self.shared.take_accept_waiting() {
                self.shared.accept(0, false);
            }
            if last_busy.elapsed() < AWAKE_AFTER_BUSY {
                std::thread::park_timeout(STALL_TICK);
            } else {
                self.shared.monitor_dozing.store(true, Ordering::Release);
                // A worker may have started serving since the look.
                if self.look() {
                    self.shared.monitor_dozing.store(false, Ordering::Relaxed);
                    continue;
                }
                std::thread::park_timeout(self.doze());
                self.shared.monitor_dozing.store(false, Ordering::Relaxed);
            }
        }
        self.shared.sweep();
    }

    /// Finds stuck seats and gets a thread polling each. Returns whether any
    /// seat is busy (its worker serving rather than waiting for readiness)
    /// or did work since the last look.
    fn look(&mut self) -> bool {
        self.shared.tick();
        // Seats that need a thread go to `stuck`; a seat whose ready list
        // waits while its worker waits for readiness goes to `nudge`.
        let busy = self.shared.engine.look(
            &mut self.seen,
            &mut ExtendHeap(&mut self.timers),
            &mut self.stuck,
            &mut self.nudge,
        );
        self.limit_growth();
        // Kept between looks so that a stuck seat costs no allocation.
        let (mut stuck, mut orphans, mut nudge) =
            (std::mem::take(&mut self.stuck), std::mem::take(&mut self.orphans), std::mem::take(&mut self.nudge));
        for seat in 0..self.computing.len() {
            if !stuck.contains(&seat) {
                self.computing[seat] = 0;
            }
        }
        for &seat in &stuck {
            // A worker that computes, or waits for a CPU, is not blocked:
            // its seat goes to an idle thread, or the monitor polls it for
            // the threads there are, but no thread is added only to share
            // the busy cores; unless the seat has waited so for long.
            let grow = if self.worker_wants_cpu(seat) {
                self.computing[seat] = self.computing[seat].saturating_add(1);
                self.computing[seat] >= COMPUTING_LOOKS
            } else {
                self.computing[seat] = 0;
                true
            };
            match self.shared.hand_over(seat, grow) {
                Some(HandOver::Spawn) => self.workers.spawn_for(seat),
                Some(HandOver::Adopt) | None => {}
                Some(HandOver::AtBound) => self.shared.engine.poll_for_busy_workers(seat, &mut orphans, &mut nudge),
            }
        }
        stuck.clear();
        for seat in nudge.drain(..) {
            self.shared.nudge(seat);
        }
        for seat in orphans.drain(..) {
            // What is left waits for the next look.
            let _ = self.shared.poll_seat(seat, Some(Duration::ZERO), false);
        }
        (self.stuck, self.orphans, self.nudge) = (stuck, orphans, nudge);
        busy
    }

    /// Measures whether more calls expected to block at once finish more
    /// of them, and sets how many may run (see `shared/growth.rs`).
    fn limit_growth(&mut self) {
        let (calls_done, held_back, busy, waiting) = self.shared.engine.limit_blocking(self.growth.limit());
        self.growth.look(Instant::now(), Seen { calls_done, held_back, busy, waiting });
    }

    /// Whether the worker of stuck `seat` is running or waiting for a CPU
    /// (false when it is asleep, in a handler that blocks, or when its
    /// state cannot be read). What was found is marked on the seat with the
    /// thread's id, for that worker to tell whether its call blocked.
    fn worker_wants_cpu(&mut self, seat: usize) -> bool {
        let at = &self.shared.seats[seat];
        let Some(worker) = at.worker() else { return false };
        let Some(computing) = sys::wants_cpu(worker) else { return false };
        at.found(worker, self.shared.ticks(), !computing);
        computing
    }

    /// Once the extra threads have retired and had [`SETTLE`] to finish
    /// exiting (glibc queues a thread's stack after its last Rust code),
    /// empties glibc's cache of their stacks (see `sys::flush_stack_cache`).
    fn give_back_stacks(&mut self, now: Instant) {
        if !self.shared.stacks_to_give_back.load(Ordering::Acquire) {
            return;
        }
        let seen = *self.retired_seen.get_or_insert(now);
        if now.duration_since(seen) < SETTLE {
            return;
        }
        self.retired_seen = None;
        self.shared.stacks_to_give_back.store(false, Ordering::Relaxed);
        sys::flush_stack_cache();
    }

    /// How long to sleep while nothing is busy: until the next deadline or
    /// the end of an accept pause, at most [`TICK`].
    fn doze(&self) -> Duration {
        let now = Instant::now();
        let next_timer = self.timers.peek().map(|Reverse((at, _, _))| at.saturating_duration_since(now));
        let pause = self.shared.accept_pause_ends().map(|at| at.saturating_duration_since(now));
        [Some(TICK), next_timer, pause].into_iter().flatten().min().unwrap_or(TICK)
    }

    /// Closes parked connections whose deadline passed; one still sending
    /// its head is answered `408` first (see [`Expiry`], and
    /// [`Monitor::answer_timeout`]).
    fn expire(&mut self, now: Instant) {
        let due = self.timers.peek().is_some_and(|Reverse((at, _, _))| *at <= now);
        if !due && self.timers.len() <= TIMER_SLACK {
            return;
        }
        let mut expired = Vec::new();
        let mut later = std::mem::take(&mut self.later);
        self.shared.engine.expire(&mut self.timers, now, TIMER_SLACK, &mut later, &mut expired);
        self.timers.extend(later.drain(..).map(Reverse));
        self.later = later;
        for conn in expired {
            match conn.state.phase.expiry() {
                Expiry::RequestTimeout => {
                    if let Some(conn) = self.answer_timeout(conn, now) {
                        let seat = conn.seat;
                        self.shared.requeue(conn);
                        self.shared.nudge(seat);
                    }
                    continue;
                }
                // Waiting for a request: one may have come after all.
                Expiry::TimedOut => {
                    if let IdleClose::Serve(conn) = self.shared.close_idle(conn, now, CloseWhy::TimedOut) {
                        let seat = conn.seat;
                        self.shared.requeue(conn);
                        self.shared.nudge(seat);
                    }
                    continue;
                }
                // An event stream's keep-alive comment is due.
                Expiry::Resume => {
                    self.shared.requeue_due_stream(conn);
                    continue;
                }
                Expiry::Stalled => {}
                // A lingering close that ran its time is no timeout of the client's.
                Expiry::Done => {
                    self.shared.close(conn);
                    continue;
                }
            }
            // An answer the client stopped taking is cut short: no TLS
            // close_notify.
            debug!("{}: closing after timeout", conn.peer);
            self.shared.counters.timeout();
            self.shared.close(conn);
        }
    }

    /// `408` for a head (or a body collected with it) past its deadline.
    /// The client is still sending: closed at once, the socket would meet
    /// its next bytes with a reset, which can destroy the answers it has not
    /// read yet (those before the `408`, the `408` too). So the answer is
    /// written here without waiting — with every worker busy in a handler
    /// it is answered all the same — the write side shut, and the
    /// connection parked to read and discard what still comes for
    /// [`LINGER`]. Returns the connection for a worker to serve
    /// (`http1::pick_up`): when the socket had no room for the answer (the
    /// worker waits for room), or when bytes came while it was out of its
    /// slot (the worker lingers over them).
    fn answer_timeout(&mut self, mut conn: Box<Connection>, now: Instant) -> Option<Box<Connection>> {
        let mut out = Vec::with_capacity(160);
        encode_error(408, conn.state.holds_head_request(), self.date.now(), &mut out);
        match conn.stream.write(&out) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Some(conn),
            Ok(n) if n == out.len() => {}
            // Failed, or cut short: a socket with room for part of 150
            // bytes (rare: a send takes a small write whole or none of
            // it unless its last segment has a little room left). The rest
            // cannot go to a worker, which would write the answer from its
            // start: the connection closes, as an answer cut short does.
            _ => {
                self.shared.counters.timeout();
                self.shared.close(conn);
                return None;
            }
        }
        self.shared.counters.timeout();
        // An answer written, as a worker's `408` is counted.
        self.shared.counters.requests(0, 1);
        // Over TLS the write above may have left the answer's record in
        // rustls (a full socket is no error there): once the write side
        // shuts, it could never go. A socket with no room for it is closed
        // (as an answer cut short is); a plain socket has nothing to flush.
        if conn.stream.flush().is_err() {
            self.shared.close(conn);
            return None;
        }
        conn.stream.shutdown_write();
        conn.state.linger_after_answer(now + LINGER);
        self.shared.park(conn)
    }
}

/// Pushes timers onto the monitor's min-heap.
struct ExtendHeap<'a>(&'a mut BinaryHeap<Reverse<Timer>>);

impl Extend<Timer> for ExtendHeap<'_> {
    fn extend<I: IntoIterator<Item = Timer>>(&mut self, iter: I) {
        self.0.extend(iter.into_iter().map(Reverse));
    }
}
