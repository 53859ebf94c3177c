//! Bodies collected while the connection parks, before the handler runs: the
//! time they earn, the server-wide budget a grown buffer holds, chunked bodies
//! judged as they arrive.

use super::*;

/// A body collected while parked is under the head deadline, plus a second
/// for every `body_min_rate` bytes of it received: a client that keeps up
/// the least rate is not cut, one that does not gets `408` as a head would.
/// Past the read buffer, it takes a share of the server-wide budget, given
/// back once the request is answered.
#[test]
fn a_body_being_collected_earns_time_at_the_least_rate() {
    let mut s = Served::new(&echo);
    s.config.body_min_rate = 1000;
    let mut io =
        Script::new(&[b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 40000\r\n\r\n", &[b'x'; 5000], &[b'x'; 35_000]]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    let first = s.conn.deadline(&s.config).unwrap();
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.deadline(&s.config).unwrap() - first, Duration::from_secs(5));
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    assert!(io.written.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert_eq!(s.counters.snapshot(0, 0, 0, Default::default(), 0).buffered_body_bytes, 0);
}

/// The time a body being collected has earned counts when its next bytes
/// arrive, not only when the monitor looks: a client past the head timeout
/// but ahead of the least rate is not cut. (The next turn checked the head
/// timeout alone, and answered `408`.)
#[test]
fn the_time_a_body_earned_counts_at_its_next_arrival() {
    let mut head = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 30000\r\n\r\n".to_vec();
    head.extend_from_slice(&[b'x'; 20_000]);
    let config = Config { head_timeout: Duration::ZERO, body_min_rate: 1024, ..Config::default() };
    let r = run_with(config, &echo, &[&head, &[b'x'; 10_000]], false);
    assert!(r.wire.starts_with("HTTP/1.1 200 OK\r\n"), "{}", &r.wire[..r.wire.len().min(200)]);
}

/// A buffer grown past its usual size for a body holds a share of the
/// server-wide budget for as long as it is that large, whatever request it
/// then holds: after the first body is answered with the start of the next
/// request behind it, and while the second body is collected into it. (The
/// share went back with the first answer while the grown buffer stayed,
/// and the second body was collected into it with no share.)
#[test]
fn a_grown_buffer_holds_its_share_until_it_shrinks() {
    let mut s = Served::new(&echo);
    let mut first = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 60000\r\n\r\n".to_vec();
    first.extend_from_slice(&[b'x'; 60000]);
    let mut second = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 40000\r\nX-Pad: ".to_vec();
    second.resize(12_000, b'p');
    let mut wire = first;
    wire.extend_from_slice(&second);
    let mut io = Script::new(&[&wire[..30000], &wire[30000..], b"\r\n\r\n", &[b'y'; 30000], &[b'y'; 10000]]);
    let held = |s: &Served<'_>| s.counters.snapshot(0, 0, 0, Default::default(), 0).buffered_body_bytes;
    let share = s.config.body_buffer_bytes as u64;
    for _ in 0..4 {
        io.release();
        assert_eq!(s.serve(&mut io), Next::Park);
        let grown = s.conn.buffer_len() > s.config.read_buffer_size();
        assert_eq!(held(&s), if grown { share } else { 0 }, "buffer {}", s.conn.buffer_len());
    }
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.requests, 2);
    assert!(s.conn.buffer_len() <= s.config.read_buffer_size());
    assert_eq!(held(&s), 0);
}

/// With the budget spent, a body is collected no further than the usual
/// read buffer, and its handler runs once that is full. (A small buffer of
/// the connection's own doubled past the usual size without a share.)
#[test]
fn without_budget_a_body_is_collected_no_further_than_the_read_buffer() {
    static CALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let handler = |req: &mut Request<'_>| {
        CALLED.store(true, std::sync::atomic::Ordering::Relaxed);
        echo(req)
    };
    let mut s = Served::new(&handler);
    s.config.max_buffered_body_bytes = 0;
    let mut io = Script::new(&[b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 60000\r\n\r\n", &[b'x'; 30000]]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    io.release();
    s.serve(&mut io);
    assert!(CALLED.load(std::sync::atomic::Ordering::Relaxed), "the handler runs once the read buffer is full");
    assert!(s.conn.buffer_len() <= s.config.read_buffer_size());
}

#[test]
fn a_small_body_is_collected_while_parked_before_the_handler_runs() {
    // The transport is not patient: a handler waiting on the socket for body
    // bytes would time out (408). The body is gathered between parks instead.
    let mut s = Served::new(&echo);
    let mut io = Script::new(&[b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\n\r\nab", b"cd", b"ef"]);
    let mut outcomes = Vec::new();
    while io.release() {
        outcomes.push(s.serve(&mut io));
    }
    assert_eq!(outcomes, [Next::Park, Next::Park, Next::Park]);
    let wire = redact_dates(&io.written);
    assert_eq!(wire, "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\nabcdef");
    assert_eq!(s.conn.buffer_len(), 0, "nothing kept while parked after the answer");
}

/// A valid chunked body whose collected part (`body_buffer_bytes` past the
/// head) ends anywhere — mid chunk-size, mid extension, in a chunk's data,
/// mid trailer — and arrives cut anywhere is passed to its handler, never
/// refused before it (review of b888cb1).
#[test]
fn a_valid_chunked_body_is_never_refused_before_its_handler_wherever_collecting_stops() {
    let head = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
    // A first chunk larger than the read buffer, so that what is collected
    // is set by `body_buffer_bytes`, and ends in what follows it.
    let pad = Config::default().read_buffer_size() + 100;
    let first = [format!("{pad:x}\r\n").as_bytes(), &vec![b'p'; pad], b"\r\n"].concat();
    let tail = b"5;name=\"v\"\r\nhello\r\n003 \t;x\r\nabc\r\n0\r\nX-T: 1\r\nY: 2\r\n\r\n";
    let body = [&first[..], tail].concat();
    let whole = [&head[..], &body].concat();
    let echo_len = |req: &mut Request<'_>| {
        let mut body = Vec::new();
        match req.read_to_end(&mut body) {
            Ok(_) if body.ends_with(b"helloabc") => Response::text(body.len().to_string()),
            _ => Response::status(500),
        }
    };
    let want = format!("\r\n\r\n{}", pad + 8);
    for keep in first.len() - 3..body.len() + 2 {
        for cut in [head.len(), head.len() + keep.min(body.len()), whole.len() - 1] {
            let config = Config { body_buffer_bytes: keep, ..Config::default() };
            let r = run_with(config, &echo_len, &[&whole[..cut], &whole[cut..]], false);
            assert!(
                r.wire.starts_with("HTTP/1.1 200 OK\r\n") && r.wire.ends_with(&want),
                "keep {keep}, cut {cut}: {}",
                r.wire
            );
        }
    }
}

/// A malformed chunked body collected before its handler is refused
/// without calling it however it arrives: whole, a byte at a time (parked
/// between), behind a pipelined request; the answer to HEAD has no body.
#[test]
fn a_collected_malformed_chunked_body_is_refused_without_its_handler_however_it_arrives() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let handler = move |req: &mut Request<'_>| {
        counted.fetch_add(1, Ordering::SeqCst);
        echo(req)
    };
    for method in ["POST", "HEAD"] {
        let req =
            format!("{method} /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX\r\n0\r\n\r\n");
        let pipelined = format!("GET / HTTP/1.1\r\nHost: a\r\n\r\n{req}");
        let bytes: Vec<&[u8]> = req.as_bytes().chunks(1).collect();
        for (name, chunks, before) in
            [("whole", vec![req.as_bytes()], 0), ("trickled", bytes, 0), ("pipelined", vec![pipelined.as_bytes()], 1)]
        {
            calls.store(0, Ordering::SeqCst);
            let r = run(&handler, &chunks);
            let refusal = r.wire.find("HTTP/1.1 400 Bad Request\r\n");
            assert!(refusal.is_some(), "{method} {name}: {}", r.wire);
            assert_eq!(calls.load(Ordering::SeqCst), before, "{method} {name}: the handler ran");
            assert!(r.lingering, "{method} {name}");
            if method == "HEAD" {
                assert!(r.wire.ends_with("\r\n\r\n"), "{method} {name}: {}", r.wire);
            }
        }
    }
}

/// A parked unfinished head holds a share of `max_pending_head_bytes` for
/// the buffer it keeps past the free allowance: none for a short one, the
/// buffer's size for a long one (grown as it grows, and while its body is
/// awaited in it), and none once its request is answered.
#[test]
fn a_parked_head_holds_a_share_for_the_buffer_it_keeps() {
    let mut s = Served::new(&echo);
    let pending = |s: &Served<'_>| s.counters.snapshot(0, 0, 0, Default::default(), 0).pending_head_bytes;
    let mut head = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 40000\r\nX-Pad: ".to_vec();
    head.resize(12_000, b'p');
    let mut io = Script::new(&[&head[..1000], &head[1000..5000], &head[5000..], b"\r\n\r\n", &[b'x'; 40000]]);
    let mut kept = Vec::new();
    for _ in 0..5 {
        io.release();
        assert_eq!(s.serve(&mut io), Next::Park);
        kept.push((s.conn.buffer_len(), pending(&s)));
    }
    assert_eq!(kept[0], (2000, 0), "a short head is free");
    assert!(kept[1].0 > 4096 && kept[1].1 == kept[1].0 as u64, "past 4 KiB its buffer counts whole: {kept:?}");
    assert!(kept[2].0 >= 12_000 && kept[2].1 == kept[2].0 as u64, "{kept:?}");
    // The head is whole, its body awaited in the same buffer: it still
    // counts. Then the body came, past the read buffer (on the other
    // budget), and was answered.
    assert_eq!(kept[3], kept[2]);
    assert!(io.written.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert_eq!(kept[4].1, 0);
}

/// With the budget spent, a head that would park holding more than the
/// free allowance is answered `503` with `Retry-After` and the connection
/// closes, its share given back.
#[test]
fn a_parked_head_past_the_budget_gets_503() {
    let mut s = Served::new(&echo);
    s.config.max_pending_head_bytes = 16 * 1024;
    let mut head = b"GET / HTTP/1.1\r\nHost: a\r\nX-Pad: ".to_vec();
    head.resize(12_000, b'p');
    let mut io = Script::new(&[&head[..5000], &head[5000..]]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.counters.snapshot(0, 0, 0, Default::default(), 0).pending_head_bytes, 10_000);
    io.release();
    // Parked to linger, holding nothing.
    s.serve(&mut io);
    assert_eq!(s.counters.snapshot(0, 0, 0, Default::default(), 0).pending_head_bytes, 0);
    let wire = String::from_utf8_lossy(&io.written).into_owned();
    assert!(wire.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{wire}");
    assert!(wire.contains("\r\nRetry-After: 1\r\n") && wire.contains("\r\nConnection: close\r\n"), "{wire}");
}
