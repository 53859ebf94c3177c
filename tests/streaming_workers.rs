//! Bodies that hold a worker while they are written (`Response::stream`,
//! `Response::reader`, an upgrade's closure) share one bound
//! (`Server::max_streaming_workers`): past it the client gets `503`, the
//! closure never runs, and the rest of the site stays up.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

use common::{PATIENCE, allow_descriptors, connect, get, read_reply, send};
use httpool::{Request, Response, Server, ServerHandle};

/// The `503` answered past the bound, its date redacted.
const REFUSED: &str = "HTTP/1.1 503 Service Unavailable\r\nDate: D\r\n\
    Content-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\nContent-Length: 19\r\n\
    Connection: close\r\n\r\nService Unavailable";

/// The head of a stream and its first chunk, which the closure flushes
/// before it waits.
const STREAMING: &str = "HTTP/1.1 200 OK\r\nDate: D\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n";

/// The senders that let the waiting bodies end (one each: the pool's growth
/// must not take them for handlers contending on one lock); dropping them
/// releases every body.
type Gates = Arc<Mutex<Vec<Sender<()>>>>;

/// How long a body waits at its gate at most: past the client's patience,
/// so that a body the server should have refused is seen holding its
/// worker.
const GATE_PATIENCE: std::time::Duration = PATIENCE.saturating_mul(3);

/// A gate for one body: it waits until the gate's sender is dropped (at
/// most [`GATE_PATIENCE`]).
fn gate(gates: &Gates) -> mpsc::Receiver<()> {
    let (open, wait) = mpsc::channel();
    gates.lock().unwrap().push(open);
    wait
}

/// `/stream`: writes and flushes `hi`, waits at its gate, then writes
/// `bye`. `/reader`: a reader body that waits at its gate before its first
/// byte. `/upgrade`: a raw echo until the client ends its side. Anything
/// else: `ok`.
fn handler(gates: &Gates) -> impl Fn(&mut Request) -> Response + Send + Sync + 'static {
    let gates = gates.clone();
    move |req: &mut Request| match req.path() {
        "/stream" => {
            let wait = gate(&gates);
            Response::stream(move |out| {
                out.write_all(b"hi")?;
                out.flush()?;
                let _ = wait.recv_timeout(GATE_PATIENCE);
                out.write_all(b"bye")
            })
        }
        "/reader" => Response::reader(Gated { wait: Some(gate(&gates)), left: 4 }, Some(4)),
        "/upgrade" => Response::upgrade(|mut conn| {
            let mut buf = [0u8; 64];
            while let Ok(n) = conn.read(&mut buf) {
                if n == 0 || conn.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        })
        .with_header("Upgrade", "echo"),
        _ => Response::text("ok"),
    }
}

/// A reader of `left` bytes `r` that waits at its gate before the first.
struct Gated {
    wait: Option<mpsc::Receiver<()>>,
    left: usize,
}

impl Read for Gated {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if let Some(wait) = self.wait.take() {
            let _ = wait.recv_timeout(GATE_PATIENCE);
        }
        let n = buf.len().min(self.left);
        buf[..n].fill(b'r');
        self.left -= n;
        Ok(n)
    }
}

fn server(configure: impl FnOnce(Server) -> Server) -> (ServerHandle, Gates) {
    let gates = Gates::default();
    let server = configure(Server::bind("127.0.0.1:0").unwrap()).spawn(handler(&gates)).unwrap();
    (server, gates)
}

fn open(server: &ServerHandle, request: &[u8]) -> TcpStream {
    let mut conn = TcpStream::connect(server.local_addr()).unwrap();
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    conn.write_all(request).unwrap();
    conn
}

fn request(path: &str) -> Vec<u8> {
    match path {
        "/upgrade" => b"GET /upgrade HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n".to_vec(),
        path => get(path),
    }
}

/// Reads until what came, its date redacted, ends with `end`, or the
/// connection ends; returns it redacted.
fn read_through(conn: &mut TcpStream, end: &str) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    while !redact_date(&String::from_utf8_lossy(&got)).ends_with(end) {
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("{e} after {:?}", String::from_utf8_lossy(&got)),
        }
    }
    redact_date(&String::from_utf8_lossy(&got))
}

fn redact_date(wire: &str) -> String {
    match wire.find("\r\nDate: ") {
        Some(at) => {
            let end = wire[at + 2..].find("\r\n").map_or(wire.len(), |e| at + 2 + e);
            format!("{}\r\nDate: D{}", &wire[..at], &wire[end..])
        }
        None => wire.to_string(),
    }
}

/// Opens a stream and checks it is being written (its closure waits).
fn streaming(server: &ServerHandle) -> TcpStream {
    let mut conn = open(server, &request("/stream"));
    assert_eq!(read_through(&mut conn, STREAMING), STREAMING);
    conn
}

