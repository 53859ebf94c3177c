//! Server-sent events that park: exact bytes on the wire, streams that hold
//! no worker, a subscriber cut at its bound while the others go on, the
//! end of a stream (its senders gone, the client gone, HEAD, shutdown).

mod common;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use common::{PATIENCE, connect, get, read_reply, send};
use httpool::events::{Broadcast, Closed, Event, EventSender, EventStream};
use httpool::{Request, Response, Server, ServerHandle};

/// A server whose `/events` opens a stream with `settings` and hands its
/// sender to the test; `/news` subscribes to `news`; anything else is
/// `done`.
fn server(
    configure: impl FnOnce(Server) -> Server,
    settings: EventStream,
    news: Arc<Broadcast>,
) -> (ServerHandle, mpsc::Receiver<EventSender>) {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let server = configure(Server::bind("127.0.0.1:0").unwrap())
        .spawn(move |req: &mut Request| match req.path() {
            "/events" => {
                let (sender, resp) = settings.open();
                tx.lock().unwrap().send(sender).unwrap();
                resp
            }
            "/news" => news.subscribe(),
            _ => Response::text("done"),
        })
        .unwrap();
    (server, rx)
}

fn plain() -> (ServerHandle, mpsc::Receiver<EventSender>) {
    server(|s| s, EventStream::new(), Arc::new(Broadcast::new()))
}

/// Reads the head of a response, line by line, up to its blank line.
fn read_head(conn: &mut BufReader<TcpStream>) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        assert!(conn.read_line(&mut line).unwrap() > 0, "the head ended early: {lines:?}");
        if line == "\r\n" {
            return lines;
        }
        lines.push(line.trim_end().to_string());
    }
}

fn read_exactly(conn: &mut BufReader<TcpStream>, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    conn.read_exact(&mut buf).unwrap();
    buf
}

/// Reads `bytes` as one chunk of a chunked body.
fn expect_chunk(conn: &mut BufReader<TcpStream>, bytes: &[u8]) {
    let expected = chunk(bytes);
    assert_eq!(String::from_utf8_lossy(&read_exactly(conn, expected.len())), String::from_utf8_lossy(&expected));
}

/// `bytes` as one chunk of a chunked body.
fn chunk(bytes: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", bytes.len()).into_bytes();
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
    out
}

fn open(conn: &mut BufReader<TcpStream>, path: &str) {
    send(conn, &get(path));
    let head = read_head(conn);
    assert_eq!(head[0], "HTTP/1.1 200 OK");
    for expected in ["Content-Type: text/event-stream", "cache-control: no-cache", "Transfer-Encoding: chunked"] {
        assert!(head.iter().any(|l| l.eq_ignore_ascii_case(expected)), "{expected} missing from {head:?}");
    }
}

/// Waits until `cond` holds, at most [`PATIENCE`].
fn until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        thread::yield_now();
    }
}

#[test]
fn each_event_goes_out_as_a_chunk_and_the_last_sender_gone_ends_the_stream_on_a_connection_kept_alive() {
    let (server, senders) = plain();
    let mut conn = connect(server.local_addr());
    open(&mut conn, "/events");
    let events = senders.recv_timeout(PATIENCE).unwrap();
    events.send(&Event::data("hello").with_id("1")).unwrap();
    expect_chunk(&mut conn, b"id: 1\ndata: hello\n\n");
    let second = events.clone();
    drop(events);
    second.send(&Event::data("a\nb").with_event("two")).unwrap();
    expect_chunk(&mut conn, b"event: two\ndata: a\ndata: b\n\n");
    drop(second);
    assert_eq!(read_exactly(&mut conn, 5), b"0\r\n\r\n");
    // The connection goes on to its next request.
    send(&mut conn, &get("/"));
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!((reply.status, reply.body.as_slice()), (200, &b"done"[..]));
    server.shutdown();
}

#[test]
fn a_request_pipelined_behind_a_stream_is_answered_once_it_ends() {
    let (server, senders) = plain();
    let mut conn = connect(server.local_addr());
    send(&mut conn, &[get("/events"), get("/after")].concat());
    assert_eq!(read_head(&mut conn)[0], "HTTP/1.1 200 OK");
    let events = senders.recv_timeout(PATIENCE).unwrap();
    events.send(&Event::data("x")).unwrap();
    expect_chunk(&mut conn, b"data: x\n\n");
    drop(events);
    assert_eq!(read_exactly(&mut conn, 5), b"0\r\n\r\n");
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!((reply.status, reply.body.as_slice()), (200, &b"done"[..]));
    server.shutdown();
}

#[test]
fn streams_hold_no_worker() {
    // One thread in all: every stream waits parked, and a plain request
    // is answered while they are open.
    let news = Arc::new(Broadcast::new());
    let (server, _senders) = server(|s| s.workers(1).max_workers(1), EventStream::new(), Arc::clone(&news));
    let mut subscribers: Vec<_> = (0..50).map(|_| connect(server.local_addr())).collect();
    for conn in &mut subscribers {
        open(conn, "/news");
    }
    until("every subscriber has joined", || news.subscribers() == 50);
    let mut plain = connect(server.local_addr());
    send(&mut plain, &get("/"));
    assert_eq!(read_reply(&mut plain, false).unwrap().status, 200);
    for round in 0..3 {
        let text = format!("round {round}");
        assert_eq!(news.send(&Event::data(text.as_str())), 50);
        let expected = chunk(format!("data: {text}\n\n").as_bytes());
        for conn in &mut subscribers {
            assert_eq!(read_exactly(conn, expected.len()), expected);
        }
    }
    server.shutdown();
}

