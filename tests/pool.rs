//! The elastic, bounded pool: threads are added while handlers block, never
//! past `max_workers`; past it, requests wait (backpressure); extra threads
//! retire when idle; shutdown joins them all; a thread that cannot be
//! started leaves the server serving with the threads it has.

mod common;

#[cfg(target_os = "linux")]
use std::io::{BufRead, BufReader, Write};
#[cfg(target_os = "linux")]
use std::net::SocketAddr;
#[cfg(target_os = "linux")]
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
use common::httpool_threads;
use common::{PATIENCE, connect, get, read_reply, send, wait_for};
use httpool::{Overload, Request, Response, Server, ServerHandle};

/// A gate the `/block` handler waits at until it opens; counts who is in.
#[derive(Default)]
struct Gate {
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl Gate {
    fn pass(&self) {
        let mut state = self.state.lock().unwrap();
        state.0 += 1;
        self.changed.notify_all();
        let deadline = Instant::now() + PATIENCE;
        while !state.1 && Instant::now() < deadline {
            state = self.changed.wait_timeout(state, PATIENCE).unwrap().0;
        }
    }

    fn inside(&self) -> usize {
        self.state.lock().unwrap().0
    }

    /// Waits until `n` handlers are in; on failure, says what `server`
    /// was doing (the one intermittent failure under Wine left no clue).
    fn wait_inside(&self, n: usize, server: &ServerHandle) {
        let mut state = self.state.lock().unwrap();
        let deadline = Instant::now() + PATIENCE;
        while state.0 < n {
            assert!(
                Instant::now() < deadline,
                "only {} handlers entered, waiting for {n}: {:?}",
                state.0,
                server.stats()
            );
            state = self.changed.wait_timeout(state, PATIENCE).unwrap().0;
        }
    }

    /// [`Gate::wait_inside`] without a server to ask.
    #[cfg(all(target_os = "linux", not(httpool_portable)))]
    fn wait_inside_alone(&self, n: usize) {
        let mut state = self.state.lock().unwrap();
        let deadline = Instant::now() + PATIENCE;
        while state.0 < n {
            assert!(Instant::now() < deadline, "only {} handlers entered, waiting for {n}", state.0);
            state = self.changed.wait_timeout(state, PATIENCE).unwrap().0;
        }
    }

    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

fn gated(configure: impl FnOnce(Server) -> Server) -> (ServerHandle, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let inner = gate.clone();
    let server = configure(Server::bind("127.0.0.1:0").unwrap())
        .spawn(move |req: &mut Request| {
            if req.path() == "/block" {
                inner.pass();
            }
            Response::text("done")
        })
        .unwrap();
    (server, gate)
}

#[test]
fn threads_are_added_while_handlers_block_and_never_past_the_bound() {
    let (server, gate) = gated(|s| s.workers(1).max_workers(4));
    let addr = server.local_addr();
    let mut blocked = Vec::new();
    for n in 1..=4 {
        let mut conn = connect(addr);
        send(&mut conn, &get("/block"));
        gate.wait_inside(n, &server);
        blocked.push(conn);
    }
    let stats = server.stats();
    assert_eq!(stats.threads, 4, "{stats:?}");
    assert_eq!(stats.busy_threads, 4, "{stats:?}");
    // Two more: no thread for them, and none is started past the bound.
    for _ in 0..2 {
        let mut conn = connect(addr);
        send(&mut conn, &get("/block"));
        blocked.push(conn);
    }
    wait_for(&server, "the two to wait for a thread", |s| s.queued == 2);
    assert_eq!(server.stats().threads, 4);
    assert_eq!(gate.inside(), 4);
    gate.open();
    for conn in &mut blocked {
        assert_eq!(read_reply(conn, false).unwrap().body, b"done");
    }
    assert!(server.stats().threads <= 4);
    assert!(server.shutdown());
}

#[test]
fn a_trivial_request_is_served_while_every_core_thread_blocks() {
    let (server, gate) = gated(|s| s.workers(2).max_workers(8));
    let addr = server.local_addr();
    let mut blocked: Vec<_> = (0..2).map(|_| connect(addr)).collect();
    for (n, conn) in blocked.iter_mut().enumerate() {
        send(conn, &get("/block"));
        gate.wait_inside(n + 1, &server);
    }
    let mut other = connect(addr);
    send(&mut other, &get("/"));
    assert_eq!(read_reply(&mut other, false).unwrap().body, b"done");
    assert!(server.stats().threads_spawned > 2, "{:?}", server.stats());
    // The monitor that started it looks again and again while they block.
    let ticks = server.stats().monitor_ticks;
    wait_for(&server, "the monitor's next looks", |s| s.monitor_ticks >= ticks + 2);
    gate.open();
    for conn in &mut blocked {
        assert_eq!(read_reply(conn, false).unwrap().body, b"done");
    }
    assert!(server.shutdown());
}

/// A server whose `/block` route was seen asleep (a call that sleeps
/// 30 ms, `/block?prime`): its next calls are expected to block.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
fn gated_and_primed() -> (ServerHandle, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let inner = gate.clone();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(move |req: &mut Request| {
            match (req.path(), req.query()) {
                ("/block", Some("prime")) => std::thread::sleep(Duration::from_millis(30)),
                ("/block", _) => inner.pass(),
                _ => {}
            }
            Response::text("done")
        })
        .unwrap();
    let mut conn = connect(server.local_addr());
    send(&mut conn, &get("/block?prime"));
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"done");
    (server, gate)
}

/// `n` clients each ask `/block` of a [`gated_and_primed`] server: eight
/// come in to the gate, the others wait for a place.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
fn block_past_the_limit(server: &ServerHandle, gate: &Gate, n: usize) -> Vec<BufReader<std::net::TcpStream>> {
    let mut blocked: Vec<_> = (0..n).map(|_| connect(server.local_addr())).collect();
    for conn in &mut blocked {
        send(conn, &get("/block"));
    }
    gate.wait_inside(8, server);
    wait_for(server, "the others to wait for a place", |s| s.queued == (n - 8) as u64);
    blocked
}

/// Calls expected to block run at most as many at once as the limit the
/// pool has measured (eight before any measure: twice the two core threads
/// or 8); the others wait parked, holding no thread, and a request to
/// another route is answered meanwhile; every one is answered once the
/// gate opens.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
#[test]
fn calls_expected_to_block_past_the_limit_wait_parked_and_others_are_served() {
    let (server, gate) = gated_and_primed();
    let mut blocked = block_past_the_limit(&server, &gate, 12);
    let mut other = connect(server.local_addr());
    send(&mut other, &get("/"));
    assert_eq!(read_reply(&mut other, false).unwrap().body, b"done");
    assert_eq!(gate.inside(), 8, "{:?}", server.stats());
    let stats = server.stats();
    // The eight in their calls, and the two core threads' work.
    assert!(stats.threads <= 8 + 2 + 1, "{stats:?}");
    gate.open();
    for conn in &mut blocked {
        assert_eq!(read_reply(conn, false).unwrap().body, b"done");
    }
    assert_eq!(gate.inside(), 12);
    assert!(server.shutdown());
}

/// A request waiting for a place when shutdown begins is answered, not
/// dropped: at shutdown every call is admitted.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
#[test]
fn requests_waiting_for_a_place_are_answered_at_shutdown() {
    let (server, gate) = gated_and_primed();
    let mut blocked = block_past_the_limit(&server, &gate, 10);
    let stopping = std::thread::spawn(move || server.shutdown());
    // Admitted by the shutdown, the two come in to the gate.
    gate.wait_inside_alone(10);
    gate.open();
    for conn in &mut blocked {
        let reply = read_reply(conn, false).unwrap();
        assert_eq!(reply.body, b"done");
    }
    assert!(stopping.join().unwrap());
}

/// A handler that computes (here it spins for 4 ms) does not block: its
/// worker runs, or waits for a CPU, and another thread would only share the
/// cores. Eight clients computing at once, ten requests each, add no thread
/// to a pool of 4 (a seat that waits behind computing workers for some
/// 20 ms gets one, which these calls do not make it do). (Before, each call that ran across two monitor
/// ticks counted as blocking: its seat was handed over, before the
/// connection's next calls too, and the pool grew to a thread a client:
/// 12 threads here.) Linux only: elsewhere a thread's state is not read,
/// and such a call counts as blocking.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
#[test]
fn handlers_that_compute_do_not_grow_the_pool() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(4)
        .spawn(|_: &mut Request| {
            let until = Instant::now() + Duration::from_millis(4);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
            Response::text("done")
        })
        .unwrap();
    let addr = server.local_addr();
    let clients: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let mut conn = connect(addr);
                for _ in 0..10 {
                    send(&mut conn, &get("/"));
                    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"done");
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    let stats = server.stats();
    assert_eq!(stats.requests, 80);
    // A worker asleep for a moment outside the handler (a lock, a page
    // fault) can still be found so: a thread or two more, not one a client.
    assert!(stats.threads_spawned <= 4 + 2, "{stats:?}");
    assert!(server.shutdown());
}

