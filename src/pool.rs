//! The fixed pool of worker threads.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::{self, JoinHandle};

use crossbeam_channel::{Receiver, Sender};

use crate::conn::{Ctx, Next, Scratch, serve};
use crate::handler::Handler;
use crate::io::{Socket, Waiter};
use crate::lot::{Conn, Shared};

/// Starts `n` named workers taking connections from `queue`. Each sends on
/// `done` when it exits, so shutdown can wait with a deadline.
pub(crate) fn spawn<H: Handler>(
    n: usize,
    shared: &Arc<Shared>,
    handler: &Arc<H>,
    queue: &Receiver<Conn>,
    done: &Sender<()>,
) -> std::io::Result<Vec<JoinHandle<()>>> {
    (0..n)
        .map(|i| {
            let (shared, handler, queue, done) = (shared.clone(), handler.clone(), queue.clone(), done.clone());
            thread::Builder::new().name(format!("httpool-worker-{i}")).spawn(move || {
                match Waiter::new() {
                    Ok(waiter) => work(&shared, &*handler, &queue, waiter),
                    Err(e) => error!("worker {i} could not start: {e}"),
                }
                let _ = done.send(());
            })
        })
        .collect()
}

/// crossbeam-channel allocates a thread's wait context the first time the
/// thread blocks on any channel. Blocking once, briefly, on a channel that
/// never delivers means no request ever pays for it (and keeps the
/// keep-alive path allocation-free from the first request on).
fn prime_wait_context() {
    let (_keep_open, never) = crossbeam_channel::bounded::<()>(0);
    let _ = never.recv_timeout(std::time::Duration::from_millis(1));
}

/// A worker's life: take a readable connection, serve it until it has
/// nothing more to read, park or close it, repeat until the queue closes.
fn work<H: Handler>(shared: &Shared, handler: &H, queue: &Receiver<Conn>, mut waiter: Waiter) {
    let mut scratch = Scratch::new(&shared.config);
    prime_wait_context();
    while let Ok(mut conn) = queue.recv() {
        shared.wake_poller_if_waiting();
        let next = {
            let mut io = Socket { stream: &mut conn.stream, waiter: &mut waiter };
            let mut cx = Ctx {
                handler,
                config: &shared.config,
                scratch: &mut scratch,
                stopping: &shared.stopping,
                counters: &shared.counters,
                peer: conn.peer,
            };
            // Handler panics are caught inside; this catches a panicking body
            // reader, which leaves the connection in an unknown state.
            catch_unwind(AssertUnwindSafe(|| serve(&mut conn.state, &mut io, &mut cx))).unwrap_or_else(|_| {
                error!("{}: panic while writing a response; closing", conn.peer);
                shared.counters.panic();
                scratch.out.clear();
                Next::Close
            })
        };
        match next {
            Next::Park if !shared.stopping.load(Ordering::Relaxed) => shared.park(conn),
            _ => shared.close(conn),
        }
    }
}
