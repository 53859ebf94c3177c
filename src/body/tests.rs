use super::*;
use crate::io::Script;

fn body_over<'a>(
    io: &'a mut Script,
    buf: &'a mut [u8],
    buffered: &[u8],
    kind: BodyKind,
    limit: u64,
    expect: bool,
) -> Body<'a> {
    buf[..buffered.len()].copy_from_slice(buffered);
    let bounds = BodyBounds {
        limit,
        read_timeout: Duration::from_millis(10),
        total_timeout: Duration::from_secs(60),
        min_rate: 0,
        drain_wait: Duration::from_secs(1),
        max_drain: crate::config::DEFAULT_MAX_DRAIN_BYTES,
    };
    // A body points to its bounds, which the server keeps for as long as
    // it runs: a test's may as well last as long.
    Body::new(kind, io, buf, buffered.len(), Box::leak(Box::new(bounds)), expect)
}

#[test]
fn length_body_reads_buffer_then_socket_and_stops_at_its_end() {
    let mut io = Script::new(&[b"lo wor", b"ld NEXT"]);
    io.patient = true;
    let mut buf = [0u8; 64];
    let mut body = body_over(&mut io, &mut buf, b"hel", BodyKind::Length(11), 100, false);
    let mut got = Vec::new();
    body.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"hello world");
    assert!(body.is_complete());
    assert_eq!(io.current, b" NEXT");
}

#[test]
fn chunked_body_leaves_the_next_request_in_the_buffer() {
    let mut io = Script::default();
    let mut buf = [0u8; 64];
    let body = body_over(&mut io, &mut buf, b"2\r\nhi\r\n0\r\n\r\nNEXT", BodyKind::Chunked, 100, false);
    let mut body = body;
    let mut got = Vec::new();
    body.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"hi");
    let end = body.finish();
    assert_eq!((end.pos, end.end), (12, 16));
    assert_eq!(end.error, None);
}

#[test]
fn chunked_body_over_the_limit_fails_as_too_large() {
    let mut io = Script::default();
    let mut buf = [0u8; 64];
    let mut body = body_over(&mut io, &mut buf, b"5\r\nhello\r\n0\r\n\r\n", BodyKind::Chunked, 4, false);
    let err = body.read_to_end(&mut Vec::new()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert_eq!(body.finish().error, Some(BodyError::TooLarge));
}

#[test]
fn a_silent_client_times_out() {
    let mut io = Script::new(&[b"late"]);
    let mut buf = [0u8; 64];
    let mut body = body_over(&mut io, &mut buf, b"", BodyKind::Length(4), 100, false);
    let err = body.read(&mut [0; 8]).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    assert_eq!(body.finish().error, Some(BodyError::TimedOut));
}

#[test]
fn continue_is_sent_on_the_first_read_only() {
    let mut io = Script::new(&[b"abc"]);
    io.patient = true;
    let mut buf = [0u8; 64];
    let mut body = body_over(&mut io, &mut buf, b"", BodyKind::Length(3), 100, true);
    assert!(body.send_continue, "not before the first read");
    let mut got = Vec::new();
    body.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"abc");
    assert_eq!(io.written, CONTINUE);
}

#[test]
fn an_unread_expecting_body_is_not_drained() {
    let mut io = Script::default();
    let mut buf = [0u8; 64];
    let mut body = body_over(&mut io, &mut buf, b"", BodyKind::Length(3), 100, true);
    assert!(!body.drain(1000));
    assert!(body.finish().continue_withheld);
    assert!(io.written.is_empty());
}

#[test]
fn drain_gives_up_past_its_bound() {
    let mut io = Script::new(&[&[b'x'; 10_000]]);
    io.patient = true;
    let mut buf = [0u8; 64];
    let mut body = body_over(&mut io, &mut buf, b"", BodyKind::Length(10_000), 1 << 20, false);
    assert!(!body.drain(100));
}

#[test]
fn the_whole_body_has_a_deadline() {
    let mut io = Script::new(&[b"a", b"b"]);
    io.patient = true;
    let mut buf = [0u8; 64];
    let bounds = BodyBounds {
        limit: 100,
        read_timeout: Duration::from_secs(10),
        total_timeout: Duration::ZERO,
        min_rate: 0,
        drain_wait: Duration::from_secs(1),
        max_drain: crate::config::DEFAULT_MAX_DRAIN_BYTES,
    };
    let mut body = Body::new(BodyKind::Length(2), &mut io, &mut buf, 0, &bounds, false);
    let err = body.read(&mut [0; 8]).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    assert_eq!(body.finish().error, Some(BodyError::TimedOut));
}
