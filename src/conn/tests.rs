//! The connection loop over in-memory I/O: chunks arrive one at a time, the
//! loop parks between them as it would with the poller.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr};

use super::*;
use crate::io::Script;

struct Run {
    /// What the server wrote, `Date` values replaced by `D`.
    wire: String,
    /// The outcome of each `serve` call.
    outcomes: Vec<Next>,
    requests: u64,
    /// The server shut its sending side and reads on to discard what the
    /// client still sends (a lingering close).
    lingering: bool,
}

fn run_with(config: Config, handler: &dyn Handler, chunks: &[&[u8]], eof: bool) -> Run {
    let mut scratch = Scratch::new(&config);
    let stopping = AtomicBool::new(false);
    let counters = Counters::default();
    let peer = crate::net::Peer::Ip(SocketAddr::from((Ipv4Addr::LOCALHOST, 40000)));
    let mut io = Script::new(chunks);
    io.eof = eof;
    // The client keeps sending while a handler waits for body bytes.
    io.patient = true;
    let mut conn = ConnState::default();
    let mut outcomes = Vec::new();
    let mut cx =
        Ctx { handler, config: &config, scratch: &mut scratch, stopping: &stopping, counters: &counters, peer };
    while io.release() || outcomes.is_empty() || eof {
        let next = serve(&mut conn, &mut io, &mut cx);
        let done = next == Next::Close;
        outcomes.push(next);
        if done || (io.chunks.is_empty() && !eof) {
            break;
        }
    }
    let lingering = io.shut_write && conn.linger_until().is_some();
    Run { wire: redact_dates(&io.written), outcomes, requests: conn.requests, lingering }
}

fn run(handler: &dyn Handler, chunks: &[&[u8]]) -> Run {
    run_with(Config::default(), handler, chunks, false)
}

fn redact_dates(wire: &[u8]) -> String {
    let text = String::from_utf8_lossy(wire).into_owned();
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("Date: ") {
        out.push_str(&rest[..at + 6]);
        out.push('D');
        rest = &rest[at + 6 + crate::date::DATE_LEN..];
    }
    out.push_str(rest);
    out
}

fn hello(_: &mut Request<'_>) -> Response {
    Response::text("hello").with_content_type("text/plain")
}

const HELLO: &str = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";

fn echo(req: &mut Request<'_>) -> Response {
    let mut body = Vec::new();
    match req.read_to_end(&mut body) {
        Ok(_) => Response::bytes(body).with_content_type("text/plain"),
        Err(_) => Response::status(400),
    }
}

#[test]
fn keeps_alive_and_parks_when_idle() {
    let r = run(&hello, &[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    assert_eq!(r.wire, format!("{HELLO}{HELLO}"));
    assert_eq!(r.outcomes, [Next::Park, Next::Park]);
}

#[test]
fn pipelined_requests_are_answered_in_order_in_one_write() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let handler = move |req: &mut Request<'_>| {
        log.lock().unwrap().push(req.path().to_string());
        Response::text(req.path().to_string()).with_content_type("text/plain")
    };
    let three =
        b"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\nGET /3 HTTP/1.1\r\nHost: a\r\n\r\n";
    let r = run(&handler, &[three]);
    let one =
        |p: &str| format!("HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{p}");
    assert_eq!(r.wire, format!("{}{}{}", one("/1"), one("/2"), one("/3")));
    assert_eq!(*seen.lock().unwrap(), ["/1", "/2", "/3"]);
}

#[test]
fn a_head_trickled_one_byte_at_a_time_is_served() {
    let req = b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc";
    let chunks: Vec<&[u8]> = req.chunks(1).collect();
    let r = run(&echo, &chunks);
    assert_eq!(r.wire, "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc");
    assert_eq!(r.requests, 1);
    assert!(r.outcomes.iter().all(|o| *o == Next::Park));
}

#[test]
fn a_higher_minor_version_is_served_as_http11_at_every_cut_of_its_request_line() {
    let req = b"\r\nGET / HTTP/1.2\r\nHost: a\r\n\r\n";
    for cut in 1..req.len() {
        let r = run(&hello, &[&req[..cut], &req[cut..]]);
        assert!(r.wire.starts_with("HTTP/1.1 200 OK\r\n"), "cut at {cut}: {}", r.wire);
        assert_eq!(r.requests, 1, "cut at {cut}");
    }
}

