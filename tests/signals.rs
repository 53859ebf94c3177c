//! SIGTERM and SIGINT stop a server started with `serve` gracefully: a
//! child process (this test binary again, running `signal_child`) serves,
//! the test signals it with kill(1) under load, and checks what every
//! client got and how the process ended.

// Signals and kill(1) are Unix.
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{PATIENCE, connect, get, read_reply, send};
use httpool::{Request, Response, Server};

/// The server the parent signals: `/slow` says it entered (a line on
/// stdout) and answers after 300 ms, `/stuck` after 60 s; anything else at
/// once. Prints `STOPPED` once `serve` has returned.
#[test]
#[ignore = "run by the other tests, in a child process"]
fn signal_child() {
    if std::env::var_os("HTTPOOL_SIGNAL_CHILD").is_none() {
        return;
    }
    let server = Server::bind("127.0.0.1:0").unwrap().shutdown_grace(Duration::from_secs(90));
    println!("ADDR {}", server.local_addr().unwrap());
    server
        .serve(|req: &mut Request| {
            let wait = match req.path() {
                "/slow" => Duration::from_millis(300),
                "/stuck" => Duration::from_secs(60),
                _ => return Response::text("ok"),
            };
            println!("ENTERED {}", req.path());
            // Work that takes a while, as a database call would.
            std::thread::sleep(wait);
            Response::text("slept")
        })
        .unwrap();
    println!("STOPPED");
}

fn child() -> (Child, BufReader<ChildStdout>, SocketAddr) {
    let mut process = Command::new(std::env::current_exe().unwrap())
        .args(["signal_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("HTTPOOL_SIGNAL_CHILD", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(process.stdout.take().unwrap());
    let addr = line(&mut out, "ADDR ").parse().unwrap();
    (process, out, addr)
}

/// The next line of the child's starting with `prefix`, without it.
fn line(out: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the child exited before {prefix:?}");
        if let Some(at) = line.find(prefix) {
            return line[at + prefix.len()..].trim().to_string();
        }
    }
}

fn kill(process: &Child, signal: &str) {
    let status = Command::new("kill").args([signal, &process.id().to_string()]).status().unwrap();
    assert!(status.success());
}

/// Waits until the child's listener is closed: shutdown has begun.
fn wait_until_refused(addr: SocketAddr) {
    let deadline = std::time::Instant::now() + PATIENCE;
    while TcpStream::connect(addr).is_ok() {
        assert!(std::time::Instant::now() < deadline, "the listener is still open");
        std::thread::yield_now();
    }
}

/// A keep-alive client asking for `/` until the server closes: every answer
/// it gets is whole. Returns how many it got.
fn load(addr: SocketAddr, stop: &AtomicBool) -> usize {
    let mut conn = connect(addr);
    let mut answered = 0;
    while !stop.load(Ordering::Relaxed) {
        if conn.get_mut().write_all(&get("/")).is_err() {
            break;
        }
        // A request sent after shutdown began may meet the close (or a
        // reset: it is unread) before any answer; an answer begun must be
        // whole.
        match conn.fill_buf() {
            Ok([]) => break,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("read failed: {e}"),
            Ok(_) => {}
        }
        let reply = read_reply(&mut conn, false).expect("an answer begun is whole");
        assert_eq!((reply.status, reply.body.as_slice()), (200, &b"ok"[..]));
        answered += 1;
        if reply.header("connection") == Some("close") {
            break;
        }
    }
    answered
}

/// SIGTERM under load: requests in flight are answered whole (with
/// `Connection: close`), `serve` returns, and the process exits with
/// status 0.
#[test]
fn sigterm_under_load_stops_serve_gracefully_and_the_process_exits_0() {
    for signal in ["-TERM", "-INT"] {
        let (mut process, mut out, addr) = child();
        let stop = Arc::new(AtomicBool::new(false));
        let loaders: Vec<_> = (0..4)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || load(addr, &stop))
            })
            .collect();
        let mut slow: Vec<_> = (0..8).map(|_| connect(addr)).collect();
        for conn in &mut slow {
            send(conn, &get("/slow"));
        }
        for _ in &slow {
            line(&mut out, "ENTERED /slow");
        }
        kill(&process, signal);
        for conn in &mut slow {
            let reply = read_reply(conn, false).unwrap();
            assert_eq!((reply.status, reply.body.as_slice()), (200, &b"slept"[..]), "{signal}");
            assert_eq!(reply.header("connection"), Some("close"));
        }
        stop.store(true, Ordering::Relaxed);
        let answered: usize = loaders.into_iter().map(|l| l.join().unwrap()).sum();
        assert!(answered > 0);
        line(&mut out, "STOPPED");
        let status = process.wait().unwrap();
        assert!(status.success(), "{signal}: {status:?}");
    }
}

/// A second signal while the server is still stopping (a handler that
/// will not finish) ends the process at once, as the signal's default
/// action would.
#[test]
fn a_second_sigterm_while_stopping_ends_the_process() {
    let (mut process, mut out, addr) = child();
    let mut conn = connect(addr);
    send(&mut conn, &get("/stuck"));
    line(&mut out, "ENTERED /stuck");
    kill(&process, "-TERM");
    wait_until_refused(addr);
    kill(&process, "-TERM");
    let status = process.wait().unwrap();
    assert_eq!(status.signal(), Some(15), "{status:?}");
}

