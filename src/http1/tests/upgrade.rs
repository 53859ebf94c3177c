//! Upgrades: the body before the switch, the `101` refused, the place an
//! upgraded connection takes among the workers.

use super::*;

/// A `101` to `ping` whose closure puts the first 4 bytes it reads in
/// `seen`.
fn ping_upgrade(seen: &std::sync::Arc<std::sync::Mutex<Vec<u8>>>) -> Response {
    let seen = seen.clone();
    Response::upgrade(move |mut conn| {
        let mut buf = [0u8; 4];
        if conn.read_exact(&mut buf).is_ok() {
            seen.lock().unwrap().extend_from_slice(&buf);
        }
    })
    .with_header("Upgrade", "ping")
}

/// The bytes an upgrade's closure reads first, and the wire.
fn upgraded(chunks: &[&[u8]], config: Config) -> (String, Vec<u8>) {
    let early = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = early.clone();
    let handler = move |_: &mut Request<'_>| ping_upgrade(&seen);
    let r = run_with(config, &handler, chunks, false);
    let got = early.lock().unwrap().clone();
    (r.wire, got)
}

const UPGRADE_HEAD: &str = "POST / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: ping\r\n";

#[test]
fn an_upgrade_s_closure_reads_what_follows_the_body_not_the_body() {
    let cases: [(&str, Vec<&[u8]>); 3] = [
        ("whole", vec![b"Content-Length: 5\r\n\r\nhelloPING"]),
        ("in pieces", vec![b"Content-Length: 5\r\n\r\nhe", b"llo", b"PING"]),
        ("chunked", vec![b"Transfer-Encoding: chunked\r\n\r\n5\r\nhel", b"lo\r\n0\r\n\r\nPING"]),
    ];
    for (what, rest) in cases {
        let first = [UPGRADE_HEAD.as_bytes(), rest[0]].concat();
        let mut chunks: Vec<&[u8]> = vec![&first];
        chunks.extend_from_slice(&rest[1..]);
        let (wire, early) = upgraded(&chunks, Config::default());
        assert!(wire.starts_with("HTTP/1.1 101 Switching Protocols\r\n"), "{what}: {wire}");
        assert_eq!(early, b"PING", "{what}");
    }
}

#[test]
fn an_upgrade_of_a_request_awaiting_100_continue_sends_100_before_101() {
    let head = [UPGRADE_HEAD.as_bytes(), b"Expect: 100-continue\r\nContent-Length: 5\r\n\r\n"].concat();
    let (wire, early) = upgraded(&[&head, b"hello", b"PING"], Config::default());
    assert!(wire.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\n"), "{wire}");
    assert_eq!(early, b"PING");
}

/// A body the handler could not read (no place was free to wait on it, so
/// `100 Continue` was withheld and the read failed) is not invited later:
/// a handler that answers with an upgrade all the same gets the `503`
/// without a `100 Continue` before it, even once a place is free. The
/// switch's read of the body sent the `100` then, and the client, told to
/// send its body, got the `503`.
#[test]
fn a_body_refused_for_want_of_a_place_is_never_invited_by_the_upgrade_after() {
    let handler = |req: &mut Request<'_>| {
        let mut buf = [0u8; 8];
        assert!(req.body().read(&mut buf).is_err(), "no place to wait on the body");
        Response::upgrade(|_| {}).with_header("Upgrade", "ping")
    };
    let head = [UPGRADE_HEAD.as_bytes(), b"Expect: 100-continue\r\nContent-Length: 5\r\n\r\n"].concat();
    let mut s = Served::new(&handler);
    let mut io = Script::new(&[&head, b"hello"]);
    io.patient = true;
    io.body_waits_full.set(1);
    s.run(&mut io, None);
    let wire = redact_dates(&io.written);
    assert!(wire.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{wire}");
}

/// Every place for an upgraded connection taken (`Server::max_upgrades`):
/// the handler's upgrade is not made. The body is read as after any
/// answer, the client gets `503` and the connection closes (what follows
/// an upgrade request may be the other protocol's bytes), and the closure
/// never runs.
#[test]
fn an_upgrade_with_no_place_left_is_a_503_and_a_close() {
    static RAN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let handler = |_: &mut Request<'_>| {
        Response::upgrade(|_| RAN.store(true, std::sync::atomic::Ordering::Relaxed)).with_header("Upgrade", "ping")
    };
    let head = [UPGRADE_HEAD.as_bytes(), b"Content-Length: 5\r\n\r\nhe"].concat();
    let mut s = Served::new(&handler);
    let mut io = Script::new(&[&head, b"llo", b"PING"]);
    io.patient = true;
    io.streaming_full = true;
    let ended = s.run(&mut io, None);
    assert_eq!(redact_dates(&io.written), BUSY);
    assert!(ended.closed);
    assert!(!RAN.load(std::sync::atomic::Ordering::Relaxed));
}

