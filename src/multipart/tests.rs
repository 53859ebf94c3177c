use std::io::{self, Read};

use super::replay::{Bounds, Cuts, Outcome, Seen, replay};
use super::scan::boundary_of;
use super::{Multipart, Source};
use crate::request_fixture::{with_request, with_request_limited};

const B: &[u8] = b"b0undary";

/// A body with a preamble, fields, files (one empty), a part without
/// headers, transport padding, content that looks like a boundary but is
/// not one, and an epilogue.
const BODY: &[u8] = b"preamble, ignored\r\n--b0undar-ish is not a boundary\r\n\
--b0undary\r\n\
Content-Disposition: form-data; name=\"title\"\r\n\
\r\n\
Holiday \xe2\x98\x80\r\n\
--b0undary \t\r\n\
Content-Disposition: form-data; name=\"photo\"; filename=\"a;b \\\\ %22c%22.jpg\"\r\n\
Content-Type: image/jpeg\r\n\
\r\n\
\xff\xd8\r\n--b0undar\r\n-\r\n--\r\n\r\n--b0undarX\r\n--b0und\r\n\
--b0undary\r\n\
Content-Disposition: form-data; name=\"empty\"; filename=\"\"\r\n\
Content-Type: application/octet-stream\r\n\
\r\n\
\r\n\
--b0undary\r\n\
\r\n\
no headers at all\r\n\
--b0undary--\r\n\
epilogue, ignored --b0undary\r\n";

fn seen(name: Option<&str>, filename: Option<&str>, headers: &[(&str, &[u8])], content: &[u8]) -> Seen {
    Seen {
        name: name.map(str::to_owned),
        filename: filename.map(str::to_owned),
        headers: headers.iter().map(|(n, v)| ((*n).to_owned(), v.to_vec())).collect(),
        content: Some(content.to_vec()),
    }
}

fn whole(body: &[u8], bounds: Bounds) -> Outcome {
    replay(&mut Cuts::new(body, vec![]), B, bounds, 64 * 1024, |_| false)
}

/// The outcome of `body` read whole, after checking that reading it a byte
/// at a time, in two pieces cut at every offset, and in small reads, each
/// gives the same (skipping every other part, and not).
fn everywhere(body: &[u8], bounds: Bounds) -> Outcome {
    let expected = whole(body, bounds);
    for skip in [|_| false, |i: usize| i % 2 == 1] {
        let base = replay(&mut Cuts::new(body, vec![]), B, bounds, 64 * 1024, skip);
        assert_eq!(replay(&mut Cuts::bytewise(body), B, bounds, 7, skip), base, "a byte a read");
        for cut in 0..=body.len() {
            for read_size in [1, 64 * 1024] {
                let got = replay(&mut Cuts::new(body, vec![cut]), B, bounds, read_size, skip);
                assert_eq!(got, base, "cut at {cut}, reads of {read_size}");
            }
        }
    }
    expected
}

#[test]
fn every_part_comes_out_exactly_however_the_body_is_cut() {
    let disposition = |v: &'static str| ("Content-Disposition", v.as_bytes());
    let photo = "form-data; name=\"photo\"; filename=\"a;b \\\\ %22c%22.jpg\"";
    let empty = "form-data; name=\"empty\"; filename=\"\"";
    let expected = vec![
        seen(Some("title"), None, &[disposition("form-data; name=\"title\"")], "Holiday \u{2600}".as_bytes()),
        seen(
            Some("photo"),
            // As written between the quotes: nothing decoded, no escapes.
            Some("a;b \\\\ %22c%22.jpg"),
            &[disposition(photo), ("Content-Type", b"image/jpeg")],
            b"\xff\xd8\r\n--b0undar\r\n-\r\n--\r\n\r\n--b0undarX\r\n--b0und",
        ),
        seen(Some("empty"), Some(""), &[disposition(empty), ("Content-Type", b"application/octet-stream")], b""),
        seen(None, None, &[], b"no headers at all"),
    ];
    assert_eq!(everywhere(BODY, Bounds::default()), Outcome { parts: expected, end: Ok(()) });
}

macro_rules! malformed {
    ($($name:ident: $body:expr => $status:expr, $message:expr;)*) => {$(
        #[test]
        fn $name() {
            let outcome = everywhere($body, Bounds::default());
            assert_eq!(outcome.end, Err(($status, $message.to_owned())), "{outcome:?}");
        }
    )*};
}

