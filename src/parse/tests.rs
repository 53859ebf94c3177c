use super::*;
use crate::proto::parse_decimal;

fn limits() -> Limits {
    Limits {
        max_head_bytes: 1024,
        max_headers: 8,
        max_uri_bytes: 64,
        max_body_bytes: 1000,
        any_method: false,
        legacy_protocols: true,
    }
}

fn parse(bytes: &[u8]) -> Result<Option<Head>, ParseError> {
    parse_head(bytes, &limits(), &mut Vec::new())
}

fn body_of(bytes: &[u8]) -> BodyKind {
    parse(bytes).expect("valid").expect("complete").body
}

/// `accept!(name: bytes => body kind)` and `reject!(name: bytes => error)`.
macro_rules! accept {
    ($($name:ident: $bytes:expr => $body:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!(body_of($bytes), $body);
        }
    )*};
}

macro_rules! reject {
    ($($name:ident: $bytes:expr => $err:expr;)*) => {$(
        #[test]
        fn $name() {
            assert_eq!(parse($bytes), Err($err));
        }
    )*};
}

use BodyKind::*;
use ParseError::{BodyTooLarge, Expectation, HeadTooLarge, Malformed, UnknownMethod, UnsupportedCoding, UriTooLong};

accept! {
    get_without_body_is_empty: b"GET / HTTP/1.1\r\nHost: a\r\n\r\n" => Empty;
    content_length_frames_the_body: b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n" => Length(5);
    zero_content_length_is_empty: b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n" => Empty;
    identical_duplicate_lengths_agree: b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n" => Length(3);
    chunked_frames_the_body: b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" => Chunked;
    chunked_is_case_insensitive: b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: CHUNKED\r\n\r\n" => Chunked;
    empty_list_elements_are_ignored: b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , chunked\r\n\r\n" => Chunked;
    http10_needs_no_host: b"GET / HTTP/1.0\r\n\r\n" => Empty;
    leading_blank_line_is_skipped: b"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n" => Empty;
    common_extension_methods_are_known: b"PURGE /x HTTP/1.1\r\nHost: a\r\n\r\n" => Empty;
    registered_coding_before_chunked_is_left_to_the_handler: b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: deflate, chunked\r\n\r\n" => Chunked;
    registered_methods_are_known: b"MKCOL /x HTTP/1.1\r\nHost: a\r\n\r\n" => Empty;
    host_with_port: b"GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n" => Empty;
}

