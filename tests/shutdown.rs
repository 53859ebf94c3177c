//! Shutdown leaves no thread behind. Alone in its binary so that no other
//! test's server threads are counted.

mod common;

use common::{PATIENCE, closed, connect, get, read_reply, send};
use httpool::{Request, Response, Server};

/// Threads of this process whose name starts with `httpool`.
#[cfg(target_os = "linux")]
fn httpool_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("httpool"))
        .count()
}

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

#[test]
fn shutdown_closes_idle_connections_and_joins_every_thread() {
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
