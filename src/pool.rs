//! The worker threads: an elastic, bounded pool, and each worker's loop.
//!
//! `workers` threads start with the server and live as long as it. When a
//! seat needs a thread and none is idle — its worker is inside a handler
//! that blocks — another is started for it, up to `max_workers` in all; an
//! extra thread that then waits idle for `worker_idle_timeout` retires. The
//! counts and the decisions are in [`Crew`](crate::shared::crew::Crew); this
//! module starts the threads and runs them.

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::thread::{self, JoinHandle};

use crate::handler::Handler;
use crate::http1::{Ctx, Next, Ran, Scratch, Seating, serve};
use crate::io::{Pace, Socket, Waiter};
use crate::shared::{Connection, HandOver, Shared, Work};
use crate::sys;

/// What the monitor and the workers need of the pool: threads started for
/// a seat, and joined at the end.
pub(crate) trait Workers: Send + Sync {
    /// Starts a thread already counted (by a hand-over) to take over
    /// `seat`. A failure is logged and the count given back: the server
    /// goes on with the threads it has.
    fn spawn_for(&self, seat: usize);

    /// Joins every thread (after shutdown, once all have left their loop;
    /// never called by one of them, see `ServerHandle::join`).
    fn join_all(&self);
}

thread_local! {
    /// The server whose worker this thread is (the address of its
    /// [`Shared`]), or 0.
    static WORKER_OF: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// True on a worker thread of the server `shared` is of: a handler of it
/// runs here.
pub(crate) fn is_worker_of(shared: &Arc<Shared>) -> bool {
    WORKER_OF.get() == Arc::as_ptr(shared) as usize
}

/// The join handles of a pool's threads. Apart from the pool: a retiring
/// thread lets go of its handle after it has let go of the pool.
type Handles = Mutex<Vec<JoinHandle<()>>>;

/// The threads of one server, and the handler they run.
pub(crate) struct Pool<H> {
    shared: Arc<Shared>,
    handler: H,
    /// Itself, for the threads it starts.
    this: Weak<Pool<H>>,
    /// Threads started and not joined yet.
    handles: Arc<Handles>,
    /// For thread names.
    started: AtomicUsize,
    /// With pinned workers, each seat's CPU: the thread that polls a seat
    /// runs there. Else empty.
    cpus: Vec<usize>,
}

impl<H: Handler> Pool<H> {
    /// Starts the `workers` core threads; with `cpus` (one per seat), each
    /// worker runs on the CPU of the seat it sits at. On an error (creating
    /// a thread or its readiness queue failed) the threads already started
    /// are left for the caller to stop (see `Server::spawn`).
    pub(crate) fn start(shared: &Arc<Shared>, handler: H, cpus: &[usize]) -> (Arc<Pool<H>>, io::Result<()>) {
        let pool = Arc::new_cyclic(|this| Pool {
            shared: shared.clone(),
            handler,
            this: this.clone(),
            handles: Arc::new(Mutex::new(Vec::new())),
            started: AtomicUsize::new(0),
            cpus: cpus.to_vec(),
        });
        let seats = shared.seats.len();
        for i in 0..shared.config.workers {
            let seat = i % seats;
            if !shared.reserve_thread(seat) {
                break;
            }
            if let Err(e) = pool.start_thread(seat) {
                shared.spawn_failed(seat);
                return (pool, Err(e));
            }
        }
        (pool, Ok(()))
    }

    /// Starts one counted thread sitting at `seat`. Everything the thread
    /// needs that can fail (its readiness queue, the thread itself) is made
    /// here, so a failure is the caller's to handle, never a worker's.
    fn start_thread(&self, seat: usize) -> io::Result<()> {
        let pool = self.this.upgrade().ok_or_else(|| io::Error::other("the pool is gone"))?;
        let waiter = Waiter::new()?;
        let n = self.started.fetch_add(1, Ordering::Relaxed);
        let handles = self.handles.clone();
        let handle = thread::Builder::new()
            .name(format!("httpool-worker-{n}"))
            .stack_size(self.shared.config.worker_stack_size)
            .spawn(move || {
                WORKER_OF.set(Arc::as_ptr(&pool.shared) as usize);
                let retired = work(&pool, seat, waiter);
                // The pool, and the handler in it, is let go first: once
                // `join_all` no longer waits for this thread, it holds
                // nothing of the server's.
                drop(pool);
                if let Some(last) = retired {
                    let_go_of_current(&handles);
                    sys::trim_own_arena();
                    if last {
                        sys::give_back_free_memory();
                    }
                }
            })?;
        let mut handles = self.handles.lock().unwrap_or_else(PoisonError::into_inner);
        // The handles of threads that retired are let go as new ones start,
        // so the list stays as long as the pool.
        forget_finished(&mut handles);
        handles.push(handle);
        Ok(())
    }
}

impl<H> Pool<H> {
    /// With pinned workers, moves the calling thread to the CPU of `seat`
    /// unless it runs there already (`pinned_at`: the seat it was pinned
    /// for, updated).
    fn pin(&self, seat: usize, pinned_at: &mut Option<usize>) {
        if !self.cpus.is_empty() && *pinned_at != Some(seat) {
            sys::run_current_thread_on(&[self.cpus[seat % self.cpus.len()]]);
            *pinned_at = Some(seat);
        }
    }
}

/// Lets a pinned thread that leaves its seat run on any of `cpus` (the
/// CPUs allowed) until it polls a seat again: a handler that blocks
/// wakes, or one that computes runs, where a CPU is free, not behind the
/// thread now sitting at the seat, on that seat's CPU.
fn unpin(cpus: &[usize], pinned_at: &mut Option<usize>) {
    if pinned_at.take().is_some() {
        sys::run_current_thread_on(cpus);
    }
}

impl<H: Handler> Workers for Pool<H> {
    fn spawn_for(&self, seat: usize) {
        if let Err(e) = self.start_thread(seat) {
            warn!("starting a worker thread failed: {e}; going on with the threads there are");
            self.shared.spawn_failed(seat);
        }
    }

    fn join_all(&self) {
        let handles = std::mem::take(&mut *self.handles.lock().unwrap_or_else(PoisonError::into_inner));
        for handle in handles {
            let _ = handle.join();
        }
    }
}

/// A retiring thread lets go of its own handle: the thread is detached, so
/// its stack is freed as it exits. A finished thread whose handle is kept
/// holds its stack (20 KiB or more resident each) until it is joined, which
/// for a retired thread would only be at the next spawn.
fn let_go_of_current(handles: &Handles) {
    let me = thread::current().id();
    let mut handles = handles.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(i) = handles.iter().position(|handle| handle.thread().id() == me) {
        drop(handles.swap_remove(i));
    }
}

/// Lets go of the handles of threads that retired. Not joined: a thread is
/// finished once its closure returns (the pool and handler it held are
/// dropped by then), but joining also waits for its thread-local
/// destructors — a handler's database connection closing, say — and the
/// thread starting another must not wait for that.
fn forget_finished(handles: &mut Vec<JoinHandle<()>>) {
    handles.retain(|handle| !handle.is_finished());
}

/// A worker's place: its seat, which it lets go before a handler expected
/// to block, so another thread watches it meanwhile.
struct Place<'a> {
    pool: &'a dyn Workers,
    shared: &'a Shared,
    seat: usize,
    /// This worker's thread, where its state can be read.
    me: Option<sys::ThreadRef>,
    /// With pinned workers, the CPUs allowed and the seat whose CPU this
    /// thread runs on (see [`work`]).
    cpus: &'a [usize],
    pinned_at: &'a mut Option<usize>,
    /// A place among the calls expected to block is held (given back by
    /// the loop after the call, or here after a panic cut it short).
    placed: bool,
}

