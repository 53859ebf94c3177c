//! What the workers, the monitor and the server handle share: the seats,
//! the slot table, the thread counts, and the listener.
//!
//! # Locks
//!
//! - The **hub** (`Mutex<Hub>`) guards the slot table ([`Slots`]), the
//!   seats' ready lists and ownership ([`SeatBoard`]), the thread counts
//!   ([`Crew`]) and the shutdown stage. It is held briefly, never across a
//!   system call that waits, a handler, or another lock's acquisition
//!   except as listed below. Idle workers wait on `work`; the server handle
//!   waits on `exited` for the workers to leave.
//! - A seat's **poll** mutex is taken only by the thread that set the seat's
//!   `polled` flag, to wait for readiness, then the hub (to queue what
//!   became readable): order *poll → hub*.
//! - The **listener** mutex is taken by accept passes (one at a time) and by
//!   the close at shutdown; an accept pass takes the hub to admit a
//!   connection: order *listener → hub*.
//!
//! # Invariants
//!
//! - An open connection is in exactly one place: parked in its slot, in a
//!   seat's ready list, or held by one worker (see [`slots`]).
//! - At most one thread polls a seat; a seat nobody polls is polled by the
//!   next worker that finds it free, or handed over (see [`seats`]).
//! - A connection parks only after its socket was read dry; a readiness
//!   event for a connection a worker holds marks it pending, and parking
//!   then hands it back to be served again, so no edge is lost between a
//!   worker's last read and its park.
//! - Threads: `live ≤ max`, idle ones wait on `work`; an extra idle thread
//!   retires after the idle timeout unless a seat waits for it (see [`crew`]).

mod accept;
pub(crate) mod crew;
pub(crate) mod seats;
pub(crate) mod slots;

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::Thread;
use std::time::Duration;

use mio::{Interest, Token};

pub(crate) use accept::Accepting;
pub(crate) use crew::{Crew, HandOver};
pub(crate) use seats::{Seat, SeatBoard};
pub(crate) use slots::{Conn, Slots};

use crate::config::Config;
use crate::net::Listener;
use crate::stats::Counters;

/// Token of the listening socket.
pub(crate) const LISTENER: Token = Token(usize::MAX);
/// Token of a seat's waker.
pub(crate) const WAKER: Token = Token(usize::MAX - 1);

/// Pause after a failed readiness wait, so a broken readiness set does not
/// turn into a busy loop.
const POLL_BACKOFF: Duration = Duration::from_millis(100);

/// How far shutdown has gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    Running,
    /// Parking closes idle connections; a request in flight goes back to
    /// its worker to be finished.
    Closed,
    /// Every request already received is in a ready list or with a worker:
    /// workers leave once those are served.
    Swept,
}

/// What the hub lock guards.
pub(crate) struct Hub {
    pub(crate) slots: Slots,
    pub(crate) board: SeatBoard,
    pub(crate) crew: Crew,
    pub(crate) stage: Stage,
}

impl Hub {
    /// True when no more connections should be admitted (`Overload`).
    fn is_saturated(&self, config: &Config) -> bool {
        self.board.queued() >= config.queue_depth || self.slots.open() >= config.max_connections
    }
}

/// What a worker does next.
pub(crate) enum Work {
    Serve(Conn),
    /// Leave: an extra thread idle for its whole timeout, or shutdown done.
    Leave,
}

/// State shared by the workers, the monitor and the server handle.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) seats: Vec<Seat>,
    accepting: Accepting,
    hub: Mutex<Hub>,
    /// Idle workers wait here.
    work: Condvar,
    /// The server handle waits here for workers to exit.
    exited: Condvar,
    /// Shutdown has begun.
    stopping: AtomicBool,
    /// The monitor sleeps for long (no seat busy); a worker that starts
    /// serving wakes it.
    pub(crate) monitor_dozing: AtomicBool,
    pub(crate) monitor: OnceLock<Thread>,
    /// Looks the monitor has taken: a handler call across two of them
    /// blocked.
    ticks: AtomicU64,
    pub(crate) counters: Counters,
}

