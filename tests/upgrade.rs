//! Protocol upgrades: WebSocket through tungstenite, and the raw rules.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use common::{PATIENCE, connect, get, read_reply, send};
use httpool::{Request, Response, Server};

#[allow(dead_code)]
#[path = "../examples/websocket.rs"]
mod websocket;

#[test]
fn websocket_echo_with_a_tungstenite_client() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(2).spawn(websocket::handler).unwrap();
    let stream = TcpStream::connect(server.local_addr()).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    let url = format!("ws://{}/echo", server.local_addr());
    let (mut ws, response) = tungstenite::client(url.as_str(), stream).unwrap();
    assert_eq!(response.status(), 101);
    for text in ["hello", "world"] {
        ws.send(tungstenite::Message::text(text)).unwrap();
        assert_eq!(ws.read().unwrap().into_text().unwrap().as_str(), text);
    }
    ws.send(tungstenite::Message::binary(vec![0u8, 1, 2])).unwrap();
    assert_eq!(ws.read().unwrap().into_data().as_ref(), [0u8, 1, 2]);
    // While the upgraded connection holds one worker, the other serves HTTP.
    let mut plain = connect(server.local_addr());
    send(&mut plain, &get("/echo"));
    assert_eq!(read_reply(&mut plain, false).unwrap().status, 426);
    ws.close(None).unwrap();
    while ws.read().is_ok() {}
    assert!(server.shutdown());
}

fn raw_echo(_: &mut Request) -> Response {
    Response::upgrade(|mut conn| {
        let mut buf = [0u8; 64];
        while let Ok(n) = conn.read(&mut buf) {
            if n == 0 || conn.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    })
    .with_header("Upgrade", "echo")
}

/// Reads until what came ends with `end`: the `101` and what the upgraded
/// closure echoed.
fn read_through(conn: &mut TcpStream, end: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while !got.ends_with(end) {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0, "closed early: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    got
}

/// The upgraded connection echoes `bytes` sent now.
fn echoes(conn: &mut TcpStream, bytes: &[u8]) {
    conn.write_all(bytes).unwrap();
    let mut buf = [0u8; 256];
    let n = conn.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], bytes);
}

#[test]
fn bytes_sent_right_after_the_upgrade_request_reach_the_new_protocol() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1).spawn(raw_echo).unwrap();
    let mut conn = TcpStream::connect(server.local_addr()).unwrap();
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    conn.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nearly bytes").unwrap();
    let got = read_through(&mut conn, b"early bytes");
    let text = String::from_utf8(got).unwrap();
    assert!(text.starts_with("HTTP/1.1 101 Switching Protocols\r\n"), "{text}");
    assert!(text.contains("\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\nearly bytes"), "{text}");
    echoes(&mut conn, b"later");
    drop(conn);
    assert!(server.shutdown());
}

/// A request whose body was collected before its handler ran (the read
/// buffer grown for it, holding a share of the server's budget for
/// collected bodies) gives the share back when it upgrades: the upgraded
/// connection may last for hours. (It kept it, and the grown buffer, for as
/// long as the connection lasted.)
#[test]
fn an_upgrade_after_a_collected_body_holds_no_share_of_the_body_budget() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1).spawn(raw_echo).unwrap();
    let mut conn = TcpStream::connect(server.local_addr()).unwrap();
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    let body = vec![b'b'; 50_000];
    let head = format!(
        "POST / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: echo\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    conn.write_all(&[head.as_bytes(), &body, b"early bytes"].concat()).unwrap();
    let got = read_through(&mut conn, b"early bytes");
    assert!(got.starts_with(b"HTTP/1.1 101 "), "{:?}", String::from_utf8_lossy(&got));
    // The closure runs (it echoed the early bytes): the share is back.
    assert_eq!(server.stats().buffered_body_bytes, 0);
    echoes(&mut conn, b"later");
    drop(conn);
    assert!(server.shutdown());
}

/// A `101` to a protocol the request did not offer, when it offered
/// another, is the handler's fault (RFC 9110 §7.8): a `500`.
#[test]
fn an_upgrade_to_a_protocol_the_request_did_not_offer_is_a_500() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1).spawn(raw_echo).unwrap();
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n");
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!(reply.status, 500);
    assert_eq!(reply.header("connection"), Some("close"));
    assert!(server.shutdown());
}

#[test]
fn a_101_without_an_upgrade_closure_is_a_500() {
    let server =
        Server::bind("127.0.0.1:0").unwrap().workers(1).spawn(|_: &mut Request| Response::status(101)).unwrap();
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: x\r\n\r\n");
    assert_eq!(read_reply(&mut conn, false).unwrap().status, 500);
    assert!(server.shutdown());
}

