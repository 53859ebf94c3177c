//! The monitor thread: enforces the idle and head deadlines, hands the seat
//! of a worker stuck in a handler to a sleeping worker (or, when none is
//! free, polls it itself so connections are still accepted, queued or
//! refused), and runs the shutdown sweep.
//!
//! It never serves a request. While every seat's worker is waiting for
//! readiness it sleeps until the next deadline; while some worker is busy it
//! looks every [`STALL_TICK`].

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use crate::conn::Expiry;
use crate::date::DateCache;
use crate::encode::encode_error;
use crate::lot::{Conn, Shared};

/// Longest the monitor sleeps: deadlines are enforced at least this often.
const TICK: Duration = Duration::from_millis(250);

/// How often a busy server is looked at. A seat whose worker took no new
/// work and polled no events for a whole tick is stuck (in a handler that
/// blocks, or on one connection that keeps sending): its seat goes to
/// another worker.
pub(crate) const STALL_TICK: Duration = Duration::from_millis(1);

/// How long the monitor keeps looking every [`STALL_TICK`] after it last
/// saw a busy seat, before it sleeps until the next deadline (and a worker
/// that starts serving has to wake it). Under steady traffic it never
/// sleeps long, so no request pays for waking it.
const AWAKE_AFTER_BUSY: Duration = Duration::from_millis(50);

/// Stale deadlines the heap may hold beyond two per parked connection
/// before it is compacted.
const TIMER_SLACK: usize = 1024;

pub(crate) struct Monitor {
    shared: Arc<Shared>,
    /// Deadlines of parked connections: (deadline, slot, generation).
    timers: BinaryHeap<Reverse<(Instant, u32, u32)>>,
    /// Entries that came due for connections whose deadline moved on.
    later: Vec<(Instant, u32, u32)>,
    /// Seats to poll, and seats to wake, found by the last look.
    orphans: Vec<usize>,
    nudge: Vec<usize>,
    /// Each seat's progress count at the last look.
    seen: Vec<u64>,
    date: DateCache,
}

impl Monitor {
    pub(crate) fn new(shared: Arc<Shared>) -> Monitor {
        let seats = shared.seats.len();
        Monitor {
            shared,
            timers: BinaryHeap::with_capacity(2 * TIMER_SLACK),
            later: Vec::new(),
            orphans: Vec::with_capacity(seats),
            nudge: Vec::with_capacity(seats),
            seen: vec![0; seats],
            date: DateCache::new(),
        }
    }

