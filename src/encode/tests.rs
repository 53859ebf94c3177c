use super::*;
use crate::response::Response;

const DATE: &[u8; 29] = b"Sun, 06 Nov 1994 08:49:37 GMT";

fn encode(resp: &Response, version: Version, is_head: bool, keep_alive: bool) -> String {
    let framing = plan(resp, version, is_head).expect("valid response");
    let mut out = Vec::new();
    encode_head(resp, framing, keep_alive, version, DATE, None, &mut out);
    // The same bytes when the start is kept: made, then appended again.
    let mut kept = HeadStart::new();
    for _ in 0..2 {
        let mut again = b"before".to_vec();
        encode_head(resp, framing, keep_alive, version, DATE, Some(&mut kept), &mut again);
        assert_eq!(again[6..], out[..], "{}", String::from_utf8_lossy(&out));
    }
    String::from_utf8(out).unwrap()
}

/// A kept start is made again when the type or the second changes, and is
/// not used for a type that does not fit, one made at run time, another
/// status or a handler's own `Date`.
#[test]
fn a_kept_start_follows_the_type_and_the_date() {
    const LATER: &[u8; 29] = b"Sun, 06 Nov 1994 08:49:38 GMT";
    let long: &'static str = "application/vnd.example.long-type+json";
    let answers = [
        (Response::text("a"), DATE),
        (Response::text("b").with_content_type("application/json"), DATE),
        (Response::text("c").with_content_type("application/json"), LATER),
        (Response::text("d"), LATER),
        (Response::text("e").with_content_type(long), LATER),
        (Response::text("f").with_content_type(String::from("text/x")), LATER),
        (Response::text("g").with_status(201), LATER),
        (Response::text("h").with_header("Date", "Sat, 05 Nov 1994 08:49:37 GMT"), LATER),
        (Response::text("i"), DATE),
    ];
    let mut kept = HeadStart::new();
    for (resp, date) in &answers {
        let framing = plan(resp, Version::Http11, false).unwrap();
        let (mut fresh, mut again) = (Vec::new(), Vec::new());
        encode_head(resp, framing, true, Version::Http11, date, None, &mut fresh);
        encode_head(resp, framing, true, Version::Http11, date, Some(&mut kept), &mut again);
        assert_eq!(String::from_utf8(again).unwrap(), String::from_utf8(fresh).unwrap());
    }
    let json = "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:38 GMT\r\nContent-Type: application/json\r\n";
    let mut out = Vec::new();
    let resp = Response::text("j").with_content_type("application/json");
    let framing = plan(&resp, Version::Http11, false).unwrap();
    encode_head(&resp, framing, true, Version::Http11, LATER, Some(&mut kept), &mut out);
    assert!(String::from_utf8(out).unwrap().starts_with(json));
}

#[test]
fn text_response_head() {
    let resp = Response::text("hi");
    assert_eq!(
        encode(&resp, Version::Http11, false, true),
        "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n\r\n"
    );
}

#[test]
fn closing_and_http10_keep_alive_are_announced() {
    let resp = Response::status(404);
    assert!(encode(&resp, Version::Http11, false, false).ends_with("Content-Length: 0\r\nConnection: close\r\n\r\n"));
    assert!(
        encode(&resp, Version::Http10, false, true).ends_with("Content-Length: 0\r\nConnection: keep-alive\r\n\r\n")
    );
}

#[test]
fn handler_headers_are_written_in_order() {
    let resp = Response::status(201).with_header("Location", "/x").with_header("X-A", "1");
    let head = encode(&resp, Version::Http11, false, true);
    assert!(head.starts_with("HTTP/1.1 201 Created\r\n"), "{head}");
    assert!(head.contains("\r\nLocation: /x\r\nX-A: 1\r\n"), "{head}");
}

#[test]
fn injected_line_breaks_make_the_response_invalid() {
    let resp = Response::text("x").with_header("X-Evil", "a\r\nSet-Cookie: pwned=1");
    assert!(plan(&resp, Version::Http11, false).is_err());
    let resp = Response::text("x").with_header("Bad Name", "v");
    assert!(plan(&resp, Version::Http11, false).is_err());
    let resp = Response::text("x").with_header("X", "nul\0");
    assert!(plan(&resp, Version::Http11, false).is_err());
}

#[test]
fn status_out_of_range_is_invalid() {
    assert!(plan(&Response::status(99), Version::Http11, false).is_err());
    assert!(plan(&Response::status(1000), Version::Http11, false).is_err());
    assert!(plan(&Response::status(600), Version::Http11, false).is_err());
    assert!(plan(&Response::text("x").with_status(999), Version::Http11, false).is_err());
    assert!(plan(&Response::status(599), Version::Http11, false).is_ok());
    assert!(plan(&Response::status(200), Version::Http11, false).is_ok());
    assert!(plan(&Response::text("x").with_status(42), Version::Http11, false).is_err());
}