impl Seating for Place<'_> {
    fn handler_may_block(&mut self, slept: bool) {
        // An idle thread adopts the seat. A new one is started at once only
        // for a handler seen asleep, or where thread states cannot be read:
        // a call that only ran long may have computed (or been preempted on
        // busy cores), and the monitor's next look starts one if this
        // worker is found asleep, not if it computes.
        unpin(self.cpus, self.pinned_at);
        if let Some(HandOver::Spawn) = self.shared.hand_over(self.seat, slept || self.me.is_none()) {
            self.pool.spawn_for(self.seat);
        }
    }

    fn ticks(&self) -> &AtomicU64 {
        self.shared.tick_counter()
    }

    fn seen_since(&self, tick: u64) -> Option<bool> {
        // Only a finding of this very thread counts: the monitor judges the
        // thread that polled the seat, or took work at it, last.
        self.shared.seats[self.seat].found_since(self.me?, tick, self.shared.ticks())
    }

    fn sleeps_and_cpu(&self) -> Option<(u64, std::time::Duration)> {
        sys::sleeps_and_cpu()
    }

    fn routes_remembered(&self) -> bool {
        self.shared.routes.remembers_any()
    }

    fn route_blocks(&self, method: &str, path: &str) -> bool {
        self.shared.routes.blocks(method, path)
    }

    fn route_ran(&self, method: &str, path: &str, ran: Ran) {
        self.shared.routes.ran(method, path, ran);
    }

    fn others_ready(&self) -> Option<bool> {
        Some(self.shared.any_queued())
    }

    fn admit_blocking(&mut self, given: bool) -> bool {
        self.placed = given || self.shared.engine.admit_blocking();
        self.placed
    }

    fn blocking_done(&mut self) {
        if std::mem::take(&mut self.placed) {
            self.shared.engine.blocking_done();
        }
    }
}