#[test]
fn head_gets_length_but_no_body() {
    let r = run(&hello, &[b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    assert_eq!(r.wire, "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n");
    assert_eq!(r.outcomes, [Next::Park]);
}

#[test]
fn http10_closes_by_default() {
    let r = run(&hello, &[b"GET / HTTP/1.0\r\n\r\n"]);
    assert_eq!(
        r.wire,
        "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
    );
    assert_eq!(r.outcomes, [Next::Close]);
}

#[test]
fn http10_keep_alive_is_honoured() {
    let r = run(&hello, &[b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"]);
    assert_eq!(
        r.wire,
        "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello"
    );
    assert_eq!(r.outcomes, [Next::Park]);
}

#[test]
fn connection_close_from_the_client_closes() {
    let r = run(&hello, &[b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    assert_eq!(r.wire.matches("HTTP/1.1 200").count(), 1);
    assert!(r.wire.contains("Connection: close\r\n"));
    // Closing with the client possibly still sending: a lingering close.
    assert_eq!(r.outcomes, [Next::Park]);
    assert!(r.lingering);
}

#[test]
fn an_unparsable_head_gets_400_and_close_after_earlier_responses() {
    let r = run(&hello, &[b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nBad Header: x\r\n\r\n"]);
    assert_eq!(
        r.wire,
        format!(
            "{HELLO}HTTP/1.1 400 Bad Request\r\nDate: D\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 11\r\nConnection: close\r\n\r\nBad Request"
        )
    );
    // Closing with the client possibly still sending: a lingering close.
    assert_eq!(r.outcomes, [Next::Park]);
    assert!(r.lingering);
}

#[test]
fn a_panicking_handler_gets_500_and_close() {
    let handler = |_: &mut Request<'_>| -> Response { panic!("boom") };
    let r = run(&handler, &[b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    assert!(r.wire.starts_with("HTTP/1.1 500 Internal Server Error\r\n"), "{}", r.wire);
    assert!(r.wire.contains("Connection: close\r\n"));
    assert_eq!(r.wire.matches("HTTP/1.1").count(), 1);
    // Closing with the client possibly still sending: a lingering close.
    assert_eq!(r.outcomes, [Next::Park]);
    assert!(r.lingering);
}

#[test]
fn a_lingering_close_discards_what_follows_and_closes_at_the_end_of_stream() {
    let chunks: [&[u8]; 3] = [b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n", b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", b"x"];
    let r = run_with(Config::default(), &hello, &chunks, true);
    assert!(r.wire.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{}", r.wire);
    assert_eq!(r.wire.matches("HTTP/1.1").count(), 1, "{}", r.wire);
    assert_eq!(r.outcomes, [Next::Park, Next::Park, Next::Close]);
    assert_eq!(r.requests, 1);
}

#[test]
fn an_unread_body_is_drained_never_parsed_as_a_request() {
    let smuggled = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 30\r\n\r\nGET /admin HTTP/1.1\r\nHost: a\r\n\r\n";
    let paths = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = paths.clone();
    let handler = move |req: &mut Request<'_>| {
        log.lock().unwrap().push(req.path().to_string());
        Response::status(204)
    };
    let r = run(&handler, &[smuggled, b"GET /next HTTP/1.1\r\nHost: a\r\n\r\n"]);
    assert_eq!(*paths.lock().unwrap(), ["/", "/next"]);
    assert_eq!(r.wire.matches("HTTP/1.1 204").count(), 2);
}

#[test]
fn a_body_too_long_to_drain_closes_the_connection() {
    let config = Config { max_drain_bytes: 10, ..Config::default() };
    let mut req = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n".to_vec();
    req.extend_from_slice(&[b'x'; 20_000]);
    let r = run_with(config, &hello, &[&req], false);
    assert!(r.wire.starts_with("HTTP/1.1 200 OK\r\n"), "{}", r.wire);
    assert!(r.wire.contains("Connection: close\r\n"));
    // Closing with the client possibly still sending: a lingering close.
    assert_eq!(r.outcomes, [Next::Park]);
    assert!(r.lingering);
}

#[test]
fn expect_continue_is_answered_when_the_body_is_read() {
    let r = run(&echo, &[b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", b"ok"]);
    assert!(r.wire.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"), "{}", r.wire);
    assert!(r.wire.ends_with("\r\n\r\nok"));
}

#[test]
fn expect_continue_unread_gets_the_response_and_a_close() {
    let r = run(&hello, &[b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"]);
    assert!(!r.wire.contains("100 Continue"), "{}", r.wire);
    assert!(r.wire.starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(r.wire.contains("Connection: close\r\n"));
    // Closing with the client possibly still sending: a lingering close.
    assert_eq!(r.outcomes, [Next::Park]);
    assert!(r.lingering);
}

#[test]
fn chunked_request_body_is_decoded() {
    let r = run(&echo, &[b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"]);
    assert!(r.wire.ends_with("Content-Length: 3\r\n\r\nabc"), "{}", r.wire);
    assert_eq!(r.outcomes, [Next::Park]);
}

#[test]
fn malformed_chunked_body_gets_400_and_close() {
    let r = run(&echo, &[b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"]);
    assert!(r.wire.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{}", r.wire);
    // Closing with the client possibly still sending: a lingering close.
    assert_eq!(r.outcomes, [Next::Park]);
    assert!(r.lingering);
}

#[test]
fn chunked_body_over_the_limit_gets_413() {
    let mut config = Config::default();
    config.limits.max_body_bytes = 4;
    let r = run_with(
        config,
        &echo,
        &[b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"],
        false,
    );
    assert!(r.wire.starts_with("HTTP/1.1 413 Content Too Large\r\n"), "{}", r.wire);
    // Closing with the client possibly still sending: a lingering close.
    assert_eq!(r.outcomes, [Next::Park]);
    assert!(r.lingering);
}

#[test]
fn streamed_response_is_chunked_for_http11_and_close_delimited_for_http10() {
    let handler = |_: &mut Request<'_>| Response::reader(&b"stream"[..], None).with_content_type("text/plain");
    let r = run(&handler, &[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    assert_eq!(
        r.wire,
        "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nstream\r\n0\r\n\r\n"
    );
    let r = run(&handler, &[b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"]);
    assert_eq!(r.wire, "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nstream");
    assert_eq!(r.outcomes, [Next::Close]);
}

#[test]
fn an_invalid_handler_header_becomes_500() {
    let handler = |_: &mut Request<'_>| Response::text("x").with_header("X", "a\r\nInjected: 1");
    let r = run(&handler, &[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    assert!(r.wire.starts_with("HTTP/1.1 500 Internal Server Error\r\n"), "{}", r.wire);
    assert!(!r.wire.contains("Injected"));
    assert_eq!(r.outcomes, [Next::Close]);
}

#[test]
fn end_of_stream_between_requests_closes_quietly() {
    let r = run_with(Config::default(), &hello, &[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"], true);
    assert_eq!(r.wire, HELLO);
    assert_eq!(r.outcomes.last(), Some(&Next::Close));
}

#[test]
fn answers_to_a_pipelined_burst_are_written_as_they_pile_up_not_all_kept() {
    let config = Config::default();
    let mut scratch = Scratch::new(&config);
    let stopping = AtomicBool::new(false);
    let counters = Counters::default();
    let burst = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".repeat(100);
    let mut io = Script::new(&[&burst]);
    io.release();
    let mut conn = ConnState::default();
    let peer = crate::net::Peer::Ip(SocketAddr::from((Ipv4Addr::LOCALHOST, 1)));
    let big = |_: &mut Request<'_>| Response::bytes(vec![b'x'; 30_000]);
    let mut cx =
        Ctx { handler: &big, config: &config, scratch: &mut scratch, stopping: &stopping, counters: &counters, peer };
    assert_eq!(serve(&mut conn, &mut io, &mut cx), Next::Park);
    assert_eq!(conn.requests, 100);
    assert_eq!(redact_dates(&io.written).matches("HTTP/1.1 200 OK").count(), 100);
    // 100 answers of 30 kB went out; at most about three were queued at once.
    assert!(scratch.out.capacity() < 256 * 1024, "queue grew to {} bytes", scratch.out.capacity());
}

/// Serves `io` with `handler` on one connection, call after call, the way
/// a worker would after each readiness event.
struct Served<'h> {
    config: Config,
    scratch: Scratch,
    stopping: AtomicBool,
    counters: Counters,
    handler: &'h dyn Handler,
    conn: ConnState,
}

impl<'h> Served<'h> {
    fn new(handler: &'h dyn Handler) -> Served<'h> {
        let config = Config::default();
        let scratch = Scratch::new(&config);
        let (stopping, counters, conn) = (AtomicBool::new(false), Counters::default(), ConnState::default());
        Served { config, scratch, stopping, counters, handler, conn }
    }

    fn serve(&mut self, io: &mut Script) -> Next {
        let peer = crate::net::Peer::Ip(SocketAddr::from((Ipv4Addr::LOCALHOST, 1)));
        let mut cx = Ctx {
            handler: self.handler,
            config: &self.config,
            scratch: &mut self.scratch,
            stopping: &self.stopping,
            counters: &self.counters,
            peer,
        };
        serve(&mut self.conn, io, &mut cx)
    }
}

fn big(_: &mut Request<'_>) -> Response {
    Response::bytes(vec![b'x'; 100_000])
}

const BIG_HEAD: &str =
    "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n";

/// `wire` is `expected` (compared without printing 100 kB on failure).
fn assert_wire(wire: &[u8], expected: &str) {
    let wire = redact_dates(wire);
    let at = wire.bytes().zip(expected.bytes()).position(|(a, b)| a != b).unwrap_or(wire.len().min(expected.len()));
    assert!(
        wire == expected,
        "wire differs at byte {at} of {} (expected {}): {:?}",
        wire.len(),
        expected.len(),
        &wire[at.saturating_sub(40)..(at + 40).min(wire.len())]
    );
}

#[test]
fn a_large_answer_the_client_is_slow_to_take_parks_with_the_rest() {
    let mut s = Served::new(&big);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    io.room = Some(10_000);
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(io.written.len(), 10_000);
    assert!(s.conn.unsent_since().is_some());
    assert_eq!(s.conn.requests, 1, "the pipelined request waits for the answer before it");
    assert_eq!(s.conn.head_started(), None, "and its head clock does not run meanwhile");
    io.room = Some(50_000);
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(io.written.len(), 60_000);
    io.room = None;
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.unsent_since(), None);
    assert_eq!(s.conn.requests, 2);
    let body = "x".repeat(100_000);
    assert_wire(&io.written, &format!("{BIG_HEAD}{body}{BIG_HEAD}{body}"));
}

#[test]
fn a_slow_client_s_answer_before_a_close_is_finished_then_the_connection_closes() {
    let mut s = Served::new(&big);
    let mut io = Script::new(&[b"GET / HTTP/1.0\r\n\r\n"]);
    io.release();
    io.room = Some(0);
    assert_eq!(s.serve(&mut io), Next::Park);
    assert!(io.written.is_empty());
    io.room = None;
    assert_eq!(s.serve(&mut io), Next::Close);
    let body = "x".repeat(100_000);
    assert_wire(&io.written, &format!("{}{body}", BIG_HEAD.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n")));
}

#[test]
fn answers_to_a_pipelined_burst_the_client_does_not_read_wait_parked() {
    let mut s = Served::new(&|_: &mut Request<'_>| Response::bytes(vec![b'y'; 20_000]));
    let burst = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".repeat(20);
    let mut io = Script::new(&[&burst]);
    io.release();
    io.room = Some(0);
    assert_eq!(s.serve(&mut io), Next::Park);
    assert!(s.conn.unsent_since().is_some());
    let answered = s.conn.requests;
    assert!(answered < 20, "it stopped answering once the answers piled up");
    // Each time the client takes some, more is answered.
    let mut rounds = 0;
    while s.conn.requests < 20 || s.conn.unsent_since().is_some() {
        io.room = Some(100_000);
        assert_eq!(s.serve(&mut io), Next::Park);
        rounds += 1;
        assert!(rounds < 100);
    }
    assert_eq!(redact_dates(&io.written).matches("HTTP/1.1 200 OK").count(), 20);
    let one = format!(
        "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: application/octet-stream\r\nContent-Length: 20000\r\n\r\n{}",
        "y".repeat(20_000)
    );
    assert_wire(&io.written, &one.repeat(20));
}

#[test]
fn answers_a_slow_client_has_not_taken_go_out_before_a_handler_waits_for_a_body() {
    let handler = |req: &mut Request<'_>| if req.method() == "GET" { hello(req) } else { echo(req) };
    let mut s = Served::new(&handler);
    let mut io = Script::new(&[
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"5\r\nhello\r\n0\r\n\r\n",
    ]);
    io.release();
    io.patient = true;
    io.room = Some(0);
    // The POST's handler would wait for its body with the GET's answer
    // still queued: the connection parks first, the POST left unparsed.
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.requests, 1);
    assert!(s.conn.unsent_since().is_some());
    assert!(s.conn.has_partial_head());
    io.room = None;
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.requests, 2);
    let echoed = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
    assert_wire(&io.written, &format!("{HELLO}{echoed}"));
}

#[test]
fn bytes_held_for_a_slow_client_are_counted_and_given_back() {
    let mut s = Served::new(&big);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    io.room = Some(10);
    assert_eq!(s.serve(&mut io), Next::Park);
    let head = BIG_HEAD.len() - "D".len() + crate::date::DATE_LEN;
    // The head's rest, and the whole body (it is kept as it is).
    assert_eq!(s.counters.snapshot(0, 0).unsent_bytes, (head - 10 + 100_000) as u64);
    io.room = None;
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.counters.snapshot(0, 0).unsent_bytes, 0);
}

#[test]
fn past_the_cap_on_held_bytes_the_worker_waits_for_the_slow_client() {
    let mut s = Served::new(&big);
    s.config.max_unsent_bytes = 50_000;
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    io.room = Some(10);
    // The script's wait for room lets the client take the rest.
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.unsent_since(), None);
    assert_eq!(s.counters.snapshot(0, 0).unsent_bytes, 0);
    assert_wire(&io.written, &format!("{BIG_HEAD}{}", "x".repeat(100_000)));
}

#[test]
fn at_shutdown_an_unsent_answer_is_finished_waiting_then_closed() {
    let mut s = Served::new(&big);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    io.room = Some(1000);
    assert_eq!(s.serve(&mut io), Next::Park);
    s.stopping.store(true, Ordering::Relaxed);
    // The script's wait for room lets the client take the rest; then the
    // connection is idle, and the worker closes it (parking is over).
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.unsent_since(), None);
    let body = "x".repeat(100_000);
    assert_wire(&io.written, &format!("{BIG_HEAD}{body}"));
}

#[test]
fn shutting_down_closes_after_the_request_at_hand() {
    let config = Config::default();
    let mut scratch = Scratch::new(&config);
    let stopping = AtomicBool::new(true);
    let counters = Counters::default();
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    let mut conn = ConnState::default();
    let peer = crate::net::Peer::Ip(SocketAddr::from((Ipv4Addr::LOCALHOST, 1)));
    let mut cx =
        Ctx { handler: &hello, config: &config, scratch: &mut scratch, stopping: &stopping, counters: &counters, peer };
    assert_eq!(serve(&mut conn, &mut io, &mut cx), Next::Close);
    let wire = redact_dates(&io.written);
    assert_eq!(wire.matches("HTTP/1.1 200").count(), 1);
    assert!(wire.contains("Connection: close\r\n"));
}

#[test]
fn a_parked_connection_keeps_only_its_unparsed_bytes() {
    let config = Config::default();
    let mut scratch = Scratch::new(&config);
    let stopping = AtomicBool::new(false);
    let counters = Counters::default();
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHo"]);
    io.release();
    let mut conn = ConnState::default();
    let peer = crate::net::Peer::Ip(SocketAddr::from((Ipv4Addr::LOCALHOST, 1)));
    let mut cx =
        Ctx { handler: &hello, config: &config, scratch: &mut scratch, stopping: &stopping, counters: &counters, peer };
    assert_eq!(serve(&mut conn, &mut io, &mut cx), Next::Park);
    assert_eq!(conn.buf.len(), 18);
    assert!(conn.head_started().is_some());
    assert_eq!(scratch.buffers.len(), 1, "the full buffer went back to the worker");
}

#[test]
fn a_head_past_its_deadline_gets_408() {
    let config = Config { head_timeout: std::time::Duration::ZERO, ..Config::default() };
    let r = run_with(config, &hello, &[b"GET / HTTP/1.1\r\n", b"Host: a\r\n\r\n"], false);
    assert!(r.wire.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{}", r.wire);
    assert_eq!(r.outcomes, [Next::Park, Next::Park]);
    assert!(r.lingering);
}

#[test]
fn a_stream_closure_writes_chunks_for_http11_and_raw_for_http10() {
    use std::io::Write;
    let handler = |_: &mut Request<'_>| {
        Response::stream(|out| {
            out.write_all(b"data: 1\n\n")?;
            out.flush()?;
            out.write_all(b"data: 2\n\n")
        })
        .with_content_type("text/event-stream")
    };
    let r = run(&handler, &[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    assert_eq!(
        r.wire,
        "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n"
    );
    assert_eq!(r.outcomes, [Next::Park]);
    let r = run(&handler, &[b"GET / HTTP/1.0\r\n\r\n"]);
    assert!(r.wire.ends_with("Connection: close\r\n\r\ndata: 1\n\ndata: 2\n\n"), "{}", r.wire);
}

#[test]
fn a_failing_stream_closure_closes_the_connection() {
    let handler = |_: &mut Request<'_>| Response::stream(|_| Err(std::io::ErrorKind::Other.into()));
    let r = run(&handler, &[b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    assert_eq!(r.wire.matches("HTTP/1.1 200").count(), 1);
    assert_eq!(r.outcomes, [Next::Close]);
}

#[test]
fn a_small_body_is_collected_while_parked_before_the_handler_runs() {
    // The transport is not patient: a handler waiting on the socket for body
    // bytes would time out (408). The body is gathered between parks instead.
    let config = Config::default();
    let mut scratch = Scratch::new(&config);
    let stopping = AtomicBool::new(false);
    let counters = Counters::default();
    let mut io = Script::new(&[b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\n\r\nab", b"cd", b"ef"]);
    let mut conn = ConnState::default();
    let peer = crate::net::Peer::Ip(SocketAddr::from((Ipv4Addr::LOCALHOST, 1)));
    let mut cx =
        Ctx { handler: &echo, config: &config, scratch: &mut scratch, stopping: &stopping, counters: &counters, peer };
    let mut outcomes = Vec::new();
    while io.release() {
        outcomes.push(serve(&mut conn, &mut io, &mut cx));
    }
    assert_eq!(outcomes, [Next::Park, Next::Park, Next::Park]);
    let wire = redact_dates(&io.written);
    assert_eq!(wire, "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\nabcdef");
    assert!(conn.buf.is_empty(), "nothing kept while parked after the answer");
}

#[test]
fn a_file_body_is_sent_with_its_length_from_its_position() {
    use std::io::{Seek, SeekFrom, Write};
    let path = std::env::temp_dir().join(format!("httpool-conn-file-{}", std::process::id()));
    std::fs::File::create(&path).unwrap().write_all(b"0123456789").unwrap();
    let file_path = path.clone();
    let handler = move |_: &mut Request<'_>| {
        let mut file = std::fs::File::open(&file_path).unwrap();
        file.seek(SeekFrom::Start(2)).unwrap();
        Response::file(file, 5).with_content_type("text/plain")
    };
    let r = run(&handler, &[b"GET / HTTP/1.1\r\nHost: a\r\n\r\nHEAD / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    let head = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n";
    assert_eq!(r.wire, format!("{head}23456{head}"));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_file_body_the_client_is_slow_to_take_parks_at_its_place_in_the_file() {
    use std::io::{Seek, SeekFrom, Write};
    let path = std::env::temp_dir().join(format!("httpool-conn-slow-file-{}", std::process::id()));
    let content: Vec<u8> = (0..120_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::File::create(&path).unwrap().write_all(&content).unwrap();
    let file_path = path.clone();
    let handler = move |_: &mut Request<'_>| {
        let mut file = std::fs::File::open(&file_path).unwrap();
        file.seek(SeekFrom::Start(7)).unwrap();
        Response::file(file, 100_000)
    };
    let mut s = Served::new(&handler);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    for room in [30_000, 1, 25_000, 50_000] {
        io.room = Some(room);
        assert_eq!(s.serve(&mut io), Next::Park);
        assert!(s.conn.unsent_since().is_some(), "after {} bytes", io.written.len());
    }
    // Only the head's rest was in memory: the file stays on disk.
    assert_eq!(s.counters.snapshot(0, 0).unsent_bytes, 0);
    io.room = None;
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.unsent_since(), None);
    let body = String::from_utf8(content[7..100_007].to_vec()).unwrap();
    let head = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n";
    assert_wire(&io.written, &format!("{head}{body}{head}{body}"));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn past_the_cap_a_file_body_is_sent_with_the_worker_waiting() {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!("httpool-conn-capped-file-{}", std::process::id()));
    std::fs::File::create(&path).unwrap().write_all(&[b'c'; 70_000]).unwrap();
    let file_path = path.clone();
    let handler = move |_: &mut Request<'_>| Response::file(std::fs::File::open(&file_path).unwrap(), 70_000);
    let mut s = Served::new(&handler);
    s.config.max_unsent_bytes = 0;
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    io.room = Some(10);
    // The head's rest cannot be held: the worker waits (the script's wait
    // lets the client take everything), and nothing is left unsent.
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.unsent_since(), None);
    let head = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: application/octet-stream\r\nContent-Length: 70000\r\n\r\n";
    assert_wire(&io.written, &format!("{head}{}", "c".repeat(70_000)));
    std::fs::remove_file(&path).unwrap();
}