#[test]
fn with_every_thread_blocked_new_clients_get_backpressure_not_threads() {
    let retry_after = Duration::from_secs(3);
    let (server, gate) =
        gated(|s| s.workers(1).max_workers(2).queue_depth(1).overload(Overload::Reject { retry_after }));
    let addr = server.local_addr();
    let mut blocked: Vec<_> = (0..2).map(|_| connect(addr)).collect();
    for (n, conn) in blocked.iter_mut().enumerate() {
        send(conn, &get("/block"));
        gate.wait_inside(n + 1, &server);
    }
    let mut queued = connect(addr);
    send(&mut queued, &get("/"));
    wait_for(&server, "one request queued", |s| s.queued == 1);
    let mut refused = connect(addr);
    send(&mut refused, &get("/"));
    let reply = read_reply(&mut refused, false).unwrap();
    assert_eq!((reply.status, reply.header("retry-after")), (503, Some("3")));
    assert_eq!(server.stats().threads, 2);
    gate.open();
    assert_eq!(read_reply(&mut queued, false).unwrap().body, b"done");
    for conn in &mut blocked {
        assert_eq!(read_reply(conn, false).unwrap().body, b"done");
    }
    assert!(server.shutdown());
}

/// A stack size too small for the server's own code is raised to
/// `MIN_WORKER_STACK_SIZE`: it was taken as given (the system raised 0 to
/// 16 KiB), and the first chunked body read on it overflowed the stack,
/// which aborts the process.
#[test]
fn a_worker_stack_too_small_for_the_server_is_raised_to_the_least() {
    for size in [0, 1, 16 * 1024] {
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(1)
            .max_workers(1)
            .worker_stack_size(size)
            .spawn(common::echo)
            .unwrap();
        let mut conn = connect(server.local_addr());
        send(&mut conn, b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
        let reply = read_reply(&mut conn, false).unwrap();
        assert_eq!((reply.status, reply.body), (200, b"hello".to_vec()), "worker_stack_size({size})");
        assert!(server.shutdown());
    }
}

#[test]
fn extra_threads_retire_after_the_idle_timeout_and_the_core_stays() {
    let (server, gate) = gated(|s| s.workers(1).max_workers(6).worker_idle_timeout(Duration::from_millis(100)));
    let addr = server.local_addr();
    let mut blocked: Vec<_> = (0..3).map(|_| connect(addr)).collect();
    for (n, conn) in blocked.iter_mut().enumerate() {
        send(conn, &get("/block"));
        gate.wait_inside(n + 1, &server);
    }
    let grown = server.stats().threads;
    assert!(grown >= 3, "{:?}", server.stats());
    gate.open();
    for conn in &mut blocked {
        assert_eq!(read_reply(conn, false).unwrap().body, b"done");
    }
    let stats = wait_for(&server, "the extra threads to retire", |s| s.threads == 1);
    assert_eq!(stats.threads_retired, stats.threads_spawned - 1, "{stats:?}");
    // The one left serves on.
    send(&mut blocked[0], &get("/"));
    assert_eq!(read_reply(&mut blocked[0], false).unwrap().body, b"done");
    assert!(server.shutdown());
}

/// A retired thread's stack is given back as the thread exits. (A retired
/// thread's handle used to be kept until the next thread started, and a
/// finished thread not joined or detached keeps its stack mapped: 20 KiB or
/// more resident each, 5 MiB after 256 blocking connections went away.)
#[cfg(target_os = "linux")]
#[test]
fn a_retired_thread_s_stack_is_given_back_without_waiting_for_another_thread() {
    // Larger than glibc's cache of freed stacks (40 MiB), so a freed one is
    // unmapped; a size no other test's threads have.
    const STACK: usize = 41 * 1024 * 1024 + 3 * 4096;
    let (server, gate) =
        gated(|s| s.workers(1).max_workers(5).worker_idle_timeout(Duration::from_millis(100)).worker_stack_size(STACK));
    let addr = server.local_addr();
    let mut blocked: Vec<_> = (0..4).map(|_| connect(addr)).collect();
    for (n, conn) in blocked.iter_mut().enumerate() {
        send(conn, &get("/block"));
        gate.wait_inside(n + 1, &server);
    }
    // Four threads are inside a handler, each on its own stack.
    assert!(stacks_of(STACK) >= 4, "{} stacks, {:?}", stacks_of(STACK), server.stats());
    gate.open();
    for conn in &mut blocked {
        assert_eq!(read_reply(conn, false).unwrap().body, b"done");
    }
    wait_for(&server, "the extra threads to retire", |s| s.threads == 1);
    // The live thread's, and at most one freed: glibc caches the stack of
    // the last thread to exit (it is freed while that thread still runs on
    // it, so it is unmapped only at the next thread's exit or start).
    let deadline = Instant::now() + PATIENCE;
    while stacks_of(STACK) > 2 {
        assert!(Instant::now() < deadline, "{} stacks mapped for 1 thread", stacks_of(STACK));
        std::thread::yield_now();
    }
    assert!(server.shutdown());
}

/// Writable mappings of this process about `size` long: thread stacks of
/// that size (the guard page is mapped apart).
#[cfg(target_os = "linux")]
fn stacks_of(size: usize) -> u64 {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines()
        .filter(|line| {
            let mut fields = line.split_whitespace();
            let (range, perms) = (fields.next().unwrap(), fields.next().unwrap());
            let (lo, hi) = range.split_once('-').unwrap();
            let len = usize::from_str_radix(hi, 16).unwrap() - usize::from_str_radix(lo, 16).unwrap();
            perms.starts_with("rw") && len.abs_diff(size) <= 64 * 1024
        })
        .map(|_| 1)
        .sum()
}

/// A child process runs the server with an address-space limit that leaves
/// room for `fit` worker stacks: `HTTPOOL_POOL_CHILD` says which case.
/// Linux only, like the tests below: it reads /proc, and macOS does not
/// enforce `RLIMIT_AS`.
#[cfg(target_os = "linux")]
#[test]
#[ignore = "run in a child process by the tests below"]
fn pool_child() {
    let Some(case) = std::env::var_os("HTTPOOL_POOL_CHILD") else { return };
    const STACK: usize = 256 << 20;
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let vm_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse()
        .unwrap();
    // Room for two worker stacks (and the monitor's), not three.
    let limit = vm_kib * 1024 + 2 * STACK as u64 + (100 << 20);
    rlimit::setrlimit(rlimit::Resource::AS, limit, limit).unwrap();
    match case.to_str().unwrap() {
        "start" => {
            let before = httpool_threads();
            let result = Server::bind("127.0.0.1:0")
                .unwrap()
                .workers(3)
                .worker_stack_size(STACK)
                .spawn(|_: &mut Request| Response::text("x"));
            let err = result.expect_err("a third core thread cannot start");
            println!("ERROR {err}");
            // Every thread started before the failure was stopped and joined.
            let deadline = Instant::now() + PATIENCE;
            while httpool_threads() != before && Instant::now() < deadline {
                std::thread::yield_now();
            }
            println!("THREADS {}", httpool_threads() - before);
        }
        _ => {
            let gate = Arc::new(Gate::default());
            let inner = gate.clone();
            let server = Server::bind("127.0.0.1:0")
                .unwrap()
                .workers(1)
                .max_workers(16)
                .worker_stack_size(STACK)
                .spawn(move |req: &mut Request| {
                    if req.path() == "/block" {
                        inner.pass();
                    }
                    Response::text("done")
                })
                .unwrap();
            println!("PORT {}", server.local_addr().port());
            for line in std::io::stdin().lines() {
                match line.unwrap().as_str() {
                    "stats" => {
                        let s = server.stats();
                        println!("STATS {} {} {}", s.threads, gate.inside(), s.queued);
                    }
                    "open" => gate.open(),
                    _ => break,
                }
            }
            assert!(server.shutdown());
        }
    }
}

#[cfg(target_os = "linux")]
fn pool_child_process(case: &str) -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    let mut process = Command::new(std::env::current_exe().unwrap())
        .args(["pool_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("HTTPOOL_POOL_CHILD", case)
        // One malloc arena: per-thread arenas reserve address space too.
        .env("MALLOC_ARENA_MAX", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(process.stdout.take().unwrap());
    (process, out)
}

/// The next line of the child's starting with `prefix`, without it.
#[cfg(target_os = "linux")]
fn line(out: &mut BufReader<std::process::ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "child exited");
        if let Some(at) = line.find(prefix) {
            return line[at + prefix.len()..].trim().to_string();
        }
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_core_thread_that_cannot_start_fails_spawn_and_stops_those_that_did() {
    let (mut process, mut out) = pool_child_process("start");
    assert!(!line(&mut out, "ERROR ").is_empty());
    assert_eq!(line(&mut out, "THREADS "), "0", "threads left running");
    assert!(process.wait().unwrap().success());
}

#[cfg(target_os = "linux")]
#[test]
fn a_thread_that_cannot_be_added_leaves_the_server_serving_with_what_it_has() {
    let (mut process, mut out) = pool_child_process("grow");
    let port: u16 = line(&mut out, "PORT ").parse().unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stats = |process: &mut std::process::Child| {
        writeln!(process.stdin.as_mut().unwrap(), "stats").unwrap();
        let l = line(&mut out, "STATS ");
        let n: Vec<usize> = l.split(' ').map(|x| x.parse().unwrap()).collect();
        (n[0], n[1], n[2])
    };
    let mut clients: Vec<_> = (0..4).map(|_| connect(addr)).collect();
    for client in &mut clients {
        send(client, &get("/block"));
    }
    // Two threads fit: two handlers are in, the other two requests wait.
    let deadline = Instant::now() + PATIENCE;
    let (threads, inside, queued) = loop {
        let s = stats(&mut process);
        if s.1 == 2 && s.2 == 2 {
            break s;
        }
        assert!(Instant::now() < deadline, "threads, inside, queued: {s:?}");
        std::thread::yield_now();
    };
    assert_eq!((threads, inside, queued), (2, 2, 2));
    writeln!(process.stdin.as_mut().unwrap(), "open").unwrap();
    for client in &mut clients {
        assert_eq!(read_reply(client, false).unwrap().body, b"done");
    }
    writeln!(process.stdin.as_mut().unwrap(), "quit").unwrap();
    assert!(process.wait().unwrap().success());
}

/// Once shutdown starts, the listener is closed: a new client is refused at
/// once, even while a request in flight still holds the server open (it
/// used to wait in the kernel's backlog until the process exited).
#[test]
fn shutdown_closes_the_listener_at_once_so_new_clients_are_refused() {
    let (server, gate) = gated(|s| s.workers(1));
    let addr = server.local_addr();
    let mut blocked = connect(addr);
    send(&mut blocked, &get("/block"));
    gate.wait_inside(1, &server);
    server.signal().shutdown();
    let deadline = Instant::now() + PATIENCE;
    loop {
        match std::net::TcpStream::connect(addr) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => break,
            // A handshake under way as the listener closes is reset.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => continue,
            Err(e) => panic!("connect failed otherwise: {e}"),
            Ok(_) => assert!(Instant::now() < deadline, "still accepting connections during shutdown"),
        }
        std::thread::yield_now();
    }
    gate.open();
    let reply = read_reply(&mut blocked, false).unwrap();
    assert_eq!((reply.status, reply.header("connection")), (200, Some("close")));
    assert!(server.join());
}

/// Per-thread state a handler keeps (a database connection in a
/// `thread_local!`, as blocking handlers often do); its destructor runs
/// when the worker thread exits, here until the test lets it go.
struct PerThread {
    dropped: std::sync::mpsc::Sender<()>,
    release: Arc<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>,
}

impl Drop for PerThread {
    fn drop(&mut self) {
        let _ = self.dropped.send(());
        let _ = self.release.lock().unwrap().recv_timeout(PATIENCE);
    }
}

thread_local! {
    static PER_THREAD: std::cell::RefCell<Option<PerThread>> = const { std::cell::RefCell::new(None) };
}

/// A retiring worker's `thread_local!` destructors (a handler's database
/// connection closing, say) run on their own: nothing waits for them, so
/// the monitor goes on enforcing deadlines meanwhile — here a slow head
/// gets its `408`. (The monitor used to join retired threads, and a join
/// waits for those destructors.)
#[test]
fn a_retiring_thread_s_thread_locals_do_not_stall_the_monitor() {
    use std::io::{Read, Write};
    use std::sync::mpsc;
    use std::time::Duration;

    let (entered_tx, entered_rx) = mpsc::channel::<()>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (dropped_tx, dropped_rx) = mpsc::channel::<()>();
    let (let_go_tx, let_go_rx) = mpsc::channel::<()>();
    let let_go_rx = Arc::new(std::sync::Mutex::new(let_go_rx));
    let (entered_tx, release_rx) = (std::sync::Mutex::new(entered_tx), std::sync::Mutex::new(release_rx));
    let dropped_tx = std::sync::Mutex::new(dropped_tx);
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_workers(2)
        .worker_idle_timeout(Duration::from_millis(50))
        .head_timeout(Duration::from_millis(300))
        .spawn(move |req: &mut Request| {
            PER_THREAD.with(|slot| {
                let dropped = dropped_tx.lock().unwrap().clone();
                *slot.borrow_mut() = Some(PerThread { dropped, release: let_go_rx.clone() });
            });
            if req.path() == "/block" {
                entered_tx.lock().unwrap().send(()).unwrap();
                let _ = release_rx.lock().unwrap().recv_timeout(PATIENCE);
            }
            Response::text("done")
        })
        .unwrap();
    let addr = server.local_addr();
    // The core thread blocks; a thread started for its seat serves the next
    // request. Both keep per-thread state.
    let mut blocked = connect(addr);
    send(&mut blocked, &get("/block"));
    entered_rx.recv_timeout(PATIENCE).unwrap();
    let mut other = connect(addr);
    send(&mut other, &get("/"));
    assert_eq!(read_reply(&mut other, false).unwrap().body, b"done");
    release_tx.send(()).unwrap();
    assert_eq!(read_reply(&mut blocked, false).unwrap().body, b"done");
    // One of the two retires (either may); its per-thread state is being
    // dropped.
    dropped_rx.recv_timeout(PATIENCE).unwrap();
    // A head that never finishes: 408 after the 300 ms head timeout.
    let mut slow = std::net::TcpStream::connect(addr).unwrap();
    slow.write_all(b"GET / HTTP/1.1\r\n").unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut got = [0u8; 12];
    let answered = slow.read_exact(&mut got);
    // Every per-thread destructor returns at once from here on.
    drop(let_go_tx);
    assert!(answered.is_ok(), "no answer to a slow head 3 s after its 300 ms deadline: {answered:?}");
    assert_eq!(&got, b"HTTP/1.1 408");
    assert!(server.shutdown());
}

/// The least stack holds the crate's own helpers at their deepest: a JSON
/// body nested as deep as `serde_json` reads (127 levels; deeper is a
/// `400`), read by `Request::json` on a debug build (several times a
/// release build's stack). A stack overflow aborts the whole process.
#[test]
#[cfg(feature = "json")]
fn the_least_stack_holds_the_deepest_json_body_on_a_debug_build() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_workers(1)
        .worker_stack_size(0)
        .spawn(|req: &mut httpool::Request| match req.json::<serde_json::Value>() {
            Ok(_) => httpool::Response::text("parsed"),
            Err(e) => httpool::Response::text("refused").with_status(e.status()),
        })
        .unwrap();
    for (depth, status) in [(127, 200), (128, 400), (10_000, 400)] {
        let body = ["[".repeat(depth), "]".repeat(depth)].concat();
        let mut conn = connect(server.local_addr());
        let head = format!(
            "POST / HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        send(&mut conn, &[head.as_bytes(), body.as_bytes()].concat());
        let reply = read_reply(&mut conn, false).unwrap();
        assert_eq!(reply.status, status, "depth {depth}");
    }
    assert!(server.shutdown());
}