    /// Runs until shutdown.
    pub(crate) fn run(mut self) {
        let mut last_busy = Instant::now();
        while !self.shared.stopping.load(Ordering::Acquire) {
            if self.look() {
                last_busy = Instant::now();
            }
            self.expire(Instant::now());
            // Accepting checks the pause itself (and waits again if it is on).
            if self.shared.take_accept_waiting() {
                self.shared.accept(0);
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
        self.shut_down();
    }

    /// Finds stuck seats and gets someone polling them. Returns whether any
    /// seat is busy (its worker serving rather than waiting for readiness)
    /// or did work since the last look.
    fn look(&mut self) -> bool {
        let shared = &*self.shared;
        let mut busy = false;
        // Kept between looks so that a stuck seat costs no allocation.
        let mut orphans = std::mem::take(&mut self.orphans);
        let mut nudge = std::mem::take(&mut self.nudge);
        {
            let mut lot = shared.lock();
            self.timers.extend(lot.new_timers.drain(..).map(Reverse));
            for seat in 0..lot.seats() {
                let unwatched = !lot.polling[seat];
                let waiting = lot.has_ready(seat);
                busy |= unwatched || waiting;
                let moved = lot.progress[seat] != self.seen[seat];
                // Traffic keeps the monitor looking often, so that no
                // worker has to wake it.
                busy |= moved;
                let stuck = (unwatched || waiting) && !moved;
                self.seen[seat] = lot.progress[seat];
                if !stuck || lot.adopt.contains(&seat) {
                    continue;
                }
                if waiting && !unwatched {
                    // Work queued behind the worker waiting for readiness.
                    nudge.push(seat);
                } else if lot.sleepers > lot.adopt.len() {
                    lot.adopt.push(seat);
                    shared.work.notify_one();
                } else if let Some(idle) = (0..lot.seats()).find(|&s| lot.polling[s] && !orphans.contains(&s)) {
                    // A worker waiting at another seat steals the work.
                    if waiting {
                        nudge.push(idle);
                    }
                    if unwatched {
                        lot.polling[seat] = true;
                        orphans.push(seat);
                    }
                } else {
                    lot.polling[seat] = true;
                    orphans.push(seat);
                }
            }
        }
        for seat in nudge.drain(..) {
            shared.nudge(seat);
        }
        for seat in orphans.drain(..) {
            shared.poll_seat(seat, Some(Duration::ZERO), false);
        }
        (self.orphans, self.nudge) = (orphans, nudge);
        busy
    }

    /// How long to sleep while nothing is busy: until the next deadline or
    /// the end of an accept pause, at most [`TICK`].
    fn doze(&self) -> Duration {
        let now = Instant::now();
        let next_timer = self.timers.peek().map(|Reverse((at, _, _))| at.saturating_duration_since(now));
        // The end of an accept pause matters only while an accept waits
        // for it (one that has passed is cleared by the next accept).
        let pause = match self.shared.lock().accept_paused_until {
            Some(at) if at > now && self.shared.accept_waiting.load(Ordering::Relaxed) => Some(at - now),
            _ => None,
        };
        [Some(TICK), next_timer, pause].into_iter().flatten().min().unwrap_or(TICK)
    }

    /// Closes parked connections whose deadline passed; one still sending
    /// its head gets `408` first. (One that stopped taking an answer just
    /// closes.)
    fn expire(&mut self, now: Instant) {
        let due = self.timers.peek().is_some_and(|Reverse((at, _, _))| *at <= now);
        if !due && self.timers.len() <= TIMER_SLACK {
            return;
        }
        let mut expired = Vec::new();
        let mut later = std::mem::take(&mut self.later);
        {
            let mut lot = self.shared.lock();
            while let Some(&Reverse(entry)) = self.timers.peek() {
                if entry.0 > now {
                    break;
                }
                self.timers.pop();
                expired.extend(lot.timer_due(entry, now, &mut later));
            }
            // Entries of connections that closed are dropped lazily; keep
            // the heap proportional to what is open.
            if self.timers.len() > 2 * lot.open() + TIMER_SLACK {
                self.timers.retain(|Reverse((at, slot, generation))| lot.is_live_timer(*at, *slot, *generation));
            }
        }
        self.timers.extend(later.drain(..).map(Reverse));
        self.later = later;
        for mut conn in expired {
            match conn.state.expiry() {
                Expiry::RequestTimeout => self.answer_timeout(&mut conn),
                Expiry::TimedOut => {}
                // A lingering close that ran its time is no timeout of the client's.
                Expiry::Done => {
                    self.shared.close(conn);
                    continue;
                }
            }
            debug!("{}: closing after timeout", conn.peer);
            self.shared.counters.timeout();
            self.shared.close(conn);
        }
    }

    /// Best-effort `408` on a slow head: one non-blocking write, then close.
    fn answer_timeout(&mut self, conn: &mut Conn) {
        let mut out = Vec::with_capacity(160);
        encode_error(408, conn.state.holds_head_request(), self.date.now(), &mut out);
        let _ = conn.stream.write(&out);
    }

    /// Stop accepting; once no worker is polling, move every request that
    /// already arrived to a ready list (the workers answer them with
    /// `Connection: close`), close the idle connections, and let the
    /// workers go when the ready lists are empty.
    fn shut_down(self) {
        let shared = &*self.shared;
        shared.forget_listener();
        let mut lot = shared.lock();
        while lot.polling.iter().any(|&p| p) {
            lot = shared.work.wait_timeout(lot, TICK).unwrap_or_else(PoisonError::into_inner).0;
        }
        let seats = lot.seats();
        lot.polling.iter_mut().for_each(|p| *p = true);
        drop(lot);
        for seat in 0..seats {
            shared.poll_seat(seat, Some(Duration::ZERO), false);
        }
        let idle = {
            let mut lot = shared.lock();
            lot.closed = true;
            lot.take_idle()
        };
        for conn in idle {
            shared.close(conn);
        }
        let mut lot = shared.lock();
        lot.swept = true;
        shared.work.notify_all();
    }
}