const UNTERMINATED: &str = "multipart body ended before its closing boundary";
const BAD_DELIMITER: &str = "multipart boundary not followed by CRLF or `--`";
const BAD_HEAD: &str = "malformed multipart part header section";

malformed! {
    an_empty_body_is_unterminated: b"" => 400, UNTERMINATED;
    a_body_with_another_boundary_is_all_preamble: b"--other\r\n\r\nx\r\n--other--\r\n" => 400, UNTERMINATED;
    a_body_without_the_final_dashes_is_unterminated: b"--b0undary\r\n\r\nx\r\n--b0undary" => 400, UNTERMINATED;
    a_body_cut_in_a_part_is_unterminated: b"--b0undary\r\n\r\nsome content" => 400, UNTERMINATED;
    a_body_cut_in_a_head_is_unterminated: b"--b0undary\r\nContent-Type: text/plain\r\n" => 400, UNTERMINATED;
    a_body_cut_after_one_dash_is_unterminated: b"--b0undary\r\n\r\nx\r\n--b0undary-" => 400, UNTERMINATED;
    a_boundary_followed_by_a_letter_is_malformed: b"--b0undaryX\r\n\r\nx\r\n--b0undary--" => 400, BAD_DELIMITER;
    a_boundary_followed_by_a_bare_lf_is_malformed: b"--b0undary\n\r\nx\r\n--b0undary--" => 400, BAD_DELIMITER;
    padding_then_dashes_is_malformed: b"--b0undary --\r\n" => 400, BAD_DELIMITER;
    a_header_without_a_colon_is_malformed: b"--b0undary\r\nContent-Type\r\n\r\nx\r\n--b0undary--" => 400, BAD_HEAD;
    a_header_name_with_a_space_is_malformed: b"--b0undary\r\nA B: c\r\n\r\nx\r\n--b0undary--" => 400, BAD_HEAD;
    two_dispositions_are_malformed: b"--b0undary\r\ncontent-disposition: form-data\r\n\
        Content-Disposition: form-data\r\n\r\n\r\n--b0undary--" => 400, BAD_HEAD;
    a_name_given_twice_is_malformed: b"--b0undary\r\nContent-Disposition: form-data; name=a; name=b\r\n\r\n\r\n\
        --b0undary--" => 400, BAD_HEAD;
    an_unclosed_quote_is_malformed: b"--b0undary\r\nContent-Disposition: form-data; name=\"a\r\n\r\n\r\n\
        --b0undary--" => 400, BAD_HEAD;
    a_name_not_utf8_is_malformed: b"--b0undary\r\nContent-Disposition: form-data; name=\"\xff\"\r\n\r\n\r\n\
        --b0undary--" => 400, BAD_HEAD;
    garbage_after_a_quoted_value_is_malformed: b"--b0undary\r\nContent-Disposition: form-data; name=\"a\"b\r\n\r\n\
        \r\n--b0undary--" => 400, BAD_HEAD;
    seventeen_headers_are_malformed: &[&b"--b0undary\r\n"[..], &b"X: y\r\n".repeat(17), b"\r\n\r\n--b0undary--"]
        .concat() => 400, BAD_HEAD;
}

#[test]
fn the_smallest_bodies_parse() {
    for (body, parts) in [
        (&b"--b0undary--"[..], 0),
        (b"--b0undary--\r\n", 0),
        (b"--b0undary\r\n\r\n\r\n--b0undary--", 1),
        (b"\r\n--b0undary\r\n\r\n\r\n--b0undary--garbage", 1),
    ] {
        let outcome = everywhere(body, Bounds::default());
        assert_eq!((outcome.parts.len(), outcome.end), (parts, Ok(())), "{:?}", String::from_utf8_lossy(body));
    }
}

