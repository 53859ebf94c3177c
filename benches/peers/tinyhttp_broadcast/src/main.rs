//! The broadcast target of issue 50 on tiny_http 0.12, written the way a
//! tiny_http user would: one loop over `incoming_requests()`, and a thread
//! for every stream.
//!
//! - `GET /` → 200 `text/plain` `ok`, answered in the loop;
//! - `GET /events` → a thread that takes the raw writer (`into_writer`),
//!   writes the head itself and then one event per broadcast, flushing each.
//!   tiny_http's own streamed `Response` cannot serve: it copies the body
//!   through an 8 KiB chunk buffer that is flushed only when full, so events
//!   would sit in it;
//! - `GET /ws` → `Request::upgrade` with the 101 answer, then a thread that
//!   runs a tungstenite `WebSocket` over the upgraded stream;
//! - `GET /page` → the page of the contract.
//!
//! A thread blocked in a read cannot also write a broadcast, and the upgraded
//! stream (`Box<dyn ReadWrite>`) can be neither cloned nor given a timeout
//! through tiny_http: `read_timeout` reaches under it to give each upgraded
//! socket a read timeout (`READ_TIMEOUT`), so the socket's thread wakes at
//! least that often to send the broadcasts waiting in its channel.
//!
//! Every stream costs two threads: its own, and the one tiny_http runs per
//! connection, which waits for the next request (an event stream) or for the
//! upgraded stream to be dropped (a socket). tiny_http's pool starts a thread
//! for a new connection only when it counts none idle; connections handed to
//! a thread that is just taking another long-lived one wait until a thread
//! is free, which under streams may be never (the client sees a timeout).
//!
//! One thread sends the unix time in milliseconds to every subscriber's
//! channel once a second; a subscriber whose thread has ended is dropped
//! from the list then. argv[1] is the listen address.

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tiny_http::{Header, Request, Response, Server, StatusCode};
use tungstenite::handshake::derive_accept_key;
use tungstenite::protocol::Role;
use tungstenite::{Message, WebSocket};

mod read_timeout;
use read_timeout::ReadTimeouts;

/// How long a socket's thread waits for the client before it looks at its
/// broadcasts again: the most a broadcast waits on a WebSocket.
const READ_TIMEOUT: Duration = Duration::from_millis(100);

/// The time between two broadcasts.
const TICK: Duration = Duration::from_secs(1);

const PAGE: &str = include_str!("../../broadcast_page.html");

const SSE_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
Cache-Control: no-cache\r\nConnection: close\r\n\r\n";

/// Every subscriber's channel.
#[derive(Clone, Default)]
struct Subscribers(Arc<Mutex<Vec<Sender<Arc<str>>>>>);

impl Subscribers {
    fn subscribe(&self) -> Receiver<Arc<str>> {
        let (tx, rx) = mpsc::channel();
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(tx);
        rx
    }

    fn broadcast(&self, msg: &str) {
        let msg: Arc<str> = msg.into();
        let mut subs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        subs.retain(|tx| tx.send(msg.clone()).is_ok());
    }
}

fn unix_millis() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()
}

fn header(name: &str, value: &str) -> Header {
    // Both are ASCII without CR/LF, written here.
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("valid header")
}

fn header_value<'r>(req: &'r Request, name: &'static str) -> Option<&'r str> {
    req.headers().iter().find(|h| h.field.equiv(name)).map(|h| h.value.as_str())
}

/// An event stream on the connection's raw writer until the client goes.
fn events(req: Request, rx: Receiver<Arc<str>>) -> io::Result<()> {
    let mut out = req.into_writer();
    out.write_all(SSE_HEAD)?;
    out.flush()?;
    for ms in rx {
        write!(out, "data: {ms}\n\n")?;
        out.flush()?;
    }
    Ok(())
}

/// Answers the upgrade and hands the socket to its own thread.
fn ws(req: Request, subs: &Subscribers, timeouts: &ReadTimeouts) {
    let Some(key) = header_value(&req, "Sec-WebSocket-Key") else {
        let _ = req.respond(Response::empty(StatusCode(400)));
        return;
    };
    let accept = derive_accept_key(key.as_bytes());
    let Some(&client) = req.remote_addr() else { return };
    let rx = subs.subscribe();
    let answer = Response::empty(StatusCode(101)).with_header(header("Sec-WebSocket-Accept", &accept));
    let stream = req.upgrade("websocket", answer);
    let timeouts = timeouts.clone();
    thread::spawn(move || {
        // Without its timeout the socket would get broadcasts only when its
        // client sends something; it is served all the same.
        timeouts.set_for(client);
        socket_loop(WebSocket::from_raw_socket(stream, Role::Server, None), rx)
    });
}

/// Echoes the client's text and sends broadcasts until either side ends.
/// tungstenite queues the answers to pings and closes; each turn flushes them.
fn socket_loop<S: io::Read + Write>(mut socket: WebSocket<S>, rx: Receiver<Arc<str>>) {
    loop {
        match socket.read() {
            Ok(Message::Text(text)) => {
                if socket.send(Message::Text(text)).is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
        for ms in rx.try_iter() {
            if socket.send(Message::text(&*ms)).is_err() {
                return;
            }
        }
        if socket.flush().is_err() {
            return;
        }
    }
}

fn main() {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8051".into());
    let server = Server::http(&addr).expect("server");
    let timeouts = ReadTimeouts::start(READ_TIMEOUT);
    let subs = Subscribers::default();
    let feed = subs.clone();
    thread::spawn(move || {
        loop {
            thread::sleep(TICK);
            feed.broadcast(&unix_millis().to_string());
        }
    });
    let plain = header("Content-Type", "text/plain");
    let html = header("Content-Type", "text/html; charset=utf-8");
    for req in server.incoming_requests() {
        match req.url() {
            "/" => {
                let _ = req.respond(Response::from_string("ok").with_header(plain.clone()));
            }
            "/page" => {
                let _ = req.respond(Response::from_string(PAGE).with_header(html.clone()));
            }
            "/events" => {
                let rx = subs.subscribe();
                thread::spawn(move || events(req, rx));
            }
            "/ws" => ws(req, &subs, &timeouts),
            _ => {
                let _ = req.respond(Response::empty(StatusCode(404)));
            }
        }
    }
}
