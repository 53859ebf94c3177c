//! The server over real sockets on 127.0.0.1.

mod common;

use std::io::Read;
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{PATIENCE, blocking_server, closed, connect, echo, get, read_reply, send};
use httpool::{Request, Response, Server, ServerHandle};

#[allow(dead_code)] // `main` is the example's, not ours.
#[path = "../examples/testolope.rs"]
mod testolope;

fn testolope_server(workers: usize) -> ServerHandle {
    Server::bind("127.0.0.1:0").unwrap().workers(workers).spawn(testolope::testolope).unwrap()
}

#[test]
fn testolope_answers_and_keeps_the_connection() {
    let server = testolope_server(2);
    let mut conn = connect(server.local_addr());
    for _ in 0..3 {
        send(&mut conn, &get("/testolope"));
        let reply = read_reply(&mut conn, false).unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body, b"Testolope");
        assert_eq!(reply.header("content-type"), Some("text/plain"));
        assert_eq!(reply.header("content-length"), Some("9"));
        assert_eq!(reply.header("connection"), None);
        assert!(reply.header("date").is_some_and(|d| d.ends_with(" GMT")));
    }
    assert!(server.shutdown());
}

#[test]
fn testolope_nokeepalive_closes() {
    let server = testolope_server(2);
    let mut conn = connect(server.local_addr());
    send(&mut conn, &get("/testolope-nokeepalive"));
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!((reply.status, &reply.body[..]), (200, &b"Testolope"[..]));
    assert_eq!(reply.header("connection"), Some("close"));
    assert!(closed(&mut conn));
    assert!(server.shutdown());
}

#[test]
fn the_example_sleep_route_answers_and_leaves_the_others_to_testolope() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1).spawn(testolope::testolope).unwrap();
    let mut conn = connect(server.local_addr());
    send(&mut conn, &get("/sleep"));
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!((reply.status, &reply.body[..]), (200, &b"Slept"[..]));
    assert_eq!(reply.header("content-type"), Some("text/plain"));
    assert_eq!(reply.header("connection"), None);
    send(&mut conn, &get("/testolope"));
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!((reply.status, &reply.body[..]), (200, &b"Testolope"[..]));
    send(&mut conn, &get("/nope"));
    assert_eq!(read_reply(&mut conn, false).unwrap().status, 404);
    assert!(server.shutdown());
}

#[test]
fn unknown_paths_are_404() {
    let server = testolope_server(1);
    let mut conn = connect(server.local_addr());
    send(&mut conn, &get("/nope"));
    assert_eq!(read_reply(&mut conn, false).unwrap().status, 404);
    assert!(server.shutdown());
}

#[test]
fn exact_bytes_of_a_keep_alive_response() {
    let server = testolope_server(1);
    let mut conn = connect(server.local_addr());
    send(&mut conn, &get("/testolope"));
    let mut raw = vec![0u8; 4096];
    let mut got = 0;
    while !raw[..got].ends_with(b"Testolope") {
        got += conn.get_mut().read(&mut raw[got..]).unwrap();
    }
    let text = String::from_utf8(raw[..got].to_vec()).unwrap();
    let (before, after) = text.split_once("Date: ").unwrap();
    assert_eq!(before, "HTTP/1.1 200 OK\r\n");
    assert_eq!(&after[29..], "\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nTestolope");
    assert!(server.shutdown());
}

#[test]
fn a_pipelined_answer_is_dated_after_its_handler() {
    // The second handler runs into the next second (and 100 ms on: the
    // clock the Date is read from may trail by a few milliseconds), after
    // the first answer was dated; its answer must carry the new second,
    // not a date kept from before it.
    let secs = || SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(move |req: &mut Request| {
            if req.path() == "/into-next-second" {
                let into = Duration::from_nanos(secs().subsec_nanos().into());
                std::thread::sleep(Duration::from_millis(1100) - into);
            }
            Response::text(secs().as_secs().to_string())
        })
        .unwrap();
    let mut conn = connect(server.local_addr());
    send(&mut conn, &[get("/now"), get("/into-next-second")].concat());
    let first = read_reply(&mut conn, false).unwrap();
    let second = read_reply(&mut conn, false).unwrap();
    let date = |reply: &common::Reply| reply.header("date").unwrap().to_owned();
    let at = |secs: u64| httpool::http_date(UNIX_EPOCH + Duration::from_secs(secs));
    let handled: u64 = String::from_utf8(second.body.clone()).unwrap().parse().unwrap();
    // Dated once its handler returned: that second, or the next.
    assert!([at(handled), at(handled + 1)].contains(&date(&second)), "{first:?}\n{second:?}");
    assert_ne!(date(&first), date(&second));
    assert!(server.shutdown());
}