/// RFC 9110 §7.8, §15.2.2: a `101` names in `Upgrade` a protocol the
/// request offered, to a request that asked for one (`Connection: upgrade`
/// and `Upgrade`, HTTP/1.1, not `HEAD`). A `101` that names none, or one
/// the request did not offer when it offered another, is the handler's
/// fault: `500`. One to a request that asked for no switch is the
/// client's: `426` naming the protocol (`400` to a `HEAD`). Either way the
/// request is served no further.
#[test]
fn an_upgrade_the_request_did_not_offer_is_refused() {
    let handler = |req: &mut Request<'_>| {
        let upgrade = Response::upgrade(|_| {});
        match req.path() {
            "/none" => upgrade,
            "/other" => upgrade.with_header("Upgrade", "pong"),
            _ => upgrade.with_header("Upgrade", "PING"),
        }
    };
    let refused = |head: &str, status: &str| {
        let r = run(&handler, &[head.as_bytes()]);
        assert!(r.wire.starts_with(&format!("HTTP/1.1 {status}\r\n")), "{head}: {}", r.wire);
        assert!(!r.wire.contains("101"), "{head}: {}", r.wire);
        assert!(r.wire.contains("Connection: close\r\n"), "{head}: {}", r.wire);
        assert_eq!(r.requests, 1, "{head}: {}", r.wire);
    };
    refused(
        "GET /none HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: ping\r\n\r\n",
        "500 Internal Server Error",
    );
    refused(
        "GET /other HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: ping\r\n\r\n",
        "500 Internal Server Error",
    );
    // A bare `101` is the handler's fault whatever the request asked.
    refused("GET /none HTTP/1.1\r\nHost: a\r\n\r\n", "500 Internal Server Error");
    refused("GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\n\r\n", "426 Upgrade Required");
    refused("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: ping\r\n\r\n", "426 Upgrade Required");
    refused("GET / HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: ping\r\n\r\n", "426 Upgrade Required");
    refused("HEAD / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: ping\r\n\r\n", "400 Bad Request");
    // Pipelined after a refused upgrade: not served.
    let r = run(&handler, &[b"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: ping\r\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n"]);
    assert_eq!(
        r.wire,
        "HTTP/1.1 426 Upgrade Required\r\nDate: D\r\nContent-Type: text/plain; charset=utf-8\r\nUpgrade: PING\r\n\
         Connection: upgrade\r\nContent-Length: 16\r\nConnection: close\r\n\r\nUpgrade Required"
    );
    // The protocol's name is matched without regard to case, among several.
    let r = run(&handler, &[b"GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: h2c, ping\r\n\r\n"]);
    assert!(r.wire.starts_with("HTTP/1.1 101 Switching Protocols\r\n"), "{}", r.wire);
}