#[test]
fn parameters_are_read_as_written() {
    let name_of = |disposition: &str| {
        let body = format!("--b0undary\r\nContent-Disposition: {disposition}\r\n\r\n\r\n--b0undary--");
        let outcome = whole(body.as_bytes(), Bounds::default());
        outcome.end.map(|()| (outcome.parts[0].name.clone(), outcome.parts[0].filename.clone()))
    };
    let both = |name: &str, filename: Option<&str>| Ok((Some(name.to_owned()), filename.map(str::to_owned)));
    assert_eq!(name_of("form-data; name=field"), both("field", None));
    assert_eq!(name_of("form-data;name=\"a b\";filename=\"c;d\""), both("a b", Some("c;d")));
    assert_eq!(name_of("FORM-DATA ; NAME = \"x\" ; FileName=\"C:\\dir\\\""), both("x", Some("C:\\dir\\")));
    assert_eq!(name_of("form-data; name=\"\""), both("", None));
    // RFC 7578 §4.2 forbids `filename*`; it is not read.
    assert_eq!(name_of("form-data; name=f; filename*=UTF-8''a%20b"), both("f", None));
    assert_eq!(name_of("form-data; name=f;"), both("f", None));
    assert_eq!(name_of("form-data; name=\"caf\u{e9}\""), both("caf\u{e9}", None));
    for bad in ["form-data; name", "form-data; name=", "form-data name=a", "; name=a", "form-data; =a"] {
        assert_eq!(name_of(bad).unwrap_err().0, 400, "{bad}");
    }
}

#[test]
fn the_boundary_is_read_from_the_content_type() {
    for (content_type, boundary) in [
        ("multipart/form-data; boundary=abc", Some("abc")),
        ("multipart/form-data;boundary=\"a b:c\"", Some("a b:c")),
        ("multipart/form-data; charset=utf-8; BOUNDARY=----WebKitFormBoundaryX", Some("----WebKitFormBoundaryX")),
        ("multipart/form-data; boundary=\"\"", None),
        ("multipart/form-data; boundary=\"ends with space \"", None),
        ("multipart/form-data; boundary=a; boundary=b", None),
        ("multipart/form-data; boundary=\"a\\b\"", None),
        ("multipart/form-data; boundary=a\"b", None),
        ("multipart/form-data", None),
        ("multipart/form-data; other=x", None),
    ] {
        let got = boundary_of(content_type.as_bytes()).map(|b| String::from_utf8(b.to_vec()).unwrap());
        assert_eq!(got.as_deref(), boundary, "{content_type}");
    }
    let long = format!("multipart/form-data; boundary={}", "x".repeat(201));
    assert_eq!(boundary_of(long.as_bytes()), None);
}

/// `count` parts, each a field `f{i}` with `content`.
fn fields(count: usize, content: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for i in 0..count {
        body.extend(format!("--b0undary\r\nContent-Disposition: form-data; name=f{i}\r\n\r\n{content}\r\n").bytes());
    }
    body.extend(b"--b0undary--\r\n");
    body
}

#[test]
fn more_parts_than_the_limit_are_413() {
    let bounds = Bounds { parts: Some(2), ..Bounds::default() };
    assert_eq!(everywhere(&fields(2, "x"), bounds).end, Ok(()));
    let outcome = everywhere(&fields(3, "x"), bounds);
    assert_eq!(outcome.parts.len(), 2);
    assert_eq!(outcome.end, Err((413, "more multipart parts than the limit".into())));
}

#[test]
fn a_field_past_its_limit_is_413_and_a_file_or_a_skipped_field_is_not() {
    let bounds = Bounds { field: Some(5), ..Bounds::default() };
    assert_eq!(everywhere(&fields(1, "12345"), bounds).end, Ok(()));
    let outcome = everywhere(&fields(1, "123456"), bounds);
    assert_eq!(outcome.end, Err((413, "multipart field over the limit".into())));
    assert_eq!(outcome.parts[0].content.as_deref(), Some(&b"12345"[..]), "what the limit lets through");
    let skipped = replay(&mut Cuts::new(&fields(1, "123456"), vec![]), B, bounds, 100, |_| true);
    assert_eq!(skipped.end, Ok(()));
    let file = b"--b0undary\r\nContent-Disposition: form-data; name=f; filename=a\r\n\r\n123456\r\n--b0undary--";
    assert_eq!(everywhere(file, bounds).parts[0].content.as_deref(), Some(&b"123456"[..]));
}

#[test]
fn a_body_past_the_total_limit_is_413_unless_it_ended_within_it() {
    let body = fields(2, "x");
    let end = body.len() - 2; // Without the epilogue's CRLF, which is not read.
    let bounds = |total: usize| Bounds { total: Some(total as u64), ..Bounds::default() };
    assert_eq!(everywhere(&body, bounds(end)).end, Ok(()));
    let outcome = everywhere(&body, bounds(end - 1));
    assert_eq!(outcome.end, Err((413, "multipart body over the limit".into())));
    assert_eq!(everywhere(&body, bounds(0)).end, Err((413, "multipart body over the limit".into())));
}