/// The child of the tests below, in the mode `HTTPOOL_SIGNAL_MODE` names;
/// it prints what happened and waits for a line on stdin before it goes on
/// (a signal sent before that line is handled, or ends it, before it reads
/// the line).
#[test]
#[ignore = "run by the other tests, in a child process"]
fn mode_child() {
    let Some(mode) = std::env::var_os("HTTPOOL_SIGNAL_MODE") else { return };
    let mode = mode.into_string().unwrap();
    let handled = Arc::new(AtomicBool::new(false));
    if mode == "own" {
        // The program handles SIGTERM itself, before any server starts.
        signal_hook::flag::register(signal_hook::consts::SIGTERM, handled.clone()).unwrap();
    }
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .stop_on_signals(true)
        .spawn(|req: &mut Request| {
            if req.path() == "/slow" {
                println!("ENTERED");
                // Work that takes a while, as a database call would.
                std::thread::sleep(Duration::from_millis(300));
            }
            Response::text("slept")
        })
        .unwrap();
    println!("ADDR {}", server.local_addr());
    let wait_for_parent = || {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).unwrap();
    };
    if mode == "dropped" {
        drop(server);
        println!("DROPPED");
    } else {
        // The program stops the server itself, then goes on with its work.
        assert!(server.shutdown());
        println!("STOPPED");
    }
    wait_for_parent();
    // The signal may be delivered to another thread of the process, and
    // its handler run after the parent's line arrives: wait for it.
    let deadline = std::time::Instant::now() + PATIENCE;
    while mode == "own" && !handled.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
        std::thread::yield_now();
    }
    if handled.load(Ordering::SeqCst) {
        println!("HANDLED");
    }
    println!("SURVIVED");
}

/// Spawns [`mode_child`] in `mode`; `shell` runs it through `sh -c` with
/// that shell code first (dispositions set there are inherited).
fn spawn_mode_child(mode: &str, shell: &str) -> (Child, BufReader<ChildStdout>) {
    let mut process = Command::new("sh")
        .args(["-c", &format!("{shell} exec \"$0\" \"$@\"")])
        .arg(std::env::current_exe().unwrap())
        .args(["mode_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("HTTPOOL_SIGNAL_MODE", mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(process.stdout.take().unwrap());
    (process, out)
}

/// Tells the child to go on, then returns its output to the end and how
/// it ended.
fn finish(mut process: Child, mut out: BufReader<ChildStdout>) -> (String, std::process::ExitStatus) {
    let _ = process.stdin.take().unwrap().write_all(b"go on\n");
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut out, &mut rest);
    (rest, process.wait().unwrap())
}

/// A program that handles SIGTERM itself still does once its server has
/// stopped. (The default action was put back for it: the process was
/// killed.)
#[test]
fn after_the_server_stops_the_programs_own_handler_governs_sigterm() {
    let (process, mut out) = spawn_mode_child("own", "");
    line(&mut out, "STOPPED");
    kill(&process, "-TERM");
    let (rest, status) = finish(process, out);
    assert!(status.success(), "{status:?}");
    assert!(rest.contains("HANDLED") && rest.contains("SURVIVED"), "{rest}");
}

/// A process started with SIGINT ignored (a shell's background job) does
/// not watch it, and ignores it once its server has stopped. (It was
/// killed by SIGINT.)
#[test]
fn a_process_that_ignored_sigint_ignores_it_after_its_server_stops() {
    let (process, mut out) = spawn_mode_child("ignored", "trap '' INT;");
    line(&mut out, "STOPPED");
    kill(&process, "-INT");
    let (rest, status) = finish(process, out);
    assert!(status.success(), "{status:?}");
    assert!(rest.contains("SURVIVED"), "{rest}");
}

/// With SIGINT ignored, Ctrl-C in a terminal is not for the process: the
/// server goes on serving; SIGTERM still stops it.
#[test]
fn a_process_that_ignored_sigint_serves_on_through_it() {
    let (mut process, mut out, addr) = {
        let (process, mut out) = spawn_mode_child("dropped", "trap '' INT;");
        let addr: SocketAddr = line(&mut out, "ADDR ").parse().unwrap();
        (process, out, addr)
    };
    line(&mut out, "DROPPED");
    kill(&process, "-INT");
    // Ignored: discarded when sent, so the server is still accepting.
    let mut conn = connect(addr);
    send(&mut conn, &get("/"));
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!((reply.status, reply.header("connection")), (200, None));
    kill(&process, "-TERM");
    wait_until_refused(addr);
    let _ = process.stdin.take().unwrap().write_all(b"go on\n");
    assert!(process.wait().unwrap().success());
}

/// A spawned server watching signals keeps watching when its handle is
/// dropped (it goes on running): SIGTERM stops it gracefully, the request
/// in flight is answered, and the process lives on. (Dropping the handle
/// ended the watch: SIGTERM killed the process.)
#[test]
fn a_server_whose_handle_was_dropped_still_stops_on_sigterm() {
    let (process, mut out) = spawn_mode_child("dropped", "");
    let addr: SocketAddr = line(&mut out, "ADDR ").parse().unwrap();
    line(&mut out, "DROPPED");
    let mut conn = connect(addr);
    send(&mut conn, &get("/slow"));
    line(&mut out, "ENTERED");
    kill(&process, "-TERM");
    let reply = read_reply(&mut conn, false);
    wait_until_refused(addr);
    let (rest, status) = finish(process, out);
    let reply = reply.unwrap_or_else(|e| panic!("the request in flight was not answered: {e}; child {status:?}"));
    assert_eq!((reply.status, reply.header("connection")), (200, Some("close")));
    assert!(status.success(), "{status:?}");
    assert!(rest.contains("SURVIVED"), "{rest}");
}