reject! {
    te_with_content_length_is_refused: b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" => Malformed("both Transfer-Encoding and Content-Length");
    conflicting_lengths_are_refused: b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n" => Malformed("conflicting Content-Length");
    signed_length_is_refused: b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n" => Malformed("invalid Content-Length");
    negative_length_is_refused: b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n" => Malformed("invalid Content-Length");
    hex_length_is_refused: b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n" => Malformed("invalid Content-Length");
    length_list_is_refused: b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n" => Malformed("invalid Content-Length");
    overflowing_length_is_refused: b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n" => Malformed("invalid Content-Length");
    empty_length_is_refused: b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n" => Malformed("invalid Content-Length");
    chunked_not_last_is_refused: b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n" => Malformed("chunked is not the final transfer coding");
    chunked_twice_is_refused: b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n" => Malformed("chunked is not the final transfer coding");
    unknown_coding_is_not_implemented: b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: foo, chunked\r\n\r\n" => UnsupportedCoding;
    lone_unknown_coding_is_not_final_chunked: b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n" => Malformed("chunked is not the final transfer coding");
    unknown_coding_with_length_is_refused: b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\nContent-Length: 1\r\n\r\n" => Malformed("both Transfer-Encoding and Content-Length");
    non_ascii_target_is_refused: "GET /caf\u{e9} HTTP/1.1\r\nHost: a\r\n\r\n".as_bytes() => Malformed("invalid request target");
    empty_transfer_encoding_is_refused: b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\n\r\n" => Malformed("empty Transfer-Encoding");
    te_in_http10_is_refused: b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n" => Malformed("Transfer-Encoding in HTTP/1.0");
    missing_host_is_refused: b"GET / HTTP/1.1\r\n\r\n" => Malformed("HTTP/1.1 request needs a Host");
    two_hosts_are_refused: b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n" => Malformed("more than one Host");
    two_hosts_are_refused_in_http10_too: b"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n" => Malformed("more than one Host");
    host_with_userinfo_is_refused: b"GET / HTTP/1.1\r\nHost: u@a\r\n\r\n" => Malformed("invalid Host");
    space_before_colon_is_refused: b"GET / HTTP/1.1\r\nHost : a\r\n\r\n" => Malformed("invalid header name");
    obs_fold_is_refused: b"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n 2\r\n\r\n" => Malformed("invalid header name");
    nul_in_value_is_refused: b"GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n" => Malformed("invalid header value");
    bare_cr_in_value_is_refused: b"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n" => Malformed("invalid header value");
    bare_lf_is_refused: b"GET / HTTP/1.1\r\nHost: a\r\nX: y\nZ: 1\r\n\r\n" => Malformed("bare LF in the head");
    lf_only_head_is_refused: b"GET / HTTP/1.1\nHost: a\n\n" => Malformed("bare LF in the head");
    http2_preface_method_is_refused: b"PRI * HTTP/1.1\r\nHost: a\r\n\r\n" => Malformed("HTTP/2 connection preface");
    unknown_method_is_not_implemented: b"MKCOLA / HTTP/1.1\r\nHost: a\r\n\r\n" => UnknownMethod;
    methods_are_case_sensitive: b"get / HTTP/1.1\r\nHost: a\r\n\r\n" => UnknownMethod;
    rtsp_with_an_http_only_method_is_refused: b"PUT / RTSP/1.0\r\n\r\n" => Malformed("invalid HTTP version");
    ice_with_get_is_refused: b"GET / ICE/1.0\r\n\r\n" => Malformed("invalid HTTP version");
    rtsp_11_is_refused: b"OPTIONS / RTSP/1.1\r\n\r\n" => Malformed("invalid HTTP version");
    rtsp_with_transfer_encoding_is_refused_as_http10: b"ANNOUNCE / RTSP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n" => Malformed("Transfer-Encoding in HTTP/1.0");
    rtsp_with_bad_header_is_refused: b"OPTIONS / RTSP/1.0\r\nX : y\r\n\r\n" => Malformed("invalid header name");
    rtsp_with_bare_lf_is_refused: b"OPTIONS / RTSP/1.0\r\nA: b\nC: d\r\n\r\n" => Malformed("bare LF in the head");
    lower_case_http_name_is_malformed: b"GET / http/1.1\r\nHost: a\r\n\r\n" => Malformed("invalid HTTP version");
    http2_is_not_supported: b"GET / HTTP/2.0\r\nHost: a\r\n\r\n" => ParseError::Version;
    unknown_expectation_fails: b"GET / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n" => Expectation;
    long_uri_is_too_long: &[b"GET /".as_slice(), &[b'a'; 100], b" HTTP/1.1\r\nHost: a\r\n\r\n"].concat() => UriTooLong;
    too_many_headers: b"GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\nE: 1\r\nF: 1\r\nG: 1\r\nH: 1\r\n\r\n" => HeadTooLarge;
    length_over_the_limit_is_too_large: b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1001\r\n\r\n" => BodyTooLarge;
}

/// Every proper prefix of `full` is an unfinished head; `full` is a head.
fn waits_at_every_cut(full: &[u8]) {
    for cut in 0..full.len() {
        assert_eq!(parse(&full[..cut]), Ok(None), "cut at {cut}");
    }
    assert!(parse(full).unwrap().is_some());
}

#[test]
fn incomplete_heads_wait_for_more() {
    waits_at_every_cut(b"POST /p?q HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n");
}

#[test]
fn an_endless_request_line_is_414_before_the_buffer_fills() {
    let line = [b'G'; 200];
    assert_eq!(parse(&line), Err(UriTooLong));
}

#[test]
fn an_endless_header_section_is_431() {
    let mut head = b"GET / HTTP/1.1\r\nX: ".to_vec();
    head.resize(1024, b'a');
    assert_eq!(parse(&head), Err(HeadTooLarge));
}

