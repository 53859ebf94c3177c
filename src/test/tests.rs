//! The test client against the real connection loop: what it sends, and
//! how it reads what the server answers.

use std::io::{Read, Write};
use std::net::SocketAddr;

use super::*;
use crate::response::Response;

fn echo(req: &mut Request<'_>) -> Response {
    let mut body = Vec::new();
    match req.read_to_end(&mut body) {
        Ok(_) => Response::bytes(body),
        Err(_) => Response::status(400),
    }
}

fn describe(req: &mut Request<'_>) -> Response {
    let headers: Vec<String> = req.headers().map(|(n, v)| format!("{n}={}", String::from_utf8_lossy(v))).collect();
    Response::text(format!("{} {} {}\n{}", req.method(), req.target(), req.version().as_str(), headers.join("\n")))
}

#[test]
fn a_get_reaches_the_handler_with_host_added_and_answers_with_length() {
    let resp = TestRequest::get("/a?b=c").header("X-One", "1").send(&describe);
    assert_eq!((resp.status(), resp.reason()), (200, "OK"));
    assert_eq!(resp.text(), "GET /a?b=c HTTP/1.1\nHost=localhost\nX-One=1");
    let names: Vec<&str> = resp.headers().iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["Date", "Content-Type", "Content-Length"]);
    assert_eq!(resp.header("content-length"), Some("42"));
    assert!(resp.is_kept_alive());
    assert!(resp.raw().starts_with(b"HTTP/1.1 200 OK\r\n"));
}

#[test]
fn a_body_goes_with_content_length_and_a_post_without_one_says_zero() {
    let resp = TestRequest::post("/").body("hello").send(&echo);
    assert_eq!(resp.body(), b"hello");
    let resp = TestRequest::post("/").send(&describe);
    assert!(resp.text().ends_with("Content-Length=0"), "{}", resp.text());
    let resp = TestRequest::get("/").send(&describe);
    assert!(!resp.text().contains("Content-Length"), "{}", resp.text());
}

#[test]
fn a_chunked_body_is_unchunked_for_the_handler() {
    let resp = TestRequest::put("/").body("hello world").chunked().send(&echo);
    assert_eq!((resp.status(), resp.body()), (200, &b"hello world"[..]));
    let resp = TestRequest::put("/").chunked().send(&echo);
    assert_eq!((resp.status(), resp.body()), (200, &b""[..]));
}

#[test]
fn framing_set_by_the_caller_is_sent_as_given() {
    let resp = TestRequest::post("/")
        .header("Transfer-Encoding", "chunked")
        .body("3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\n")
        .send(&echo);
    assert_eq!(resp.body(), b"abc");
    let resp = TestRequest::post("/").header("Content-Length", "2").header("Transfer-Encoding", "chunked").send(&echo);
    assert_eq!(resp.status(), 400);
    assert!(!resp.is_kept_alive());
}

#[test]
fn a_streamed_answer_is_read_back_unchunked() {
    let stream = |_: &mut Request<'_>| {
        Response::stream(|out| {
            out.write_all(b"one ")?;
            out.flush()?;
            out.write_all(b"two")
        })
    };
    let resp = TestRequest::get("/").send(&stream);
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    assert_eq!(resp.text(), "one two");
    assert!(resp.is_kept_alive());
    // HTTP/1.0 has no chunked: the end of the body is the end of the
    // connection.
    let resp = TestRequest::get("/").version(Version::Http10).send(&stream);
    assert_eq!(resp.header("transfer-encoding"), None);
    assert_eq!(resp.text(), "one two");
    assert!(!resp.is_kept_alive());
}

#[test]
fn head_gets_the_length_and_no_body() {
    let resp = TestRequest::head("/").send(&|_: &mut Request<'_>| Response::text("twelve bytes"));
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.header("content-length"), Some("12"));
    assert_eq!(resp.body(), b"");
}