/// A `101` the client stopped taking is an answer cut short: its closure
/// is not called, and a TLS session ends without close_notify. (It ended
/// with one, as after a whole answer.)
#[test]
fn an_upgrade_whose_101_could_not_be_sent_ends_the_session_torn() {
    let called = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = called.clone();
    let handler = move |_: &mut Request<'_>| {
        let seen = seen.clone();
        Response::upgrade(move |_| seen.store(true, std::sync::atomic::Ordering::Relaxed))
            .with_header("Upgrade", "ping")
    };
    let config = Config { write_timeout: Duration::from_millis(1), ..Config::default() };
    let mut s = Served::with_config(&handler, config);
    let mut io = Script::new(&[format!("{UPGRADE_HEAD}\r\n").as_bytes()]);
    io.tls = true;
    io.release();
    io.room = Some(10);
    io.stalls = 1;
    assert_eq!(s.serve(&mut io), Next::Close);
    assert_eq!(String::from_utf8_lossy(&io.written), "HTTP/1.1 1");
    assert!(!called.load(std::sync::atomic::Ordering::Relaxed));
    assert_ne!(io.ended_whole, Some(true));
}

#[test]
fn an_upgrade_whose_body_is_too_long_to_read_first_is_refused() {
    let config = Config { max_drain_bytes: 4, ..Config::default() };
    let head = [UPGRADE_HEAD.as_bytes(), b"Transfer-Encoding: chunked\r\n\r\n"].concat();
    let (wire, early) = upgraded(&[&head, b"9\r\n123456789\r\n0\r\n\r\nPING"], config);
    assert!(wire.starts_with("HTTP/1.1 413 Content Too Large\r\n"), "{wire}");
    assert!(!wire.contains("101"), "{wire}");
    assert!(early.is_empty());
}

/// The way past that refusal the docs give: a handler that reads the body
/// itself upgrades whatever its length (within its own limit); the drain's
/// limit is for a body nobody read.
#[test]
fn an_upgrade_whose_handler_read_the_body_first_is_made_past_the_drain_limit() {
    let config = Config { max_drain_bytes: 4, ..Config::default() };
    let body = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (got, early) = (body.clone(), std::sync::Arc::new(std::sync::Mutex::new(Vec::new())));
    let seen = early.clone();
    let handler = move |req: &mut Request<'_>| {
        *got.lock().unwrap() = req.read_body(100).unwrap();
        ping_upgrade(&seen)
    };
    let head = [UPGRADE_HEAD.as_bytes(), b"Transfer-Encoding: chunked\r\n\r\n"].concat();
    let r = run_with(config, &handler, &[&head, b"9\r\n123456789\r\n0\r\n\r\nPING"], false);
    assert!(r.wire.starts_with("HTTP/1.1 101 Switching Protocols\r\n"), "{}", r.wire);
    assert_eq!(*body.lock().unwrap(), b"123456789");
    assert_eq!(*early.lock().unwrap(), b"PING");
}

/// A body that stops coming before the switch (the client sends part of
/// it, then nothing until the reads time out) is answered `408 Request
/// Timeout`, as any body read that timed out is (RFC 9110 §15.5.9): the
/// switch is off, the closure never runs and the connection closes. It was
/// `413 Content Too Large`: the read before the switch forgave the timeout
/// as the drain after an ordinary answer does (that answer stands without
/// the body), and the body left unread was taken for one too long to read.
/// Whether or not the handler began reading it.
#[test]
fn an_upgrade_whose_body_stops_coming_is_a_408() {
    let handler = |req: &mut Request<'_>| {
        if req.path() == "/read" {
            let mut byte = [0u8; 1];
            assert_eq!(req.body().read(&mut byte).unwrap(), 1);
        }
        Response::upgrade(|_| {}).with_header("Upgrade", "ping")
    };
    for path in ["/", "/read"] {
        let head = UPGRADE_HEAD.replacen("POST / ", &format!("POST {path} "), 1);
        // Chunked, and nothing collected before the handler runs: the
        // handler is called with the body still coming.
        let first = format!("{head}Transfer-Encoding: chunked\r\n\r\n5\r\nhe");
        let config = Config { body_buffer_bytes: 0, ..Config::default() };
        let r = run_with(config, &handler, &[first.as_bytes()], false);
        assert_eq!(
            r.wire,
            "HTTP/1.1 408 Request Timeout\r\nDate: D\r\nContent-Type: text/plain; charset=utf-8\r\n\
             Content-Length: 15\r\nConnection: close\r\n\r\nRequest Timeout",
            "{path}"
        );
    }
}