#[test]
fn head_records_positions_and_connection_options() {
    let bytes = b"GET /a?b HTTP/1.0\r\nConnection: Keep-Alive, Upgrade\r\nX: y\r\n\r\nBODY";
    let mut spans = Vec::new();
    let head = parse_head(bytes, &limits(), &mut spans).unwrap().unwrap();
    assert_eq!(head.len, bytes.len() - 4);
    assert_eq!(&bytes[head.target.0 as usize..][..head.target.1 as usize], b"/a?b");
    assert_eq!(head.version, Version::Http10);
    assert_eq!(head.connection, ConnectionOption::KeepAlive);
    assert!(head.upgrade);
    assert_eq!(spans.len(), 2);
    assert_eq!(&bytes[spans[1].value.0 as usize..][..spans[1].value.1 as usize], b"y");
}

#[test]
fn close_wins_over_keep_alive() {
    let head = parse(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n");
    assert_eq!(head.unwrap().unwrap().connection, ConnectionOption::Close);
}

#[test]
fn expect_continue_is_ignored_for_http10() {
    let v11 = parse(b"PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n");
    assert!(v11.unwrap().unwrap().expect_continue);
    let v10 = parse(b"PUT / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n");
    assert!(!v10.unwrap().unwrap().expect_continue);
}

#[test]
fn every_error_maps_to_its_status() {
    let cases = [
        (Malformed("x"), 400),
        (HeadTooLarge, 431),
        (UriTooLong, 414),
        (ParseError::Version, 505),
        (UnsupportedCoding, 501),
        (Expectation, 417),
        (BodyTooLarge, 413),
        (UnknownMethod, 501),
    ];
    for (err, status) in cases {
        assert_eq!(err.status(), status, "{err:?}");
    }
}

#[test]
fn decimal_parsing_is_digits_only() {
    assert_eq!(parse_decimal(b"0"), Some(0));
    assert_eq!(parse_decimal(b"18446744073709551615"), Some(u64::MAX));
    for bad in [&b""[..], b"18446744073709551616", b" 1", b"1 ", b"1_0", b"\xff"] {
        assert_eq!(parse_decimal(bad), None, "{bad:?}");
    }
}

#[test]
fn higher_minor_versions_are_read_as_http11() {
    let mut head = b"GET / HTTP/1.2\r\nHost: a\r\n\r\n".to_vec();
    assert_eq!(parse(&head), Err(ParseError::Version));
    assert_eq!(downgrade_minor_version(&mut head), Downgrade::Rewritten);
    assert_eq!(parse(&head).unwrap().unwrap().version, Version::Http11);
    let mut after_empty_lines = b"\r\n\r\nGET / HTTP/1.9\r\nHost: a\r\n\r\n".to_vec();
    assert_eq!(downgrade_minor_version(&mut after_empty_lines), Downgrade::Rewritten);
    assert_eq!(parse(&after_empty_lines).unwrap().unwrap().version, Version::Http11);
    // A line ended by a bare LF is refused for that, as an HTTP/1.1 one is:
    // it was a 505, as if HTTP/1.2 were not served.
    let mut bare_lf = b"GET / HTTP/1.2\nHost: a\n\n".to_vec();
    assert_eq!(downgrade_minor_version(&mut bare_lf), Downgrade::Rewritten);
    assert_eq!(parse(&bare_lf), Err(Malformed("bare LF in the head")));
    // httparse refuses the version as soon as its minor digit is in.
    for unfinished in [&b"GET / HTTP/1.2"[..], b"GET / HTTP/1.5\r", b"\r\nGET / HTTP/1.2"] {
        assert_eq!(parse(unfinished), Err(ParseError::Version), "{unfinished:?}");
        assert_eq!(downgrade_minor_version(&mut unfinished.to_vec()), Downgrade::Unfinished, "{unfinished:?}");
    }
    for other in [&b"GET / HTTP/2.0\r\n"[..], b"GET / HTTP/10.0\r\n", b"GET / HTTP/5.6", b"HTTP/1.0"] {
        assert_eq!(downgrade_minor_version(&mut other.to_vec()), Downgrade::Refused, "{other:?}");
    }
    // Major version 1 in another shape is a malformed line (400), not a
    // version not served (505).
    for other in [
        &b"GET / HTTP/1.1\r\n"[..],
        b"GET / HTTP/1.2 \r\n",
        b"GET / HTTP/1.2x",
        b"GET / HTTP/1.x\r\n",
        b"GET / HTTP/1\r\n",
    ] {
        assert_eq!(downgrade_minor_version(&mut other.to_vec()), Downgrade::Malformed, "{other:?}");
    }
    // The whole third field is the version: one that merely ends like a
    // higher minor version is refused (found by conn_loop: such a line
    // waited for more when it came whole and got 505 a byte at a time).
    for other in [&b"OT /u HTTP/1PSOT /u HTTP/1.3\r"[..], b"GET /u HTTP/1xHTTP/1.2\r\n", b"GET /u HTTP/1.2 HTTP/1.2"] {
        assert_eq!(downgrade_minor_version(&mut other.to_vec()), Downgrade::Malformed, "{other:?}");
    }
}

#[test]
fn any_method_can_be_allowed() {
    let limits = Limits { any_method: true, ..limits() };
    assert!(parse_head(b"MKCOLA / HTTP/1.1\r\nHost: a\r\n\r\n", &limits, &mut Vec::new()).unwrap().is_some());
}

#[test]
fn framing_errors_in_an_unfinished_head_are_refused_at_once() {
    assert_eq!(
        parse(b"PUT / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n"),
        Err(Malformed("invalid Content-Length"))
    );
    assert_eq!(
        parse(b"PUT / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n"),
        Err(Malformed("conflicting Content-Length"))
    );
    assert_eq!(parse(b"PUT / HTTP/1.1\r\nContent-Length: 1\r\nContent-Len"), Ok(None));
}

#[test]
fn icecast_and_rtsp_request_lines_are_read_as_http10() {
    for (bytes, method, target) in [
        (&b"SOURCE /music ICE/1.0\r\nHost: a\r\nContent-Length: 2\r\n\r\n"[..], &b"SOURCE"[..], &b"/music"[..]),
        (b"OPTIONS * RTSP/1.0\r\nCSeq: 1\r\n\r\n", b"OPTIONS", b"*"),
        (b"\r\nDESCRIBE rtsp://a/b RTSP/1.0\r\n\r\n", b"DESCRIBE", b"rtsp://a/b"),
    ] {
        let mut spans = Vec::new();
        let head = parse_head(bytes, &limits(), &mut spans).unwrap().expect("complete");
        assert_eq!(head.version, Version::Http10, "{bytes:?}");
        assert_eq!(head.len, bytes.len(), "{bytes:?}");
        assert_eq!(&bytes[head.method.0 as usize..][..head.method.1 as usize], method);
        assert_eq!(&bytes[head.target.0 as usize..][..head.target.1 as usize], target);
    }
    let with_body = parse(b"SOURCE /m ICE/1.0\r\nContent-Length: 2\r\n\r\n").unwrap().unwrap();
    assert_eq!(with_body.body, Length(2));
}

#[test]
fn an_unfinished_icecast_head_waits_at_every_cut() {
    waits_at_every_cut(b"SOURCE /music ICE/1.0\r\nHost: a\r\nContent-Length: 1\r\n\r\n");
    assert_eq!(parse(b"SOURCE /music IX"), Err(Malformed("invalid HTTP version")));
}

#[test]
fn legacy_protocols_can_be_refused() {
    let limits = Limits { legacy_protocols: false, ..limits() };
    for bytes in [&b"SOURCE /m ICE/1.0\r\n\r\n"[..], b"OPTIONS * RTSP/1.0\r\n\r\n", b"SOURCE /m IC"] {
        assert_eq!(parse_head(bytes, &limits, &mut Vec::new()), Err(Malformed("invalid HTTP version")), "{bytes:?}");
    }
}

#[test]
fn legacy_heads_keep_the_limits() {
    let mut long = b"SOURCE /".to_vec();
    long.extend([b'a'; 100]);
    long.extend(b" ICE/1.0\r\n\r\n");
    assert_eq!(parse(&long), Err(UriTooLong));
    let many: Vec<u8> = [&b"SOURCE / ICE/1.0\r\n"[..], &b"A: 1\r\n".repeat(9), b"\r\n"].concat();
    assert_eq!(parse(&many), Err(HeadTooLarge));
}

#[test]
fn an_unfinished_head_s_method_is_judged_once_its_line_is_whole() {
    assert_eq!(parse(b"GMT / HTTP/1.1\r\nHost: a\r\n"), Err(ParseError::UnknownMethod));
    // Not before the line is whole, not for empty lines, not for an RTSP
    // line (judged as such once the head is whole).
    assert_eq!(parse(b"GMT / HT"), Ok(None));
    assert_eq!(parse(b"\r\n\r\nGET / HTTP/1.1\r\nHo"), Ok(None));
    assert_eq!(parse(b"ANNOUNCE rtsp://a/b RTSP/1.0\r\nCSeq: 1\r\n"), Ok(None));
}

/// Random heads under random limits (tiny ones included), parsed at every
/// prefix, at a random few and whole: the first verdict is the same. (A
/// higher minor version is left out: its rewrite is the connection's.)
/// `SEED` and `ITER` explore further. (From a review.)
#[test]
fn a_head_gets_the_same_verdict_at_every_point_it_may_be_parsed() {
    let mut seed: u64 = std::env::var("SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x9e3779b97f4a7c15);
    let mut rand = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let iterations: usize = std::env::var("ITER").ok().and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let mut found = std::collections::BTreeMap::new();
    for _ in 0..iterations {
        let limits = Limits {
            max_head_bytes: [8, 16, 24, 32, 48, 64, 1024][rand(7)],
            max_headers: [1, 2, 3, 8][rand(4)],
            max_uri_bytes: [1, 2, 4, 8, 16, 64][rand(6)],
            max_body_bytes: [3, 1000][rand(2)],
            any_method: rand(2) == 0,
            legacy_protocols: rand(2) == 0,
        };
        let mut buf = Vec::new();
        buf.extend_from_slice([&b""[..], b"", b"\r\n", b"\n"][rand(4)]);
        buf.extend_from_slice(
            [&b"GET"[..], b"FOO", b"SOURCE", b"DESCRIBE", b"PRI", b"SETUP", b"POST", b"G\x01T"][rand(8)],
        );
        buf.push(b' ');
        match rand(6) {
            0 => buf.extend_from_slice(b"/\xff"),
            1 => buf.extend_from_slice(b"/\xc3\xa9"),
            _ => {
                buf.push(b'/');
                buf.extend_from_slice(&b"a".repeat(rand(70)));
            }
        }
        buf.push(b' ');
        buf.extend_from_slice(
            [
                &b"HTTP/1.1"[..],
                b"HTTP/1.0",
                b"RTSP/1.0",
                b"RTSP/1.1",
                b"ICE/1.0",
                b"HTTP/2.0",
                b"RTSP/1.0X",
                b"HTTQ/1.1",
                b"HTTP/1.1 ",
            ][rand(9)],
        );
        buf.extend_from_slice([&b"\r\n"[..], b"\r\n", b"\r\n", b"\n", b"\r\r\n"][rand(5)]);
        for _ in 0..rand(6) {
            match rand(10) {
                0 => buf.extend_from_slice(&[&b"X-Long: "[..], &b"v".repeat(rand(60)), b"\r\n"].concat()),
                _ => buf.extend_from_slice(
                    [
                        &b"Host: a\r\n"[..],
                        b"Expect: nope\r\n",
                        b"Content-Length: 5\r\n",
                        b"Content-Length: 6\r\n",
                        b"Transfer-Encoding: chunked\r\n",
                        b"Transfer-Encoding: foo\r\n",
                        b"X: y\n",
                        b"++\r\n",
                        b" f\r\n",
                        b"X: \x01\r\n",
                        b"X: \xff\r\n",
                        b"X: y\r\r\n",
                        b"Connection: close\r\n",
                        b"Host: a b\r\n",
                    ][rand(14)],
                ),
            }
        }
        buf.extend_from_slice(b"\r\n\r\n");
        if buf.windows(8).any(|w| w.starts_with(b"HTTP/1.") && (b'2'..=b'9').contains(&w[7])) {
            continue;
        }
        let verdict = |points: &[usize]| -> Option<(usize, u16)> {
            for &p in points {
                match parse_head(&buf[..p], &limits, &mut Vec::new()) {
                    Ok(None) => {}
                    Ok(Some(_)) => return Some((p, 200)),
                    Err(e) => return Some((p, e.status())),
                }
            }
            None
        };
        let all: Vec<usize> = (1..=buf.len()).collect();
        let every = verdict(&all);
        let whole = verdict(&[buf.len()]);
        let mut pts: Vec<usize> = (1..buf.len()).filter(|_| rand(4) == 0).collect();
        pts.push(buf.len());
        let some = verdict(&pts);
        let (ev, wv, sv) = (every.map(|v| v.1), whole.map(|v| v.1), some.map(|v| v.1));
        if ev != wv || sv != wv {
            let key = (ev, wv, sv);
            let e = found.entry(key).or_insert_with(|| (buf.clone(), limits, every));
            if buf.len() < e.0.len() {
                *e = (buf.clone(), limits, every);
            }
        }
    }
    let report: Vec<String> = found
        .iter()
        .map(|((ev, wv, sv), (buf, l, every))| {
            format!("every {ev:?} whole {wv:?} some {sv:?} at {every:?} {l:?}: {:?}", String::from_utf8_lossy(buf))
        })
        .collect();
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// The bare-LF scan is folded over pairs of bytes so that it is
/// vectorized: it agrees with a plain scan on heads of any length, across
/// the vector width, with a CR or an LF put at any place.
#[test]
fn a_bare_lf_is_found_wherever_it_is() {
    let plain = |head: &[u8]| head.iter().enumerate().any(|(i, &b)| b == b'\n' && (i == 0 || head[i - 1] != b'\r'));
    for len in [0, 1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200] {
        let clean: Vec<u8> = b"ab\r\n".iter().copied().cycle().take(len).collect();
        assert_eq!(has_bare_lf(&clean), plain(&clean), "{len}");
        for at in 0..len {
            for byte in [b'\n', b'\r', b'x', 0x80, 0xff] {
                let mut head = clean.clone();
                head[at] = byte;
                assert_eq!(has_bare_lf(&head), plain(&head), "{len} {at} {byte}");
            }
        }
    }
    assert!(has_bare_lf(b"\nGET"));
    assert!(!has_bare_lf(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
    assert!(has_bare_lf(b"GET / HTTP/1.1\r\nHost: a\r\nX: y\n\r\n"));
}

/// Heads the fast path is for, and others around them.
const COMMON: &[&[u8]] = &[
    b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET /testolope HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
    b"GET / HTTP/1.1\r\nHOST: Example.COM:443\r\nAccept: */*\r\n\r\n",
    b"GET / HTTP/1.1\r\nAccept: */*\r\nhost: localhost:80\r\n\r\n",
    b"HEAD /x?y=1&z=%20 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n",
    b"POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
    b"PUT /f HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"GET / HTTP/1.0\r\n\r\n",
    b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n",
    b"GET /chat HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
    b"GET / HTTP/1.1\r\nhost:a\r\nX-Empty:\r\nX-Blank: \t \r\nX-Pad: \t v a l \t\r\nConnection: close\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64) \"quoted\" ~!#$%&'*+-.^_`|\r\n\r\n",
];

/// Heads the fast path leaves to the full parser, whatever it makes of them.
const UNCOMMON: &[&[u8]] = &[
    b"DELETE / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"get / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET / HTTP/1.1\nHost: a\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\n X: folded\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\r\n\r\n",
    b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    b"GET / HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nExpect: tea\r\n\r\n",
    b"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
    b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nX: a\x7fb\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\n\r",
    b"SOURCE /mount ICE/1.0\r\n\r\n",
];

/// A few bytes of xorshift, to mutate heads the same way at every run.
struct Mutator(u64);

impl Mutator {
    fn next(&mut self, below: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % below as u64) as usize
    }

    fn mutate(&mut self, head: &[u8]) -> Vec<u8> {
        const BYTES: &[u8] = b" \t\r\n:aA0/?@,;\"\x7f\x80\xff\x00-Hh";
        let mut out = head.to_vec();
        for _ in 0..1 + self.next(3) {
            let at = self.next(out.len() + 1);
            let byte = BYTES[self.next(BYTES.len())];
            match self.next(4) {
                0 if at < out.len() => out[at] = byte,
                1 => out.insert(at, byte),
                2 if at < out.len() => drop(out.remove(at)),
                _ => out.truncate(at),
            }
        }
        out
    }
}

#[test]
fn the_fast_path_takes_the_common_heads_and_leaves_the_rest() {
    for head in COMMON {
        assert!(fast_path_agrees(head, &limits()), "{:?}", String::from_utf8_lossy(head));
    }
    for head in UNCOMMON {
        assert!(!fast_path_agrees(head, &limits()), "{:?}", String::from_utf8_lossy(head));
    }
    // A limit reached is the full parser's to answer.
    let tight = [
        Limits { max_headers: 1, ..limits() },
        Limits { max_uri_bytes: 4, ..limits() },
        Limits { max_head_bytes: 30, ..limits() },
        Limits { max_body_bytes: 4, ..limits() },
    ];
    let post = b"POST /abcde HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n";
    for limits in &tight {
        assert!(!fast_path_agrees(post, limits), "{limits:?}");
    }
}

#[test]
fn the_fast_path_decides_as_the_full_parser_on_mutated_heads() {
    let all_limits = [
        limits(),
        Limits { max_headers: 2, ..limits() },
        Limits { max_uri_bytes: 3, ..limits() },
        Limits { max_head_bytes: 40, ..limits() },
        Limits { max_body_bytes: 2, any_method: true, legacy_protocols: false, ..limits() },
    ];
    let mut mutator = Mutator(0x9e37_79b9_7f4a_7c15);
    let (mut taken, mut left) = (0, 0);
    for head in COMMON.iter().chain(UNCOMMON) {
        for _ in 0..3000 {
            let mutant = mutator.mutate(head);
            for limits in &all_limits {
                if fast_path_agrees(&mutant, limits) {
                    taken += 1;
                } else {
                    left += 1;
                }
            }
        }
    }
    // Both ways taken often, or the comparison proves little.
    assert!(taken > 10_000 && left > 10_000, "taken {taken}, left {left}");
}

#[test]
fn the_fast_path_decides_as_the_full_parser_with_every_byte_anywhere() {
    // Every byte value in place of every byte of the common heads, and
    // every cut: what a mutation may miss.
    let all_limits = [limits(), Limits { max_headers: 1, max_uri_bytes: 5, ..limits() }];
    let mut taken = 0;
    for head in COMMON {
        for at in 0..head.len() {
            for limits in &all_limits {
                taken += usize::from(fast_path_agrees(&head[..at], limits));
                let mut mutant = head.to_vec();
                for byte in 0..=255 {
                    mutant[at] = byte;
                    taken += usize::from(fast_path_agrees(&mutant, limits));
                }
            }
        }
    }
    assert!(taken > 10_000, "taken {taken}");
}

/// `Host` values as RFC 9110 §7.2 and RFC 3986 §3.2.2 have them: a name
/// or IPv4 address, or an IP literal, then an optional port of digits.
#[test]
fn host_values_are_checked_by_their_grammar() {
    let valid: &[&[u8]] = &[
        b"",
        b"a",
        b"example.com",
        b"a:80",
        b"a:",
        b":80",
        b"127.0.0.1:8080",
        b"xn--caf-dma.example",
        b"a_b~c-d",
        b"!$&'()*+;=",
        b"a%41b",
        b"a%41:8",
        b"[::1]",
        b"[::1]:443",
        b"[2001:db8::7]:",
        b"[v1.fe:x]",
        b"[fe80::1%25eth0]",
        b"[fe80::1%eth0]:8080",
        b"[::ffff:1.2.3.4]",
        b"[V7.x:y]",
    ];
    let invalid: &[&[u8]] = &[
        b"a:b",
        b"a:80:80",
        b"a:80a",
        b"[::1",
        b"[::1]x",
        b"[::1]:8a",
        b"[]",
        b"[a]b]",
        b"a\"<b>",
        b"u@a",
        b"a,b",
        b"a/b",
        b"a\\b",
        b"a?b",
        b"a#b",
        b"a%4",
        b"a%zz",
        b"a%",
        b"a[b]",
        b"caf\xc3\xa9",
        b"a\tb",
        b"[example.com]",
        b"[1.2.3.4]",
        b"[fe80::1%]",
        b"[v.x]",
        b"[v1.]",
    ];
    for (host, ok) in valid.iter().map(|h| (h, true)).chain(invalid.iter().map(|h| (h, false))) {
        let head = [&b"GET / HTTP/1.1\r\nHost: "[..], host, b"\r\n\r\n"].concat();
        let got = parse(&head);
        let shown = String::from_utf8_lossy(host);
        // The fast path takes each valid one (its `Host` line, or the
        // general way), last or followed by another field line.
        let followed = [&b"GET / HTTP/1.1\r\nHost: "[..], host, b"\r\nAccept: */*\r\n\r\n"].concat();
        for head in [&head, &followed] {
            assert_eq!(fast_path_agrees(head, &limits()), ok, "{shown:?}");
        }
        if ok {
            assert!(matches!(got, Ok(Some(_))), "{shown:?}: {got:?}");
        } else {
            assert_eq!(got, Err(Malformed("invalid Host")), "{shown:?}");
        }
    }
}

/// Each request-target form with the methods that may use it (RFC 9112
/// §3.2), through the whole parser.
#[test]
fn a_target_must_have_a_form_its_method_takes() {
    let valid: &[&[u8]] = &[
        b"GET /a?b HTTP/1.1",
        b"GET http://a.example/x HTTP/1.1",
        b"GET http://a.example HTTP/1.1",
        b"GET http://hypnotoad.org:1234?hail=all HTTP/1.1",
        b"POST svn+ssh://a/b HTTP/1.1",
        b"GET http://a%12:b!&*$@hypnotoad.org:1234/toto HTTP/1.1",
        b"GET http://u,v:p@a.example/ HTTP/1.1",
        b"GET http://@a.example/ HTTP/1.1",
        b"GET http://[::1]:8080/x HTTP/1.1",
        b"OPTIONS * HTTP/1.1",
        b"OPTIONS /x HTTP/1.1",
        b"M-SEARCH * HTTP/1.1",
        b"CONNECT a.example:443 HTTP/1.1",
        b"CONNECT [::1]:443 HTTP/1.1",
        b"CONNECT home_0.netscape.com:443 HTTP/1.0",
    ];
    let invalid: &[&[u8]] = &[
        b"GET foo HTTP/1.1",
        b"GET * HTTP/1.1",
        b"HEAD * HTTP/1.1",
        b"DELETE * HTTP/1.1",
        b"GET a.example:80 HTTP/1.1",
        b"GET http:/x HTTP/1.1",
        b"GET 1http://a/ HTTP/1.1",
        b"GET ://a/ HTTP/1.1",
        b"GET http://a\"b/ HTTP/1.1",
        b"GET http://a:b/ HTTP/1.1",
        b"CONNECT /x HTTP/1.1",
        b"CONNECT * HTTP/1.1",
        b"CONNECT a.example HTTP/1.1",
        b"CONNECT a.example: HTTP/1.1",
        b"CONNECT :443 HTTP/1.1",
        b"CONNECT http://a:443 HTTP/1.1",
        b"CONNECT a b:443 HTTP/1.1",
        b"CONNECT [::1] HTTP/1.1",
        b"CONNECT [::1]: HTTP/1.1",
        b"GET http:///x HTTP/1.1",
        b"GET http://:80/x HTTP/1.1",
        b"GET http://[example.com]/ HTTP/1.1",
        b"GET http://a.example\\@b.example/ HTTP/1.1",
        b"GET http://a@b@c/ HTTP/1.1",
        b"GET http://a%zz@c/ HTTP/1.1",
    ];
    for (line, ok) in valid.iter().map(|l| (l, true)).chain(invalid.iter().map(|l| (l, false))) {
        let head = [*line, b"\r\nHost: a\r\n\r\n"].concat();
        let got = parse_head(&head, &Limits { any_method: true, ..limits() }, &mut Vec::new());
        let shown = String::from_utf8_lossy(line);
        if ok {
            assert!(matches!(got, Ok(Some(_))), "{shown:?}: {got:?}");
        } else {
            assert!(matches!(got, Err(Malformed(_))), "{shown:?}: {got:?}");
        }
    }
}