#[test]
fn three_pipelined_requests_get_three_ordered_responses() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(|req: &mut Request| Response::text(req.path().to_string()))
        .unwrap();
    let mut conn = connect(server.local_addr());
    send(&mut conn, &[get("/a"), get("/b"), get("/c")].concat());
    for want in ["/a", "/b", "/c"] {
        let reply = read_reply(&mut conn, false).unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body, want.as_bytes());
    }
    assert!(server.shutdown());
}

#[test]
fn idle_keep_alive_connections_hold_no_worker() {
    const WORKERS: usize = 2;
    let server = testolope_server(WORKERS);
    let addr = server.local_addr();
    // N + 10 clients, each served once and then left idle on a kept-alive
    // connection.
    let mut idle = Vec::new();
    for _ in 0..WORKERS + 10 {
        let mut conn = connect(addr);
        send(&mut conn, &get("/testolope"));
        assert_eq!(read_reply(&mut conn, false).unwrap().status, 200);
        idle.push(conn);
    }
    let mut fresh = connect(addr);
    fresh.get_ref().set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    send(&mut fresh, &get("/testolope"));
    let reply = read_reply(&mut fresh, false).expect("served within 1 s despite idle connections");
    assert_eq!(reply.status, 200);
    assert!(server.shutdown());
}

#[test]
fn a_client_sending_half_a_head_holds_no_worker() {
    let server = testolope_server(1);
    let addr = server.local_addr();
    let mut slow = Vec::new();
    for _ in 0..5 {
        let mut conn = connect(addr);
        send(&mut conn, b"GET /testolope HTTP/1.1\r\nHost: te");
        slow.push(conn);
    }
    let mut fresh = connect(addr);
    fresh.get_ref().set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    send(&mut fresh, &get("/testolope"));
    assert_eq!(read_reply(&mut fresh, false).expect("served within 1 s").status, 200);
    // The slow clients finish their heads and are served too.
    for conn in &mut slow {
        send(conn, b"st\r\n\r\n");
        assert_eq!(read_reply(conn, false).unwrap().status, 200);
    }
    assert!(server.shutdown());
}

#[test]
fn handler_panics_get_500_and_the_workers_live_on() {
    const WORKERS: usize = 2;
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(WORKERS)
        .spawn(|req: &mut Request| match req.path() {
            "/panic" => panic!("handler failure on purpose"),
            _ => Response::text("fine"),
        })
        .unwrap();
    let addr = server.local_addr();
    for _ in 0..WORKERS + 5 {
        let mut conn = connect(addr);
        send(&mut conn, &get("/panic"));
        let reply = read_reply(&mut conn, false).unwrap();
        assert_eq!(reply.status, 500);
        assert_eq!(reply.header("connection"), Some("close"));
        assert!(closed(&mut conn));
    }
    let mut conn = connect(addr);
    send(&mut conn, &get("/ok"));
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"fine");
    assert_eq!(server.stats().panics, (WORKERS + 5) as u64);
    assert!(server.shutdown());
}

#[test]
fn head_requests_get_headers_only() {
    let server = testolope_server(1);
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"HEAD /testolope HTTP/1.1\r\nHost: t\r\n\r\n");
    let reply = read_reply(&mut conn, true).unwrap();
    assert_eq!(reply.header("content-length"), Some("9"));
    // The next response starts right after the head: no body was sent.
    send(&mut conn, &get("/testolope"));
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"Testolope");
    assert!(server.shutdown());
}