/// Upgraded connections hold a worker each for as long as they last, so
/// there is a bound on them (`max_upgrades`): past it the upgrade is not
/// made, the client gets `503` and a close, and plain requests are still
/// served. A place is given back when its upgraded connection closes.
#[test]
fn upgrades_past_max_upgrades_get_503_and_a_close() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(2).max_upgrades(1).spawn(raw_echo).unwrap();
    let upgrade_request = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n";
    let mut first = TcpStream::connect(server.local_addr()).unwrap();
    first.set_read_timeout(Some(PATIENCE)).unwrap();
    first.write_all(&[&upgrade_request[..], b"first"].concat()).unwrap();
    assert!(read_through(&mut first, b"first").starts_with(b"HTTP/1.1 101 "));
    assert_eq!(server.stats().streaming_workers, 1);

    let mut second = connect(server.local_addr());
    send(&mut second, upgrade_request);
    let reply = read_reply(&mut second, false).unwrap();
    assert_eq!(reply.status, 503);
    assert_eq!(reply.header("connection"), Some("close"));
    assert!(common::closed(&mut second));
    assert_eq!(server.stats().rejected, 1);

    let mut plain = connect(server.local_addr());
    send(&mut plain, &get("/plain"));
    // raw_echo answers every request with an upgrade; this one asked for
    // none: the server's 426, on a worker the upgraded connection left free.
    assert_eq!(read_reply(&mut plain, false).unwrap().status, 426);
    echoes(&mut first, b"still there");

    drop(first);
    common::wait_for(&server, "the upgraded connection's place back", |s| s.streaming_workers == 0);
    let mut third = TcpStream::connect(server.local_addr()).unwrap();
    third.set_read_timeout(Some(PATIENCE)).unwrap();
    third.write_all(&[&upgrade_request[..], b"third"].concat()).unwrap();
    assert!(read_through(&mut third, b"third").starts_with(b"HTTP/1.1 101 "));
    drop(third);
    assert!(server.shutdown());
}

/// A client that completes the WebSocket handshake of `examples/websocket.rs`
/// and then sends nothing holds no worker: with one thread in all, a
/// plain request is answered while the silent socket stays open, parked.
/// (On a worker-held upgrade, 600 silent handshakes against the release
/// build left 515 threads and a fresh `GET` unanswered after 20 s.)
#[test]
fn a_silent_websocket_holds_no_worker() {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1).max_workers(1).spawn(websocket::handler).unwrap();
    let mut silent = TcpStream::connect(server.local_addr()).unwrap();
    silent.set_read_timeout(Some(PATIENCE)).unwrap();
    silent
        .write_all(
            b"GET /echo HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
              Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        )
        .unwrap();
    let got = read_through(&mut silent, b"\r\n\r\n");
    assert!(got.starts_with(b"HTTP/1.1 101 "), "{:?}", String::from_utf8_lossy(&got));
    let mut plain = connect(server.local_addr());
    send(&mut plain, &get("/echo"));
    assert_eq!(read_reply(&mut plain, false).unwrap().status, 426);
    assert_eq!(server.stats().streaming_workers, 0);
    drop(silent);
    assert!(server.shutdown());
}

/// An upgrade whose request body is still in flight must read it before
/// the switch; when every place for a worker waiting on a body is taken
/// (`Server::max_body_waits`), the switch is off and the answer is `503`
/// (counted as rejected), as it is when the request asked for `100
/// Continue`. It was `413 Content Too Large`, for a body well within the
/// limits: the wait refused while draining was taken for a body too long
/// to drain.
#[test]
fn an_upgrade_whose_body_cannot_be_waited_for_gets_503_not_413() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .max_workers(4)
        .max_body_waits(1)
        // Bodies larger than the read buffer are not collected first: the
        // handler runs with the head alone.
        .body_buffer_bytes(0)
        .spawn(|req: &mut Request| {
            if req.path() == "/upload" {
                let got = req.read_body(1 << 20).map(|b| b.len()).unwrap_or(0);
                return Response::text(got.to_string());
            }
            raw_echo(req)
        })
        .unwrap();
    let addr = server.local_addr();
    // A handler waits on the first body: the only place is taken.
    let mut first = connect(addr);
    send(&mut first, b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 30000\r\nExpect: 100-continue\r\n\r\n");
    let mut interim = [0u8; 25];
    first.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    common::wait_for(&server, "a worker to wait on the first body", |s| s.body_waits == 1);
    // An upgrade request whose body has not come yet.
    let mut second = connect(addr);
    send(
        &mut second,
        b"GET / HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: echo\r\nContent-Length: 30000\r\n\r\n",
    );
    let reply = read_reply(&mut second, false).unwrap();
    assert_eq!((reply.status, reply.header("connection")), (503, Some("close")));
    assert_eq!(server.stats().rejected, 1);
    send(&mut first, &[b'a'; 30_000]);
    assert_eq!(read_reply(&mut first, false).unwrap().body, b"30000");
    assert!(server.shutdown());
}

