//! A retiring extra thread detaches itself, so shutdown does not wait for
//! it: it must have let go of the handler before it does. The last one to
//! retire then trims glibc's arenas, which this binary intercepts to hold
//! the thread there.
//!
//! Its own binary: the `malloc_trim` defined here stands in for glibc's in
//! every test of the executable.
#![cfg(all(target_os = "linux", target_env = "gnu", not(httpool_portable)))]
#![allow(unsafe_code)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use common::{PATIENCE, connect, get, read_reply, send, wait_for};
use httpool::{Request, Response, Server};

/// Calls of malloc_trim so far, and whether they may return.
static TRIM: Mutex<(usize, bool)> = Mutex::new((0, false));
static TRIM_CHANGED: Condvar = Condvar::new();

/// Stands in for glibc's malloc_trim (the executable's definition wins over
/// libc.so's): it says it was called and waits until the test lets it return.
#[unsafe(no_mangle)]
pub extern "C" fn malloc_trim(_pad: usize) -> std::ffi::c_int {
    let mut trim = TRIM.lock().unwrap();
    trim.0 += 1;
    TRIM_CHANGED.notify_all();
    let deadline = Instant::now() + PATIENCE;
    while !trim.1 && Instant::now() < deadline {
        trim = TRIM_CHANGED.wait_timeout(trim, PATIENCE).unwrap().0;
    }
    0
}

fn wait_trim(cond: impl Fn(&(usize, bool)) -> bool) {
    let mut trim = TRIM.lock().unwrap();
    let deadline = Instant::now() + PATIENCE;
    while !cond(&trim) {
        assert!(Instant::now() < deadline, "malloc_trim: {:?}", *trim);
        trim = TRIM_CHANGED.wait_timeout(trim, PATIENCE).unwrap().0;
    }
}

/// Sets its flag when dropped: the handler owns one.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_retiring_thread_lets_go_of_the_handler_before_shutdown_stops_waiting_for_it() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(dropped.clone());
    let (entered_tx, entered_rx) = std::sync::mpsc::channel::<()>();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let (entered_tx, release_rx) = (Mutex::new(entered_tx), Mutex::new(release_rx));
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_workers(2)
        .worker_idle_timeout(Duration::from_millis(50))
        .spawn(move |req: &mut Request| {
            let _owned = &flag;
            if req.path() == "/block" {
                entered_tx.lock().unwrap().send(()).unwrap();
                let _ = release_rx.lock().unwrap().recv_timeout(PATIENCE);
            }
            Response::text("done")
        })
        .unwrap();
    let mut conn = connect(server.local_addr());
    send(&mut conn, &get("/block"));
    entered_rx.recv_timeout(PATIENCE).unwrap();
    // The seat of the blocked worker is handed to a second thread.
    wait_for(&server, "an extra thread", |s| s.threads == 2);
    release_tx.send(()).unwrap();
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"done");
    drop(conn);
    // One of the two retires idle, the last extra one: it trims.
    wait_trim(|t| t.0 == 1);
    assert_eq!(server.stats().threads, 1);
    assert!(server.shutdown(), "every thread ended within the grace");
    let at_join = dropped.load(Ordering::SeqCst);
    // Let the retired thread finish: it drops the handler then.
    TRIM.lock().unwrap().1 = true;
    TRIM_CHANGED.notify_all();
    let deadline = Instant::now() + PATIENCE;
    while !dropped.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the handler is never dropped");
        std::thread::yield_now();
    }
    assert!(at_join, "shutdown returned while a retired thread still held the handler");
}