#[test]
fn http10_closes_unless_kept_alive() {
    let server = testolope_server(1);
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"GET /testolope HTTP/1.0\r\n\r\n");
    assert_eq!(read_reply(&mut conn, false).unwrap().header("connection"), Some("close"));
    assert!(closed(&mut conn));
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"GET /testolope HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(read_reply(&mut conn, false).unwrap().header("connection"), Some("keep-alive"));
    send(&mut conn, b"GET /testolope HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(read_reply(&mut conn, false).unwrap().status, 200);
    assert!(server.shutdown());
}

#[test]
fn a_blocking_handler_holds_only_its_own_worker() {
    let (server, entered_rx, release_tx) = blocking_server(|s| s.workers(2));
    let mut blocked = connect(server.local_addr());
    send(&mut blocked, &get("/block"));
    // The handler holds its worker before the other request is sent: else
    // that one could be served first, whatever a blocked handler holds.
    entered_rx.recv_timeout(PATIENCE).unwrap();
    let mut other = connect(server.local_addr());
    send(&mut other, &get("/quick"));
    assert_eq!(read_reply(&mut other, false).unwrap().body, b"done");
    release_tx.send(()).unwrap();
    assert_eq!(read_reply(&mut blocked, false).unwrap().body, b"done");
    assert!(server.shutdown());
}

/// Keep-alive connections spread over every seat, then one handler blocks:
/// each of them, and new clients, are still answered while it is blocked
/// (the blocked worker's seat goes to another worker, or its ready
/// connections are taken by a worker at another seat).
fn others_are_served_while_a_handler_blocks(workers: usize) {
    let (server, entered_rx, release_tx) = blocking_server(|s| s.workers(workers));
    let addr = server.local_addr();
    let mut kept: Vec<_> = (0..8).map(|_| connect(addr)).collect();
    for conn in &mut kept {
        send(conn, &get("/first"));
        assert_eq!(read_reply(conn, false).unwrap().body, b"done");
    }
    let mut blocked = connect(addr);
    send(&mut blocked, &get("/block"));
    entered_rx.recv_timeout(PATIENCE).unwrap();
    for round in 0..3 {
        for conn in &mut kept {
            send(conn, &get("/again"));
            assert_eq!(read_reply(conn, false).unwrap().body, b"done", "round {round}");
        }
        let mut fresh = connect(addr);
        send(&mut fresh, &get("/fresh"));
        assert_eq!(read_reply(&mut fresh, false).unwrap().body, b"done");
    }
    release_tx.send(()).unwrap();
    assert_eq!(read_reply(&mut blocked, false).unwrap().body, b"done");
    assert!(server.shutdown());
}

#[test]
fn a_blocked_handler_stalls_no_other_connection_with_two_workers() {
    others_are_served_while_a_handler_blocks(2);
}

#[test]
fn a_blocked_handler_stalls_no_other_connection_with_five_workers() {
    others_are_served_while_a_handler_blocks(5);
}

/// A handler that has to wait for the rest of a body waits on the socket
/// itself (the socket leaves its seat meanwhile); the connection must come
/// back to its seat afterwards: the next request on it is answered.
#[test]
fn a_connection_that_waited_for_its_body_is_served_again() {
    let (got_first_tx, got_first_rx) = mpsc::channel::<()>();
    let got_first_tx = std::sync::Mutex::new(got_first_tx);
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        // The handler sees the body's bytes as they come.
        .body_buffer_bytes(0)
        .spawn(move |req: &mut Request| {
            if req.path() != "/upload" {
                return Response::text("next");
            }
            let mut first = [0u8; 10];
            req.read_exact(&mut first).unwrap();
            got_first_tx.lock().unwrap().send(()).unwrap();
            let mut rest = Vec::new();
            req.read_to_end(&mut rest).unwrap();
            Response::text(format!("{}", first.len() + rest.len()))
        })
        .unwrap();
    let mut conn = connect(server.local_addr());
    let size = 100_000;
    let head = format!("POST /upload HTTP/1.1\r\nHost: test\r\nContent-Length: {size}\r\n\r\n");
    send(&mut conn, head.as_bytes());
    send(&mut conn, &[b'a'; 10]);
    got_first_rx.recv_timeout(PATIENCE).unwrap();
    send(&mut conn, &vec![b'b'; size - 10]);
    assert_eq!(read_reply(&mut conn, false).unwrap().body, size.to_string().as_bytes());
    for _ in 0..3 {
        send(&mut conn, &get("/next"));
        assert_eq!(read_reply(&mut conn, false).unwrap().body, b"next");
    }
    assert!(server.shutdown());
}

