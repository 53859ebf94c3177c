//! A client slow to take its answers: what it has not taken waits with the
//! parked connection (a file at its place in it), within the server-wide cap,
//! and the worker goes on.

use super::*;

#[test]
fn a_large_answer_the_client_is_slow_to_take_parks_with_the_rest() {
    let mut s = Served::new(&big);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    io.room = Some(10_000);
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(io.written.len(), 10_000);
    assert!(s.is_sending());
    assert_eq!(s.conn.requests, 1, "the pipelined request waits for the answer before it");
    assert_ne!(s.conn.phase.kind(), Kind::Head, "and its head clock does not run meanwhile");
    io.room = Some(50_000);
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(io.written.len(), 60_000);
    io.room = None;
    assert_eq!(s.serve(&mut io), Next::Park);
    assert!(!s.is_sending());
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
    assert!(s.is_sending());
    let answered = s.conn.requests;
    assert!(answered < 20, "it stopped answering once the answers piled up");
    // Each time the client takes some, more is answered.
    let mut rounds = 0;
    while s.conn.requests < 20 || s.is_sending() {
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
    // The client waits for `100 Continue`, so the body is not collected
    // first: the handler waits for it.
    let mut io = Script::new(&[
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"5\r\nhello\r\n0\r\n\r\n",
    ]);
    io.release();
    io.patient = true;
    io.room = Some(0);
    // The POST's handler would wait for its body with the GET's answer
    // still queued: the connection parks first, the POST left unparsed.
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.requests, 1);
    assert!(s.is_sending());
    assert!(s.conn.has_unparsed());
    io.room = None;
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.requests, 2);
    let echoed = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
    assert_wire(&io.written, &format!("{HELLO}HTTP/1.1 100 Continue\r\n\r\n{echoed}"));
}

#[test]
fn a_short_answer_the_client_takes_part_of_waits_with_its_rest_and_goes_out_whole() {
    let mut s = Served::new(&hello);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    io.room = Some(10);
    assert_eq!(s.serve(&mut io), Next::Park);
    assert!(s.is_sending());
    let whole = HELLO.len() - "D".len() + crate::date::DATE_LEN;
    assert_eq!(s.counters.unsent_bytes(), (whole - 10) as u64, "what the client took is not held");
    io.room = None;
    assert_eq!(s.serve(&mut io), Next::Park);
    assert!(!s.is_sending());
    assert_eq!(s.counters.unsent_bytes(), 0);
    assert_wire(&io.written, HELLO);
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
    assert_eq!(s.counters.unsent_bytes(), (head - 10 + 100_000) as u64);
    io.room = None;
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.counters.unsent_bytes(), 0);
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
    assert!(!s.is_sending());
    assert_eq!(s.counters.unsent_bytes(), 0);
    assert_wire(&io.written, &format!("{BIG_HEAD}{}", "x".repeat(100_000)));
}

#[test]
fn a_parked_connection_keeps_only_its_unparsed_bytes() {
    let mut s = Served::new(&hello);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHo"]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(s.conn.unparsed(), b"GET / HTTP/1.1\r\nHo");
    assert!(s.conn.buffer_len() <= 512, "kept {} bytes", s.conn.buffer_len());
    assert_eq!(s.conn.phase.kind(), Kind::Head);
    assert_eq!(s.scratch.buffers.len(), 1, "the full buffer went back to the worker");
}

/// A stream that writes a large buffer in one call reaches the client
/// whole, but the worker's answer buffer does not grow to its size: a
/// worker keeps its buffers for life, and each would keep the largest
/// write any client's request made it copy.
#[test]
fn one_large_write_of_a_stream_leaves_the_worker_buffer_small() {
    const BIG: usize = 4 << 20;
    let handler = |_: &mut Request<'_>| {
        Response::stream(|w| {
            std::io::Write::write_all(w, &vec![b'z'; BIG])?;
            Ok(())
        })
    };
    let mut s = Served::new(&handler);
    let mut io = Script::new(&[b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"]);
    s.run(&mut io, None);
    assert_eq!(io.written.iter().filter(|&&b| b == b'z').count(), BIG);
    assert!(io.written.ends_with(b"\r\n0\r\n\r\n"));
    assert!(s.scratch.out.capacity() <= KEPT_OUT_CAPACITY, "{}", s.scratch.out.capacity());
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
        assert!(s.is_sending(), "after {} bytes", io.written.len());
    }
    // Only the head's rest was in memory: the file stays on disk.
    assert_eq!(s.counters.unsent_bytes(), 0);
    io.room = None;
    assert_eq!(s.serve(&mut io), Next::Park);
    assert!(!s.is_sending());
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
    assert!(!s.is_sending());
    let head = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: application/octet-stream\r\nContent-Length: 70000\r\n\r\n";
    assert_wire(&io.written, &format!("{head}{}", "c".repeat(70_000)));
    std::fs::remove_file(&path).unwrap();
}