#[test]
fn framing_by_body_status_and_method() {
    let v11 = Version::Http11;
    let plan11 = |r: &Response| plan(r, v11, false).unwrap();
    assert_eq!(plan11(&Response::text("abc")), ResponseFraming::Length(3));
    assert_eq!(plan11(&Response::reader(&b"abc"[..], None)), ResponseFraming::Chunked);
    assert_eq!(plan(&Response::reader(&b"abc"[..], None), Version::Http10, false), Ok(ResponseFraming::CloseDelimited));
    assert_eq!(plan11(&Response::reader(&b"abc"[..], Some(3))), ResponseFraming::Length(3));
    assert_eq!(plan11(&Response::text("x").with_status(204)), ResponseFraming::None { announce: None });
    assert_eq!(plan11(&Response::upgrade(|_| {})), ResponseFraming::None { announce: None });
    assert!(plan(&Response::status(101), v11, false).is_err(), "101 without an upgrade");
    assert_eq!(plan11(&Response::status(304)), ResponseFraming::None { announce: None });
    assert_eq!(plan(&Response::text("abc"), v11, true), Ok(ResponseFraming::None { announce: Some(3) }));
}

/// RFC 9110 §8.6: a `304` may carry the `Content-Length` a `200` to the
/// same request would have (it was refused as contradicting its empty
/// body: a 500).
#[test]
fn a_304_may_announce_the_length_of_the_200_it_stands_for() {
    let resp = Response::status(304).with_header("ETag", "\"v1\"").with_header("Content-Length", "1234");
    for is_head in [false, true] {
        assert_eq!(plan(&resp, Version::Http11, is_head), Ok(ResponseFraming::None { announce: Some(1234) }));
    }
    let head = encode(&resp, Version::Http11, false, true);
    assert!(head.starts_with("HTTP/1.1 304 Not Modified\r\n") && head.contains("Content-Length: 1234\r\n"), "{head}");
    // A body given to it is still a contradiction.
    assert!(
        plan(&Response::text("abc").with_status(304).with_header("Content-Length", "5"), Version::Http11, false)
            .is_err()
    );
}

#[test]
fn head_keeps_a_declared_length() {
    let resp = Response::status(200).with_header("Content-Length", "1234");
    assert_eq!(plan(&resp, Version::Http11, true), Ok(ResponseFraming::None { announce: Some(1234) }));
    assert!(encode(&resp, Version::Http11, true, true).contains("Content-Length: 1234\r\n"));
}

#[test]
fn declared_length_must_match_a_known_body() {
    let resp = Response::text("abc").with_header("Content-Length", "3");
    assert_eq!(plan(&resp, Version::Http11, false), Ok(ResponseFraming::Length(3)));
    let resp = Response::text("abc").with_header("Content-Length", "4");
    assert!(plan(&resp, Version::Http11, false).is_err());
    let resp = Response::text("abc").with_header("Content-Length", "x");
    assert!(plan(&resp, Version::Http11, false).is_err());
}

#[test]
fn declared_length_frames_a_reader_of_unknown_length() {
    let resp = Response::reader(&b"abc"[..], None).with_header("Content-Length", "3");
    assert_eq!(plan(&resp, Version::Http11, false), Ok(ResponseFraming::Length(3)));
}

#[test]
fn handler_transfer_encoding_is_ignored() {
    let resp = Response::text("abc").with_header("Transfer-Encoding", "chunked");
    let head = encode(&resp, Version::Http11, false, true);
    assert!(!head.contains("Transfer-Encoding"), "{head}");
    assert!(head.contains("Content-Length: 3"), "{head}");
}

#[test]
fn connection_close_header_closes() {
    let resp = Response::text("x").with_header("Connection", "close");
    assert!(resp.close);
    assert!(resp.headers.is_empty());
}

/// A `close` among other `Connection` options still closes (RFC 9112
/// §9.6); `close` and `keep-alive` are the server's to send, the other
/// options go out as the handler set them.
#[test]
fn connection_close_among_other_options_closes() {
    for (value, close, rest) in [
        ("close, x-foo", true, Some("x-foo")),
        ("X-Foo ,CLOSE", true, Some("X-Foo")),
        ("keep-alive, upgrade", false, Some("upgrade")),
        ("keep-alive , close", true, None),
        ("upgrade", false, Some("upgrade")),
    ] {
        let resp = Response::text("x").with_header("Connection", value);
        assert_eq!(resp.close, close, "{value}");
        assert_eq!(resp.header("Connection"), rest, "{value}");
    }
    let resp = Response::text("x").with_header("Connection", "close, x-foo");
    let head = encode(&resp, Version::Http10, false, false);
    assert!(head.contains("\r\nConnection: x-foo\r\n") && head.contains("\r\nConnection: close\r\n"), "{head}");
    assert!(!head.contains("keep-alive"), "{head}");
}

#[test]
fn a_handler_date_replaces_ours() {
    let resp = Response::status(200).with_header("Date", "Mon, 01 Jan 2001 00:00:00 GMT");
    let head = encode(&resp, Version::Http11, false, true);
    assert_eq!(head.matches("Date:").count(), 1, "{head}");
    assert!(head.contains("2001"));
}