#[test]
fn a_head_past_its_limit_is_400() {
    let body = b"--b0undary\r\nContent-Disposition: form-data; name=a\r\n\r\nx\r\n--b0undary--";
    let head = "Content-Disposition: form-data; name=a\r\n\r\n".len();
    let bounds = |head: usize| Bounds { head: Some(head), ..Bounds::default() };
    assert_eq!(everywhere(body, bounds(head)).end, Ok(()));
    let outcome = everywhere(body, bounds(head - 1));
    assert_eq!(outcome.end, Err((400, "multipart part header section over the limit".into())));
}

/// A part of `len` bytes of `x`s, made as it is read.
struct Large {
    head: Vec<u8>,
    left: u64,
    tail: Vec<u8>,
}

impl Read for Large {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if !self.head.is_empty() {
            let n = self.head.len().min(out.len());
            out[..n].copy_from_slice(&self.head[..n]);
            self.head.drain(..n);
            return Ok(n);
        }
        if self.left > 0 {
            let n = out.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
            out[..n].fill(b'x');
            self.left -= n as u64;
            return Ok(n);
        }
        (&self.tail[..]).read(out).inspect(|&n| drop(self.tail.drain(..n)))
    }
}

impl Source for Large {}

#[test]
fn a_large_file_streams_through_a_buffer_of_fixed_size() {
    const LEN: u64 = 64 * 1024 * 1024;
    let head = b"--b0undary\r\nContent-Disposition: form-data; name=f; filename=big\r\n\r\n".to_vec();
    let mut body = Large { head, left: LEN, tail: b"\r\n--b0undary--".to_vec() };
    let mut multipart = Multipart::over(&mut body, super::scan::Scanner::new(B, super::Limits::default()));
    let mut part = multipart.next_part().unwrap().unwrap();
    let mut chunk = [0u8; 8192];
    let mut total = 0u64;
    loop {
        let n = part.read(&mut chunk).unwrap();
        if n == 0 {
            break;
        }
        assert!(chunk[..n].iter().all(|&b| b == b'x'));
        total += n as u64;
    }
    assert_eq!(total, LEN);
    assert!(multipart.next_part().unwrap().is_none());
    assert_eq!(multipart.scanner.buffer_bytes(), 16 * 1024);
}

const FORM: &[u8] = b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n\xe2\x82\xac1\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"../x.txt\"\r\n\r\nfile bytes\r\n--XyZ--\r\n";

fn post(content_type: &str, body: &[u8]) -> Vec<u8> {
    let head =
        format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n", body.len());
    [head.as_bytes(), body].concat()
}

/// A request with `body` in chunks of 7 bytes.
fn chunked(body: &[u8]) -> Vec<u8> {
    let mut raw = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n\
Transfer-Encoding: chunked\r\n\r\n"
        .to_vec();
    for piece in body.chunks(7) {
        raw.extend(format!("{:x}\r\n", piece.len()).bytes());
        raw.extend(piece);
        raw.extend(b"\r\n");
    }
    raw.extend(b"0\r\n\r\n");
    raw
}

#[test]
fn the_content_type_decides_415_and_400_before_the_body_is_read() {
    for (content_type, status) in [
        ("text/plain", 415),
        ("multipart/mixed; boundary=XyZ", 415),
        ("multipart/form-data", 400),
        ("multipart/form-data; boundary=", 400),
    ] {
        let raw = post(content_type, FORM);
        let got =
            with_request(&raw, |req| req.multipart().map(|_| ()).map_err(|e| (e.status(), req.body().bytes_read())));
        assert_eq!(got, Err((status, 0)), "{content_type}");
    }
    let raw = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(with_request(raw, |req| req.multipart().map(|_| ()).map_err(|e| e.status())), Err(415));
}

