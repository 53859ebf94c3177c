//! Shutdown leaves no thread behind. Alone in its binary (and its tests one
//! at a time) so that no other test's server threads are counted.

mod common;

#[cfg(target_os = "linux")]
use common::httpool_threads;
use common::{PATIENCE, closed, connect, get, read_reply, send};
use httpool::{Request, Response, Server};

/// [`httpool_threads`] once `wanted` holds for it, or after [`PATIENCE`].
/// A thread names itself once it first runs, and a joined thread may still
/// be listed for a moment: the kernel wakes the joining thread as the thread
/// exits, before it has removed the thread's entry.
#[cfg(target_os = "linux")]
fn httpool_threads_once(wanted: impl Fn(usize) -> bool) -> usize {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let n = httpool_threads();
        if wanted(n) || std::time::Instant::now() > deadline {
            return n;
        }
        std::thread::yield_now();
    }
}

/// The tests here count the process's threads: one at a time.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn shutdown_closes_idle_connections_and_joins_every_thread() {
    let _alone = ALONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let server = Server::bind("127.0.0.1:0").unwrap().workers(3).spawn(|_: &mut Request| Response::text("ok")).unwrap();
    let mut idle = connect(server.local_addr());
    send(&mut idle, &get("/"));
    assert_eq!(read_reply(&mut idle, false).unwrap().status, 200);
    // The monitor and the workers are counted (so the zero below means
    // something).
    #[cfg(target_os = "linux")]
    assert_eq!(httpool_threads_once(|n| n == 4), 4);
    assert!(server.shutdown(), "every thread joined within the grace period");
    assert!(closed(&mut idle), "the idle keep-alive connection was closed");
    #[cfg(target_os = "linux")]
    assert_eq!(httpool_threads_once(|n| n == 0), 0);
}

#[test]
fn shutdown_joins_the_threads_added_on_demand_too() {
    let _alone = ALONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (server, entered, release) = common::blocking_server(|s| s.workers(1).max_workers(8));
    let addr = server.local_addr();
    let mut blocked: Vec<_> = (0..3).map(|_| connect(addr)).collect();
    for conn in &mut blocked {
        send(conn, &get("/block"));
        entered.recv_timeout(PATIENCE).unwrap();
    }
    assert!(server.stats().threads >= 3, "{:?}", server.stats());
    for _ in 0..3 {
        release.send(()).unwrap();
    }
    for conn in &mut blocked {
        assert_eq!(read_reply(conn, false).unwrap().status, 200);
    }
    assert!(server.shutdown(), "every thread joined within the grace period");
    #[cfg(target_os = "linux")]
    assert_eq!(httpool_threads_once(|n| n == 0), 0);
}

/// After `shutdown` returns `true` every worker is joined and none holds
/// the handler: its state (here an `Arc`) is dropped, not left to a
/// detached thread (a worker that had counted itself out but not yet
/// returned used to be detached, holding the pool and the handler).
#[test]
fn after_shutdown_returns_no_worker_holds_the_handler() {
    let _alone = ALONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for round in 0..200 {
        let state = std::sync::Arc::new(());
        let held = state.clone();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(4)
            .spawn(move |_: &mut Request| {
                let _ = &held;
                Response::text("ok")
            })
            .unwrap();
        assert!(server.shutdown());
        assert_eq!(
            std::sync::Arc::strong_count(&state),
            1,
            "round {round}: a worker still holds the handler after shutdown"
        );
    }
}
