use std::sync::{Mutex, OnceLock};

use super::*;
use crate::request_fixture::{with_request, with_request_limited};

/// Captures the access lines logged in this test binary.
struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, meta: &log::Metadata<'_>) -> bool {
        meta.target() == ACCESS_LOG_TARGET
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            assert_eq!(record.level(), log::Level::Info);
            self.0.lock().unwrap().push(record.args().to_string());
        }
    }

    fn flush(&self) {}
}

fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
        log::set_logger(capture).expect("the only logger of the lib tests");
        log::set_max_level(log::LevelFilter::Info);
        capture
    })
}

/// The line logged for the request with this `marker` in its target.
fn logged(marker: &str) -> String {
    let lines = capture().0.lock().unwrap();
    let mine: Vec<_> = lines.iter().filter(|l| l.contains(marker)).collect();
    assert_eq!(mine.len(), 1, "{lines:?}");
    mine[0].clone()
}

/// The line with its time and duration replaced by `T` and `D`.
fn redacted(line: &str) -> String {
    let (head, rest) = line.split_once('[').unwrap();
    let (_, rest) = rest.split_once(']').unwrap();
    let (rest, took) = rest.rsplit_once(' ').unwrap();
    assert!(took.bytes().all(|b| b.is_ascii_digit()), "{line}");
    format!("{head}[T]{rest} D")
}

/// Formats the line for `raw` as the wrapper would, at a fixed time and
/// duration.
fn line_for(raw: &[u8], status: u16, bytes: Option<u64>, format: LogFormat) -> String {
    with_request(raw, |req| {
        let line = Line {
            remote: req.client_addr(),
            at: UNIX_EPOCH + Duration::from_secs(784_111_777),
            request: req,
            status,
            bytes,
            took: Duration::from_micros(1523),
        };
        line.format(format)
    })
}

#[test]
fn combined_and_common_lines_exactly() {
    let raw = b"GET /docs/?q=1 HTTP/1.1\r\nHost: x\r\nUser-Agent: curl/8.5.0\r\nReferer: https://example.com/\r\n\r\n";
    assert_eq!(
        line_for(raw, 200, Some(3072), LogFormat::Combined),
        "192.0.2.7 - - [06/Nov/1994:08:49:37 +0000] \"GET /docs/?q=1 HTTP/1.1\" 200 3072 \"https://example.com/\" \"curl/8.5.0\" 1523"
    );
    assert_eq!(
        line_for(raw, 304, None, LogFormat::Common),
        "192.0.2.7 - - [06/Nov/1994:08:49:37 +0000] \"GET /docs/?q=1 HTTP/1.1\" 304 - 1523"
    );
}

#[test]
fn absent_headers_are_dashes_and_odd_bytes_are_escaped() {
    let raw = b"GET /a\"b HTTP/1.0\r\nUser-Agent: x\" \"forged\\ \xc3\xa9\tz\r\n\r\n";
    assert_eq!(
        line_for(raw, 404, Some(0), LogFormat::Combined),
        "192.0.2.7 - - [06/Nov/1994:08:49:37 +0000] \"GET /a\\\"b HTTP/1.0\" 404 0 \"-\" \"x\\\" \\\"forged\\\\ \\xc3\\xa9\\x09z\" 1523"
    );
}

#[test]
fn the_wrapper_logs_what_the_client_gets() {
    capture();
    let handler = access_log(|req: &mut Request<'_>| match req.path() {
        "/ok-marker1" => Response::text("hello"),
        "/stream-marker2" => Response::stream(|_| Ok(())),
        "/invalid-marker3" => Response::text("x").with_header("X", "a\r\nb"),
        "/read-marker5" => match req.read_body(1 << 20) {
            Ok(_) => Response::text("read"),
            Err(_) => Response::status(400),
        },
        _ => Response::status(204),
    });
    let cases: [(&[u8], &str, &str); 6] = [
        (
            b"GET /ok-marker1 HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\n",
            "marker1",
            "\"GET /ok-marker1 HTTP/1.1\" 200 5 \"-\" \"t\"",
        ),
        (
            b"HEAD /ok-marker1?head-marker6 HTTP/1.1\r\nHost: x\r\n\r\n",
            "marker6",
            "\"HEAD /ok-marker1?head-marker6 HTTP/1.1\" 200 - \"-\" \"-\"",
        ),
        (
            b"GET /stream-marker2 HTTP/1.1\r\nHost: x\r\n\r\n",
            "marker2",
            "\"GET /stream-marker2 HTTP/1.1\" 200 - \"-\" \"-\"",
        ),
        (
            b"GET /invalid-marker3 HTTP/1.1\r\nHost: x\r\n\r\n",
            "marker3",
            "\"GET /invalid-marker3 HTTP/1.1\" 500 21 \"-\" \"-\"",
        ),
        (
            b"GET /none-marker4 HTTP/1.1\r\nHost: x\r\n\r\n",
            "marker4",
            "\"GET /none-marker4 HTTP/1.1\" 204 - \"-\" \"-\"",
        ),
        (
            b"POST /read-marker5 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n0\r\n\r\n",
            "marker5",
            "\"POST /read-marker5 HTTP/1.1\" 413 17 \"-\" \"-\"",
        ),
    ];
    for (raw, marker, want) in cases {
        with_request_limited(raw, 4, |req| handler.handle(req));
        assert_eq!(redacted(&logged(marker)), format!("192.0.2.7 - - [T] {want} D"), "{marker}");
    }
}

