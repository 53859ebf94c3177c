//! Heads trickled, split or preceded by empty lines: when they are parsed, what
//! they cost, and the clocks that bytes carrying no request never move.

use super::*;

#[test]
fn a_head_past_its_deadline_gets_408() {
    let config = Config { head_timeout: std::time::Duration::ZERO, ..Config::default() };
    let r = run_with(config, &hello, &[b"GET / HTTP/1.1\r\n", b"Host: a\r\n\r\n"], false);
    assert!(r.wire.starts_with("HTTP/1.1 408 Request Timeout\r\n"), "{}", r.wire);
    assert_eq!(r.outcomes, [Next::Park, Next::Park]);
    assert!(r.lingering);
}

#[test]
fn empty_lines_start_no_head_and_move_no_clock() {
    let mut s = Served::new(&hello);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", b"\r\n", b"\r\n\r\n"]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    let (Kind::Waiting { first: false }, Some(idle_since)) = (s.conn.phase.kind(), s.conn.phase.since()) else {
        panic!("not idle: {:?}", s.conn.phase)
    };
    let deadline = s.conn.deadline(&s.config);
    while io.release() {
        assert_eq!(s.serve(&mut io), Next::Park);
        assert!(
            s.conn.phase.kind() == Kind::Waiting { first: false } && s.conn.phase.since() == Some(idle_since),
            "{:?}",
            s.conn.phase
        );
        assert_eq!(s.conn.deadline(&s.config), deadline);
    }
    // A new connection that sends only empty lines stays under the deadline
    // of its first head, counted from its accept.
    let accepted = Instant::now() - Duration::from_secs(3);
    let mut s = Served::new(&hello);
    s.conn = ConnState::new(Some(accepted));
    let mut io = Script::new(&[b"\r\n", b"\r\n"]);
    while io.release() {
        assert_eq!(s.serve(&mut io), Next::Park);
        assert_eq!(s.conn.deadline(&s.config), Some(accepted + s.config.head_timeout));
    }
}

