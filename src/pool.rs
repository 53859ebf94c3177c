//! The fixed pool of worker threads.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::{self, JoinHandle};

use crossbeam_channel::Sender;

use crate::conn::{Ctx, Next, NoSeat, Scratch, serve};
use crate::handler::Handler;
use crate::io::{Socket, Waiter};
use crate::lot::Shared;

/// Starts `n` named workers. Each sends on `done` when it exits, so
/// shutdown can wait with a deadline.
pub(crate) fn spawn<H: Handler>(
    n: usize,
    shared: &Arc<Shared>,
    handler: &Arc<H>,
    done: &Sender<()>,
) -> std::io::Result<Vec<JoinHandle<()>>> {
    // Every descriptor a worker needs is made here, so that running out of
    // them fails `spawn` rather than a worker.
    let waiters = (0..n).map(|_| Waiter::new()).collect::<std::io::Result<Vec<_>>>()?;
    waiters
        .into_iter()
        .enumerate()
        .map(|(i, waiter)| {
            let (shared, handler, done) = (shared.clone(), handler.clone(), done.clone());
            thread::Builder::new().name(format!("httpool-worker-{i}")).spawn(move || {
                work(&shared, &*handler, i % shared.seats.len(), waiter);
                let _ = done.send(());
            })
        })
        .collect()
}

/// A worker's life: take a readable connection (polling the seat when none
/// is ready), serve it until it has nothing more to read, park or close it;
/// until shutdown.
fn work<H: Handler>(shared: &Shared, handler: &H, mut seat: usize, mut waiter: Waiter) {
    if shared.config.batch_scheduling {
        schedule_as_batch();
    }
    let mut scratch = Scratch::new(&shared.config);
    let mut no_seat = NoSeat;
    while let Some(mut conn) = shared.next(&mut seat) {
        loop {
            let (next, left_seat) = {
                let seat = shared.registry_of(&conn);
                let registered = seat.is_some();
                let mut io = Socket { stream: &mut conn.stream, waiter: &mut waiter, seat };
                let mut cx = Ctx {
                    handler,
                    config: &shared.config,
                    scratch: &mut scratch,
                    stopping: &shared.stopping,
                    counters: &shared.counters,
                    peer: conn.peer,
                    seat: &mut no_seat,
                };
                // Handler panics are caught inside; this catches a panicking body
                // reader, which leaves the connection in an unknown state.
                let next =
                    catch_unwind(AssertUnwindSafe(|| serve(&mut conn.state, &mut io, &mut cx))).unwrap_or_else(|_| {
                        error!("{}: panic while writing a response; closing", conn.peer);
                        shared.counters.panic();
                        scratch.out.clear();
                        Next::Close
                    });
                (next, registered && io.seat.is_none())
            };
            if left_seat {
                conn.left_seat();
            }
            match next {
                // At shutdown only a request in flight parks (the worker is
                // handed it back to finish, waiting).
                Next::Park if !shared.stopping.load(Ordering::Relaxed) || conn.state.has_request_in_flight() => {
                    match shared.park(conn) {
                        Some(again) => conn = again,
                        None => break,
                    }
                }
                Next::Yield => {
                    shared.requeue(conn);
                    break;
                }
                _ => {
                    shared.close(conn);
                    break;
                }
            }
        }
        // Room freed for a connection that waits to be accepted.
        if shared.take_accept_waiting() {
            shared.accept(seat);
        }
    }
}

/// Puts the calling thread under `SCHED_BATCH`
/// ([`Server::batch_scheduling`](crate::Server::batch_scheduling)).
///
/// Neither std nor rustix wraps sched_setscheduler(2), hence `unsafe`; what
/// it buys is measured in the README (Performance).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn schedule_as_batch() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler(2) only reads the one `sched_param` behind
    // the pointer, which points at `param`, alive on this frame for the
    // whole call; pid 0 names the calling thread. It writes no memory of
    // ours.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &raw const param) };
    if rc != 0 {
        warn!("running the worker under SCHED_BATCH failed: {}", std::io::Error::last_os_error());
    }
}

#[cfg(not(target_os = "linux"))]
fn schedule_as_batch() {}