#[test]
fn a_panicking_handler_is_logged_as_500_and_still_panics() {
    capture();
    let handler = access_log(|_: &mut Request<'_>| -> Response { panic!("boom") }).format(LogFormat::Common);
    let raw = b"GET /panic-marker7 HTTP/1.1\r\nHost: x\r\n\r\n";
    let outcome = with_request(raw, |req| catch_unwind(AssertUnwindSafe(|| handler.handle(req))));
    assert!(outcome.is_err());
    assert_eq!(redacted(&logged("marker7")), "192.0.2.7 - - [T] \"GET /panic-marker7 HTTP/1.1\" 500 21 D");
}

/// An upgrade the server refuses is logged as the answer the client gets,
/// not as a `101`: the `426` to a request that asked for no switch (an
/// HTTP/1.0 one), the `500` to one offering another protocol than the
/// answer's.
#[test]
fn an_upgrade_the_server_refuses_is_logged_as_its_answer() {
    capture();
    let handler = access_log(|req: &mut Request<'_>| match req.path() {
        "/upgrade-marker8" => Response::upgrade(|_| {}).with_header("Upgrade", "echo"),
        _ => Response::upgrade(|_| {}).with_header("Upgrade", "other"),
    });
    for (raw, marker, status) in [
        (&b"GET /upgrade-marker8 HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n"[..], "marker8", "426 16"),
        (
            b"GET /upgrade-marker9 HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n",
            "marker9",
            "500 21",
        ),
    ] {
        with_request(raw, |req| handler.handle(req));
        let line = redacted(&logged(marker));
        assert!(line.ends_with(&format!("\" {status} \"-\" \"-\" D")), "{line}");
    }
}

#[test]
fn clf_times_in_utc() {
    let mut out = String::new();
    push_clf_time(&mut out, UNIX_EPOCH + Duration::from_secs(951_782_400 + 3_723));
    assert_eq!(out, "29/Feb/2000:01:02:03 +0000");
}

