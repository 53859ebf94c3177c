//! ServeDir through handler calls: exact statuses, headers and bodies.

use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::request_fixture::with_request;
use crate::response::Payload;

const HOUR: std::time::Duration = std::time::Duration::from_secs(3600);

/// A fresh directory under the system's temporary one; removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("httpool-fs-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// Writes a file modified an hour ago: its validators are strong (see
    /// [`conditional::is_strong`]).
    fn write(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let path = self.write_now(rel, bytes);
        fs::File::options().write(true).open(&path).unwrap().set_modified(SystemTime::now() - HOUR).unwrap();
        path
    }

    /// Writes a file modified now.
    fn write_now(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A site: `root` is what is served, `outside` sits next to it.
fn site() -> (TempDir, ServeDir) {
    let tmp = TempDir::new();
    tmp.write("site/index.html", b"<h1>home</h1>\n");
    tmp.write("site/hello.txt", b"0123456789abcdefghij");
    tmp.write("site/docs/index.html", b"<h1>docs</h1>\n");
    tmp.write("site/empty/.keep", b"");
    tmp.write("site/.env", b"SECRET=1\n");
    tmp.write("site/data.json", b"{}");
    tmp.write("site/logo.svg", b"<svg/>");
    tmp.write("site/logo.svgz", b"\x1f\x8b");
    tmp.write("site/logs.tar.gz", b"\x1f\x8b");
    tmp.write("site/app.js", b"1");
    tmp.write("site/blob.unknownext", b"?");
    tmp.write("outside/secret.txt", b"secret\n");
    let dir = ServeDir::new(tmp.0.join("site")).unwrap();
    (tmp, dir)
}

fn get(dir: &ServeDir, target: &str, headers: &str) -> Response {
    let raw = format!("GET {target} HTTP/1.1\r\nHost: x\r\n{headers}\r\n");
    with_request(raw.as_bytes(), |req| dir.serve(req))
}

fn request(dir: &ServeDir, method: &str, target: &str) -> Response {
    let raw = format!("{method} {target} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    with_request(raw.as_bytes(), |req| dir.serve(req))
}

/// The body a response would send.
fn body(resp: Response) -> Vec<u8> {
    if let Some(bytes) = resp.body.in_memory() {
        return bytes.to_vec();
    }
    match resp.body {
        Payload::File { mut file, len } => {
            let mut out = Vec::new();
            (&mut file).take(len).read_to_end(&mut out).unwrap();
            out
        }
        _ => panic!("not a file body"),
    }
}

fn headers(resp: &Response) -> Vec<(String, String)> {
    let mut all: Vec<_> = resp.headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    if let Some(ct) = &resp.content_type {
        all.insert(0, ("Content-Type".into(), ct.to_string()));
    }
    all
}

#[test]
fn a_file_with_its_type_validators_and_bytes() {
    let (_tmp, dir) = site();
    let resp = get(&dir, "/hello.txt", "");
    assert_eq!(resp.status, 200);
    let (etag, modified) = (resp.header("etag").unwrap().to_owned(), resp.header("last-modified").unwrap().to_owned());
    assert!(etag.starts_with("\"14-") && etag.ends_with('"'), "{etag}");
    assert_eq!(
        headers(&resp),
        [
            ("Content-Type".into(), "text/plain; charset=utf-8".into()),
            ("ETag".into(), etag),
            ("Last-Modified".into(), modified),
            ("Accept-Ranges".into(), "bytes".into()),
        ]
    );
    assert_eq!(body(resp), b"0123456789abcdefghij");
}

#[test]
fn content_types_by_extension() {
    let (_tmp, dir) = site();
    for (target, want) in [
        ("/index.html", "text/html; charset=utf-8"),
        ("/data.json", "application/json"),
        ("/logo.svg", "image/svg+xml"),
        ("/app.js", "text/javascript; charset=utf-8"),
        ("/blob.unknownext", "application/octet-stream"),
    ] {
        assert_eq!(get(&dir, target, "").header("content-type"), Some(want), "{target}");
    }
}

/// A `.svgz` file is gzipped SVG: it says so, so that a browser renders
/// it; an archive is sent as the data it is.
#[test]
fn svgz_says_its_coding_and_archives_do_not() {
    let (_tmp, dir) = site();
    let svgz = get(&dir, "/logo.svgz", "");
    assert_eq!((svgz.header("content-type"), svgz.header("content-encoding")), (Some("image/svg+xml"), Some("gzip")));
    let head = request(&dir, "HEAD", "/logo.svgz");
    assert_eq!(head.header("content-encoding"), Some("gzip"));
    let archive = get(&dir, "/logs.tar.gz", "");
    assert_eq!(archive.header("content-encoding"), None);
    assert_ne!(archive.header("content-type"), Some("image/svg+xml"));
}

/// A `HEAD` for a file in memory is answered as a `GET` (the server sends
/// no body to a `HEAD`), so wrappers give both the same headers; so is one
/// for a file on disk (see below).
#[test]
fn head_answers_as_get_does() {
    let (_tmp, dir) = site();
    for _ in 0..2 {
        let head = request(&dir, "HEAD", "/hello.txt");
        let get = request(&dir, "GET", "/hello.txt");
        assert_eq!(head.status, 200);
        assert_eq!(head.header("content-type"), Some("text/plain; charset=utf-8"));
        assert!(head.header("etag").is_some());
        assert_eq!(head.headers, get.headers);
        assert_eq!(body(head).len(), 20);
    }
}

#[test]
fn other_methods_are_405_with_allow() {
    let (_tmp, dir) = site();
    for method in ["POST", "PUT", "DELETE", "OPTIONS", "PATCH"] {
        let resp = request(&dir, method, "/hello.txt");
        assert_eq!((resp.status, resp.header("allow")), (405, Some("GET, HEAD")), "{method}");
    }
}

#[test]
fn not_modified_by_etag_or_date() {
    let (_tmp, dir) = site();
    let first = get(&dir, "/hello.txt", "");
    let (etag, modified) = (first.header("etag").unwrap(), first.header("last-modified").unwrap());
    for headers in [
        format!("If-None-Match: {etag}\r\n"),
        format!("If-None-Match: \"other\", W/{etag}\r\n"),
        "If-None-Match: *\r\n".to_owned(),
        format!("If-Modified-Since: {modified}\r\n"),
        "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n".to_owned(),
    ] {
        let resp = get(&dir, "/hello.txt", &headers);
        assert_eq!(resp.status, 304, "{headers}");
        assert_eq!(
            headers_of_304(&resp),
            [("ETag".to_owned(), etag.to_owned()), ("Last-Modified".to_owned(), modified.to_owned())]
        );
    }
    // If-None-Match decides alone when present (RFC 9110 §13.2.2).
    let resp = get(&dir, "/hello.txt", &format!("If-None-Match: \"other\"\r\nIf-Modified-Since: {modified}\r\n"));
    assert_eq!(resp.status, 200);
    let resp = get(&dir, "/hello.txt", "If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n");
    assert_eq!(resp.status, 200);
}

/// `If-None-Match` over several lines is one list (RFC 9110 §5.3).
#[test]
fn not_modified_by_a_tag_on_a_second_line() {
    let (_tmp, dir) = site();
    let etag = get(&dir, "/hello.txt", "").header("etag").unwrap().to_owned();
    let resp = get(&dir, "/hello.txt", &format!("If-None-Match: \"other\"\r\nIf-None-Match: {etag}\r\n"));
    assert_eq!(resp.status, 304);
}

/// RFC 9110 §13.1.1, §13.1.4, §13.2.2: `If-Match` (strong comparison), or
/// without it `If-Unmodified-Since`, must hold for the file to be sent,
/// range or not; they are judged before `If-None-Match`.
#[test]
fn preconditions_that_fail_get_412() {
    let (_tmp, dir) = site();
    let first = get(&dir, "/hello.txt", "");
    let (etag, modified) =
        (first.header("etag").unwrap().to_owned(), first.header("last-modified").unwrap().to_owned());
    for headers in [
        "If-Match: \"other\"\r\n".to_owned(),
        format!("If-Match: W/{etag}\r\n"),
        "If-Match: \"other\"\r\nRange: bytes=0-3\r\n".to_owned(),
        format!("If-Match: \"other\"\r\nIf-None-Match: {etag}\r\n"),
        "If-Unmodified-Since: Thu, 01 Jan 1970 00:00:01 GMT\r\n".to_owned(),
        "If-Unmodified-Since: Thu, 01 Jan 1970 00:00:01 GMT\r\nRange: bytes=0-3\r\n".to_owned(),
    ] {
        let resp = get(&dir, "/hello.txt", &headers);
        assert_eq!((resp.status, body(resp)), (412, b"".to_vec()), "{headers}");
    }
    for (headers, status) in [
        (format!("If-Match: {etag}\r\n"), 200),
        (format!("If-Match: \"other\"\r\nIf-Match: {etag}\r\n"), 200),
        ("If-Match: *\r\n".to_owned(), 200),
        (format!("If-Match: {etag}\r\nRange: bytes=0-3\r\n"), 206),
        (format!("If-Unmodified-Since: {modified}\r\n"), 200),
        ("If-Unmodified-Since: not a date\r\n".to_owned(), 200),
        // If-Match decides alone when present.
        (format!("If-Match: {etag}\r\nIf-Unmodified-Since: Thu, 01 Jan 1970 00:00:01 GMT\r\n"), 200),
        // Then If-None-Match is judged.
        (format!("If-Match: {etag}\r\nIf-None-Match: {etag}\r\n"), 304),
    ] {
        assert_eq!(get(&dir, "/hello.txt", &headers).status, status, "{headers}");
    }
}

/// A modification time in the future is shown as now (RFC 9110 §8.8.2.1:
/// never later than the answer's `Date`), and compared as shown. (Shown as
/// it was, a year ahead, a client revalidating with it was told "not
/// modified" about every edit for a year.)
#[test]
fn a_file_modified_in_the_future_is_shown_as_modified_now() {
    let (tmp, dir) = site();
    let path = tmp.write("site/future.txt", b"old\n");
    let year = std::time::Duration::from_secs(365 * 24 * 3600);
    let file = fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() + year).unwrap();
    let resp = get(&dir, "/future.txt", "");
    let shown = resp.header("last-modified").unwrap().to_owned();
    assert!(httpdate::parse_http_date(&shown).unwrap() <= SystemTime::now(), "{shown}");
    assert_eq!(get(&dir, "/future.txt", &format!("If-Modified-Since: {shown}\r\n")).status, 304);
    let a_month_ahead = httpdate::fmt_http_date(SystemTime::now() + year / 12);
    assert_eq!(get(&dir, "/future.txt", &format!("If-Unmodified-Since: {a_month_ahead}\r\n")).status, 200);
}

/// `Range` and `If-Range` take one value: sent on two lines, the range is
/// ignored. A suffix of an empty file is all of it.
#[test]
fn a_range_sent_twice_or_a_suffix_of_nothing_gets_the_whole_file() {
    let (tmp, dir) = site();
    let etag = get(&dir, "/hello.txt", "").header("etag").unwrap().to_owned();
    for headers in [
        "Range: bytes=0-1\r\nRange: bytes=5-6\r\n".to_owned(),
        format!("Range: bytes=0-1\r\nIf-Range: {etag}\r\nIf-Range: {etag}\r\n"),
    ] {
        let resp = get(&dir, "/hello.txt", &headers);
        assert_eq!((resp.status, body(resp).len()), (200, 20), "{headers}");
    }
    tmp.write("site/nothing.txt", b"");
    let resp = get(&dir, "/nothing.txt", "Range: bytes=-1\r\n");
    assert_eq!((resp.status, resp.header("content-range")), (200, None));
    assert_eq!(get(&dir, "/nothing.txt", "Range: bytes=0-\r\n").status, 416);
}

/// `/file/.` names a directory, as `/file/` does: neither is the file.
#[test]
fn a_file_asked_for_as_a_directory_is_not_found() {
    let (_tmp, dir) = site();
    assert_eq!(get(&dir, "/hello.txt/", "").status, 404);
    for target in ["/hello.txt/.", "/hello.txt/%2e", "/hello.txt/./"] {
        let resp = get(&dir, target, "");
        assert_eq!((resp.status, resp.header("location")), (308, Some("/hello.txt/")), "{target}");
    }
    let resp = get(&dir, "/docs/.", "");
    assert_eq!((resp.status, resp.header("location")), (308, Some("/docs/")));
    assert_eq!(get(&dir, "/./hello.txt", "").header("location"), Some("/hello.txt"));
}

fn headers_of_304(resp: &Response) -> Vec<(String, String)> {
    assert!(resp.content_type.is_none());
    headers(resp)
}

#[test]
fn single_byte_ranges() {
    let (_tmp, dir) = site();
    let resp = get(&dir, "/hello.txt", "Range: bytes=2-5\r\n");
    assert_eq!((resp.status, resp.header("content-range")), (206, Some("bytes 2-5/20")));
    assert_eq!(body(resp), b"2345");
    let resp = get(&dir, "/hello.txt", "Range: bytes=-3\r\n");
    assert_eq!((resp.status, resp.header("content-range")), (206, Some("bytes 17-19/20")));
    assert_eq!(body(resp), b"hij");
    let resp = get(&dir, "/hello.txt", "Range: bytes=15-\r\n");
    assert_eq!(body(resp), b"fghij");

    let resp = get(&dir, "/hello.txt", "Range: bytes=20-\r\n");
    assert_eq!(resp.status, 416);
    assert_eq!(headers(&resp), [("Content-Range".to_owned(), "bytes */20".to_owned())]);

    // Several ranges, a stale If-Range, or HEAD: the whole file.
    assert_eq!(get(&dir, "/hello.txt", "Range: bytes=0-1,3-4\r\n").status, 200);
    assert_eq!(get(&dir, "/hello.txt", "Range: bytes=0-1\r\nIf-Range: \"old\"\r\n").status, 200);
    let etag = get(&dir, "/hello.txt", "").header("etag").unwrap().to_owned();
    assert_eq!(get(&dir, "/hello.txt", &format!("Range: bytes=0-1\r\nIf-Range: {etag}\r\n")).status, 206);
    let raw = b"HEAD /hello.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\r\n\r\n";
    assert_eq!(with_request(raw, |req| dir.serve(req)).status, 200);
}

#[test]
fn large_files_go_out_as_files_with_ranges() {
    let (tmp, dir) = site();
    let big: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    tmp.write("site/big.bin", &big);
    for _ in 0..2 {
        let resp = get(&dir, "/big.bin", "");
        assert!(matches!(resp.body, Payload::File { len: 100_000, .. }));
        assert_eq!(resp.header("content-type"), Some("application/octet-stream"));
        assert_eq!(body(resp), big);
        let resp = get(&dir, "/big.bin", "Range: bytes=50000-50009\r\n");
        assert_eq!((resp.status, resp.header("content-range")), (206, Some("bytes 50000-50009/100000")));
        assert_eq!(body(resp), &big[50_000..50_010]);
    }
}

#[test]
fn without_a_memory_cache_small_files_are_files_too() {
    let (tmp, _) = site();
    let dir = ServeDir::new(tmp.0.join("site")).unwrap().memory_cache(0);
    for _ in 0..2 {
        let resp = get(&dir, "/hello.txt", "Range: bytes=0-3\r\n");
        assert!(matches!(resp.body, Payload::File { len: 4, .. }));
        assert_eq!(body(resp), b"0123");
    }
}

#[test]
fn directories_serve_their_index_and_redirect_without_a_slash() {
    let (tmp, dir) = site();
    tmp.write("site/déjà/index.html", b"<h1>vu</h1>\n");
    assert_eq!(body(get(&dir, "/", "")), b"<h1>home</h1>\n");
    assert_eq!(body(get(&dir, "/docs/", "")), b"<h1>docs</h1>\n");
    for (target, location) in
        [("/docs", "/docs/"), ("/docs?lang=en", "/docs/?lang=en"), ("/d%C3%A9j%C3%A0", "/d%C3%A9j%C3%A0/")]
    {
        let resp = get(&dir, target, "");
        assert_eq!((resp.status, resp.header("location")), (301, Some(location)), "{target}");
    }
    // Other spellings go to the plain one first.
    for (target, location) in [("//docs", "/docs"), ("/./docs", "/docs"), ("/d%6Fcs?a=1", "/docs?a=1")] {
        let resp = get(&dir, target, "");
        assert_eq!((resp.status, resp.header("location")), (308, Some(location)), "{target}");
    }
    assert_eq!(get(&dir, "/empty/", "").status, 404, "no index, no listing");
    assert_eq!(get(&dir, "/hello.txt/", "").status, 404, "a file is not a directory");
    let no_index = ServeDir::new(&dir.root).unwrap().index_file(None);
    assert_eq!(get(&no_index, "/docs/", "").status, 404);
}

#[test]
fn missing_and_hidden_files_are_404() {
    let (tmp, dir) = site();
    for target in ["/nope.txt", "/docs/nope/", "/.env", "/%2Eenv", "/empty/.keep"] {
        assert_eq!(get(&dir, target, "").status, 404, "{target}");
    }
    let with_hidden = ServeDir::new(tmp.0.join("site")).unwrap().hidden_files(true);
    assert_eq!(body(get(&with_hidden, "/.env", "")), b"SECRET=1\n");
}

#[test]
fn traversal_is_refused() {
    let (_tmp, dir) = site();
    for target in [
        "/../outside/secret.txt",
        "/docs/../../outside/secret.txt",
        "/%2e%2e/outside/secret.txt",
        "/%2E%2E%2Foutside%2Fsecret.txt",
        "/docs%2f..%2f..%2foutside%2fsecret.txt",
        "/..%5coutside%5csecret.txt",
        "/docs\\..\\..\\outside\\secret.txt",
        "/hello.txt%00.html",
    ] {
        assert_eq!(get(&dir, target, "").status, 403, "{target}");
    }
    for target in ["/%zz", "/%C3%28", "/a%"] {
        assert_eq!(get(&dir, target, "").status, 400, "{target}");
    }
}

#[test]
#[cfg(unix)] // Symbolic links on Windows need a privilege tests lack.
fn symlinks_may_not_lead_out_of_the_root() {
    let (tmp, dir) = site();
    symlink(tmp.0.join("outside/secret.txt"), tmp.0.join("site/leak.txt")).unwrap();
    symlink(tmp.0.join("outside"), tmp.0.join("site/out")).unwrap();
    symlink(tmp.0.join("site/hello.txt"), tmp.0.join("site/alias.txt")).unwrap();
    // 404, as for what is not there: whether a file exists outside the
    // root is not told.
    assert_eq!(get(&dir, "/leak.txt", "").status, 404);
    assert_eq!(get(&dir, "/out/secret.txt", "").status, 404);
    assert_eq!(get(&dir, "/out/missing.txt", "").status, 404);
    assert_eq!(body(get(&dir, "/alias.txt", "")), b"0123456789abcdefghij");
}

/// A file reached by another name than its own (here a symbolic link; on
/// Windows an 8.3 short name such as `GIT~1` for `.git`) is hidden if its
/// real path is.
#[test]
#[cfg(unix)] // Symbolic links on Windows need a privilege tests lack.
fn a_hidden_file_under_another_name_is_refused() {
    let (tmp, dir) = site();
    std::fs::create_dir(tmp.0.join("site/.git")).unwrap();
    std::fs::write(tmp.0.join("site/.git/config"), "secret").unwrap();
    symlink(tmp.0.join("site/.git"), tmp.0.join("site/git")).unwrap();
    symlink(tmp.0.join("site/.git/config"), tmp.0.join("site/config")).unwrap();
    assert_eq!(get(&dir, "/git/config", "").status, 404);
    assert_eq!(get(&dir, "/config", "").status, 404);
    let shown = ServeDir::new(tmp.0.join("site")).unwrap().hidden_files(true);
    assert_eq!(get(&shown, "/git/config", "").status, 200);
}

#[test]
#[cfg(unix)] // Symbolic links on Windows need a privilege tests lack.
fn a_remembered_file_swapped_for_a_symlink_out_is_refused() {
    let (tmp, dir) = site();
    assert_eq!(get(&dir, "/hello.txt", "").status, 200);
    let path = tmp.0.join("site/hello.txt");
    fs::remove_file(&path).unwrap();
    symlink(tmp.0.join("outside/secret.txt"), &path).unwrap();
    assert_eq!(get(&dir, "/hello.txt", "").status, 404);
    assert_eq!(request(&dir, "HEAD", "/hello.txt").status, 404);
}

#[test]
fn an_edited_file_is_read_again() {
    let (tmp, dir) = site();
    assert_eq!(body(get(&dir, "/hello.txt", "")), b"0123456789abcdefghij");
    let path = tmp.0.join("site/hello.txt");
    fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"KLM").unwrap();
    let resp = get(&dir, "/hello.txt", "");
    // Weak: edited now (see the test below).
    assert!(resp.header("etag").unwrap().starts_with("W/\"17-"));
    assert_eq!(body(resp), b"0123456789abcdefghijKLM");
    fs::remove_file(&path).unwrap();
    assert_eq!(get(&dir, "/hello.txt", "").status, 404);
}

