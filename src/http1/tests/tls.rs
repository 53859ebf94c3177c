//! The connection loop over TLS: records in rustls count as input begun,
//! sessions end whole or torn, close_notify waits for room as answers do.

use super::*;

/// Over TLS, part of the record carrying the next request (in the session,
/// below what a read returns) is a head begun, as the first bytes of a
/// plain head are: a kept-alive connection parks under the head deadline,
/// not as an idle one, which the monitor closes at the idle deadline after
/// finding no request in the socket (the part is in rustls).
#[test]
fn part_of_a_tls_record_parks_a_kept_alive_connection_under_the_head_deadline() {
    let mut s = Served::new(&hello);
    s.config.idle_timeout = Duration::from_secs(1);
    s.config.head_timeout = Duration::from_secs(7);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.phase.kind(), Kind::Waiting { first: false });
    // Half of the next record arrives, and is read into the session.
    io.record_begun = true;
    let before = Instant::now();
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.phase.kind(), Kind::Head);
    assert!(s.conn.deadline(&s.config).unwrap() >= before + s.config.head_timeout);
}

/// How a connection's session ends, as TLS tells the client (RFC 9112
/// §9.8): whole (close_notify) after an answer that went out whole, at
/// once or lingering; torn (none) after one cut short, at once or
/// lingering over a request behind it. Over TLS the close_notify needs room
/// as the answers do: when the answers fill the socket it waits for room
/// with the parked connection (it was lost, and a whole close-delimited
/// answer looked truncated). A lingering close does not wait for it (it
/// reads on, so that a client still sending meets no reset): there a full
/// socket loses it.
#[test]
fn a_session_ends_whole_after_a_whole_answer_and_torn_after_a_cut_one() {
    use std::io::Write;
    let handler = |req: &mut Request<'_>| match req.path() {
        "/cut" => Response::stream(|out| {
            out.write_all(b"partial")?;
            out.flush()?;
            Err(std::io::ErrorKind::Other.into())
        }),
        _ => Response::stream(|out| out.write_all(b"whole")),
    };
    for (requests, whole) in [
        ("GET / HTTP/1.0\r\n\r\n", true),
        // Lingering.
        ("GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n", true),
        ("GET /cut HTTP/1.0\r\n\r\n", false),
        ("GET /cut HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n", false),
        ("GET /cut HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", false),
    ] {
        let session = |tls: bool, room: Option<usize>| {
            let mut s = Served::new(&handler);
            let mut io = Script::new(&[requests.as_bytes()]);
            io.tls = tls;
            s.run(&mut io, room);
            io
        };
        // The answers fill the socket exactly, or leave less room than the
        // alert takes, in each turn.
        let len = session(false, None).written.len();
        for (tls, room) in [(false, None), (true, None), (true, Some(len)), (true, Some(len + 3)), (true, Some(7))] {
            let io = session(tls, room);
            // Torn: no close_notify; a shutdown, if any, without it. A
            // lingering close, which shuts its write side, loses it when
            // the answers left it no room: ended either way.
            let lingers = requests.matches("GET").count() > 1;
            let ended = match (whole, lingers && room.is_some()) {
                (true, false) => Some(true),
                (true, true) => io.ended_whole.or(Some(true)),
                (false, _) => io.ended_whole.filter(|&w| !w),
            };
            assert_eq!(io.ended_whole, ended, "{requests:?}, tls {tls}, room {room:?}: {}", redact_dates(&io.written));
        }
    }
}

/// At shutdown an idle TLS connection whose client stopped reading (the
/// answers it was sent fill the socket) closes at once, its write side
/// shut: close_notify goes if there is room (best effort, as when the idle
/// timeout closes it). No answer of a connection gone idle is
/// close-delimited, so the alert tells the client nothing it needs; it
/// held the worker for the write timeout, closed without the shutdown and
/// counted a timeout.
#[test]
fn at_shutdown_an_idle_tls_connection_does_not_wait_for_room_for_close_notify() {
    let mut s = Served::new(&hello);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.tls = true;
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_wire(&io.written, HELLO);
    s.stopping.set();
    // The socket is full, and the client takes nothing more.
    io.room = Some(0);
    io.stalls = 1;
    assert_eq!(s.serve(&mut io), Next::Close);
    assert_eq!(io.stalls, 1, "the worker waited for room for close_notify");
    assert!(io.shut_write);
    assert_eq!(s.counters.snapshot(0, 0, 0, Default::default(), 0).timeouts, 0);
}

/// Over TLS, a close the server chooses after the client pipelined (and
/// nothing more came yet) ends the session whole, as it does for a
/// client that waits for each answer: the close-delimited answer is known
/// whole only by its close_notify, which must wait for room as the
/// answers do, though the close then lingers (1151912 sent it best effort
/// with the lingering close's shutdown, lost when the answers filled the
/// socket, and the whole answer looked truncated).
#[test]
fn a_close_after_pipelining_still_ends_a_tls_session_whole() {
    use std::io::Write;
    let handler = |_: &mut Request<'_>| Response::stream(|out| out.write_all(b"whole"));
    // Chunked, then close-delimited (HTTP/1.0): nothing behind the second.
    let requests = "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.0\r\n\r\n";
    let session = |tls: bool, room: Option<usize>| {
        let mut s = Served::new(&handler);
        let mut io = Script::new(&[requests.as_bytes()]);
        io.tls = tls;
        s.run(&mut io, room);
        (io, s.conn.phase.kind())
    };
    let len = session(false, None).0.written.len();
    for room in [None, Some(len), Some(len + 3), Some(7)] {
        let (io, kind) = session(true, room);
        assert_eq!(io.ended_whole, Some(true), "room {room:?}: {}", redact_dates(&io.written));
        assert!(redact_dates(&io.written).ends_with("whole"), "room {room:?}");
        // It still lingers: the client pipelined.
        assert!(io.shut_write, "room {room:?}: {kind:?}");
    }
}

/// Over TLS a write is taken whole into records, which the socket may not
/// have room for: a stream whose last bytes are held so waits for room like
/// one with bytes pending. (It parked watching for reads only, its records
/// stuck until something else woke it; with an event queued meanwhile, it
/// was served again at once, turn after turn: a worker spinning. Found by
/// a review.)
#[test]
fn an_event_stream_over_tls_waits_for_room_while_the_session_holds_its_records() {
    let (handler, rx) = opening_streams();
    let mut s = Served::new(&handler);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    (io.tls, io.records) = (true, true);
    s.run(&mut io, Some(5));
    let head = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/event-stream\r\ncache-control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(redact_dates(&io.written), head);
    assert!(io.held.is_empty() && !s.conn.waits_for_room());
    let events = rx.recv().unwrap();
    for i in 0..3 {
        events.send(&crate::events::Event::data(format!("e{i}"))).unwrap();
        // The server is woken by the sender; here, the test serves it again.
        s.run(&mut io, Some(5));
    }
    assert_eq!(
        redact_dates(&io.written),
        format!("{head}a\r\ndata: e0\n\n\r\na\r\ndata: e1\n\n\r\na\r\ndata: e2\n\n\r\n")
    );
}