#[test]
fn request_bodies_reach_the_handler() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1).spawn(echo).unwrap();
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhel");
    send(&mut conn, b"lo");
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"hello");
    send(&mut conn, b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"abc");
    assert!(server.shutdown());
}

/// On Linux the listener defers accepts (`TCP_DEFER_ACCEPT`): a client that
/// connects and says nothing is not accepted, so it holds no slot, no
/// descriptor and no worker; it is served once it speaks.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
#[test]
fn a_silent_connection_is_accepted_only_once_it_sends() {
    let server = testolope_server(1);
    let addr = server.local_addr();
    let mut silent = connect(addr);
    let connected = std::time::Instant::now();
    let mut fresh = connect(addr);
    send(&mut fresh, &get("/testolope"));
    assert_eq!(read_reply(&mut fresh, false).unwrap().status, 200);
    // `silent` finished its handshake first: an accept that did not wait
    // for bytes would have taken it before `fresh`. After the defer period
    // (1 s) the kernel lets a silent connection through anyway.
    if connected.elapsed() < Duration::from_millis(900) {
        assert_eq!(server.stats().accepted, 1);
    }
    send(&mut silent, &get("/testolope"));
    assert_eq!(read_reply(&mut silent, false).unwrap().status, 200);
    assert_eq!(server.stats().accepted, 2);
    assert!(server.shutdown());
}

/// Without deferred accepts (macOS, and Linux under `--cfg
/// httpool_portable`) a client that connects and says nothing is accepted
/// and parked at once, holding a slot but no worker; it is served once it
/// speaks.
#[cfg(not(all(target_os = "linux", not(httpool_portable))))]
#[test]
fn a_silent_connection_is_parked_at_accept_and_served_once_it_sends() {
    let server = testolope_server(1);
    let mut silent = connect(server.local_addr());
    let deadline = std::time::Instant::now() + PATIENCE;
    while server.stats().parked < 1 {
        assert!(std::time::Instant::now() < deadline, "never parked: {:?}", server.stats());
        std::thread::yield_now();
    }
    let stats = server.stats();
    assert_eq!((stats.accepted, stats.open, stats.parked, stats.active), (1, 1, 1, 0));
    send(&mut silent, &get("/testolope"));
    assert_eq!(read_reply(&mut silent, false).unwrap().status, 200);
    assert_eq!(server.stats().accepted, 1);
    assert!(server.shutdown());
}

#[test]
fn stats_count_connections_and_requests() {
    let server = testolope_server(1);
    let mut conn = connect(server.local_addr());
    for _ in 0..3 {
        send(&mut conn, &get("/testolope"));
        read_reply(&mut conn, false).unwrap();
    }
    let stats = server.stats();
    assert_eq!(stats.accepted, 1);
    assert_eq!(stats.requests, 3);
    assert_eq!(stats.open, 1);
    assert!(server.shutdown());
}

/// A request whose client stopped sending in the middle of its body, while
/// the handler read it, gets no answer (none could reach the client): it
/// counts as an I/O error, not as a response written.
#[test]
fn a_request_whose_body_was_cut_short_counts_no_response() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1).body_buffer_bytes(0).spawn(echo).unwrap();
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
    conn.get_ref().shutdown(std::net::Shutdown::Write).unwrap();
    assert!(closed(&mut conn), "no answer");
    let stats = common::wait_for(&server, "the I/O error", |s| s.io_errors == 1);
    assert_eq!(stats.requests, 0, "{stats:?}");
    assert!(server.shutdown());
}