#[test]
#[cfg(unix)] // mkfifo(1); Windows has no FIFOs in the file system.
fn only_regular_files_are_served() {
    let (tmp, dir) = site();
    let fifo = tmp.0.join("site/pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    assert_eq!(get(&dir, "/pipe", "").status, 404);
}

#[test]
fn a_prefix_is_taken_off() {
    let (tmp, _) = site();
    let dir = ServeDir::new(tmp.0.join("site")).unwrap().strip_prefix("/static/");
    assert_eq!(body(get(&dir, "/static/hello.txt", "")), b"0123456789abcdefghij");
    assert_eq!(body(get(&dir, "/static/", "")), b"<h1>home</h1>\n");
    let resp = get(&dir, "/static", "");
    assert_eq!((resp.status, resp.header("location")), (301, Some("/static/")));
    let resp = get(&dir, "/static/docs", "");
    assert_eq!((resp.status, resp.header("location")), (301, Some("/static/docs/")));
    for target in ["/hello.txt", "/staticx/hello.txt", "/stat"] {
        assert_eq!(get(&dir, target, "").status, 404, "{target}");
    }
}

#[test]
fn a_root_that_is_not_a_directory_is_an_error() {
    let (tmp, _) = site();
    assert!(ServeDir::new(tmp.0.join("site/hello.txt")).is_err());
    assert!(ServeDir::new(tmp.0.join("missing")).is_err());
}

/// Each spelling of a path a client may send (`//a`, `/./a`, `/%61`, as
/// many as it likes, each as long as `max_uri_bytes`) is sent to the plain
/// one, and only the plain one is remembered: the others would each take
/// an entry, their keys uncounted in the cache's bytes, and push real files
/// out.
#[test]
fn a_file_is_remembered_under_its_plain_spelling_only() {
    let (_tmp, dir) = site();
    for target in ["//hello.txt", "/./hello.txt", "/%68ello.txt"] {
        let resp = get(&dir, target, "");
        assert_eq!((resp.status, resp.header("location")), (308, Some("/hello.txt")), "{target}");
    }
    for _ in 0..2 {
        assert_eq!(body(get(&dir, "/hello.txt", "")), b"0123456789abcdefghij");
    }
    assert_eq!(dir.cache.held().0, 1);
}

/// The site with `file` (below its root) added, behind a router whose
/// route `guard` answers `401` and a mount of the site at `/`.
#[cfg(feature = "router")]
fn guarded(file: &str, guard: &'static str) -> (TempDir, crate::Router) {
    let (tmp, _) = site();
    tmp.write(&format!("site/{file}"), b"secret");
    let app = crate::Router::new()
        .get(guard, |_: &mut Request<'_>| Response::status(401))
        .mount("/", ServeDir::new(tmp.0.join("site")).unwrap());
    (tmp, app)
}

/// A route guarding `/private/…` in front of a mount cannot be passed by
/// spelling the path otherwise: the file server sends the client to the
/// plain spelling, which the route sees. (`/%70rivate/key` reached the
/// file.)
#[cfg(feature = "router")]
#[test]
fn a_route_in_front_cannot_be_passed_by_spelling_the_path_otherwise() {
    use crate::test::TestRequest;
    let (_tmp, app) = guarded("private/key", "/private/{*path}");
    assert_eq!(TestRequest::get("/private/key").send(&app).status(), 401);
    for target in ["/%70rivate/key", "//private/key", "/./private/key", "/private/./key", "/x/../private/key"] {
        let resp = TestRequest::get(target).send(&app);
        assert_ne!(resp.status(), 200, "{target}");
        if resp.status() == 308 {
            assert_eq!(resp.header("location"), Some("/private/key"), "{target}");
        }
    }
}

/// A name with a byte a URI may not hold as it is (`[`, `|`: visible
/// ASCII, which the parser takes) has one spelling that reaches the file,
/// its escape: sent as it is, it goes there first. Both were served, so a
/// route guarding `/[draft]/…` was passed by `/%5Bdraft%5D/key`.
#[cfg(feature = "router")]
#[test]
fn a_name_with_a_byte_to_escape_has_one_spelling() {
    use crate::test::TestRequest;
    let (_tmp, app) = guarded("[draft]/key", "/%5Bdraft%5D/{*path}");
    assert_eq!(TestRequest::get("/%5Bdraft%5D/key").send(&app).status(), 401);
    for target in ["/[draft]/key", "/%5bdraft%5d/key", "/[draft%5D/key"] {
        let resp = TestRequest::get(target).send(&app);
        assert_eq!((resp.status(), resp.header("location")), (308, Some("/%5Bdraft%5D/key")), "{target}");
    }
}

/// Through `compress`, a `HEAD` for a large file (sent from disk, which
/// `compress` leaves as it is) gets the headers its `GET` gets. It was
/// judged by the length it announced and given the gzipped answer's
/// headers (`Content-Encoding: gzip`, a weak tag, no `Accept-Ranges`) for
/// a `GET` that is sent as it is, with none of them.
#[cfg(feature = "compression")]
#[test]
fn through_compress_a_head_for_a_file_on_disk_answers_as_its_get() {
    let (tmp, dir) = site();
    let text: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    tmp.write("site/big.txt", &text);
    let wrapped = crate::compress(dir);
    let ask = |method: &str| {
        let raw = format!("{method} /big.txt HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n");
        with_request(raw.as_bytes(), |req| wrapped.handle(req))
    };
    for _ in 0..2 {
        let get = ask("GET");
        let head = ask("HEAD");
        assert_eq!(get.header("content-encoding"), None);
        assert_eq!(headers(&head), headers(&get));
        let announced = |r: &Response| match r.body {
            Payload::File { len, .. } => Some(len),
            _ => r.declared_length,
        };
        assert_eq!((announced(&head), announced(&get)), (Some(100_000), Some(100_000)));
    }
}

/// A remembered file is checked by the path the request names, not only by
/// where that path led: a symbolic link on the way that is removed, or
/// pointed elsewhere (a deploy switching `current` from one release to the
/// next), changes what the request gets. The remembered file itself did
/// not change, so the request kept getting it: a link removed still served
/// its old target, and a switched one the old release.
#[test]
#[cfg(unix)] // Symbolic links on Windows need a privilege tests lack.
fn a_symlink_on_the_way_removed_or_switched_is_followed_again() {
    let (tmp, dir) = site();
    let big: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    for release in ["v1", "v2"] {
        tmp.write(&format!("site/{release}/app.js"), release.as_bytes());
        tmp.write(&format!("site/{release}/big.txt"), &big[..big.len() - release.len()]);
        let mut last = fs::OpenOptions::new().append(true).open(tmp.0.join(format!("site/{release}/big.txt"))).unwrap();
        last.write_all(release.as_bytes()).unwrap();
    }
    let current = tmp.0.join("site/current");
    symlink(tmp.0.join("site/v1"), &current).unwrap();
    symlink(tmp.0.join("site/hello.txt"), tmp.0.join("site/alias.txt")).unwrap();
    assert_eq!(body(get(&dir, "/current/app.js", "")), b"v1");
    assert!(body(get(&dir, "/current/big.txt", "")).ends_with(b"v1"));
    assert_eq!(body(get(&dir, "/alias.txt", "")), b"0123456789abcdefghij");

    fs::remove_file(&current).unwrap();
    symlink(tmp.0.join("site/v2"), &current).unwrap();
    fs::remove_file(tmp.0.join("site/alias.txt")).unwrap();

    assert_eq!(body(get(&dir, "/current/app.js", "")), b"v2");
    assert!(body(get(&dir, "/current/big.txt", "")).ends_with(b"v2"));
    assert_eq!(get(&dir, "/alias.txt", "").status, 404);

    // The file itself moved where it is not served (a hidden directory),
    // and the symlink followed it: the same file, no longer served.
    fs::rename(tmp.0.join("site/v2"), tmp.0.join("site/.v2")).unwrap();
    fs::remove_file(&current).unwrap();
    symlink(tmp.0.join("site/.v2"), &current).unwrap();
    assert_eq!(get(&dir, "/current/app.js", "").status, 404);
    assert_eq!(get(&dir, "/current/big.txt", "").status, 404);
}

/// Without an index file a directory is `404` (`ServeDir::index_file`),
/// asked for with its `/` or without: it was `301` to the path with one,
/// which then said `404`, telling a client which directories exist.
#[test]
fn without_an_index_a_directory_without_its_slash_is_not_found_either() {
    let (_tmp, dir) = site();
    let no_index = ServeDir::new(&dir.root).unwrap().index_file(None);
    for target in ["/docs", "/docs?a=1", "/empty"] {
        let resp = get(&no_index, target, "");
        assert_eq!((resp.status, resp.header("location")), (404, None), "{target}");
    }
    let prefixed = ServeDir::new(&dir.root).unwrap().index_file(None).strip_prefix("/static");
    let resp = get(&prefixed, "/static", "");
    assert_eq!((resp.status, resp.header("location")), (404, None));
    assert_eq!(body(get(&prefixed, "/static/hello.txt", "")), b"0123456789abcdefghij");
    // With an index, the redirect stays.
    let resp = get(&dir, "/docs", "");
    assert_eq!((resp.status, resp.header("location")), (301, Some("/docs/")));
}

/// A remembered file whose permissions change is looked up again: made
/// unreadable (`chmod 000`, to take it offline), a fresh lookup answers
/// `403`, and so did a large file (opened on each request), but a small
/// one went on being served from memory, `200`, its stat unchanged but
/// for the status-change time, which was not compared. (Run as root, as
/// tests often are, every lookup can read it: the entry is still made
/// anew, and the answers agree.)
#[test]
#[cfg(unix)]
fn a_remembered_file_whose_permissions_change_is_looked_up_again() {
    use std::os::unix::fs::PermissionsExt;
    let (tmp, dir) = site();
    tmp.write("site/big.txt", &vec![b'a'; 100_000]);
    assert_eq!(get(&dir, "/hello.txt", "").status, 200);
    assert_eq!(get(&dir, "/big.txt", "").status, 200);
    let before = dir.cache.get("/hello.txt").unwrap();
    for file in ["site/hello.txt", "site/big.txt"] {
        fs::set_permissions(tmp.0.join(file), fs::Permissions::from_mode(0o000)).unwrap();
    }
    let fresh = ServeDir::new(tmp.0.join("site")).unwrap();
    for target in ["/hello.txt", "/big.txt"] {
        assert_eq!(get(&dir, target, "").status, get(&fresh, target, "").status, "{target}");
    }
    let after = dir.cache.get("/hello.txt");
    assert!(after.is_none_or(|after| !Arc::ptr_eq(&before, &after)), "the entry was made anew");
}

/// A symlink in the root to a directory outside it is `404`, with its `/`
/// or without, as a name that leads nowhere: without the `/` it was `301`
/// to the path with one, telling that the name leads to a directory
/// somewhere. So is a symlink to a hidden directory inside the root.
#[test]
#[cfg(unix)] // Symbolic links on Windows need a privilege tests lack.
fn a_symlink_to_a_directory_out_of_the_root_looks_like_a_missing_name() {
    let (tmp, dir) = site();
    tmp.write("outside/index.html", b"<h1>outside</h1>\n");
    tmp.write("site/.hidden/index.html", b"<h1>hidden</h1>\n");
    symlink(tmp.0.join("outside"), tmp.0.join("site/out")).unwrap();
    symlink(tmp.0.join("site/.hidden"), tmp.0.join("site/shown")).unwrap();
    symlink(tmp.0.join("site/docs/../../outside"), tmp.0.join("site/up")).unwrap();
    for (target, missing) in [
        ("/out", "/nope"),
        ("/out/", "/nope/"),
        ("/out?a=1", "/nope?a=1"),
        ("/shown", "/nope"),
        ("/shown/", "/nope/"),
        ("/up", "/nope"),
        ("/up/", "/nope/"),
        ("/up/secret.txt", "/nope.txt"),
    ] {
        let (resp, want) = (get(&dir, target, ""), get(&dir, missing, ""));
        assert_eq!((resp.status, headers(&resp)), (want.status, headers(&want)), "{target}");
        assert_eq!(resp.status, 404, "{target}");
    }
    let prefixed = ServeDir::new(tmp.0.join("site")).unwrap().strip_prefix("/static");
    assert_eq!(get(&prefixed, "/static/out", "").status, 404);
}

/// A directory inside the root that the server may not search is `404`,
/// as a missing name, not `403`, which would tell that it is there. (Run
/// as root, which searches it anyway, nothing is checked: run the test
/// binary as another user, e.g. under `setpriv --reuid=65534`.)
#[test]
#[cfg(unix)]
fn a_directory_that_cannot_be_searched_looks_like_a_missing_name() {
    use std::os::unix::fs::PermissionsExt;
    let (tmp, dir) = site();
    tmp.write("site/locked/index.html", b"<h1>locked</h1>\n");
    let locked = tmp.0.join("site/locked");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    let searchable = fs::metadata(locked.join("index.html")).is_ok();
    for target in ["/locked/", "/locked/index.html", "/locked/missing.txt"] {
        let resp = get(&dir, target, "");
        if !searchable {
            assert_eq!((resp.status, headers(&resp)), (404, vec![]), "{target}");
        }
    }
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
}

/// A file modified less than a second ago has a weak `ETag`, and neither
/// its date nor its tag holds an `If-Range` (RFC 9110 §8.8.2.2, §13.1.5):
/// a second write in the same second keeps the `Last-Modified` a client
/// resuming the first one holds, and it got a `206` with bytes of the new
/// file to splice onto the old. It gets the whole file. An hour later, both
/// hold.
#[test]
fn a_range_of_a_file_written_this_second_is_not_sent_against_its_date() {
    let (tmp, dir) = site();
    let path = tmp.write_now("site/log.txt", b"first version.\n");
    let first = get(&dir, "/log.txt", "");
    let (etag, date) = (first.header("etag").unwrap().to_owned(), first.header("last-modified").unwrap().to_owned());
    assert!(etag.starts_with("W/\""), "{etag}");
    assert_eq!(get(&dir, "/log.txt", &format!("If-None-Match: {etag}\r\n")).status, 304);
    // Rewritten within the same second, to the same length.
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    fs::write(&path, b"other version.\n").unwrap();
    let file = fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(mtime + std::time::Duration::from_millis(1)).unwrap();
    let strong = etag.trim_start_matches("W/");
    for if_range in [&date, &etag, strong] {
        let resp = get(&dir, "/log.txt", &format!("Range: bytes=6-\r\nIf-Range: {if_range}\r\n"));
        assert_eq!((resp.status, body(resp)), (200, b"other version.\n".to_vec()), "{if_range}");
    }
    let now = get(&dir, "/log.txt", "").header("etag").unwrap().to_owned();
    assert_eq!(get(&dir, "/log.txt", &format!("If-Match: {}\r\n", now.trim_start_matches("W/"))).status, 412);

    file.set_modified(mtime - HOUR).unwrap();
    let old = get(&dir, "/log.txt", "");
    let (etag, date) = (old.header("etag").unwrap().to_owned(), old.header("last-modified").unwrap().to_owned());
    assert!(etag.starts_with('"'), "{etag}");
    for if_range in [&date, &etag] {
        let resp = get(&dir, "/log.txt", &format!("Range: bytes=6-\r\nIf-Range: {if_range}\r\n"));
        assert_eq!((resp.status, body(resp)), (206, b"version.\n".to_vec()), "{if_range}");
    }
    assert_eq!(get(&dir, "/log.txt", &format!("If-Match: {etag}\r\n")).status, 200);
}

/// Through `compress`, a small file is gzipped once: the copy is kept
/// beside the file's bytes in the cache, counted in its bytes, and sent
/// again (the same bytes, not gzipped anew) with the headers a gzipped
/// answer gets; an edit drops it with the entry. It was gzipped on every
/// request.
#[cfg(feature = "compression")]
#[test]
fn through_compress_a_cached_file_is_gzipped_once() {
    use std::io::Read as _;
    let gunzip = |gzipped: &[u8]| {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(gzipped).read_to_end(&mut out).unwrap();
        out
    };
    // Where the bytes sent are: the kept copy is sent from where it is.
    let at = |resp: &Response| resp.body.in_memory().unwrap().as_ptr();
    let (tmp, dir) = site();
    let css = ".a { color: red; }\n".repeat(200);
    tmp.write("site/site.css", css.as_bytes());
    let dir = Arc::new(dir);
    let wrapped = crate::compress(Arc::clone(&dir));
    let ask = |accept: &str| {
        let raw = format!("GET /site.css HTTP/1.1\r\nHost: x\r\n{accept}\r\n");
        with_request(raw.as_bytes(), |req| wrapped.handle(req))
    };
    let gzip = "Accept-Encoding: gzip\r\n";
    let (first, second) = (ask(gzip), ask(gzip));
    assert_eq!(headers(&first), headers(&second));
    assert_eq!((first.header("content-encoding"), first.header("vary")), (Some("gzip"), Some("Accept-Encoding")));
    assert!(first.header("etag").unwrap().starts_with("W/\""));
    assert_eq!((first.header("accept-ranges"), first.declared_length), (None, None));
    assert_eq!(at(&first), at(&second), "the second answer sends the kept copy");
    let gzipped = first.body.in_memory().unwrap().to_vec();
    assert_eq!(gunzip(&gzipped), css.as_bytes());
    let (entries, held) = dir.cache.held();
    assert_eq!((entries, held), (1, css.len() + gzipped.len()));
    // Without gzip: the file's own bytes, from the cache.
    let plain = ask("");
    assert_eq!((plain.header("content-encoding"), plain.body.in_memory()), (None, Some(css.as_bytes())));

    let edited = ".b { color: blue; }\n".repeat(300);
    tmp.write_now("site/site.css", edited.as_bytes());
    let third = ask(gzip);
    assert_ne!(at(&first), at(&third));
    assert_eq!(gunzip(third.body.in_memory().unwrap()), edited.as_bytes());
    let entry = dir.cache.get("/site.css").unwrap();
    let kept = entry.bytes.as_ref().unwrap().kept_gzipped().unwrap();
    assert_eq!(at(&ask(gzip)), kept.as_ptr());
    assert_eq!(dir.cache.held(), (1, edited.len() + kept.len()));
}

/// A kept gzipped copy counts against the memory bound: other files are
/// dropped to make room for it, and one that cannot fit is not kept.
#[cfg(feature = "compression")]
#[test]
fn gzipped_copies_stay_within_the_memory_bound() {
    let (tmp, _) = site();
    let a = "a { color: red; }\n".repeat(100);
    let b = "b { color: blue; }\n".repeat(100);
    tmp.write("site/a.css", a.as_bytes());
    tmp.write("site/b.css", b.as_bytes());
    let bound = a.len() + b.len() + 10;
    let dir = Arc::new(ServeDir::new(tmp.0.join("site")).unwrap().memory_cache(bound));
    let wrapped = crate::compress(Arc::clone(&dir));
    let ask = |target: &str| {
        let raw = format!("GET {target} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n");
        with_request(raw.as_bytes(), |req| wrapped.handle(req))
    };
    assert_eq!(get(&dir, "/b.css", "").status, 200);
    let gzipped = ask("/a.css").body.in_memory().unwrap().len();
    assert!(gzipped > 10);
    // b.css made room for a.css's copy.
    assert_eq!(dir.cache.held(), (1, a.len() + gzipped));
    assert!(dir.cache.get("/b.css").is_none());

    // Room for the file but not its copy: the copy is made for each answer.
    let tight_dir = Arc::new(ServeDir::new(tmp.0.join("site")).unwrap().memory_cache(a.len()));
    let tight = crate::compress(Arc::clone(&tight_dir));
    let ask = |target: &str| {
        let raw = format!("GET {target} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n");
        with_request(raw.as_bytes(), |req| tight.handle(req))
    };
    assert_eq!(ask("/a.css").header("content-encoding"), Some("gzip"));
    assert_eq!(tight_dir.cache.held(), (1, a.len()));
    assert!(tight_dir.cache.get("/a.css").unwrap().bytes.as_ref().unwrap().kept_gzipped().is_none());
}