impl Shared {
    pub(crate) fn new(config: Config, listener: Listener, seats: usize) -> io::Result<Shared> {
        let accepting = Accepting::new(listener);
        let seats = (0..seats.max(1)).map(|_| Seat::new(accepting.fd())).collect::<io::Result<Vec<_>>>()?;
        let hub = Hub {
            slots: Slots::new(),
            board: SeatBoard::new(seats.len()),
            crew: Crew::new(config.workers, config.max_workers),
            stage: Stage::Running,
        };
        Ok(Shared {
            config,
            seats,
            accepting,
            hub: Mutex::new(hub),
            work: Condvar::new(),
            exited: Condvar::new(),
            stopping: AtomicBool::new(false),
            monitor_dozing: AtomicBool::new(false),
            monitor: OnceLock::new(),
            ticks: AtomicU64::new(0),
            counters: Counters::default(),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Hub> {
        // Nothing panics while holding the lock; a poisoned hub is still whole.
        self.hub.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    pub(crate) fn stopping_flag(&self) -> &AtomicBool {
        &self.stopping
    }

    fn is_saturated(&self) -> bool {
        self.lock().is_saturated(&self.config)
    }

    pub(crate) fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed)
    }

    /// The monitor took a look.
    pub(crate) fn tick(&self) {
        self.ticks.fetch_add(1, Ordering::Relaxed);
    }

    /// The next connection for the worker sitting at `seat` (which changes
    /// when the worker adopts another seat). A worker with nothing ready
    /// polls its seat when nobody does, else sleeps; an extra worker that
    /// sleeps for the whole idle timeout leaves, and so does every worker
    /// once shutdown has swept and nothing is left to serve.
    pub(crate) fn next(&self, seat: &mut usize) -> Work {
        let mut hub = self.lock();
        loop {
            if let Some(adopted) = hub.crew.take_adoption() {
                *seat = adopted;
                hub.board.unclaim(adopted);
            }
            if let Some(conn) = hub.board.pop_ready(*seat).or_else(|| hub.board.steal()) {
                hub.slots.served(&conn);
                return Work::Serve(conn);
            }
            let stopping = self.is_stopping();
            if !stopping && !hub.board.is_polled(*seat) {
                hub.board.begin_poll(*seat, true);
                drop(hub);
                self.poll_seat(*seat, None, true);
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
                let (guard, wait) = self
                    .work
                    .wait_timeout(hub, self.config.worker_idle_timeout)
                    .unwrap_or_else(PoisonError::into_inner);
                hub = guard;
                wait.timed_out()
            } else {
                hub = self.work.wait(hub).unwrap_or_else(PoisonError::into_inner);
                false
            };
            hub.crew.woke();
            if timed_out && hub.crew.may_retire() && !self.is_stopping() {
                hub.crew.exited(true);
                self.exited.notify_all();
                return Work::Leave;
            }
        }
    }

    /// Polls `seat` (whose `polled` flag the caller set) and moves what
    /// became readable to its ready list; accepts new connections. The
    /// monitor polls (with a zero timeout) a seat that needs a thread when
    /// none can be had.
    pub(crate) fn poll_seat(&self, seat: usize, timeout: Option<Duration>, by_worker: bool) {
        let mut listener_ready = false;
        let polled = self.seats[seat].poll(timeout);
        if let Err(e) = &polled {
            error!("waiting for readiness failed: {e}");
            std::thread::sleep(POLL_BACKOFF);
        }
        {
            let mut hub = self.lock();
            for token in polled.iter().flat_map(|events| events.tokens()) {
                if token == LISTENER {
                    listener_ready = true;
                } else if let Some(conn) = hub.slots.wake(token) {
                    hub.board.push_ready(seat, conn);
                }
            }
            drop(polled);
            hub.board.end_poll(seat, by_worker);
            if self.is_stopping() {
                // The monitor waits for every seat to be free before its sweep.
                self.work.notify_all();
            }
            if !by_worker && hub.board.queued() > 0 && hub.crew.idle() > 0 {
                // Nobody may be sitting at this seat: wake a worker for its work.
                self.work.notify_one();
            }
        }
        if by_worker && self.monitor_dozing.load(Ordering::Relaxed) && self.monitor_dozing.swap(false, Ordering::AcqRel)
        {
            if let Some(monitor) = self.monitor.get() {
                monitor.unpark();
            }
        }
        if listener_ready || self.take_accept_waiting() {
            self.accept(seat);
        }
    }

    /// Finds a thread to take over `seat` while its worker is busy: an idle
    /// one is asked to adopt it, or (`HandOver::Spawn`) the caller must
    /// start one for it. Nothing when the seat is polled or already handed
    /// over.
    pub(crate) fn hand_over(&self, seat: usize) -> Option<HandOver> {
        let mut hub = self.lock();
        if !hub.board.is_free(seat) || self.is_stopping() {
            return None;
        }
        let how = hub.crew.hand_over(seat, self.ticks());
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

    /// A thread started for `seat` begins its work there.
    pub(crate) fn arrive(&self, seat: usize) {
        self.lock().board.unclaim(seat);
    }

    /// Counts a thread about to be started at `seat`, if the bound allows;
    /// the seat is claimed for it until it arrives (so the monitor does not
    /// take a seat whose first worker is starting for one that needs a
    /// thread).
    pub(crate) fn reserve_thread(&self, seat: usize) -> bool {
        let mut hub = self.lock();
        let reserved = hub.crew.reserve();
        if reserved {
            hub.board.claim(seat);
        }
        reserved
    }

    /// A thread counted for `seat` could not be started.
    pub(crate) fn spawn_failed(&self, seat: Option<usize>) {
        let mut hub = self.lock();
        hub.crew.spawn_failed(self.ticks());
        if let Some(seat) = seat {
            hub.board.unclaim(seat);
        }
        self.exited.notify_all();
    }

    /// Hands a connection with nothing to read back to its seat. Returns it
    /// when bytes arrived while the worker held it (serve it again), or at
    /// shutdown when it has a request in flight (finish it, waiting).
    pub(crate) fn park(&self, mut conn: Conn) -> Option<Conn> {
        conn.deadline = conn.state.deadline(&self.config);
        // Only room to write matters while an answer is unsent: what the
        // client sends meanwhile waits until it is out.
        let interest = if conn.state.is_sending() { Interest::WRITABLE } else { Interest::READABLE };
        if conn.watching != Some(interest) {
            let registry = self.seats[conn.seat].registry();
            let token = conn.token();
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
        let mut hub = self.lock();
        if hub.stage != Stage::Running {
            drop(hub);
            if conn.state.has_request_in_flight() {
                return Some(conn);
            }
            self.close(conn);
            return None;
        }
        hub.slots.park(conn)
    }

    /// Puts a connection that yielded its turn at the back of its seat's
    /// ready list: it has more to do, and no readiness edge will say so.
    pub(crate) fn requeue(&self, conn: Conn) {
        let seat = conn.seat;
        self.lock().board.push_ready(seat, conn);
    }

    /// The readiness set watching `conn`, once it has been registered.
    pub(crate) fn registry_of(&self, conn: &Conn) -> Option<&mio::Registry> {
        conn.watching.map(|_| self.seats[conn.seat].registry())
    }

    /// Closes a connection and frees its slot.
    pub(crate) fn close(&self, conn: Conn) {
        let slot = conn.slot();
        drop(conn);
        self.lock().slots.free(slot);
        self.counters.closed();
    }

    /// Wakes the worker waiting for readiness at `seat`.
    pub(crate) fn nudge(&self, seat: usize) {
        self.seats[seat].wake();
    }

    /// Starts shutdown and wakes every thread that may be waiting.
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        for seat in &self.seats {
            seat.wake();
        }
        let _hub = self.lock();
        self.work.notify_all();
        drop(_hub);
        if let Some(monitor) = self.monitor.get() {
            monitor.unpark();
        }
    }

    /// Shutdown, run by the monitor once the loop is over: the listener
    /// closes (after what the kernel holds is accepted); once no worker
    /// polls, what already arrived moves to the ready lists (the workers
    /// answer it with `Connection: close`), idle connections close, those
    /// with a request in flight are finished; then the workers may leave.
    pub(crate) fn sweep(&self) {
        self.close_listener();
        let mut hub = self.lock();
        while hub.board.any_polled() {
            hub = self.work.wait_timeout(hub, POLL_BACKOFF).unwrap_or_else(PoisonError::into_inner).0;
        }
        let seats = hub.board.seats();
        (0..seats).for_each(|seat| hub.board.begin_poll(seat, false));
        drop(hub);
        for seat in 0..seats {
            self.poll_seat(seat, Some(Duration::ZERO), false);
        }
        let idle = {
            let mut hub = self.lock();
            hub.stage = Stage::Closed;
            let mut idle = Vec::new();
            for conn in hub.slots.take_parked() {
                if conn.state.has_request_in_flight() {
                    let seat = conn.seat;
                    hub.board.push_ready(seat, conn);
                } else {
                    idle.push(conn);
                }
            }
            idle
        };
        for conn in idle {
            self.close(conn);
        }
        let mut hub = self.lock();
        hub.stage = Stage::Swept;
        self.work.notify_all();
    }

    /// Waits until every worker has left, at most until `deadline` (`None`:
    /// without limit). True when they all did.
    pub(crate) fn wait_for_workers(&self, deadline: Option<std::time::Instant>) -> bool {
        let mut hub = self.lock();
        while hub.crew.live() > 0 {
            hub = match deadline {
                None => self.exited.wait(hub).unwrap_or_else(PoisonError::into_inner),
                Some(at) => {
                    let left = at.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    self.exited.wait_timeout(hub, left).unwrap_or_else(PoisonError::into_inner).0
                }
            };
        }
        true
    }

    /// Worker threads alive now.
    pub(crate) fn stats_threads(&self) -> usize {
        self.lock().crew.live()
    }

    /// The counts behind [`Stats`](crate::Stats).
    pub(crate) fn snapshot(&self) -> crate::Stats {
        let hub = self.lock();
        let (spawned, retired) = hub.crew.totals();
        let threads = crate::stats::Threads {
            live: hub.crew.live(),
            idle: hub.crew.idle() + hub.board.worker_pollers(),
            spawned,
            retired,
        };
        self.counters.snapshot(hub.slots.parked(), hub.board.queued(), threads)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::net::{Peer, Stream};

    /// A connected socket, for tests that need a `Conn` to move around.
    pub(crate) fn conn_pair() -> (Stream, Peer) {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        (Stream::Unix(mio::net::UnixStream::from_std(a)), Peer::Local)
    }
}
