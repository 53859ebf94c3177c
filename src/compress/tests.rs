use std::io::Read;

use flate2::read::GzDecoder;

use super::*;
use crate::request_fixture::with_request;

const PAGE: &str = include_str!("../../LICENSE-MIT");

fn accepts(values: &[&str]) -> bool {
    accepts_gzip(values.iter().map(|v| v.as_bytes()))
}

#[test]
fn accept_encoding_weights() {
    let yes: &[&[&str]] = &[
        &["gzip"],
        &["GZIP"],
        &["x-gzip"],
        &["gzip, deflate, br"],
        &["br;q=1.0, gzip;q=0.8, *;q=0.1"],
        &["gzip;q=0.001"],
        &["gzip;q=1"],
        &["gzip;q=1.000"],
        &["gzip; Q=0.5"],
        &["gzip;level=9"],
        &["*"],
        &["br", "gzip"],
        &["identity;q=0, *;q=0.5"],
    ];
    for values in yes {
        assert!(accepts(values), "{values:?}");
    }
    let no: &[&[&str]] = &[
        &[],
        &[""],
        &["identity"],
        &["identity;q=0"],
        &["br, deflate"],
        &["gzip;q=0"],
        &["gzip;q=0.000"],
        &["gzip;q=0, *"],
        &["*;q=0"],
        &["gzip;q=1.5"],
        &["gzip;q=2"],
        &["gzip;q=0.0001"],
        &["gzip;q="],
        &["gzip;q=abc"],
        &["gzipx"],
    ];
    for values in no {
        assert!(!accepts(values), "{values:?}");
    }
}

#[test]
fn compressible_types() {
    for yes in [
        "text/html; charset=utf-8",
        "TEXT/CSS",
        "text/plain",
        "application/json",
        "application/problem+json",
        "application/javascript",
        "application/xml",
        "image/svg+xml",
        "application/atom+xml",
        "application/wasm",
        "font/ttf",
        "image/x-icon",
    ] {
        assert!(is_compressible(yes), "{yes}");
    }
    for no in [
        "text/event-stream",
        "image/png",
        "image/jpeg",
        "font/woff2",
        "application/zip",
        "application/octet-stream",
        "video/mp4",
        "",
        "text",
    ] {
        assert!(!is_compressible(no), "{no}");
    }
}

/// What `compress(handler)` answers to a GET with these extra headers.
fn through(handler: impl Handler, headers: &str) -> Response {
    let raw = format!("GET / HTTP/1.1\r\nHost: x\r\n{headers}\r\n");
    let wrapped = compress(handler);
    with_request(raw.as_bytes(), |req| wrapped.handle(req))
}

fn gunzip(bytes: &[u8]) -> String {
    let mut out = String::new();
    GzDecoder::new(bytes).read_to_string(&mut out).unwrap();
    out
}

fn owned(resp: &Response) -> &[u8] {
    match &resp.body {
        Payload::Owned(b) => b,
        Payload::Static(b) => b,
        _ => panic!("not in memory"),
    }
}

