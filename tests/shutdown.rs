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

/// How a handler stops its own server in the tests below: it takes the
/// server's handle and calls `shutdown`, telling the test what that
/// returned (`false` at once: the server cannot have stopped while its
/// handler runs). `held`: first it tells the test it is in, and waits for a
/// go.
struct OwnStop {
    handle: std::sync::Mutex<Option<httpool::ServerHandle>>,
    told: std::sync::mpsc::Sender<bool>,
    entered: std::sync::mpsc::Sender<()>,
    go: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
    held: bool,
}

/// The test's side of an [`OwnStop`]: what `shutdown` returned, that the
/// handler is in, and the go.
struct OwnStopSide {
    told: std::sync::mpsc::Receiver<bool>,
    entered: std::sync::mpsc::Receiver<()>,
    go: std::sync::mpsc::Sender<()>,
}

impl OwnStop {
    fn new(held: bool) -> (std::sync::Arc<OwnStop>, OwnStopSide) {
        let (told, told_rx) = std::sync::mpsc::channel();
        let (entered, entered_rx) = std::sync::mpsc::channel();
        let (go_tx, go) = std::sync::mpsc::channel();
        let stop = OwnStop { handle: Default::default(), told, entered, go: std::sync::Mutex::new(go), held };
        (std::sync::Arc::new(stop), OwnStopSide { told: told_rx, entered: entered_rx, go: go_tx })
    }

    /// The handler's `/stop`.
    fn stop(&self) -> Response {
        if self.held {
            self.entered.send(()).unwrap();
            self.go.lock().unwrap().recv().unwrap();
        }
        let server = self.handle.lock().unwrap().take().expect("the handle");
        self.told.send(server.shutdown()).unwrap();
        Response::text("stopped")
    }
}

/// A handler may stop its own server with `ServerHandle::shutdown`: the
/// call returns `false` at once, waiting neither for its own answer (which
/// goes out only once the handler returns) nor for another handler still
/// running, and its client gets the whole answer (1 MiB, so that a stop
/// that cut it short would show) with `Connection: close`; the other
/// handler's answer goes out too, and every thread ends. The call used to
/// wait for every other thread, here the held handler, and return `true`
/// before the handler's own answer was out.
#[test]
fn a_handler_that_shuts_its_own_server_down_returns_false_at_once_and_its_answer_goes_out_whole() {
    use std::sync::{Mutex, mpsc};
    let _alone = ALONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (own, side) = OwnStop::new(false);
    let stop = own.clone();
    let (entered, in_handler) = mpsc::channel();
    let (release, wait) = mpsc::channel::<()>();
    let (entered, wait) = (Mutex::new(entered), Mutex::new(wait));
    let large = vec![b'x'; 1 << 20];
    let answer = large.clone();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(3)
        .pin_workers(false)
        .shutdown_grace(std::time::Duration::from_secs(60))
        .spawn(move |req: &mut Request| match req.path() {
            "/stop" => {
                stop.stop();
                Response::bytes(answer.clone())
            }
            _ => {
                entered.lock().unwrap().send(()).unwrap();
                wait.lock().unwrap().recv().unwrap();
                Response::text("held")
            }
        })
        .unwrap();
    let addr = server.local_addr();
    *own.handle.lock().unwrap() = Some(server);
    let mut held = connect(addr);
    send(&mut held, &get("/hold"));
    in_handler.recv_timeout(PATIENCE).unwrap();
    let mut conn = connect(addr);
    send(&mut conn, &get("/stop"));
    let all = side.told.recv_timeout(PATIENCE).expect("shutdown returned at once, the held handler still running");
    assert!(!all, "the handler's own thread had not ended");
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!(reply.status, 200);
    assert!(reply.body == large, "the answer was cut: {} bytes of {}", reply.body.len(), large.len());
    assert_eq!(reply.header("connection"), Some("close"));
    assert!(closed(&mut conn), "the connection closed after the answer");
    release.send(()).unwrap();
    let reply = read_reply(&mut held, false).unwrap();
    assert_eq!((reply.status, reply.body.as_slice()), (200, b"held".as_slice()));
    assert_eq!(reply.header("connection"), Some("close"));
    // Their clients close, so that the workers' lingers after the answers end.
    drop((conn, held));
    #[cfg(target_os = "linux")]
    assert_eq!(httpool_threads_once(|n| n == 0), 0);
}

