//! The concurrency core: the hub lock and what it guards, the condition
//! variables idle workers and the server handle wait on, and every decision
//! taken under the lock — which connection a worker serves next, when it
//! polls its seat, sleeps, adopts another seat or retires; parking; hand-
//! overs; the shutdown sweep. No sockets here: the readiness sets are
//! reached through callbacks, so the model checks in `model_tests.rs` run this
//! very code under a controlled scheduler with a simulated network.
//!
//! # Invariants (under the hub lock)
//!
//! - An open connection is in exactly one place: parked in its slot, in a
//!   seat's ready or later list, or held by one worker.
//! - At most one thread polls a seat (`SeatBoard::begin_poll` asserts it).
//!   A seat nobody polls is polled by the next worker that finds it free,
//!   or handed over: an idle worker adopts it, or a new one is started.
//! - A readiness event for a connection a worker holds marks its slot
//!   pending; the park that follows hands the connection back to be served
//!   again, so no edge is lost between the worker's last read and its park.
//! - Threads: `live ≤ max`; an idle thread counted in `idle` is waiting on
//!   `work` (or woken and about to take the lock back); an adoption is
//!   pushed only while more threads are idle than adoptions are pending, so
//!   each has a thread to take it, and an idle thread retires only when no
//!   adoption is pending.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

use mio::Token;

use super::board::{SeatBoard, SeatSet};
use super::crew::{Crew, HandOver};
use super::growth::Admissions;
use super::slots::{Occupant, Slots, Timer};
use crate::stats::Threads;
use crate::stop::Stop;
use crate::sync::{Condvar, Mutex, MutexGuard};

/// How far shutdown has gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Running,
    /// Every request already received is in a ready list or with a worker:
    /// workers leave once those are served. Parking closes idle
    /// connections; one with a request in flight goes back to its worker to
    /// be finished.
    Swept,
}

/// What the hub lock guards. Private to this file: every change to it is
/// one of [`Engine`]'s methods.
struct Hub<C> {
    slots: Slots<C>,
    board: SeatBoard<C>,
    crew: Crew,
    /// Calls expected to block: in flight, the limit, those waiting.
    admissions: Admissions<C>,
    stage: Stage,
}

/// The hub's counts, read at one moment.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Load {
    /// Connections with a slot (parked, queued or held by a worker) that
    /// count against `max_connections`: all but those spared
    /// ([`Engine::spare`]).
    pub(crate) open: usize,
    pub(crate) parked: usize,
    /// Of those, connections waiting idle, kept alive, for a next request.
    pub(crate) idle: usize,
    /// Connections in the seats' ready lists (not the streams a sender
    /// woke: see `SeatBoard::woken`).
    pub(crate) queued: usize,
    pub(crate) threads: Threads,
}

/// What [`Engine::take_idle`] found for a client at `max_connections`.
pub(crate) enum Vacancy<C> {
    /// A slot is free: nothing need close.
    Free,
    /// An idle connection, for the caller to close.
    Idle(C),
    /// Neither.
    Lacking,
}

/// What a worker does next.
pub(crate) enum Work<C> {
    Serve(C),
    /// Leave: an extra thread was idle for its whole timeout; `last` when
    /// no extra thread is left.
    Retire {
        last: bool,
    },
    /// Leave: shutdown is done.
    Leave,
}

/// What became of a connection handed back for parking.
pub(crate) enum Parking<C> {
    /// In its slot, waiting for readiness.
    Done,
    /// It became readable while the worker held it, or shutdown wants its
    /// request finished: serve it again.
    Again(C),
    /// Shutdown: close it.
    Close(C),
}

/// The hub, its lock and who waits on it.
pub(crate) struct Engine<C> {
    hub: Mutex<Hub<C>>,
    /// Idle workers wait here.
    work: Condvar,
    /// The server handle waits here for workers to exit.
    exited: Condvar,
    /// Shutdown has begun.
    stopping: Stop,
    /// How long an extra worker waits idle before it retires.
    idle_timeout: Duration,
}

