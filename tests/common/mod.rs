//! A raw HTTP/1.1 client for tests: exact bytes out, parsed responses in.
#![allow(dead_code)] // Each test binary uses a different part.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use httpool::{Request, Response, Server, ServerHandle, Stats};

/// Safety net only: a test that would hang fails after this instead.
pub const PATIENCE: Duration = Duration::from_secs(10);

pub fn connect(addr: SocketAddr) -> BufReader<TcpStream> {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    stream.set_nodelay(true).unwrap();
    BufReader::new(stream)
}

pub fn send(conn: &mut BufReader<TcpStream>, bytes: &[u8]) {
    conn.get_mut().write_all(bytes).expect("send");
}

/// One response: status, headers (lower-cased names), body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Reads one response framed by Content-Length or chunked (no body for HEAD
/// when `head` is set).
pub fn read_reply(conn: &mut impl BufRead, head: bool) -> io::Result<Reply> {
    let mut line = String::new();
    if conn.read_line(&mut line)? == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    let status = line.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status line");
    let mut headers = Vec::new();
    loop {
        line.clear();
        conn.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').expect("header line");
        headers.push((n.to_ascii_lowercase(), v.trim().to_string()));
    }
    let mut reply = Reply { status, headers, body: Vec::new() };
    if head || status < 200 || status == 204 || status == 304 {
        return Ok(reply);
    }
    if let Some(len) = reply.header("content-length") {
        let mut body = vec![0; len.parse().unwrap()];
        conn.read_exact(&mut body)?;
        reply.body = body;
    } else if reply.header("transfer-encoding") == Some("chunked") {
        loop {
            line.clear();
            conn.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim_end(), 16).unwrap();
            let mut chunk = vec![0; size + 2];
            conn.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            reply.body.extend_from_slice(&chunk[..size]);
        }
    } else {
        conn.read_to_end(&mut reply.body)?;
    }
    Ok(reply)
}

/// The tally of a race between a request and the server's idle close: each
/// request sent as the idle deadline passes must be answered (`200` with the
/// path `expected`) or meet the end of the stream. Anything else (a reset
/// above all) fails the test, naming the round and the tally before it.
#[derive(Default)]
pub struct IdleRace {
    pub answered: usize,
    pub ended: usize,
}

impl IdleRace {
    pub fn judge(&mut self, round: usize, read: io::Result<Reply>, expected: &str) {
        match read {
            Ok(reply) => {
                assert_eq!((reply.status, reply.body.as_slice()), (200, expected.as_bytes()));
                self.answered += 1;
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => self.ended += 1,
            Err(e) => panic!("connection {round} ({} answered, {} ended before it): {e}", self.answered, self.ended),
        }
    }
}

/// True when the server has closed: the next read returns end of stream.
pub fn closed(conn: &mut BufReader<TcpStream>) -> bool {
    let mut rest = Vec::new();
    conn.read_to_end(&mut rest).is_ok() && rest.is_empty()
}

/// A handler answering `200` with the request body (up to 1 MiB).
pub fn echo(req: &mut httpool::Request) -> httpool::Response {
    match req.read_body(1 << 20) {
        Ok(body) => httpool::Response::bytes(body),
        Err(_) => httpool::Response::status(400),
    }
}

pub fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").into_bytes()
}

/// A server on `127.0.0.1:0`, set up by `configure`, whose handler answers
/// `done`; for `/block` it first says it entered (on the returned
/// receiver, which must stay alive while it may) and then waits for a
/// release on the returned sender, at most [`PATIENCE`].
pub fn blocking_server(
    configure: impl FnOnce(Server) -> Server,
) -> (ServerHandle, mpsc::Receiver<()>, mpsc::Sender<()>) {
    blocking_server_telling(configure, || ())
}

/// [`blocking_server`], whose `/block` handler sends what `tell` returns,
/// on its own thread, as it enters.
pub fn blocking_server_telling<T: Send + 'static>(
    configure: impl FnOnce(Server) -> Server,
    tell: impl Fn() -> T + Send + Sync + 'static,
) -> (ServerHandle, mpsc::Receiver<T>, mpsc::Sender<()>) {
    let (entered_tx, entered_rx) = mpsc::channel::<T>();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (entered_tx, release_rx) = (Mutex::new(entered_tx), Mutex::new(release_rx));
    let server = configure(Server::bind("127.0.0.1:0").unwrap())
        .spawn(move |req: &mut Request| {
            if req.path() == "/block" {
                entered_tx.lock().unwrap().send(tell()).unwrap();
                let _ = release_rx.lock().unwrap().recv_timeout(PATIENCE);
            }
            Response::text("done")
        })
        .unwrap();
    (server, entered_rx, release_tx)
}

/// Waits until `cond` holds for the server's stats (and returns them), at
/// most [`PATIENCE`].
pub fn wait_for(server: &ServerHandle, what: &str, cond: impl Fn(&Stats) -> bool) -> Stats {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let stats = server.stats();
        if cond(&stats) {
            return stats;
        }
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}: {stats:?}");
        std::thread::yield_now();
    }
}

/// Threads of this process whose name starts with `httpool`.
#[cfg(target_os = "linux")]
pub fn httpool_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("httpool"))
        .count()
}

/// Lets this process open `n` descriptors (both ends of every test
/// connection are in it). Windows has no such limit.
pub fn allow_descriptors(n: u64) {
    #[cfg(unix)]
    {
        let (soft, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
        rlimit::setrlimit(rlimit::Resource::NOFILE, n.max(soft).min(hard), hard).unwrap();
    }
    #[cfg(not(unix))]
    let _ = n;
}

/// A Unix socket path in a temporary directory of its own, named after
/// the test, removed (with the directory) when this is dropped.
#[cfg(unix)]
pub struct UnixPath {
    dir: std::path::PathBuf,
    pub path: std::path::PathBuf,
}

#[cfg(unix)]
impl UnixPath {
    pub fn new(name: &str) -> UnixPath {
        let dir = std::env::temp_dir().join(format!("httpool-test-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sock");
        let _ = std::fs::remove_file(&path);
        UnixPath { dir, path }
    }

    /// A client connection: a writer, and a reader over the same stream.
    pub fn open(&self) -> (std::os::unix::net::UnixStream, BufReader<std::os::unix::net::UnixStream>) {
        let stream = std::os::unix::net::UnixStream::connect(&self.path).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        (stream.try_clone().unwrap(), BufReader::new(stream))
    }
}

#[cfg(unix)]
impl Drop for UnixPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