#[test]
fn a_panicking_handler_answers_500_and_closes() {
    let resp = TestRequest::get("/").send(&|_: &mut Request<'_>| -> Response { panic!("on purpose") });
    assert_eq!(resp.status(), 500);
    assert_eq!(resp.header("connection"), Some("close"));
    assert!(!resp.is_kept_alive());
}

#[test]
fn the_body_limit_answers_413_before_the_handler_runs() {
    let server = TestServer::new(|_| -> Response { panic!("not called") }).max_body_bytes(4);
    let resp = server.send(TestRequest::post("/").body("12345"));
    assert_eq!(resp.status(), 413);
    assert!(!resp.is_kept_alive());
    // A chunked body is cut off once it passes the limit.
    let server = TestServer::new(echo).max_body_bytes(4);
    assert_eq!(server.send(TestRequest::post("/").body("12345").chunked()).status(), 413);
    assert_eq!(server.send(TestRequest::post("/").body("1234").chunked()).text(), "1234");
}

#[test]
fn head_limits_apply() {
    let server = TestServer::new(echo).max_uri_bytes(8).max_headers(2);
    assert_eq!(server.send(TestRequest::get("/123456789")).status(), 414);
    assert_eq!(server.send(TestRequest::get("/").header("A", "1").header("B", "2")).status(), 431);
    assert_eq!(server.send(TestRequest::get("/").header("A", "1")).status(), 200);
    let server = TestServer::new(echo);
    assert_eq!(server.send(TestRequest::method("BREW", "/")).status(), 501);
    let server = server.any_method(true);
    assert_eq!(server.send(TestRequest::method("BREW", "/")).status(), 200);
}

#[test]
fn an_invalid_header_gets_400() {
    let resp = TestRequest::get("/").header("Bad Name", "x").send(&echo);
    assert_eq!(resp.status(), 400);
}

#[test]
fn expect_continue_gets_100_only_when_the_handler_reads() {
    let resp = TestRequest::put("/").header("Expect", "100-continue").body("data").send(&echo);
    assert!(resp.raw().starts_with(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"));
    assert_eq!((resp.status(), resp.text()), (200, "data"));
    let refuse = |_: &mut Request<'_>| Response::status(413);
    let resp = TestRequest::put("/").header("Expect", "100-continue").body("data").send(&refuse);
    assert!(resp.raw().starts_with(b"HTTP/1.1 413 "));
    assert!(!resp.is_kept_alive(), "the body was never asked for");
}

/// A chunked body is collected before the handler runs, as a short one
/// with a length is: cut short, the server waits for the rest (on a socket,
/// until the head deadline: `408`).
#[test]
#[should_panic(expected = "waits for the rest of the request")]
fn a_chunked_body_cut_short_is_reported() {
    TestRequest::post("/").header("Transfer-Encoding", "chunked").body("5\r\nab").send(&echo);
}

#[test]
#[should_panic(expected = "waits for the rest of the request")]
fn a_short_body_the_server_waits_for_is_reported() {
    TestRequest::post("/").header("Content-Length", "10").body("abc").send(&echo);
}

#[test]
fn connection_close_and_http10_close_after_the_answer() {
    let resp = TestRequest::get("/").header("Connection", "close").send(&echo);
    assert_eq!(resp.header("connection"), Some("close"));
    assert!(!resp.is_kept_alive());
    let resp = TestRequest::get("/").version(Version::Http10).send(&echo);
    assert!(!resp.is_kept_alive());
    let resp = TestRequest::get("/").version(Version::Http10).header("Connection", "keep-alive").send(&echo);
    assert!(resp.is_kept_alive());
}

#[test]
fn pipelined_requests_are_answered_in_order_until_one_closes() {
    let server = TestServer::new(describe);
    let answers = server.send_pipelined([
        TestRequest::post("/1").body("ab"),
        TestRequest::head("/2"),
        TestRequest::get("/3").header("Connection", "close"),
        TestRequest::get("/4"),
    ]);
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert!(answers[0].text().starts_with("POST /1 "));
    // "HEAD /2 HTTP/1.1\nHost=localhost"
    assert_eq!((answers[1].header("content-length"), answers[1].body()), (Some("31"), &b""[..]));
    assert!(answers[2].text().starts_with("GET /3 "));
    assert_eq!(answers.iter().map(TestResponse::is_kept_alive).collect::<Vec<_>>(), [true, true, false]);
}

#[test]
fn the_peer_address_reaches_the_handler() {
    let addr: SocketAddr = "192.0.2.7:1234".parse().unwrap();
    let peer = |req: &mut Request<'_>| Response::text(format!("{:?}", req.peer_addr()));
    assert_eq!(TestRequest::get("/").peer(addr).send(&peer).text(), "Some(192.0.2.7:1234)");
}

#[test]
fn named_handlers_and_arcs_go_through_from_handler() {
    struct Named;
    impl Handler for Named {
        fn handle(&self, _: &mut Request<'_>) -> Response {
            Response::status(204)
        }
    }
    assert_eq!(TestServer::from_handler(Named).send(TestRequest::get("/")).status(), 204);
    let shared: std::sync::Arc<dyn Handler> = std::sync::Arc::new(Named);
    assert_eq!(TestServer::from_handler(shared).send(TestRequest::get("/")).status(), 204);
}

#[test]
fn an_upgrade_answer_hands_over_the_connection() {
    let upgrade = |_: &mut Request<'_>| {
        Response::upgrade(|mut conn| {
            let _ = conn.write_all(b"raw bytes");
        })
        .with_header("Upgrade", "echo")
    };
    let resp = TestRequest::get("/").header("Connection", "upgrade").header("Upgrade", "echo").send(&upgrade);
    assert_eq!(resp.status(), 101);
    assert_eq!(resp.header("upgrade"), Some("echo"));
    assert_eq!(resp.body(), b"raw bytes");
    assert!(!resp.is_kept_alive());
}

#[test]
fn unchunking_skips_extensions_and_trailers_and_refuses_bad_framing() {
    assert_eq!(answer_unchunk(b"2;x=y\r\nab\r\n1\r\nc\r\n0\r\nT: 1\r\n\r\nrest"), Ok((b"abc".to_vec(), 28)));
    assert!(answer_unchunk(b"2\r\nabc\r\n0\r\n\r\n").is_err());
    assert!(answer_unchunk(b"zz\r\n").is_err());
    assert!(answer_unchunk(b"5\r\nab").is_err());
    // A stream still open may stop after a whole chunk, and only there.
    assert_eq!(answer::unchunk(b"2\r\nab\r\n", true), Ok((b"ab".to_vec(), 7)));
    assert!(answer::unchunk(b"2\r\nab", true).is_err());
}

fn answer_unchunk(wire: &[u8]) -> Result<(Vec<u8>, usize), String> {
    answer::unchunk(wire, false)
}

#[test]
fn large_in_memory_and_file_bodies_arrive_whole() {
    let big: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
    let expected = big.clone();
    let resp = TestRequest::get("/").send(&move |_: &mut Request<'_>| Response::bytes(big.clone()));
    assert_eq!(resp.header("content-length"), Some("200000"));
    assert!(resp.body() == expected, "the body differs");

    let path = std::env::temp_dir().join(format!("httpool-test-client-{}", std::process::id()));
    std::fs::write(&path, &expected).unwrap();
    let file_path = path.clone();
    let resp = TestRequest::get("/").send(&move |_: &mut Request<'_>| {
        let file = std::fs::File::open(&file_path).unwrap();
        Response::file(file, 200_000)
    });
    std::fs::remove_file(&path).unwrap();
    assert!(resp.body() == expected, "the file body differs");
    let reader = |_: &mut Request<'_>| Response::reader(&b"from a reader"[..], Some(13));
    assert_eq!(TestRequest::get("/").send(&reader).text(), "from a reader");
}

/// `config_of` takes every setting of a `Server`: those `TestServer` has a
/// setter for (the header count, answered with 431 past it) and those it
/// has none for (body collecting), with the server's clamps.
#[test]
fn a_test_server_runs_under_the_configuration_of_a_server() {
    let server = crate::Server::bind("127.0.0.1:0").unwrap().max_headers(2).body_buffer_bytes(0);
    let test = TestServer::new(echo).config_of(&server);
    assert_eq!(test.config.limits.max_headers, 2);
    assert_eq!(test.config.body_buffer_bytes, 0);
    let three = TestRequest::get("/").header("a", "1").header("b", "2");
    assert_eq!(test.send(three).status(), 431, "Host and two more are three headers");
    let two = TestRequest::get("/").header("a", "1");
    assert_eq!(test.send(two).status(), 200);
    // And the clamps are the server's: 0 headers means 1.
    let none = TestServer::new(echo).config_of(&crate::Server::bind("127.0.0.1:0").unwrap().max_headers(0));
    assert_eq!(none.config.limits.max_headers, 1);
}