#[test]
fn text_reads_a_field_and_save_writes_a_file() {
    let raw = post("Multipart/Form-Data; boundary=\"XyZ\"", FORM);
    let dir = std::env::temp_dir().join(format!("httpool-multipart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let saved = with_request(&raw, |req| {
        let mut form = req.multipart().unwrap();
        let mut a = form.next_part().unwrap().unwrap();
        assert_eq!((a.name(), a.filename(), a.content_type()), (Some("a"), None, None));
        assert_eq!(a.text().unwrap(), "€1");
        let mut file = form.next_part().unwrap().unwrap();
        assert_eq!(file.filename(), Some("../x.txt"));
        let saved = file.save_in(&dir).unwrap();
        assert!(form.next_part().unwrap().is_none());
        assert!(form.next_part().unwrap().is_none(), "still none");
        saved
    });
    assert_eq!(saved.size(), 10);
    assert_eq!(saved.path().parent(), Some(dir.as_path()));
    assert!(saved.path().file_name().unwrap().to_str().unwrap().starts_with("upload-"));
    assert_eq!(std::fs::read(saved.path()).unwrap(), b"file bytes");
    // save_to never overwrites: the file there stays as it was.
    let again = with_request(&raw, |req| {
        let mut form = req.multipart().unwrap();
        form.next_part().unwrap();
        form.next_part().unwrap().unwrap().save_to(saved.path()).unwrap_err().status()
    });
    assert_eq!(again, 500);
    assert_eq!(std::fs::read(saved.path()).unwrap(), b"file bytes");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_cut_short_is_not_left_behind() {
    let raw = post("multipart/form-data; boundary=XyZ", &FORM[..FORM.len() - 12]);
    let dir = std::env::temp_dir().join(format!("httpool-multipart-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let status = with_request(&raw, |req| {
        let mut form = req.multipart().unwrap();
        form.next_part().unwrap();
        let e = form.next_part().unwrap().unwrap().save_in(&dir).unwrap_err();
        // Every later call fails too.
        assert_eq!(form.next_part().unwrap_err().status(), 400);
        e.status()
    });
    assert_eq!(status, 400);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn text_refuses_past_its_limit_and_bytes_that_are_not_utf8() {
    let raw = post("multipart/form-data; boundary=XyZ", FORM);
    let status = |limit: u64| {
        with_request(&raw, |req| {
            let mut form = req.multipart().unwrap();
            form.next_part().unwrap().unwrap().text_within(limit).map_err(|e| e.status())
        })
    };
    assert_eq!(status(4), Ok("€1".to_owned()));
    assert_eq!(status(3), Err(413));
    let bad = post("multipart/form-data; boundary=XyZ", b"--XyZ\r\n\r\n\xff\r\n--XyZ--");
    let status =
        with_request(&bad, |req| req.multipart().unwrap().next_part().unwrap().unwrap().text().unwrap_err().status());
    assert_eq!(status, 400);
}

#[test]
fn a_body_over_the_servers_limit_is_413_through_the_parts() {
    let raw = chunked(FORM);
    let statuses = with_request_limited(&raw, 40, |req| {
        let mut form = req.multipart().unwrap();
        [form.next_part().unwrap_err().status(), form.next_part().unwrap_err().status()]
    });
    assert_eq!(statuses, [413, 413]);
}

#[test]
fn a_chunked_body_reads_the_same() {
    let raw = chunked(FORM);
    let names = with_request(&raw, |req| {
        let mut form = req.multipart().unwrap();
        let mut names = Vec::new();
        while let Some(mut part) = form.next_part().unwrap() {
            names.push((part.name().unwrap().to_owned(), part.text().unwrap()));
        }
        names
    });
    assert_eq!(names, [("a".to_owned(), "€1".to_owned()), ("file".to_owned(), "file bytes".to_owned())]);
}

/// The fuzz target's seeds pass its check (and so does every input the
/// fuzzer found a problem with, once added there).
#[test]
fn the_fuzz_seeds_read_the_same_however_cut() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/multipart");
    let mut seeds = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        super::fuzz_cuts(&std::fs::read(entry.unwrap().path()).unwrap());
        seeds += 1;
    }
    assert!(seeds >= 7, "{seeds} seeds");
}

/// A head bound at its extreme is taken as the largest buffer allowed, not
/// allocated; at 0 every part's head is over it.
#[test]
fn a_head_bound_at_its_extremes_works() {
    let raw = post("multipart/form-data; boundary=XyZ", FORM);
    let status = |bound: usize| {
        with_request(&raw, |req| {
            let mut form = req.multipart().unwrap().max_part_header_bytes(bound);
            form.next_part().map(|part| part.map(|p| p.name().map(str::to_owned))).map_err(|e| e.status())
        })
    };
    assert_eq!(status(usize::MAX), Ok(Some(Some("a".to_owned()))));
    assert_eq!(status(0), Err(400));
}