/// A worker's life: take a readable connection (polling the seat when none
/// is ready), serve it until it has nothing more to read, park or close it;
/// until it retires or the server shuts down. `Some(last)` when it retired
/// (`last`: the last extra thread to), `None` when it left at shutdown.
fn work<H: Handler>(pool: &Pool<H>, mut seat: usize, mut waiter: Waiter) -> Option<bool> {
    let shared = &*pool.shared;
    if shared.config.batch_scheduling {
        sys::schedule_as_batch();
    }
    let mut scratch = Scratch::new(&shared.config);
    let me = sys::current_thread();
    // With pinned workers, the seat whose CPU this thread runs on, if any:
    // a thread is pinned as it starts at a seat and whenever it polls one
    // (a thread inherits the CPUs of the one that starts it, whatever seat
    // that sits at), and let go before a handler expected to block (see
    // `Place`). A thread let go is not pinned again to serve a connection
    // another thread's poll found: back from a blocking handler, it takes
    // what is ready wherever it runs, without a move per call. Pinned
    // before the seat is let go to it: a move to another CPU may wait for
    // that CPU, and meanwhile the seat stays claimed, not free and unpolled.
    let mut pinned_at = None;
    pool.pin(seat, &mut pinned_at);
    shared.arrive(seat);
    loop {
        match shared.next(&mut seat, me, |at| pool.pin(at, &mut pinned_at)) {
            Work::Serve(conn) => {
                // A pinned thread that adopted another seat moves to its
                // CPU before serving there (it may not poll for a while).
                if pinned_at.is_some() {
                    pool.pin(seat, &mut pinned_at);
                }
                let mut place =
                    Place { pool, shared, seat, me, cpus: &pool.cpus, pinned_at: &mut pinned_at, placed: false };
                serve_until_parked(shared, &pool.handler, conn, &mut scratch, &mut waiter, &mut place);
                // Room freed for a connection that waits to be accepted.
                if shared.take_accept_waiting() {
                    shared.accept(seat, true);
                }
            }
            Work::Retire { last } => {
                if last {
                    // The monitor empties glibc's cache of thread stacks
                    // once the extra threads are gone.
                    shared.stacks_to_give_back.store(true, Ordering::Release);
                }
                return Some(last);
            }
            Work::Leave => return None,
        }
    }
}

/// Serves `conn` turn after turn while it has something to do at once, then
/// parks, requeues or closes it.
#[inline(always)]
fn serve_until_parked<H: Handler>(
    shared: &Shared,
    handler: &H,
    mut conn: Box<Connection>,
    scratch: &mut Scratch,
    waiter: &mut Waiter,
    place: &mut Place<'_>,
) {
    // At shutdown, waits for a client end within the grace (see
    // `Socket::shutdown`).
    let shutdown = (shared.stopping_flag(), shared.config.shutdown_grace);
    loop {
        let (next, left_seat) = {
            let watched_by = shared.registry_of(&conn);
            let registered = watched_by.is_some();
            let mut io = Socket {
                stream: &mut conn.stream,
                waiter,
                watched_by,
                pace: Pace::new(shared.config.write_min_rate),
                body_waits: (&shared.counters, shared.config.body_waits()),
                streaming: (shared.config.streaming_workers(), None),
                input_ended: conn.input_ended,
                shutdown: Some(shutdown),
                in_body_wait: false,
            };
            let mut cx = Ctx {
                handler,
                config: &shared.config,
                scratch,
                stopping: shared.stopping_flag(),
                counters: &shared.counters,
                peer: conn.peer,
                seat: place,
                routes_remembered: false,
            };
            // Handler panics are caught inside; this catches a panicking body
            // reader, which leaves the connection in an unknown state.
            let next =
                catch_unwind(AssertUnwindSafe(|| serve(&mut conn.state, &mut io, &mut cx))).unwrap_or_else(|_| {
                    error!("{}: panic while writing a response; closing", conn.peer);
                    shared.counters.panic();
                    Next::Close
                });
            // A panic past the handler left its place taken.
            cx.seat.blocking_done();
            (next, registered && io.watched_by.is_none())
        };
        if next == Next::Close {
            // A panic may have left answers queued.
            scratch.out.clear();
        }
        if left_seat {
            conn.left_seat();
        }
        match next {
            // At shutdown nothing stays parked: the connection comes back to
            // finish its request, or to be read once more and closed.
            Next::Park => match shared.park(conn) {
                Some(again) => conn = again,
                None => return,
            },
            Next::Yield => return shared.requeue(conn),
            Next::WaitForPlace => return shared.engine.wait_for_place(conn),
            Next::Close => return shared.close(conn),
        }
    }
}
