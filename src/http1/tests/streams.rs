//! Bodies written on the worker (a stream's closure, a reader, a file) and cut
//! short, and connections that park between messages: event streams and
//! WebSocket sessions.

use super::*;

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
    r.is(
        "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n",
        &[Next::Park],
    );
    let r = run(&handler, &[b"GET / HTTP/1.0\r\n\r\n"]);
    assert!(r.wire.ends_with("Connection: close\r\n\r\ndata: 1\n\ndata: 2\n\n"), "{}", r.wire);
}

/// A stream that fails cuts its answer short and closes the connection:
/// at once when nothing else came, lingering over a request behind it.
#[test]
fn a_failing_stream_closure_closes_the_connection() {
    let handler = |_: &mut Request<'_>| Response::stream(|_| Err(std::io::ErrorKind::Other.into()));
    let r = run(&handler, &[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    assert_eq!(r.wire.matches("HTTP/1.1 200").count(), 1);
    assert_eq!(r.outcomes, [Next::Close]);
    let r = run(&handler, &[b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    assert_eq!(r.wire.matches("HTTP/1.1 200").count(), 1);
    assert!(r.lingering, "{:?}", r.outcomes);
}

/// A close the server chooses after a client has pipelined lingers though
/// nothing more is here yet: the client sends ahead of the answers, and a
/// request it sent before reading the `close` would otherwise meet a
/// closed socket, whose reset can destroy the answers not yet read. A
/// client that waits for each answer is closed at once.
#[test]
fn a_close_the_server_chooses_after_the_client_pipelined_lingers() {
    let handler = |req: &mut Request<'_>| match req.path() {
        "/last" => Response::text("bye").with_close(),
        _ => Response::text("hi"),
    };
    let pipelined = "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /last HTTP/1.1\r\nHost: a\r\n\r\n";
    let behind = "GET /behind HTTP/1.1\r\nHost: a\r\n\r\n";
    let r = run(&handler, &[pipelined.as_bytes(), behind.as_bytes()]);
    assert_eq!(r.wire.matches("HTTP/1.1 200").count(), 2, "{}", r.wire);
    assert!(r.wire.ends_with("Connection: close\r\n\r\nbye"), "{}", r.wire);
    assert!(r.lingering, "{:?}", r.outcomes);
    assert_eq!(r.requests, 2);
    // One at a time: closed at once.
    let one = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n";
    let last = "GET /last HTTP/1.1\r\nHost: a\r\n\r\n";
    let r = run(&handler, &[one.as_bytes(), last.as_bytes()]);
    assert_eq!(r.outcomes, [Next::Park, Next::Close]);
    assert!(!r.lingering);
}

/// A stream whose closure swallows a failed flush (a server-sent-events
/// loop that stops when the client seems gone) and returns `Ok`: the
/// answer is still cut short, without its last chunk, and the request
/// behind it is not served on the torn connection.
#[test]
fn a_stream_that_swallows_a_failed_flush_is_still_cut_short() {
    use std::io::Write;
    let handler = |req: &mut Request<'_>| match req.path() {
        "/events" => Response::stream(|out| {
            for _ in 0..3 {
                out.write_all(b"data: tick\n\n")?;
                if out.flush().is_err() {
                    return Ok(());
                }
            }
            Ok(())
        }),
        _ => Response::text("hello"),
    };
    let mut s = Served::new(&handler);
    let mut io = Script::new(&[b"GET /events HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    // The head and a little of the first event go; the client then stops
    // reading past the write timeout.
    io.room = Some(100);
    io.stalls = 1;
    let next = s.serve(&mut io);
    let wire = redact_dates(&io.written);
    assert!(wire.starts_with("HTTP/1.1 200 OK\r\n"), "{wire}");
    assert!(!wire.contains("0\r\n\r\n") && !wire.contains("hello"), "{wire}");
    // Closed lingering (the request behind it unread).
    assert_eq!(next, Next::Park);
    assert!(io.shut_write && matches!(s.conn.phase.kind(), Kind::Lingering { .. }), "{wire}");
}

/// A body's own code that panics (a stream's closure, a reader's `read`)
/// cuts its answer short like an error: the answer queued before it still
/// goes out whole, and the connection closes, lingering (the client has
/// pipelined). (Left to the worker, the panic dropped the queued answers
/// with the connection.)
#[test]
fn a_panicking_body_cuts_its_answer_short_after_the_answers_before_it() {
    struct Boom;
    impl std::io::Read for Boom {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            panic!("a reader that panics");
        }
    }
    let handler = |req: &mut Request<'_>| match req.path() {
        "/stream" => Response::stream(|_| panic!("a stream that panics")),
        "/reader" => Response::reader(Boom, None),
        _ => Response::text("hello"),
    };
    for path in ["/stream", "/reader"] {
        let pipelined = format!("GET / HTTP/1.1\r\nHost: a\r\n\r\nGET {path} HTTP/1.1\r\nHost: a\r\n\r\n");
        let r = run(&handler, &[pipelined.as_bytes()]);
        let end_of_first = "Content-Length: 5\r\n\r\nhello";
        let first_end = r.wire.find(end_of_first).expect("the first answer, whole") + end_of_first.len();
        let second = &r.wire[first_end..];
        assert!(
            second.starts_with("HTTP/1.1 200 OK\r\n") && second.ends_with("Transfer-Encoding: chunked\r\n\r\n"),
            "{path}: {second}"
        );
        assert_eq!(r.outcomes, [Next::Park], "{path}");
        assert!(r.lingering, "{path}");
    }
}

/// A body that fails mid-answer with requests still unread in the socket
/// (more than a read takes) closes lingering: closed at once, the kernel
/// would reset the connection, and the reset can destroy the answers the
/// client has not read yet, the whole ones queued before the cut one too.
/// (The driver fails a run that closes with input unread.)
#[test]
fn a_body_failing_mid_answer_lingers_over_requests_still_unread() {
    let handler = |req: &mut Request<'_>| match req.path() {
        "/stream" => Response::stream(|w| {
            std::io::Write::write_all(w, b"part")?;
            Err(std::io::Error::other("the source failed"))
        }),
        "/panics" => Response::stream(|_| panic!("a stream that panics")),
        _ => Response::text("hello"),
    };
    let pad = "p".repeat(Config::default().read_buffer_size());
    for path in ["/stream", "/panics"] {
        let pipelined = format!(
            "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET {path} HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\nX-Pad: {pad}\r\n\r\n"
        );
        let r = run_with(Config::default(), &handler, &[pipelined.as_bytes()], true);
        assert!(r.wire.starts_with("HTTP/1.1 200 OK\r\n"), "{path}: {}", r.wire);
        assert!(r.wire.contains("Content-Length: 5\r\n\r\nhello"), "{path}: the first answer, whole");
        assert_eq!(r.wire.matches("HTTP/1.1 ").count(), 2, "{path}: nothing after the cut answer");
        assert_eq!(r.requests, 2, "{path}");
        assert_eq!(r.outcomes.last(), Some(&Next::Close), "{path}");
    }
}

/// A body that fails mid-answer to a request whose own body is still on
/// its way (too long to drain): the close must linger as it does after a
/// whole answer. The socket happens to hold nothing at the moment of the
/// close, but the client is still sending its body: closed at once, the
/// kernel resets the connection under the answer.
#[test]
fn a_body_failing_mid_answer_lingers_over_a_request_body_still_coming() {
    let config = Config { max_drain_bytes: 10, body_buffer_bytes: 0, ..Config::default() };
    let failing = |_: &mut Request<'_>| {
        Response::stream(|w| {
            std::io::Write::write_all(w, b"part")?;
            Err(std::io::Error::other("the source failed"))
        })
    };
    let mut head = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n".to_vec();
    head.extend_from_slice(&[b'x'; 100]);
    let rest = [b'x'; 1000];
    // The same request answered whole lingers (the control).
    let r = run_with(config.clone(), &hello, &[&head, &rest], false);
    assert!(r.lingering, "{:?}", r.outcomes);
    let r = run_with(config, &failing, &[&head, &rest], false);
    assert!(r.wire.starts_with("HTTP/1.1 200 OK\r\n"), "{}", r.wire);
    assert!(r.lingering, "closed at once with the request body still coming: {:?}", r.outcomes);
}