/// An upgrade taken a place for (`Server::max_upgrades`) but then not
/// made gives the place back before its answer goes out: when the body
/// before it was too long to read first (`413`), stopped coming (`408`),
/// or the handler's `101` was refused (an invalid header: `500`). It was
/// held until the transport was dropped at the end of the worker's turn,
/// after the answer and its lingering close (at shutdown up to `LINGER`),
/// and other upgrades got `503` meanwhile. (The Script outlives the turn:
/// a place still held when it is over was held through all of it.)
#[test]
fn an_upgrade_not_made_gives_its_place_back_at_once() {
    let handler = |req: &mut Request<'_>| {
        let upgrade = Response::upgrade(|_| {}).with_header("Upgrade", "ping");
        match req.path() {
            "/invalid" => upgrade.with_header("X", "a\r\nb"),
            _ => upgrade,
        }
    };
    let chunked = "Transfer-Encoding: chunked\r\n\r\n";
    let cases = [
        ("/", format!("{chunked}9\r\n123456789\r\n0\r\n\r\n"), "HTTP/1.1 413 Content Too Large\r\n"),
        ("/", format!("{chunked}5\r\nhe"), "HTTP/1.1 408 Request Timeout\r\n"),
        ("/invalid", format!("{chunked}0\r\n\r\n"), "HTTP/1.1 500 Internal Server Error\r\n"),
    ];
    for (path, rest, answer) in cases {
        let head = UPGRADE_HEAD.replacen("POST / ", &format!("POST {path} "), 1);
        let config = Config { body_buffer_bytes: 0, max_drain_bytes: 4, ..Config::default() };
        let mut s = Served::with_config(&handler, config);
        let mut io = Script::new(&[format!("{head}{rest}").as_bytes()]);
        io.patient = true;
        s.run(&mut io, None);
        let wire = redact_dates(&io.written);
        assert!(wire.starts_with(answer), "{path} {rest:?}: {wire}");
        assert!(!io.streaming_held, "{path} {rest:?}: the place is still held");
    }
}

/// An upgraded connection gives back the share its slowly sent head took:
/// it may last for hours.
#[test]
fn an_upgrade_gives_back_the_share_its_parked_head_took() {
    let during = std::sync::Arc::new(std::sync::Mutex::new(None));
    let budget = std::sync::Arc::new(std::sync::OnceLock::new());
    let (seen, watched) = (during.clone(), budget.clone());
    let handler = move |_: &mut Request<'_>| {
        let (seen, watched) = (seen.clone(), watched.clone());
        Response::upgrade(move |_| {
            let budget: &crate::stats::Budget = watched.get().unwrap();
            *seen.lock().unwrap() = Some(budget.taken());
        })
        .with_header("Upgrade", "ping")
    };
    let mut s = Served::new(&handler);
    budget.set(s.counters.pending_heads(u64::MAX)).unwrap();
    let pending = |s: &Served<'_>| s.counters.snapshot(0, 0, 0, Default::default(), 0).pending_head_bytes;
    let mut head = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: ping\r\nX-Pad: ".to_vec();
    head.resize(12_000, b'p');
    let mut io = Script::new(&[&head[..], b"\r\n\r\nPING"]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    assert!(pending(&s) >= 12_000, "{}", pending(&s));
    io.release();
    s.serve(&mut io);
    assert!(io.written.starts_with(b"HTTP/1.1 101 Switching Protocols\r\n"));
    assert_eq!(*during.lock().unwrap(), Some(0), "held while upgraded");
}