/// Every record logged in this test binary: its level and its text.
#[cfg(feature = "log")]
mod captured {
    use std::sync::{Mutex, Once};

    struct Capture(Mutex<Vec<(log::Level, String)>>);

    impl log::Log for Capture {
        fn enabled(&self, _: &log::Metadata<'_>) -> bool {
            true
        }

        fn log(&self, record: &log::Record<'_>) {
            self.0.lock().unwrap().push((record.level(), record.args().to_string()));
        }

        fn flush(&self) {}
    }

    static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

    pub fn start() {
        static SET: Once = Once::new();
        SET.call_once(|| {
            log::set_logger(&CAPTURE).unwrap();
            log::set_max_level(log::LevelFilter::Debug);
        });
    }

    /// The server logged what the client on `conn` did, at `debug` and at
    /// no higher level. (Its records name the client's address; they are
    /// logged before the answer is sent.)
    pub fn only_at_debug(conn: &std::io::BufReader<std::net::TcpStream>) {
        let client = conn.get_ref().local_addr().unwrap().to_string();
        let records: Vec<_> =
            CAPTURE.0.lock().unwrap().iter().filter(|(_, text)| text.contains(&client)).cloned().collect();
        assert!(records.iter().any(|(level, _)| *level == log::Level::Debug), "{records:?}");
        assert!(records.iter().all(|(level, _)| *level >= log::Level::Debug), "{records:?}");
    }
}

/// A `101` to a request that asked for no switch it could answer is the
/// client's doing (RFC 9110 §7.8: `Connection: upgrade` and `Upgrade` on
/// HTTP/1.1; and a `HEAD` acts on nothing): `426 Upgrade Required` naming
/// the protocol the handler would switch to, or `400` for a `HEAD`, logged
/// at `debug`. (Each was the handler's fault: `500` and an ERROR line,
/// for any client to cause.)
#[test]
fn an_upgrade_the_request_is_unfit_for_is_the_clients_4xx_not_a_500() {
    #[cfg(feature = "log")]
    captured::start();
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1).spawn(raw_echo).unwrap();
    for (raw, status) in [
        ("HEAD / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: echo\r\n\r\n", 426),
        ("GET / HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n", 426),
        ("GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\n\r\n", 426),
        ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", 426),
    ] {
        let mut conn = connect(server.local_addr());
        send(&mut conn, raw.as_bytes());
        let reply = read_reply(&mut conn, raw.starts_with("HEAD")).unwrap();
        assert_eq!(reply.status, status, "{raw:?}");
        let connection: Vec<_> = reply.headers.iter().filter(|(n, _)| n == "connection").map(|(_, v)| &v[..]).collect();
        if status == 426 {
            // RFC 9110 §15.5.22: a 426 names the protocol it requires, and
            // an `Upgrade` field goes with the `upgrade` option (§7.8).
            assert_eq!(reply.header("upgrade"), Some("echo"), "{raw:?}");
            assert!(connection.contains(&"upgrade"), "{raw:?}: {connection:?}");
        }
        assert!(connection.contains(&"close"), "{raw:?}: {connection:?}");
        assert!(common::closed(&mut conn), "{raw:?}");
        #[cfg(feature = "log")]
        captured::only_at_debug(&conn);
    }
    assert!(server.shutdown());
}

/// An upgrade whose request body is longer than the server reads before a
/// switch (`max_drain_bytes`) is the client's doing: `413`, logged at
/// `debug` (it was a warning).
#[test]
fn an_upgrade_refused_for_a_body_too_long_to_read_first_is_a_413_at_debug() {
    #[cfg(feature = "log")]
    captured::start();
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .body_buffer_bytes(0)
        .max_drain_bytes(1)
        .spawn(raw_echo)
        .unwrap();
    let mut conn = connect(server.local_addr());
    let head = "POST / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: echo\r\nContent-Length: 30000\r\n\r\n";
    send(&mut conn, &[head.as_bytes(), &[b'b'; 30_000]].concat());
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!((reply.status, reply.header("connection")), (413, Some("close")));
    #[cfg(feature = "log")]
    captured::only_at_debug(&conn);
    drop(conn);
    assert!(server.shutdown());
}