#[test]
fn a_new_connection_s_first_head_runs_on_the_clock_of_its_accept() {
    let accepted = Instant::now() - Duration::from_secs(3);
    let mut s = Served::new(&hello);
    s.conn = ConnState::new(Some(accepted));
    let mut io = Script::new(&[b"GET / HT"]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    assert!(s.conn.phase.kind() == Kind::Head && s.conn.phase.since() == Some(accepted), "{:?}", s.conn.phase);
}

/// A client that sends nothing but empty lines, faster than the worker reads
/// them, has a bounded turn like any other: the worker yields after its
/// share of bytes (it used to read on for as long as the lines came, the
/// connection never parked, and no deadline could reach it), and once the
/// deadline of the request it never sent has passed, the connection closes.
#[test]
fn a_flood_of_empty_lines_yields_its_turn_and_meets_its_deadline() {
    let flood = b"\r\n".repeat(300 * 1024);
    let mut s = Served::new(&hello);
    let mut io = Script::new(&[&flood, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Yield, "600 KiB of empty lines read in one turn");
    // Its next turns, within its deadline, go on, and the request behind
    // the lines is served.
    let ended = s.run(&mut io, None);
    assert!(!ended.closed);
    assert_eq!(redact_dates(&io.written), HELLO);
    // The same flood from a new connection whose first head was due long
    // ago: it is closed, lingering, without an answer.
    let mut s = Served::new(&hello);
    s.conn = ConnState::new(Some(Instant::now() - 2 * s.config.head_timeout));
    let mut io = Script::new(&[&flood, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    let mut next = s.serve(&mut io);
    while next == Next::Yield && !io.shut_write {
        next = s.serve(&mut io);
    }
    assert!(io.shut_write, "the connection was not closed: {next:?}");
    assert_eq!(io.written, b"");
    assert_eq!(s.counters.snapshot(0, 0, 0, Default::default(), 0).timeouts, 1);
}

/// At shutdown, a turn that ends on its share of empty lines does not close
/// the connection while the drain lasts: a request the client sent behind
/// the lines, before the stop, is read in a later turn and answered (it was
/// read by the close and discarded).
#[test]
fn a_request_behind_a_flood_of_empty_lines_is_served_at_shutdown() {
    let flood = b"\r\n".repeat(300 * 1024);
    let mut s = Served::new(&hello);
    s.stopping.set();
    // One piece: the socket never runs dry before the request.
    let mut io = Script::new(&[&[&flood[..], b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"].concat()]);
    io.release();
    let mut next = s.serve(&mut io);
    while next == Next::Yield {
        next = s.serve(&mut io);
    }
    assert_eq!(next, Next::Close);
    let answer =
        "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
    assert_eq!(redact_dates(&io.written), answer);
}

/// A connection that has sent nothing but empty lines and parks past its
/// deadline is closed as it parks, as the monitor would close it. The
/// monitor may never find it parked: bytes that arrive between its last
/// read and its park mark it pending, and the worker serves it again at
/// once (`Shared::park`), with a new turn, for as long as they keep coming.
#[test]
fn empty_lines_past_the_deadline_close_the_connection_as_it_parks() {
    // A new connection whose first head was due long ago.
    let mut s = Served::new(&hello);
    s.conn = ConnState::new(Some(Instant::now() - 2 * s.config.head_timeout));
    let mut io = Script::new(&[b"\r\n"]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Close);
    assert_eq!(io.written, b"");
    assert_eq!(s.counters.snapshot(0, 0, 0, Default::default(), 0).timeouts, 1);
    // A kept-alive connection whose idle time is up (at once, here): an
    // empty line closes it, a request is served.
    let config = Config { idle_timeout: Duration::ZERO, ..Config::default() };
    let get: &[u8] = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    let r = run_with(config.clone(), &hello, &[get, get], false);
    r.is(format!("{HELLO}{HELLO}"), &[Next::Park, Next::Park]);
    let r = run_with(config, &hello, &[get, b"\r\n", get], false);
    r.is(HELLO, &[Next::Park, Next::Close]);
}

#[test]
fn a_lingering_close_against_a_fast_sender_yields_its_turn() {
    let flood = vec![b'x'; 600 * 1024];
    let mut s = Served::new(&hello);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n", &flood]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    io.release();
    let mut turns = 0;
    loop {
        match s.serve(&mut io) {
            Next::Yield => turns += 1,
            Next::Park => break,
            Next::Close => panic!("closed early"),
            Next::WaitForPlace => panic!("no call here blocks"),
        }
    }
    assert!(turns >= 2, "read 600 KiB in {turns} turns");
    assert!(io.is_drained());
}

#[test]
fn a_head_trickled_a_byte_at_a_time_costs_work_linear_in_its_size() {
    // 8 KiB of head in 62 lines, one byte per arrival.
    let mut head = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    for i in 0..60 {
        head.extend_from_slice(format!("X-Header-{i:03}: {}\r\n", "v".repeat(118)).as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    let chunks: Vec<&[u8]> = head.chunks(1).collect();
    crate::parse::work::PARSED.with(|n| n.set(0));
    crate::parse::work::COPIED.with(|n| n.set(0));
    let r = run(&hello, &chunks);
    assert_eq!(r.wire, HELLO);
    let parsed = crate::parse::work::PARSED.with(|n| n.get());
    let copied = crate::parse::work::COPIED.with(|n| n.get());
    // Parsed at each line's CR and LF (124 parses, at most the whole head
    // each) and at each doubling; copied a few times over. Parsing and
    // copying at every byte would be about 8 K parses: 33 M bytes each.
    let len = head.len();
    assert!(parsed < 140 * len, "parsed {parsed} bytes for a {len}-byte head");
    assert!(copied < 4 * len, "copied {copied} bytes for a {len}-byte head");
}

#[test]
fn a_cr_not_followed_by_lf_in_an_unfinished_head_is_refused_when_the_next_byte_comes() {
    // llhttp's "Missing CRLF-CRLF before body", in the pieces a client may
    // send it in: the byte after the CR decides, and is judged when it comes
    // (a trickled head is not parsed at every byte).
    let r = run(&echo, &[b"PUT /url HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r", b"abc"]);
    assert!(r.wire.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{}", r.wire);
    assert_eq!(r.requests, 1);
}

/// A head as large as `max_head_bytes` behind empty lines that fill the
/// rest of the read buffer: its chunked body, read on the socket by the
/// handler, still has room to be read into. (The empty lines counted in
/// the head's length; the body was given no room, its first read returned
/// 0, taken for the end of stream, and the request went unanswered.)
#[test]
fn a_head_behind_empty_lines_that_fill_the_buffer_still_has_room_for_its_body() {
    let config = Config { body_buffer_bytes: 0, ..Config::default() };
    let size = config.read_buffer_size();
    let max_head = config.limits.max_head_bytes;
    let start = "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nX: ";
    let head = format!("{start}{}\r\n\r\n", "a".repeat(max_head - start.len() - 4));
    assert_eq!(head.len(), max_head);
    for empty in ["\r\n", "\n"] {
        let first = format!("{}{head}", empty.repeat((size - max_head) / empty.len()));
        assert_eq!(first.len(), size);
        let r = run_with(config.clone(), &echo, &[first.as_bytes(), b"5\r\nhello\r\n0\r\n\r\n"], false);
        assert_eq!(r.wire, "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello");
    }
}

/// Leading empty lines before a request line are skipped by the parser,
/// and bare LFs are not trimmed when the connection parks (only CRLFs
/// are): each LF that arrives is a line end, so the whole buffer of LFs is
/// parsed again at each one. Work quadratic in the head's size (the linear
/// bound of `a_head_trickled_a_byte_at_a_time_costs_work_linear_in_its_size`).
#[test]
fn leading_bare_lfs_trickled_a_byte_at_a_time_cost_work_linear_in_their_size() {
    let lfs = vec![b'\n'; 8 * 1024];
    let mut chunks: Vec<&[u8]> = lfs.chunks(1).collect();
    chunks.push(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    crate::parse::work::PARSED.with(|n| n.set(0));
    let r = run(&hello, &chunks);
    let parsed = crate::parse::work::PARSED.with(|n| n.get());
    let len = lfs.len() + chunks.last().unwrap().len();
    // Whatever the verdict (served, or refused as a bare-LF head), the
    // parser must not see the buffer at every byte.
    assert!(r.wire.starts_with("HTTP/1.1 "), "{}", r.wire);
    assert!(parsed < 140 * len, "parsed {parsed} bytes for a {len}-byte head");
}

/// A readiness event may bring no new bytes to the parser (a TLS record
/// arriving a byte at a time: the socket is readable, the stream returns
/// `WouldBlock`). A head whose buffered bytes end in a CR is parsed again at
/// every such event, with nothing new to judge ("the byte after a CR" has
/// not come).
#[test]
fn a_head_ending_in_cr_is_not_parsed_again_when_no_byte_arrived() {
    let head: &[u8] = b"GET / HTTP/1.1\r\nHost: a\r\nX-Long: 0123456789012345678901234567890123456789\r";
    let mut chunks: Vec<&[u8]> = vec![head];
    // 1,000 wake-ups that bring nothing readable, then the rest.
    chunks.extend(std::iter::repeat_n(&b""[..], 1000));
    chunks.push(b"\n\r\n");
    crate::parse::work::PARSED.with(|n| n.set(0));
    let r = run(&hello, &chunks);
    let parsed = crate::parse::work::PARSED.with(|n| n.get());
    assert_eq!(r.wire, HELLO);
    assert!(parsed < 10 * head.len(), "parsed {parsed} bytes for a {}-byte head", head.len() + 3);
}

/// An empty line begins no head, whether its CR and LF arrive together or
/// apart (a CR alone once started a head: the head clock and its `408`
/// instead of the idle clock, and a request to finish at shutdown).
#[test]
fn an_empty_line_in_two_pieces_begins_no_head() {
    let pieces: [&[&[u8]]; 2] = [&[b"\r\n"], &[b"\r", b"\n"]];
    for pieces in pieces {
        let mut s = Served::new(&hello);
        let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
        io.release();
        assert_eq!(s.serve(&mut io), Next::Park);
        for piece in pieces {
            io.chunks.push_back(piece.to_vec());
            io.release();
            assert_eq!(s.serve(&mut io), Next::Park);
        }
        assert!(!s.conn.has_unparsed());
        assert!(!s.conn.must_finish(), "in {} pieces: {:?}", pieces.len(), s.conn.phase);
    }
}

/// At shutdown a connection that has sent an empty line in two pieces is
/// closed quietly, not handed to a worker to wait for a head the client
/// never began (and answered `408`).
#[test]
fn at_shutdown_an_empty_line_in_two_pieces_is_not_waited_for() {
    let mut s = Served::new(&hello);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", b"\r", b"\n"]);
    io.release();
    while {
        assert_eq!(s.serve(&mut io), Next::Park);
        io.release()
    } {}
    s.stopping.set();
    io.written.clear();
    if s.conn.must_finish() {
        // What the sweep does with it: back to a worker.
        assert_eq!(s.serve(&mut io), Next::Close);
    }
    assert_eq!(redact_dates(&io.written), "", "answered at shutdown");
}

/// A socket whose reads return at most `max` bytes: what a TLS stream (a
/// record at a time) or a client still sending hands out within one turn.
struct ShortReads {
    io: Script,
    max: usize,
}

impl std::io::Read for ShortReads {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.max);
        self.io.read(&mut buf[..n])
    }
}

impl std::io::Write for ShortReads {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.io.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Transport for ShortReads {
    fn wait(&mut self, ready: crate::io::Ready, timeout: Duration) -> std::io::Result<()> {
        self.io.wait(ready, timeout)
    }
}

/// Empty lines, then a request line with no end that passes the line limit
/// (`max_uri_bytes` + 64, here below `max_head_bytes`): a 414 however it is
/// read. (Read 1 KiB at a time in one turn it once filled the buffer
/// unparsed and got 431: the limits `worth_parsing` watches were counted
/// with the empty lines in, and dropping them marked bytes never parsed as
/// parsed.)
#[test]
fn a_long_request_line_after_empty_lines_read_in_short_pieces_is_a_414() {
    let limits = crate::parse::Limits { max_head_bytes: 12 * 1024, ..Config::default().limits };
    let config = Config { limits, ..Config::default() };
    let mut input = b"\r\n".repeat(2032);
    input.extend_from_slice(b"GET /");
    input.extend_from_slice(&b"a".repeat(20_000));
    for max in [usize::MAX, 1024] {
        let mut s = Served::new(&hello);
        s.config = config.clone();
        let mut io = ShortReads { io: Script::new(&[&input]), max };
        io.io.release();
        s.serve(&mut io);
        let wire = redact_dates(&io.io.written);
        assert!(wire.starts_with("HTTP/1.1 414 "), "reads of at most {max}: {wire:?}");
    }
}

/// The same with the default limits: after empty lines read in short
/// pieces, a request line already past the line limit is left unjudged
/// while the client waits for its answer (parked with no answer: a 408 at
/// the head deadline, where sent whole it is a 414 at once).
#[test]
fn a_request_line_past_the_line_limit_after_empty_lines_is_answered_at_once() {
    let mut input = b"\r\n".repeat(5000);
    input.extend_from_slice(b"GET /");
    input.extend_from_slice(&b"a".repeat(11_000));
    for max in [usize::MAX, 1024] {
        let mut s = Served::new(&hello);
        let mut io = ShortReads { io: Script::new(&[&input]), max };
        io.io.release();
        s.serve(&mut io);
        let wire = redact_dates(&io.io.written);
        assert!(
            wire.starts_with("HTTP/1.1 414 "),
            "reads of at most {max}: {wire:?}, {} bytes unparsed",
            s.conn.unparsed().len()
        );
    }
}

/// At shutdown, a connection that sent only empty lines in its first turn
/// has begun no request: it closes at once rather than waiting for one.
#[test]
fn at_shutdown_empty_lines_in_the_first_turn_begin_no_head() {
    let mut s = Served::new(&echo);
    s.stopping.set();
    let mut io = Script::new(&[b"\r\n\r\n", b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"]);
    io.patient = true;
    io.release();
    assert_eq!(s.serve(&mut io), Next::Close);
    assert_eq!(io.written, b"", "nothing answered");
    assert_eq!(io.chunks.len(), 1, "it did not wait for more");
}

/// Requests received whole and left in the buffer when a connection yields
/// its turn wait for a worker, not for the client: however long the ready
/// list keeps them (a head timeout of zero stands for a long wait), they
/// are answered, not met with `408`.
#[test]
fn requests_left_whole_by_a_yielded_turn_are_served_however_long_they_wait() {
    let config = Config { head_timeout: Duration::ZERO, ..Config::default() };
    let mut s = Served::with_config(&hello, config);
    let burst = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".repeat(TURN_REQUESTS as usize + 2);
    let mut io = Script::new(&[&burst]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Yield);
    assert_eq!(s.serve(&mut io), Next::Park);
    let wire = redact_dates(&io.written);
    assert_eq!(wire, HELLO.repeat(TURN_REQUESTS as usize + 2));
}

/// A head begun but unfinished when its turn ends is on the head clock
/// once the connection parks to wait for the rest.
#[test]
fn a_head_left_unfinished_after_a_yield_is_timed_once_the_connection_parks() {
    let config = Config { head_timeout: Duration::ZERO, ..Config::default() };
    let mut s = Served::with_config(&hello, config);
    let mut burst = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".repeat(TURN_REQUESTS as usize);
    burst.extend_from_slice(b"GET / HT");
    let mut io = Script::new(&[&burst]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Yield);
    assert_eq!(s.serve(&mut io), Next::Park);
    // The monitor finds its deadline passed and hands it back: `408`.
    s.serve(&mut io);
    let wire = redact_dates(&io.written);
    assert!(wire.starts_with(&HELLO.repeat(TURN_REQUESTS as usize)), "{wire}");
    assert!(wire[HELLO.len() * TURN_REQUESTS as usize..].starts_with("HTTP/1.1 408 "), "{wire}");
}