#[test]
fn files_are_sent_whole_or_from_a_position() {
    use std::io::{Seek, SeekFrom, Write};
    let path = std::env::temp_dir().join(format!("httpool-server-file-{}", std::process::id()));
    let content: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::File::create(&path).unwrap().write_all(&content).unwrap();
    let served = path.clone();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .spawn(move |req: &mut Request| {
            let Ok(mut file) = std::fs::File::open(&served) else { return Response::status(500) };
            match req.path() {
                "/tail" => {
                    let _ = file.seek(SeekFrom::Start(299_000));
                    Response::file(file, 1000)
                }
                _ => Response::file(file, 300_000),
            }
        })
        .unwrap();
    let mut conn = connect(server.local_addr());
    for _ in 0..2 {
        send(&mut conn, &get("/"));
        let reply = read_reply(&mut conn, false).unwrap();
        assert_eq!(reply.header("content-length"), Some("300000"));
        assert!(reply.body == content, "file body differs");
    }
    send(&mut conn, &get("/tail"));
    assert_eq!(read_reply(&mut conn, false).unwrap().body, &content[299_000..]);
    send(&mut conn, b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(read_reply(&mut conn, true).unwrap().header("content-length"), Some("300000"));
    send(&mut conn, &get("/tail"));
    assert_eq!(read_reply(&mut conn, false).unwrap().body.len(), 1000);
    assert!(server.shutdown());
    std::fs::remove_file(&path).unwrap();
}

/// Handlers run on workers under `SCHED_BATCH` by default, and under the
/// normal policy with `batch_scheduling(false)`: the handler reports the
/// policy of the thread it runs on (field 41 of /proc/thread-self/stat).
/// Under `--cfg httpool_portable` (macOS's path) the setting does nothing:
/// always the normal policy.
#[cfg(target_os = "linux")]
#[test]
fn workers_run_under_sched_batch_unless_turned_off() {
    fn policy_of_this_thread(_: &mut Request) -> Response {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // Fields after the command name (which may hold spaces) start at 3.
        let after_name = &stat[stat.rfind(')').unwrap() + 1..];
        Response::text(after_name.split_whitespace().nth(41 - 3).unwrap().to_owned())
    }
    const SCHED_OTHER: &[u8] = b"0";
    const SCHED_BATCH: &[u8] = b"3";
    let batch = if cfg!(httpool_portable) { SCHED_OTHER } else { SCHED_BATCH };
    for (on, expected) in [(None, batch), (Some(false), SCHED_OTHER), (Some(true), batch)] {
        let mut server = Server::bind("127.0.0.1:0").unwrap().workers(2);
        if let Some(on) = on {
            server = server.batch_scheduling(on);
        }
        let server = server.spawn(policy_of_this_thread).unwrap();
        let mut conn = connect(server.local_addr());
        for _ in 0..4 {
            send(&mut conn, &get("/"));
            let body = read_reply(&mut conn, false).unwrap().body;
            assert_eq!(body, expected, "batch_scheduling {on:?}: policy {}", String::from_utf8_lossy(&body));
        }
        assert!(server.shutdown());
    }
}

/// A core worker count no system can start fails `spawn` at once with a
/// clear error, rather than panicking (a vector sized by it) or starting
/// threads until the system refuses; a huge bound on on-demand workers is
/// only a bound.
#[test]
fn an_impossible_worker_count_fails_spawn_and_a_huge_bound_serves() {
    for n in [usize::MAX, 1 << 40, (1 << 22) + 1] {
        let spawned = Server::bind("127.0.0.1:0").unwrap().workers(n).spawn(|_: &mut Request<'_>| "x");
        let e = spawned.err().unwrap_or_else(|| panic!("workers({n}) spawned"));
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
    }
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1).max_workers(usize::MAX).spawn(echo).unwrap();
    let mut conn = connect(server.local_addr());
    send(&mut conn, &get("/"));
    assert_eq!(read_reply(&mut conn, false).unwrap().status, 200);
    server.shutdown();
}