/// A file body that fails (the file is shorter than its length) once the
/// client, slow to take the answers, has left it held with the connection:
/// the close lingers over the requests still unread, as when a body fails
/// at once. Closed at once, the reset could destroy the answers the client
/// has not read yet, the whole one before the cut one too. (The driver
/// fails a run that closes with input unread.)
#[test]
fn a_file_body_failing_after_a_slow_client_lingers_over_requests_still_unread() {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!("httpool-conn-short-file-{}", std::process::id()));
    std::fs::File::create(&path).unwrap().write_all(b"0123456789").unwrap();
    let file_path = path.clone();
    let handler = move |req: &mut Request<'_>| match req.path() {
        // 10 bytes on disk, 1000 promised.
        "/file" => Response::file(std::fs::File::open(&file_path).unwrap(), 1000),
        _ => hello(req),
    };
    let pad = "p".repeat(Config::default().read_buffer_size());
    let pipelined = format!(
        "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /file HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\nX-Pad: {pad}\r\n\r\n"
    );
    let mut s = Served::new(&handler);
    let mut io = Script::new(&[pipelined.as_bytes()]);
    // The client takes 64 bytes a turn: the answers are held, and the file
    // is read only once the client has taken what came before it.
    let ended = s.run(&mut io, Some(64));
    let wire = redact_dates(&io.written);
    let head = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000\r\n\r\n";
    assert_eq!(wire, format!("{HELLO}{head}0123456789"), "the first answer whole, then the cut one");
    assert_eq!(s.conn.requests, 2);
    assert!(ended.closed && io.shut_write, "{:?}", s.outcomes);
    assert!(io.current.is_empty(), "what the client sent was read and discarded");
    std::fs::remove_file(&path).unwrap();
}

