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
        match read_reply(&mut conn, false) {
            Ok(reply) => {
                assert_eq!((reply.status, reply.body.as_slice()), (200, &b"ok"[..]));
                answered += 1;
                if reply.header("connection") == Some("close") {
                    break;
                }
            }
            // A request sent after shutdown began may meet the close.
            Err(_) => break,
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