impl<C: Occupant> Engine<C> {
    pub(crate) fn new(seats: usize, core: usize, max: usize, idle_timeout: Duration) -> Engine<C> {
        let hub = Hub {
            slots: Slots::new(),
            board: SeatBoard::new(seats),
            crew: Crew::new(seats, core, max),
            admissions: Admissions::new(max),
            stage: Stage::Running,
        };
        Engine {
            hub: Mutex::new(hub),
            work: Condvar::new(),
            exited: Condvar::new(),
            stopping: Stop::default(),
            idle_timeout,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Hub<C>> {
        // Nothing panics while holding the lock; a poisoned hub is still whole.
        self.hub.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.is_set()
    }

    pub(crate) fn stopping_flag(&self) -> &Stop {
        &self.stopping
    }

    /// Gives a new connection a slot and the next seat in turn; `make`
    /// builds it from the two. With `ready_at` (its first bytes are known to
    /// be there) it joins that seat's ready list; else it is returned, held
    /// by the caller, who parks it.
    pub(crate) fn admit(&self, make: impl FnOnce((u32, u32), usize) -> C, ready_at: Option<usize>) -> Option<C> {
        let mut hub = self.lock();
        let seat = hub.board.next_seat();
        let conn = make(hub.slots.take(), seat);
        match ready_at {
            Some(at) => {
                hub.board.push_ready(at, conn);
                None
            }
            None => Some(conn),
        }
    }

    /// True when some connection waits in a ready or later list (of any
    /// seat).
    pub(crate) fn any_queued(&self) -> bool {
        self.lock().board.pending() > 0
    }

    /// The hub's counts (for admission and [`Stats`](crate::Stats)).
    pub(crate) fn load(&self) -> Load {
        let hub = self.lock();
        let (spawned, retired) = hub.crew.totals();
        Load {
            open: hub.slots.counted(),
            parked: hub.slots.parked(),
            idle: hub.slots.idle(),
            queued: hub.board.queued() + hub.admissions.waiting(),
            threads: Threads {
                live: hub.crew.live(),
                // A worker waiting for readiness is idle too.
                idle: hub.crew.idle() + hub.board.worker_pollers(),
                spawned,
                retired,
            },
        }
    }

    /// The monitor's look at every seat (`seen`: each seat's progress count
    /// at the last look, updated). A seat nobody polls, with no progress
    /// since, needs a thread: it goes to `stuck` (unless an adoption of it
    /// is pending). A polled seat with ready work and no progress has its
    /// poller wait for readiness while work queues: it goes to `nudge`.
    /// Deadlines set since the last look go to `timers`. Returns whether any
    /// seat is busy or moved.
    pub(crate) fn look(
        &self,
        seen: &mut [u64],
        timers: &mut impl Extend<Timer>,
        stuck: &mut Vec<usize>,
        nudge: &mut Vec<usize>,
    ) -> bool {
        let mut busy = false;
        let mut hub = self.lock();
        hub.board.tick();
        hub.slots.drain_new_timers(timers);
        for (seat, seen) in seen.iter_mut().enumerate().take(hub.board.seats()) {
            let unwatched = !hub.board.is_polled(seat);
            let waiting = hub.board.has_ready(seat);
            let progress = hub.board.progress(seat);
            let moved = progress != *seen;
            *seen = progress;
            busy |= unwatched || waiting || moved;
            if moved || !(unwatched || waiting) || hub.crew.is_adopting(seat) {
                continue;
            }
            if unwatched {
                stuck.push(seat);
            } else {
                nudge.push(seat);
            }
        }
        busy
    }

    /// Every thread there may be is busy and `seat` still needs one: its
    /// poll is claimed for the monitor, which polls it without waiting
    /// (`seat` joins `orphans`), and a worker polling another seat (not one
    /// of `orphans`) joins `nudge` when `seat` has ready work, to come and
    /// take it. Nothing when the seat is polled or handed over meanwhile.
    pub(crate) fn poll_for_busy_workers(&self, seat: usize, orphans: &mut Vec<usize>, nudge: &mut Vec<usize>) {
        let mut hub = self.lock();
        if !hub.board.is_free(seat) {
            return;
        }
        if let Some(idle) = hub.board.polled_seat_except(orphans) {
            if hub.board.has_ready(seat) {
                nudge.push(idle);
            }
        }
        hub.board.begin_poll(seat, false);
        orphans.push(seat);
    }

    /// Pops the deadlines in `timers` that passed by `now`: parked
    /// connections whose deadline it was are taken out of their slots into
    /// `expired`; entries for a deadline that moved on go to `later`. The
    /// heap is compacted when it holds many more entries than connections
    /// are open (`slack` beyond two each).
    pub(crate) fn expire(
        &self,
        timers: &mut BinaryHeap<Reverse<Timer>>,
        now: Instant,
        slack: usize,
        later: &mut Vec<Timer>,
        expired: &mut Vec<C>,
    ) {
        let mut hub = self.lock();
        while let Some(&Reverse(entry)) = timers.peek() {
            if entry.0 > now {
                break;
            }
            timers.pop();
            expired.extend(hub.slots.timer_due(entry, now, later));
        }
        // Entries of connections that closed are dropped lazily.
        if timers.len() > 2 * hub.slots.open() + slack {
            timers.retain(|Reverse((at, slot, generation))| hub.slots.is_live_timer(*at, *slot, *generation));
        }
    }

    /// Room for a client waiting to be accepted at `max_open`
    /// (`max_connections`): a free slot when fewer are open now (one closed
    /// since the caller looked at the load), else a parked connection
    /// waiting idle, kept alive, for a next request (one idle for a while:
    /// see [`Slots::take_idle`]), for the caller to close.
    pub(crate) fn take_idle(&self, max_open: usize) -> Vacancy<C> {
        let mut hub = self.lock();
        if hub.slots.counted() < max_open {
            return Vacancy::Free;
        }
        hub.slots.take_idle().map_or(Vacancy::Lacking, Vacancy::Idle)
    }

    /// The next connection for the worker sitting at `seat` (which changes
    /// when the worker adopts another seat). A worker with nothing ready
    /// polls its seat when nobody does — `poll(seat, wait)`, called without
    /// the lock, waits for readiness (or with `wait` false only looks) and
    /// reports it with [`Engine::deliver`] — and else sleeps. One draining
    /// streams a sender woke looks every so often first
    /// ([`SeatBoard::wants_look`]). An extra worker that sleeps for its whole idle
    /// timeout leaves, and so does every worker once shutdown has swept
    /// and nothing is left to serve.
    pub(crate) fn next(&self, seat: &mut usize, mut poll: impl FnMut(usize, bool)) -> Work<C> {
        let mut hub = self.lock();
        // Threads beyond those the calls expected to block may take and
        // the core ones are not needed: one leaves as it comes back from
        // its work, while another is idle (which adopts a seat left
        // unwatched at the monitor's next look, so no thread is started for
        // it: threads busy otherwise, in upgrades or streams, are counted
        // too) and nothing waits at its own seat.
        if hub.crew.live() > hub.admissions.limit().saturating_add(hub.crew.core())
            && hub.crew.idle() > 0
            && !hub.board.has_ready(*seat)
            && !self.is_stopping()
        {
            hub.crew.exited(true);
            self.exited.notify_all();
            return Work::Retire { last: !hub.crew.has_extra() };
        }
        loop {
            if hub.board.wants_look(*seat) && !self.is_stopping() {
                hub.board.begin_poll(*seat, true);
                drop(hub);
                poll(*seat, false);
                hub = self.lock();
                continue;
            }
            if let Some(mut conn) = hub.board.pop_ready(*seat).or_else(|| hub.board.steal(*seat)) {
                hub.slots.served(&mut conn);
                return Work::Serve(conn);
            }
            let stopping = self.is_stopping();
            if !stopping && !hub.board.is_polled(*seat) {
                hub.board.begin_poll(*seat, true);
                drop(hub);
                poll(*seat, true);
                hub = self.lock();
                continue;
            }
            if stopping && hub.stage == Stage::Swept {
                hub.crew.exited(false);
                self.exited.notify_all();
                return Work::Leave;
            }
            hub.crew.went_idle();
            let timed_out = if hub.crew.has_extra() {
                let (guard, wait) =
                    self.work.wait_timeout(hub, self.idle_timeout).unwrap_or_else(PoisonError::into_inner);
                hub = guard;
                wait.timed_out()
            } else {
                hub = self.work.wait(hub).unwrap_or_else(PoisonError::into_inner);
                false
            };
            hub.crew.woke();
            // An adoption is for a thread that was idle, as this one was
            // (a busy worker passing by would leave its own seat).
            if let Some(adopted) = hub.crew.take_adoption() {
                *seat = adopted;
                hub.board.unclaim(adopted);
                continue;
            }
            // Work queued while its wait timed out (a notify that raced the
            // timeout) is served first: it would wait for the monitor.
            if timed_out && hub.crew.may_retire() && !self.is_stopping() && hub.board.pending() == 0 {
                hub.crew.exited(true);
                self.exited.notify_all();
                return Work::Retire { last: !hub.crew.has_extra() };
            }
        }
    }

    /// The end of a poll of `seat` (whose `polled` flag the caller set):
    /// parked connections among `woken` join the seat's ready list, those a
    /// worker holds are marked pending; the seat is free again.
    pub(crate) fn deliver(&self, seat: usize, woken: impl IntoIterator<Item = (Token, bool)>, by_worker: bool) {
        let mut hub = self.lock();
        for (token, ended) in woken {
            if let Some(conn) = hub.slots.wake(token, ended) {
                hub.board.push_ready(seat, conn);
            }
        }
        hub.board.end_poll(seat, by_worker);
        if self.is_stopping() {
            // The sweep waits for every seat to be free.
            self.work.notify_all();
        }
        if !by_worker && hub.board.pending() > 0 && hub.crew.idle() > 0 {
            // Nobody may be sitting at this seat: wake a worker for its work.
            self.work.notify_one();
        }
    }

    /// Something other than the socket has work for the connections with
    /// `tokens` (an event for their streams): a parked one joins its seat's
    /// ready list, and the seat is added to `seats` for its poller to be
    /// woken; one a worker holds is marked to be served again when it
    /// parks, as by a readiness event. Nothing for a connection gone since
    /// (its slot free, or of a later generation).
    pub(crate) fn notify(&self, tokens: impl IntoIterator<Item = Token>, seats: &mut SeatSet) {
        let mut hub = self.lock();
        let mut queued = false;
        for token in tokens {
            if let Some(conn) = hub.slots.wake(token, false) {
                let seat = conn.seat();
                hub.board.push_later(seat, conn);
                seats.insert(seat);
                queued = true;
            }
        }
        if queued && hub.crew.idle() > 0 {
            // A seat's poller may be busy in a handler: an idle worker
            // takes the connections from the ready lists (`next` steals).
            self.work.notify_one();
        }
    }

    /// Finds a thread to take over `seat` while its worker is busy: an idle
    /// one is asked to adopt it, or (`HandOver::Spawn`, when the pool may
    /// `grow`) the caller must start one for it; `AtBound` when no thread
    /// may be had. Nothing when the seat is polled or already handed over.
    /// `tick` is the monitor's.
    pub(crate) fn hand_over(&self, seat: usize, tick: u64, grow: bool) -> Option<HandOver> {
        let mut hub = self.lock();
        if !hub.board.is_free(seat) || self.is_stopping() {
            return None;
        }
        let how = hub.crew.hand_over(seat, tick, grow);
        match how {
            HandOver::Adopt => {
                hub.board.claim(seat);
                self.work.notify_one();
            }
            HandOver::Spawn => hub.board.claim(seat),
            HandOver::AtBound => {}
        }
        Some(how)
    }

    /// A place for a call expected to block (see `growth.rs`): false when
    /// every place is taken, and the caller must hand its connection to
    /// [`Engine::wait_for_place`].
    pub(crate) fn admit_blocking(&self) -> bool {
        self.lock().admissions.admit(self.is_stopping())
    }

    /// Queues `conn`, whose call found no place, until a call in flight
    /// ends; held meanwhile (events for it mark its slot pending). When a
    /// place came free since the caller looked, or at shutdown, it is
    /// admitted and queued to be served at once.
    pub(crate) fn wait_for_place(&self, conn: C) {
        let mut hub = self.lock();
        let stopping = self.is_stopping() || hub.stage == Stage::Swept;
        if let Some(conn) = hub.admissions.wait(conn, stopping) {
            self.queue_admitted(&mut hub, conn);
        }
    }

    /// A call admitted ended: its place goes to the connection that waited
    /// longest, queued to be served.
    pub(crate) fn blocking_done(&self) {
        let mut hub = self.lock();
        if let Some(conn) = hub.admissions.done() {
            self.queue_admitted(&mut hub, conn);
        }
    }

    /// Sets how many calls expected to block may run at once, admitting
    /// those a higher limit makes room for; returns the calls finished and
    /// held back so far, those in flight and those waiting (see
    /// `growth.rs`).
    pub(crate) fn limit_blocking(&self, limit: usize) -> (u64, u64, usize, usize) {
        let mut hub = self.lock();
        let seen = hub.admissions.set_limit(limit);
        self.admit_waiting(&mut hub, false);
        seen
    }

    /// Every connection waiting for a place that may have one now (`all`:
    /// at shutdown) joins its seat's ready list.
    fn admit_waiting(&self, hub: &mut Hub<C>, all: bool) {
        let Hub { admissions, board, .. } = hub;
        let mut any = false;
        for conn in admissions.admit_waiting(all) {
            board.push_ready(conn.seat(), conn);
            any = true;
        }
        if any {
            self.work.notify_all();
        }
    }

    fn queue_admitted(&self, hub: &mut Hub<C>, conn: C) {
        hub.board.push_ready(conn.seat(), conn);
        if hub.crew.idle() > 0 {
            self.work.notify_one();
        }
    }

    /// Counts a thread about to be started at `seat`, if the bound allows;
    /// the seat is claimed for it until it arrives (so a seat whose first
    /// worker is starting is not taken for one that needs a thread).
    pub(crate) fn reserve(&self, seat: usize) -> bool {
        let mut hub = self.lock();
        let reserved = hub.crew.reserve();
        if reserved {
            hub.board.claim(seat);
        }
        reserved
    }

    /// A thread started for `seat` begins its work there.
    pub(crate) fn arrive(&self, seat: usize) {
        self.lock().board.unclaim(seat);
    }

    /// A thread counted for `seat` could not be started (at monitor tick
    /// `tick`).
    pub(crate) fn spawn_failed(&self, seat: usize, tick: u64) {
        let mut hub = self.lock();
        hub.crew.spawn_failed(tick);
        hub.board.unclaim(seat);
        self.exited.notify_all();
    }

    /// Parks `conn` (already watched by its seat), unless it became readable
    /// while held, or shutdown has closed the lot and it has something to
    /// finish (`must_finish`): then it goes back to its worker.
    pub(crate) fn park(&self, conn: C, must_finish: bool) -> Parking<C> {
        let mut hub = self.lock();
        if hub.stage != Stage::Running {
            return if must_finish { Parking::Again(conn) } else { Parking::Close(conn) };
        }
        match hub.slots.park(conn) {
            Some(again) => Parking::Again(again),
            None => Parking::Done,
        }
    }

    /// Puts a connection that yielded its turn at the back of its seat's
    /// ready list: it has more to do, and no readiness edge will say so.
    pub(crate) fn requeue(&self, conn: C) {
        let seat = conn.seat();
        self.lock().board.push_ready(seat, conn);
    }

    /// Puts a stream whose keep-alive is due at the back of its seat's
    /// later list, with the streams senders woke: a broadcast leaves
    /// thousands due together, which must not queue requests behind them.
    pub(crate) fn requeue_later(&self, conn: C) {
        let seat = conn.seat();
        self.lock().board.push_later(seat, conn);
    }

    /// Queues a connection to be served at `seat`.
    pub(crate) fn requeue_at(&self, seat: usize, conn: C) {
        self.lock().board.push_ready(seat, conn);
    }

    /// Spares the connection in `slot`, closed for room and lingering:
    /// it counts against `max_connections` no more, unless `most` are
    /// spared already (then false). See [`Slots::spare`].
    pub(crate) fn spare(&self, slot: u32, most: usize) -> bool {
        self.lock().slots.spare(slot, most)
    }

    /// Frees the slot of a closed connection.
    pub(crate) fn free(&self, slot: u32) {
        self.lock().slots.free(slot);
    }

    /// Starts shutdown and wakes the idle workers.
    pub(crate) fn stop(&self) {
        self.stopping.set();
        let _hub = self.lock();
        self.work.notify_all();
    }

    /// The sweep's first step: once no worker polls, every seat is marked
    /// polled for the caller, who polls each once and [`delivers`](Engine::deliver).
    pub(crate) fn claim_all_seats(&self) -> usize {
        let mut hub = self.lock();
        while hub.board.any_polled() {
            hub = self.work.wait_timeout(hub, Duration::from_millis(100)).unwrap_or_else(PoisonError::into_inner).0;
        }
        let seats = hub.board.seats();
        (0..seats).for_each(|seat| hub.board.begin_poll(seat, false));
        seats
    }

    /// The sweep polls `seat` once more (it polled the seat and a poll's
    /// buffer came back full): the seat is marked polled again.
    pub(crate) fn repoll(&self, seat: usize) {
        self.lock().board.begin_poll(seat, false);
    }

    /// The sweep's last step: parked connections with a request in flight
    /// join their seat's ready list (their workers finish them), the others
    /// are returned to be closed; then the workers may leave.
    pub(crate) fn sweep_parked(&self, must_finish: impl Fn(&C) -> bool) -> Vec<C> {
        let mut hub = self.lock();
        // Requests waiting for a place among the blocking calls are served.
        self.admit_waiting(&mut hub, true);
        let mut idle = Vec::new();
        for conn in hub.slots.take_parked() {
            if must_finish(&conn) {
                let seat = conn.seat();
                hub.board.push_ready(seat, conn);
            } else {
                idle.push(conn);
            }
        }
        hub.stage = Stage::Swept;
        self.work.notify_all();
        idle
    }

    /// Counts a thread as asleep on the condition variable, as `next` does
    /// (unit tests of hand-overs).
    #[cfg(test)]
    pub(crate) fn count_idle_thread(&self) {
        self.lock().crew.went_idle();
    }

    /// Wakes every idle worker as a timeout would (model checks).
    #[cfg(all(test, httpool_shuttle))]
    pub(crate) fn poke_idle(&self) {
        let _hub = self.lock();
        self.work.notify_all();
    }

    /// Waits until every worker has left, at most until `deadline` (`None`:
    /// without limit). True when they all did.
    pub(crate) fn wait_for_workers(&self, deadline: Option<Instant>) -> bool {
        let mut hub = self.lock();
        while hub.crew.live() > 0 {
            hub = match deadline {
                None => self.exited.wait(hub).unwrap_or_else(PoisonError::into_inner),
                Some(at) => {
                    let left = at.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    self.exited.wait_timeout(hub, left).unwrap_or_else(PoisonError::into_inner).0
                }
            };
        }
        true
    }
}