/// A `205` has no content, and says so (RFC 9110 §15.3.6): the body a
/// handler gave it is not sent, and the connection stays usable.
#[test]
fn a_205_sends_no_content_and_a_zero_length() {
    for resp in [Response::text("abc").with_status(205), Response::status(205)] {
        let framing = plan(&resp, Version::Http11, false).unwrap();
        let mut out = Vec::new();
        encode_in_memory(&resp, framing, true, DATE, &mut out);
        let wire = String::from_utf8(out).unwrap();
        assert_eq!(
            wire,
            "HTTP/1.1 205 Reset Content\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 0\r\n\r\n"
        );
    }
}

#[test]
fn no_content_type_on_bodyless_statuses() {
    let head = encode(&Response::text("x").with_status(304), Version::Http11, false, true);
    assert!(!head.contains("Content-Type"), "{head}");
}

#[test]
fn debug_redacts_cookies() {
    let resp = Response::status(200).with_header("Set-Cookie", "session=secret");
    let shown = format!("{resp:?}");
    assert!(!shown.contains("secret"), "{shown}");
}

#[test]
fn decimal_encoding() {
    for n in [0u64, 7, 10, 12345, u64::MAX] {
        let mut out = Vec::new();
        push_u64(&mut out, n);
        assert_eq!(out, n.to_string().as_bytes());
    }
}

#[test]
fn borrowed_text_is_copied_short_text_in_place() {
    let owned = String::from("a borrowed path, longer than thirty bytes");
    let borrowed: &str = &owned;
    let resp = Response::text(borrowed);
    assert_eq!(resp.body_bytes(), Some(owned.as_bytes()));
    let short = Response::text(&owned[..5]);
    assert!(matches!(&short.body, Payload::Inline(s) if s.as_slice().len() == 5));
    assert_eq!(short.body_bytes(), Some(&b"a bor"[..]));
    let literal = Response::text("Testolope");
    assert!(matches!(literal.body, Payload::Inline(_)), "a short literal needs no allocation");
    // Copied in place, a short body takes no more room than the others.
    assert!(std::mem::size_of::<Payload>() <= 40, "{}", std::mem::size_of::<Payload>());
    let embedded = Response::bytes(crate::Content::from_static(&[7; 100]));
    assert!(matches!(embedded.body, Payload::Static(b) if b.len() == 100));
}

/// The length line is put together on the stack with the head's closing
/// blank line when no `Connection` line follows: every digit count, and
/// both endings, come out exactly.
#[test]
fn content_length_of_every_width_ends_the_head_exactly() {
    for n in [0u64, 9, 10, 99, 100, 12_345, 1 << 32, 10_000_000_000_000_000_000, u64::MAX] {
        let resp = Response::status(200).with_header("Content-Length", n.to_string());
        let prefix = "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n";
        assert_eq!(encode(&resp, Version::Http11, true, true), format!("{prefix}Content-Length: {n}\r\n\r\n"));
        assert_eq!(
            encode(&resp, Version::Http11, true, false),
            format!("{prefix}Content-Length: {n}\r\nConnection: close\r\n\r\n")
        );
        assert_eq!(
            encode(&resp, Version::Http10, true, true),
            format!("{prefix}Content-Length: {n}\r\nConnection: keep-alive\r\n\r\n")
        );
    }
    // A handler's own Date: the status line and the length on their own.
    let resp = Response::text("hi").with_header("Date", "Mon, 07 Nov 1994 08:49:37 GMT");
    let head = encode(&resp, Version::Http11, false, true);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.ends_with("Content-Length: 2\r\n\r\n"), "{head}");
    assert_eq!(head.matches("Date: ").count(), 1, "{head}");
}

/// The common `200` framed on its own agrees with the general rules, and
/// what it does not take (a `HEAD`, a length of the handler's, a bad
/// header, a body not in memory, another status) goes through them.
#[test]
fn the_common_answer_is_framed_as_the_general_rules_frame_it() {
    let answers = [
        Response::text("hello"),
        Response::bytes(vec![b'x'; 10_000]),
        Response::bytes(b"".to_vec()),
        Response::text("hello").with_header("Content-Length", "5"),
        Response::text("hello").with_header("Content-Length", "6"),
        Response::text("hello").with_header("Bad\r\nName", "x"),
        Response::text("hello").with_status(204),
        Response::text("hello").with_status(101),
        Response::reader(std::io::empty(), Some(0)),
        Response::stream(|_| Ok(())),
        Response::upgrade(|_| {}).with_status(200),
    ];
    for resp in &answers {
        for version in [Version::Http10, Version::Http11] {
            for is_head in [false, true] {
                assert_eq!(
                    plan(resp, version, is_head),
                    plan_any(resp, version, is_head),
                    "{resp:?} {version:?} {is_head}"
                );
            }
        }
    }
}