#[test]
fn a_page_is_gzipped_for_a_client_that_accepts_it() {
    let resp = through(
        |_: &mut Request<'_>| Response::html(PAGE).with_header("ETag", "\"v1\"").with_header("Accept-Ranges", "bytes"),
        "Accept-Encoding: gzip, br\r\n",
    );
    assert_eq!(resp.header("content-encoding"), Some("gzip"));
    assert_eq!(resp.header("vary"), Some("Accept-Encoding"));
    assert_eq!(resp.header("etag"), Some("W/\"v1\""));
    assert_eq!(resp.header("accept-ranges"), None);
    assert_eq!(resp.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(owned(&resp).len() < PAGE.len());
    assert_eq!(gunzip(owned(&resp)), PAGE);
}

#[test]
fn without_accept_encoding_the_page_is_sent_as_it_is_with_vary() {
    for headers in ["", "Accept-Encoding: identity\r\n", "Accept-Encoding: gzip;q=0\r\n"] {
        let resp = through(|_: &mut Request<'_>| Response::text(PAGE).with_header("ETag", "\"v1\""), headers);
        assert_eq!(resp.header("content-encoding"), None, "{headers}");
        assert_eq!(resp.header("vary"), Some("Accept-Encoding"));
        assert_eq!(resp.header("etag"), Some("\"v1\""));
        assert_eq!(owned(&resp), PAGE.as_bytes());
    }
}

/// A `304` is never compressed; it always says `Vary: Accept-Encoding` (it
/// cannot tell whether its `200` did), and its strong tag becomes weak only
/// for a client that sent the weak one back (it holds the gzipped answer).
#[test]
fn a_304_keeps_vary_and_the_tag_the_client_holds() {
    let not_modified = |_: &mut Request<'_>| Response::status(304).with_header("ETag", "\"v1\"");
    for (headers, etag) in [
        ("Accept-Encoding: gzip\r\nIf-None-Match: W/\"v1\"\r\n", "W/\"v1\""),
        ("Accept-Encoding: gzip\r\nIf-None-Match: \"v0\", W/\"v1\"\r\n", "W/\"v1\""),
        ("If-None-Match: \"v1\"\r\n", "\"v1\""),
        ("Accept-Encoding: gzip\r\nIf-None-Match: \"v1\"\r\n", "\"v1\""),
    ] {
        let resp = through(not_modified, headers);
        assert_eq!((resp.status, resp.header("etag")), (304, Some(etag)), "{headers:?}");
        assert_eq!((resp.header("vary"), resp.header("content-encoding")), (Some("Accept-Encoding"), None));
    }
}

#[test]
fn answers_it_could_never_compress_are_left_alone() {
    type Make = fn() -> Response;
    let cases: Vec<(&str, Make)> = vec![
        ("small", || Response::text("short")),
        ("png", || Response::bytes(PAGE).with_content_type("image/png")),
        ("no content type", || Response::status(200).with_body(PAGE)),
        ("204", || Response::status(204).with_content_type("text/plain")),
        ("206", || Response::text(PAGE).with_status(206).with_header("Content-Range", "bytes 0-9/99")),
        ("range", || Response::text(PAGE).with_header("Content-Range", "bytes 0-9/99")),
        ("encoded", || Response::text(PAGE).with_header("Content-Encoding", "br")),
        ("no-transform", || Response::text(PAGE).with_header("Cache-Control", "public, No-Transform")),
        ("event stream", || Response::text(PAGE).with_content_type("text/event-stream")),
        ("stream", || Response::stream(|out| out.write_all(PAGE.as_bytes())).with_content_type("text/plain")),
        ("invalid", || Response::text(PAGE).with_header("Bad Name", "x")),
    ];
    for (what, make) in cases {
        let resp = through(move |_: &mut Request<'_>| make(), "Accept-Encoding: gzip\r\n");
        assert_eq!(resp.header("content-encoding").filter(|&e| e != "br"), None, "{what}");
        assert_eq!(resp.header("vary"), None, "{what}");
    }
}

/// A part of a page the client would get gzipped whole says it varies on
/// `Accept-Encoding`, as the whole does; a part of what is never
/// compressed does not.
#[test]
fn a_206_of_a_compressible_page_keeps_vary() {
    let part = |total: u64, content_type: &'static str| {
        move |_: &mut Request<'_>| {
            Response::text("0123456789")
                .with_status(206)
                .with_content_type(content_type)
                .with_header("Content-Range", format!("bytes 0-9/{total}"))
        }
    };
    for accept in ["Accept-Encoding: gzip\r\n", ""] {
        let resp = through(part(100_000, "text/html"), accept);
        assert_eq!((resp.header("vary"), resp.header("content-encoding")), (Some("Accept-Encoding"), None), "{accept}");
        assert_eq!(through(part(100_000, "image/png"), accept).header("vary"), None);
        assert_eq!(through(part(99, "text/html"), accept).header("vary"), None, "too small to be compressed whole");
    }
    let unknown =
        |_: &mut Request<'_>| Response::text("0123456789").with_status(206).with_header("Content-Range", "bytes 0-9/*");
    assert_eq!(through(unknown, "").header("vary"), Some("Accept-Encoding"), "a whole of unknown length would be");
}

#[test]
fn files_keep_sendfile() {
    let file = std::fs::File::open("LICENSE-MIT").unwrap();
    let resp = through(
        move |_: &mut Request<'_>| Response::file(file.try_clone().unwrap(), 10).with_content_type("text/plain"),
        "Accept-Encoding: gzip\r\n",
    );
    assert!(matches!(resp.body, Payload::File { len: 10, .. }));
    assert_eq!(resp.header("content-encoding"), None);
}

#[test]
fn a_body_gzip_cannot_shrink_is_sent_as_it_is() {
    // Bytes with no repetition and no skew for deflate to use.
    let mut state = 0x2545_f491_u32;
    let noise: Vec<u8> = (0..4096)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state >> 24) as u8
        })
        .collect();
    let expected = noise.clone();
    let resp = through(
        move |_: &mut Request<'_>| Response::bytes(noise.clone()).with_content_type("text/plain"),
        "Accept-Encoding: gzip\r\n",
    );
    assert_eq!(resp.header("content-encoding"), None);
    assert_eq!(resp.header("vary"), Some("Accept-Encoding"));
    assert_eq!(owned(&resp), expected);
}