/// Opens a body or upgrade at `path` past the bound: `503` and a close.
fn refused(server: &ServerHandle, path: &str) {
    let mut conn = open(server, &request(path));
    assert_eq!(read_through(&mut conn, "\0"), REFUSED, "{path}");
}

/// A plain request on a new connection is answered.
fn plain_answered(server: &ServerHandle) {
    let mut plain = connect(server.local_addr());
    send(&mut plain, &get("/plain"));
    let reply = read_reply(&mut plain, false).unwrap();
    assert_eq!((reply.status, reply.body.as_slice()), (200, &b"ok"[..]));
}

/// Lets every waiting body go on, and reads each stream to its end.
fn release(gates: &Gates, streams: impl IntoIterator<Item = TcpStream>) {
    gates.lock().unwrap().clear();
    for mut stream in streams {
        assert_eq!(read_through(&mut stream, "0\r\n\r\n"), "3\r\nbye\r\n0\r\n\r\n");
    }
}

/// With room for two, a third stream and a reader body are refused with
/// the closure never run, plain requests are served meanwhile, and the
/// places come back when the streams end.
#[test]
fn streams_past_the_bound_get_503_and_the_site_stays_up() {
    let (server, gates) = server(|s| s.workers(1).max_workers(4).max_streaming_workers(2));
    let streams = [streaming(&server), streaming(&server)];
    assert_eq!(server.stats().streaming_workers, 2);
    refused(&server, "/stream");
    refused(&server, "/reader");
    assert_eq!(gates.lock().unwrap().len(), 4, "each handler ran");
    plain_answered(&server);
    assert_eq!(server.stats().rejected, 2);
    release(&gates, streams);
    // Both places back: two streams again.
    let again = [streaming(&server), streaming(&server)];
    refused(&server, "/stream");
    release(&gates, again);
    assert!(server.shutdown());
}

/// A reader body read on the worker takes a place while it is written, and
/// gives it back at its end.
#[test]
fn a_reader_body_takes_a_place_while_it_is_written() {
    let (server, gates) = server(|s| s.workers(1).max_workers(4).max_streaming_workers(1));
    let mut reader = open(&server, &request("/reader"));
    common::wait_for(&server, "the reader's place", |s| s.streaming_workers == 1);
    refused(&server, "/stream");
    plain_answered(&server);
    gates.lock().unwrap().clear();
    let head = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: application/octet-stream\r\nContent-Length: 4\r\n\r\nrrrr";
    assert_eq!(read_through(&mut reader, head), head);
    let stream = streaming(&server);
    release(&gates, [stream]);
    assert!(server.shutdown());
}

/// Upgrades and streams share the bound (set by its other name,
/// `max_upgrades`): one of each fills two places, and then neither kind
/// is let in; an upgrade that ends gives its place to a stream.
#[test]
fn upgrades_and_streams_share_the_bound() {
    let (server, gates) = server(|s| s.workers(1).max_workers(4).max_upgrades(2));
    let mut upgraded = open(&server, &[&request("/upgrade")[..], b"ping"].concat());
    let switched = read_through(&mut upgraded, "ping");
    assert!(switched.starts_with("HTTP/1.1 101 Switching Protocols\r\n"), "{switched}");
    let stream = streaming(&server);
    assert_eq!(server.stats().streaming_workers, 2);
    refused(&server, "/stream");
    refused(&server, "/upgrade");
    plain_answered(&server);
    // The upgrade ends: its closure returns, and the connection closes
    // after its place is given back.
    upgraded.shutdown(Shutdown::Write).unwrap();
    assert_eq!(read_through(&mut upgraded, "\0"), "");
    let second = streaming(&server);
    refused(&server, "/upgrade");
    release(&gates, [stream, second]);
    assert!(server.shutdown());
}

/// The finding, at default settings (512 workers at most, half of
/// them for bodies that hold one): more streams than there are workers
/// leave plain requests answered; those past the bound get `503`.
#[test]
fn with_default_settings_more_streams_than_workers_leave_the_site_up() {
    const STREAMS: usize = 600;
    allow_descriptors(2 * STREAMS as u64 + 256);
    let (server, gates) = server(|s| s);
    let conns: Vec<TcpStream> = (0..STREAMS).map(|_| open(&server, &request("/stream"))).collect();
    let mut streams = Vec::new();
    for mut conn in conns {
        let got = read_through(&mut conn, STREAMING);
        match got.as_str() {
            STREAMING => streams.push(conn),
            REFUSED => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(streams.len(), httpool::DEFAULT_MAX_WORKERS / 2);
    plain_answered(&server);
    release(&gates, streams);
    assert!(server.shutdown());
}