/// A `2xx` to `CONNECT` goes out with no body (the server runs no tunnel,
/// RFC 9110 §9.3.6): no body bytes are logged for it.
#[test]
fn a_2xx_to_connect_is_logged_with_no_body_bytes() {
    capture();
    let handler = access_log(|_: &mut Request<'_>| Response::text("tunnel"));
    let resp = crate::test::TestRequest::method("CONNECT", "markerA.example:443").send(&handler);
    assert_eq!((resp.status(), resp.body()), (200, &b""[..]));
    let line = redacted(&logged("markerA"));
    assert!(line.ends_with("\"CONNECT markerA.example:443 HTTP/1.1\" 200 - \"-\" \"-\" D"), "{line}");
}

/// A body the handler left unread is read after it returns; when that read
/// fails (a malformed chunk, a body past the limit), the client gets the
/// crate's `400` or `413` instead of the handler's answer, and that is what
/// is logged. (Each fails past the part of the body collected before the
/// handler runs, `body_buffer_bytes`: a collected body found bad is refused
/// without calling it.)
#[test]
fn an_unread_body_that_fails_after_the_handler_is_logged_as_the_crates_answer() {
    use crate::test::{TestRequest, TestServer};
    capture();
    let server = TestServer::from_handler(access_log(|_: &mut Request<'_>| Response::text("ignored")))
        .max_body_bytes(70_000)
        .max_drain_bytes(1 << 20);
    // A first chunk of 65 KiB, past what is collected, then the failure.
    let first = [&b"10400\r\n"[..], &[b'x'; 0x10400], b"\r\n"].concat();
    let chunked = |path: &str, rest: &[u8]| {
        TestRequest::post(path).header("Transfer-Encoding", "chunked").body([&first[..], rest].concat())
    };
    let malformed = chunked("/markerB", b"zz\r\n\r\n");
    let too_large = chunked("/markerC", b"1000\r\n");
    for (req, marker, status, bytes) in [(malformed, "markerB", 400, 11), (too_large, "markerC", 413, 17)] {
        let resp = server.send(req);
        assert_eq!((resp.status(), resp.body().len()), (status, bytes), "{marker}");
        let line = redacted(&logged(marker));
        assert!(line.ends_with(&format!("\" {status} {bytes} \"-\" \"-\" D")), "{line}");
    }
}

/// An upgrade whose request body is longer than the server reads before a
/// switch is refused with `413`, and logged so.
#[test]
fn an_upgrade_refused_for_its_unread_body_is_logged_as_its_413() {
    use crate::test::{TestRequest, TestServer};
    capture();
    let handler = access_log(|_: &mut Request<'_>| Response::upgrade(|_| {}).with_header("Upgrade", "echo"));
    let server = TestServer::from_handler(handler).max_drain_bytes(1);
    let req = TestRequest::post("/markerD")
        .header("Connection", "upgrade")
        .header("Upgrade", "echo")
        .body(vec![b'x'; 10_000]);
    let resp = server.send(req);
    assert_eq!(resp.status(), 413);
    let line = redacted(&logged("markerD"));
    assert!(line.ends_with("\" 413 17 \"-\" \"-\" D"), "{line}");
}

/// An upgrade made while every place for an upgraded connection is taken
/// (`Server::max_upgrades`) is answered `503`, and logged so.
#[test]
fn an_upgrade_with_no_place_left_is_logged_as_its_503() {
    capture();
    let handler = access_log(|_: &mut Request<'_>| Response::upgrade(|_| {}).with_header("Upgrade", "echo"));
    let mut driver = crate::http1::Driver::new(&handler);
    let mut io =
        crate::io::Script::new(&[b"GET /markerE HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n"]);
    io.streaming_full = true;
    driver.run(&mut io, None);
    assert!(io.written.starts_with(b"HTTP/1.1 503 Service Unavailable\r\n"));
    let line = redacted(&logged("markerE"));
    assert!(line.ends_with("\" 503 19 \"-\" \"-\" D"), "{line}");
}

/// The client a trusted proxy forwards is logged, and the request's id
/// follows the duration; a client that is not a proxy is logged as itself.
#[test]
fn the_forwarded_client_and_the_request_id_are_logged() {
    use crate::net::Peer;
    use crate::request_fixture::with_request_from;
    capture();
    let handler = access_log(crate::request_id(|_: &mut Request<'_>| Response::text("ok")));
    let raw = |marker: &str| {
        format!(
            "GET /{marker} HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.9\r\nX-Request-Id: id-{marker}\r\n\r\n"
        )
    };
    let peer = |ip: [u8; 4]| Peer::Ip(std::net::SocketAddr::from((ip, 5000)));
    with_request_from(raw("markerP").as_bytes(), peer([10, 0, 0, 1]), &["10.0.0.0/8"], |req| handler.handle(req));
    let line = logged("markerP");
    assert!(line.starts_with("203.0.113.9 - - ["), "{line}");
    let (rest, id) = line.rsplit_once(' ').unwrap();
    assert_eq!(id, "id-markerP");
    assert!(rest.rsplit_once(' ').unwrap().1.bytes().all(|b| b.is_ascii_digit()), "{line}");

    with_request_from(raw("markerQ").as_bytes(), peer([192, 0, 2, 8]), &["10.0.0.0/8"], |req| handler.handle(req));
    let line = logged("markerQ");
    assert!(line.starts_with("192.0.2.8 - - ["), "{line}");
    let id = line.rsplit_once(' ').unwrap().1;
    assert!(id != "id-markerQ" && id.len() > 13, "{line}");
}

/// A handler around `access_log` may change whether the answer upgrades
/// after the access log has settled the body (it reads what the handler
/// left, to log the answer). The connection loop settles it again for the
/// answer it got: an upgrade the access log did not see still takes a
/// place among the upgraded connections (here none is left: `503`, not a
/// switch past `max_upgrades`), and an answer that no longer upgrades
/// stands as any answer does (a place refused to the upgrade the access
/// log saw does not turn it into a `503`). The first answer was returned
/// again whatever the second call asked.
#[cfg(feature = "log")]
#[test]
fn an_answer_changed_around_the_access_log_is_settled_for_what_it_became() {
    let inner = access_log(|req: &mut Request<'_>| match req.path() {
        "/to-upgrade" => Response::text("plain"),
        _ => Response::upgrade(|_| {}).with_header("Upgrade", "ping"),
    });
    let handler = move |req: &mut Request<'_>| {
        let logged = inner.handle(req);
        match req.path() {
            "/to-upgrade" => Response::upgrade(|_| {}).with_header("Upgrade", "ping"),
            // An answer put in place of the upgrade the access log saw.
            _ => {
                drop(logged);
                Response::text("plain")
            }
        }
    };
    for (path, answer) in
        [("/to-upgrade", "HTTP/1.1 503 Service Unavailable\r\n"), ("/to-plain", "HTTP/1.1 200 OK\r\n")]
    {
        let head = format!("POST {path} HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: ping\r\n");
        // Chunked, and nothing collected before the handler runs: the
        // body is still coming when the access log settles it.
        let first = format!("{head}Transfer-Encoding: chunked\r\n\r\n5\r\nhe");
        let config = crate::config::Config { body_buffer_bytes: 0, ..crate::config::Config::default() };
        let mut s = crate::http1::Driver::with_config(&handler, config);
        let mut io = crate::io::Script::new(&[first.as_bytes(), b"llo\r\n0\r\n\r\n", b"PING"]);
        io.patient = true;
        io.streaming_full = true;
        s.run(&mut io, None);
        let wire = String::from_utf8_lossy(&io.written);
        assert!(wire.starts_with(answer), "{path}: {wire}");
        assert!(!wire.contains(" 101 "), "{path}: {wire}");
    }
}