/// An event stream's handler: three events queued, then every sender gone.
fn three_events(_: &mut Request<'_>) -> Response {
    let (events, resp) = crate::events::channel();
    for i in 1..=3 {
        events.send(&crate::events::Event::data(format!("e{i}"))).unwrap();
    }
    resp
}

#[test]
fn an_event_stream_goes_out_whole_to_a_client_taking_a_byte_at_a_time_and_the_connection_serves_on() {
    let handler = |req: &mut Request<'_>| if req.path() == "/events" { three_events(req) } else { hello(req) };
    let mut s = Served::new(&handler);
    let requests = "GET /events HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n";
    let mut io = Script::new(&[requests.as_bytes()]);
    let ended = s.run(&mut io, Some(1));
    let head = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/event-stream\r\ncache-control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
    let events = "1e\r\ndata: e1\n\ndata: e2\n\ndata: e3\n\n\r\n0\r\n\r\n";
    assert_eq!(redact_dates(&io.written), format!("{head}{events}{HELLO}"));
    assert!(!ended.closed);
    assert_eq!(s.conn.requests, 2);
}

#[test]
fn events_sent_while_the_stream_is_parked_are_written_when_it_is_served_again() {
    let (handler, rx) = opening_streams();
    let mut s = Served::new(&handler);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    s.run(&mut io, Some(3));
    assert!(s.conn.is_streaming());
    let events = rx.recv().unwrap();
    let before = io.written.len();
    events.send(&crate::events::Event::data("late")).unwrap();
    // The server is woken by the sender; here, the test serves it again.
    s.run(&mut io, Some(3));
    assert_eq!(&io.written[before..], b"c\r\ndata: late\n\n\r\n");
    drop(events);
    s.run(&mut io, Some(3));
    assert!(io.written.ends_with(b"\r\n0\r\n\r\n"));
    assert!(!s.conn.is_streaming());
}

/// A stream whose sender keeps its queue full, to a client that keeps up,
/// gives its worker back after a turn's share of bytes (the seat's other
/// connections go first), and is written whole over the turns that follow.
#[test]
fn a_stream_yields_its_worker_after_a_turns_share_of_bytes() {
    const EVENT: usize = 100 * 1024;
    let handler = |_: &mut Request<'_>| {
        let (events, resp) = crate::events::EventStream::new().queue_limit(8 * EVENT).open();
        for _ in 0..6 {
            events.send(&crate::events::Event::data("x".repeat(EVENT))).unwrap();
        }
        resp
    };
    let mut s = Served::new(&handler);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    s.run(&mut io, None);
    let yields = s.outcomes.iter().filter(|&&n| n == Next::Yield).count();
    assert!(yields >= 1, "{:?}", s.outcomes);
    let body = &io.written[io.written.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4..];
    assert_eq!(body.iter().filter(|&&b| b == b'x').count(), 6 * EVENT);
    assert!(body.ends_with(b"\r\n0\r\n\r\n"), "the stream ended once its sender was gone");
}

#[cfg(feature = "websocket")]
#[test]
fn a_websocket_session_reads_frames_cut_anywhere_and_answers_a_client_taking_a_byte_at_a_time() {
    use crate::websocket::Message;
    let handler = |req: &mut Request<'_>| {
        crate::websocket::accept(req, |ws, message| {
            if let Message::Text(text) = message {
                let _ = ws.send(Message::Text(text));
            }
        })
        .1
    };
    let handshake = "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
    // "hi" masked with 0, then a close (1000), each cut in two.
    let text = [0x81u8, 0x82, 0, 0, 0, 0, b'h', b'i'];
    let close = [0x88u8, 0x82, 0, 0, 0, 0, 0x03, 0xe8];
    let chunks: [&[u8]; 5] = [handshake.as_bytes(), &text[..3], &text[3..], &close[..5], &close[5..]];
    let mut s = Served::new(&handler);
    let mut io = Script::new(&chunks);
    io.eof = true;
    let ended = s.run(&mut io, Some(1));
    let end = io.written.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = "HTTP/1.1 101 Switching Protocols\r\nDate: D\r\nupgrade: websocket\r\nsec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nConnection: upgrade\r\n\r\n";
    assert_eq!(redact_dates(&io.written[..end]), head);
    assert_eq!(io.written[end..], [0x81, 2, b'h', b'i', 0x88, 2, 0x03, 0xe8]);
    assert!(ended.closed);
}