#[test]
fn a_subscriber_that_stops_reading_is_cut_at_its_bound_and_the_others_are_not() {
    let news = Arc::new(Broadcast::with(EventStream::new().queue_limit(64 * 1024)));
    let (server, _senders) = server(|s| s, EventStream::new(), Arc::clone(&news));
    let mut reader = connect(server.local_addr());
    open(&mut reader, "/news");
    let mut stalled = connect(server.local_addr());
    open(&mut stalled, "/news");
    until("both have joined", || news.subscribers() == 2);
    let payload = "x".repeat(16 * 1024);
    let expected = chunk(format!("data: {payload}\n\n").as_bytes());
    // The stalled client takes nothing: once the kernel's buffers are
    // full, its queue grows to its bound and it is cut. The reader gets
    // every event meanwhile.
    let mut sent = 0;
    loop {
        let took = news.send(&Event::data(payload.as_str()));
        sent += 1;
        assert_eq!(read_exactly(&mut reader, expected.len()), expected, "event {sent}");
        if took == 1 {
            break;
        }
        assert!(sent < 20_000, "never cut after {sent} events of 16 KiB");
    }
    assert_eq!(news.subscribers(), 1);
    // The stalled client finds its stream cut: no last chunk, the end.
    let mut rest = Vec::new();
    stalled.get_mut().set_read_timeout(Some(PATIENCE)).unwrap();
    stalled.read_to_end(&mut rest).unwrap();
    assert!(!rest.ends_with(b"0\r\n\r\n"), "a cut stream must not look ended");
    assert!(rest.len() < sent * expected.len(), "it got everything: {} bytes", rest.len());
    // The reader goes on.
    assert_eq!(news.send(&Event::data("after")), 1);
    expect_chunk(&mut reader, b"data: after\n\n");
    server.shutdown();
}

#[test]
fn a_client_that_goes_away_is_noticed_and_its_sender_told() {
    let (server, senders) = plain();
    let mut conn = connect(server.local_addr());
    open(&mut conn, "/events");
    let events = senders.recv_timeout(PATIENCE).unwrap();
    drop(conn);
    until("the sender learns its client is gone", || events.is_closed());
    assert_eq!(events.send(&Event::data("late")), Err(Closed::Gone));
    server.shutdown();
}

#[test]
fn a_head_request_gets_the_head_only_and_its_sender_learns_at_once() {
    let (server, senders) = plain();
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"HEAD /events HTTP/1.1\r\nHost: t\r\n\r\n");
    let reply = read_reply(&mut conn, true).unwrap();
    assert_eq!((reply.status, reply.header("content-type")), (200, Some("text/event-stream")));
    let events = senders.recv_timeout(PATIENCE).unwrap();
    until("the sender learns there is no stream", || events.is_closed());
    send(&mut conn, &get("/"));
    assert_eq!(read_reply(&mut conn, false).unwrap().status, 200);
    server.shutdown();
}

#[test]
fn an_http10_client_gets_the_stream_delimited_by_the_close() {
    let (server, senders) = plain();
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"GET /events HTTP/1.0\r\n\r\n");
    let head = read_head(&mut conn);
    assert_eq!(head[0], "HTTP/1.1 200 OK");
    assert!(!head.iter().any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding")), "{head:?}");
    let events = senders.recv_timeout(PATIENCE).unwrap();
    events.send(&Event::data("one")).unwrap();
    events.send(&Event::data("two")).unwrap();
    drop(events);
    let mut rest = Vec::new();
    conn.read_to_end(&mut rest).unwrap();
    assert_eq!(rest, b"data: one\n\ndata: two\n\n");
    server.shutdown();
}

#[test]
fn a_silent_stream_gets_a_keep_alive_comment() {
    let settings = EventStream::new().keep_alive(Some(Duration::from_millis(50)));
    let (server, senders) = server(|s| s, settings, Arc::new(Broadcast::new()));
    let mut conn = connect(server.local_addr());
    open(&mut conn, "/events");
    let _events = senders.recv_timeout(PATIENCE).unwrap();
    for _ in 0..2 {
        expect_chunk(&mut conn, b":\n\n");
    }
    server.shutdown();
}

#[test]
fn shutdown_ends_every_stream_after_what_was_sent_and_tells_the_senders() {
    let (server, senders) = plain();
    let mut conns: Vec<_> = (0..3).map(|_| connect(server.local_addr())).collect();
    let mut events = Vec::new();
    for conn in &mut conns {
        open(conn, "/events");
        events.push(senders.recv_timeout(PATIENCE).unwrap());
    }
    events[0].send(&Event::data("last words")).unwrap();
    expect_chunk(&mut conns[0], b"data: last words\n\n");
    events[1].send(&Event::data("queued")).unwrap();
    assert!(server.shutdown());
    for (i, conn) in conns.iter_mut().enumerate() {
        let mut rest = Vec::new();
        conn.read_to_end(&mut rest).unwrap();
        let expected =
            if i == 1 { [chunk(b"data: queued\n\n"), b"0\r\n\r\n".to_vec()].concat() } else { b"0\r\n\r\n".to_vec() };
        assert_eq!(rest, expected, "stream {i}");
    }
    for sender in &events {
        assert_eq!(sender.closed(), Some(Closed::Shutdown));
    }
}