/// The same with one worker, which another connection's request waits for
/// as its handler stops the server: that request, received before the
/// stop, is answered once the handler returns (none is lost).
#[test]
fn a_request_waiting_for_the_worker_whose_handler_stops_the_server_is_answered() {
    let _alone = ALONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (own, side) = OwnStop::new(true);
    let stop = own.clone();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_workers(1)
        .spawn(move |req: &mut Request| match req.path() {
            "/stop" => stop.stop(),
            path => Response::text(path.to_string()),
        })
        .unwrap();
    let addr = server.local_addr();
    *own.handle.lock().unwrap() = Some(server);
    let mut conn = connect(addr);
    send(&mut conn, &get("/stop"));
    side.entered.recv_timeout(PATIENCE).unwrap();
    let mut waiting = connect(addr);
    send(&mut waiting, &get("/waiting"));
    side.go.send(()).unwrap();
    assert!(!side.told.recv_timeout(PATIENCE).expect("shutdown returned"));
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"stopped");
    drop(conn);
    let reply = read_reply(&mut waiting, false).unwrap();
    assert_eq!((reply.status, reply.body.as_slice()), (200, b"/waiting".as_slice()));
    drop(waiting);
    #[cfg(target_os = "linux")]
    assert_eq!(httpool_threads_once(|n| n == 0), 0);
}

/// A handler of one server that shuts another down waits for every thread
/// of that other server, its handler still running included: only a worker
/// of the server being stopped is not waited for (review of 0feb5bf).
#[test]
fn a_handler_that_shuts_another_server_down_waits_for_its_running_handler() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex, mpsc};
    let _alone = ALONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (entered, in_handler) = mpsc::channel();
    let (release, wait) = mpsc::channel::<()>();
    let wait = Mutex::new(wait);
    let done = Arc::new(AtomicBool::new(false));
    let finished = done.clone();
    let b = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .shutdown_grace(std::time::Duration::from_secs(60))
        .spawn(move |_: &mut Request| {
            entered.send(()).unwrap();
            wait.lock().unwrap().recv().unwrap();
            finished.store(true, Ordering::SeqCst);
            Response::text("held")
        })
        .unwrap();
    let b_addr = b.local_addr();
    let b_handle = Arc::new(Mutex::new(Some(b)));
    let other = b_handle.clone();
    let a = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(move |_: &mut Request| {
            let b = other.lock().unwrap().take().expect("B's handle");
            let all = b.shutdown();
            Response::text(format!("{all} {}", done.load(Ordering::SeqCst)))
        })
        .unwrap();
    let mut held = connect(b_addr);
    send(&mut held, &get("/hold"));
    in_handler.recv_timeout(PATIENCE).unwrap();
    let mut stopper = connect(a.local_addr());
    send(&mut stopper, &get("/stop-b"));
    // B's listener closes once its shutdown has begun.
    let deadline = std::time::Instant::now() + PATIENCE;
    while std::net::TcpStream::connect(b_addr).is_ok() {
        assert!(std::time::Instant::now() < deadline, "B never stopped listening");
        std::thread::yield_now();
    }
    release.send(()).unwrap();
    assert_eq!(read_reply(&mut held, false).unwrap().body, b"held");
    // Its client closes, so that the worker's linger after the answer ends.
    drop(held);
    let reply = read_reply(&mut stopper, false).unwrap();
    assert_eq!(reply.body, b"true true", "A's handler did not wait for B's running handler");
    drop(stopper);
    assert!(a.shutdown());
}

/// The handler that stops its own server runs on a worker that let its seat
/// go before the call (its connection's last call blocked): a request
/// arriving on another connection before the stop is answered by the
/// thread that took the seat over, and every thread ends.
#[test]
fn a_handler_whose_seat_was_let_go_that_shuts_its_own_server_down_leaves_the_seats_new_thread_serving() {
    let _alone = ALONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (own, side) = OwnStop::new(true);
    let stop = own.clone();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_workers(4)
        .pin_workers(false)
        .shutdown_grace(std::time::Duration::from_secs(60))
        .spawn(move |req: &mut Request| match req.path() {
            // Blocks across two monitor ticks or more: the connection's
            // next call is expected to block, its seat let go before it.
            "/block" => {
                let ticks = || stop.handle.lock().unwrap().as_ref().expect("the handle").stats().monitor_ticks;
                let began = ticks();
                while ticks() < began + 2 {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Response::text("blocked")
            }
            "/stop" => stop.stop(),
            path => Response::text(path.to_string()),
        })
        .unwrap();
    let addr = server.local_addr();
    *own.handle.lock().unwrap() = Some(server);
    let mut conn = connect(addr);
    send(&mut conn, &get("/block"));
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"blocked");
    send(&mut conn, &get("/stop"));
    side.entered.recv_timeout(PATIENCE).unwrap();
    let mut waiting = connect(addr);
    send(&mut waiting, &get("/waiting"));
    let reply = read_reply(&mut waiting, false).unwrap();
    assert_eq!((reply.status, reply.body.as_slice()), (200, b"/waiting".as_slice()));
    side.go.send(()).unwrap();
    assert!(!side.told.recv_timeout(PATIENCE).expect("shutdown returned"));
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"stopped");
    drop((conn, waiting));
    #[cfg(target_os = "linux")]
    assert_eq!(httpool_threads_once(|n| n == 0), 0);
}