#[test]
fn a_reader_is_gzipped_as_it_streams() {
    let resp = through(
        |_: &mut Request<'_>| {
            Response::reader(PAGE.as_bytes(), Some(PAGE.len() as u64)).with_content_type("text/plain")
        },
        "Accept-Encoding: *\r\n",
    );
    assert_eq!(resp.header("content-encoding"), Some("gzip"));
    let Payload::Reader { mut reader, len: None } = resp.body else { panic!("not a reader of unknown length") };
    let mut gz = Vec::new();
    reader.read_to_end(&mut gz).unwrap();
    assert_eq!(gunzip(&gz), PAGE);
}

/// A reader given a length sends exactly that many bytes: one that ends
/// sooner cuts the answer short (the identity answer closes the connection
/// before its `Content-Length`), one that goes on is cut at the length.
/// Gzipped, the short one ended whole, its trailer vouching for a
/// truncated body, and the long one sent everything.
#[test]
fn a_gzipped_reader_keeps_to_its_length() {
    let gzipped = |body: String, len: usize| {
        let resp = through(
            move |_: &mut Request<'_>| {
                let body = std::io::Cursor::new(body.clone().into_bytes());
                Response::reader(body, Some(len as u64)).with_content_type("text/plain")
            },
            "Accept-Encoding: gzip\r\n",
        );
        assert_eq!(resp.header("content-encoding"), Some("gzip"));
        let Payload::Reader { mut reader, .. } = resp.body else { panic!("not a reader") };
        let mut gz = Vec::new();
        reader.read_to_end(&mut gz).map(|_| gz)
    };
    let short = gzipped(PAGE.to_owned(), PAGE.len() + 1).unwrap_err();
    assert_eq!(short.kind(), std::io::ErrorKind::UnexpectedEof);
    assert_eq!(gunzip(&gzipped(format!("{PAGE}and more"), PAGE.len()).unwrap()), PAGE);
    assert_eq!(gunzip(&gzipped(PAGE.to_owned(), PAGE.len()).unwrap()), PAGE);
}

#[test]
fn vary_is_merged_and_a_declared_length_dropped() {
    let resp = through(
        |_: &mut Request<'_>| {
            Response::text(PAGE).with_header("Vary", "Cookie").with_header("Content-Length", PAGE.len().to_string())
        },
        "Accept-Encoding: gzip\r\n",
    );
    assert_eq!(resp.header("vary"), Some("Cookie, Accept-Encoding"));
    assert_eq!(resp.declared_length, None);
    for vary in ["*", "accept-encoding", "Origin, Accept-Encoding"] {
        let resp = through(move |_: &mut Request<'_>| Response::text(PAGE).with_header("Vary", vary), "");
        assert_eq!(resp.header("vary"), Some(vary));
    }
}

#[test]
fn weak_etags_stay_as_they_are_and_levels_are_capped() {
    let resp = through(
        |_: &mut Request<'_>| Response::text(PAGE).with_header("ETag", "W/\"v1\""),
        "Accept-Encoding: gzip\r\n",
    );
    assert_eq!(resp.header("etag"), Some("W/\"v1\""));
    let handler = compress(|_: &mut Request<'_>| Response::text("x")).level(42).min_bytes(0);
    assert_eq!((handler.level, handler.min_bytes), (9, 0));
}
