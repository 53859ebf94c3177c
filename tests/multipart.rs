//! `multipart/form-data` through a real server: exact bytes over a socket,
//! and the upload form example through the test client.
#![cfg(feature = "multipart")]

mod common;

use std::io::{self, Read};
use std::net::Shutdown;
use std::time::Duration;

use common::{closed, connect, read_reply, send};
use httpool::test::{TestRequest, TestServer};
use httpool::{Request, Response, Server, ServerHandle};

#[allow(dead_code)]
#[path = "../examples/upload_form.rs"]
mod upload_form;

/// Answers each part as `name filename: length` (parts named `skip` are
/// skipped unread); `?` on an `io::Error` of a part's read answers as the
/// multipart error in it.
fn summary(req: &mut Request) -> io::Result<Response> {
    if req.path() != "/upload" {
        return Ok(Response::text("next"));
    }
    let mut form = req.multipart()?.max_parts(3);
    let mut out = String::new();
    while let Some(mut part) = form.next_part()? {
        if part.name() == Some("skip") {
            continue;
        }
        let mut content = Vec::new();
        part.read_to_end(&mut content)?;
        let (name, filename) = (part.name().unwrap_or("-").to_owned(), part.filename().unwrap_or("-").to_owned());
        out += &format!("{name} {filename}: {}\n", content.len());
    }
    Ok(Response::text(out))
}

fn server() -> ServerHandle {
    // The handler reads the body from the socket itself (none is collected
    // before it runs), each read waiting 300 ms at most.
    let server = Server::bind("127.0.0.1:0").unwrap().body_buffer_bytes(0);
    server.body_read_timeout(Duration::from_millis(300)).spawn(summary).unwrap()
}

fn head(body_len: usize) -> Vec<u8> {
    format!(
        "POST /upload HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n\
         Content-Length: {body_len}\r\n\r\n"
    )
    .into_bytes()
}

const FORM: &[u8] = b"--XyZ\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"skip\"\r\n\r\nnot read\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.bin\"\r\n\
Content-Type: application/octet-stream\r\n\r\n\x00\x01\r\n--Xy\r\n--XyZ--\r\n";

const NEXT: &[u8] = b"GET /next HTTP/1.1\r\nHost: t\r\n\r\n";

#[test]
fn a_form_sent_in_pieces_is_read_part_by_part_and_the_connection_kept() {
    let server = server();
    let mut conn = connect(server.local_addr());
    send(&mut conn, &head(FORM.len()));
    // Cut inside a boundary, a head and a file's content.
    for piece in [&FORM[..3], &FORM[3..60], &FORM[60..150], &FORM[150..]] {
        send(&mut conn, piece);
    }
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!((reply.status, reply.body.as_slice()), (200, &b"note -: 5\nf a.bin: 8\n"[..]));
    send(&mut conn, NEXT);
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"next");
}

/// A malformed body is the handler's `400`; what the body held after the
/// fault (a request, here) is drained as body, never served.
#[test]
fn a_malformed_body_is_400_and_its_rest_is_never_a_request() {
    let server = server();
    let body = b"--XyZ\r\n\r\nx\r\n--XyZ!\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n--XyZ--";
    let mut conn = connect(server.local_addr());
    send(&mut conn, &[&head(body.len())[..], body, NEXT].concat());
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!(
        (reply.status, String::from_utf8_lossy(&reply.body).as_ref()),
        (400, "multipart boundary not followed by CRLF or `--`\n")
    );
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"next");
}

#[test]
fn the_content_type_is_checked_before_the_body() {
    let server = server();
    for (content_type, status, message) in [
        ("text/plain", 415, "expected Content-Type: multipart/form-data\n"),
        ("multipart/form-data; boundary=\"\"", 400, "multipart/form-data without a valid boundary\n"),
    ] {
        let mut conn = connect(server.local_addr());
        let raw =
            format!("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Type: {content_type}\r\nContent-Length: 3\r\n\r\nabc");
        send(&mut conn, raw.as_bytes());
        let reply = read_reply(&mut conn, false).unwrap();
        assert_eq!((reply.status, String::from_utf8_lossy(&reply.body).as_ref()), (status, message));
    }
}

#[test]
fn more_parts_than_allowed_are_413() {
    let server = server();
    let body = "--XyZ\r\n\r\n1\r\n".repeat(4) + "--XyZ--";
    let mut conn = connect(server.local_addr());
    send(&mut conn, &[&head(body.len())[..], body.as_bytes()].concat());
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!(
        (reply.status, String::from_utf8_lossy(&reply.body).as_ref()),
        (413, "more multipart parts than the limit\n")
    );
}

/// A client that stops sending mid-part gets `408` once the handler's
/// read times out; one that closes gets nothing. Neither holds a worker.
/// (Chunked: a body with a length this short would be collected before the
/// handler runs, under the head's timeout.)
#[test]
fn a_body_that_stops_or_ends_midway_is_not_waited_for() {
    let server = server();
    let head = b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n\
        Transfer-Encoding: chunked\r\n\r\n64\r\n";
    let mut conn = connect(server.local_addr());
    send(&mut conn, &[&head[..], &FORM[..100]].concat());
    assert_eq!(read_reply(&mut conn, false).unwrap().status, 408);
    let mut conn = connect(server.local_addr());
    send(&mut conn, &[&head[..], &FORM[..100]].concat());
    conn.get_ref().shutdown(Shutdown::Write).unwrap();
    assert!(closed(&mut conn));
}

/// A directory of its own for one test, removed when dropped.
struct Uploads(std::path::PathBuf);

impl Uploads {
    fn new(test: &str) -> Uploads {
        let dir = std::env::temp_dir().join(format!("httpool-multipart-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Uploads(dir)
    }

    fn server(&self) -> TestServer<impl httpool::Handler> {
        let dir = self.0.clone();
        TestServer::new(move |req| upload_form::handler(&dir, req)).max_body_bytes(upload_form::MAX_BODY_BYTES)
    }

    fn files(&self) -> Vec<Vec<u8>> {
        let mut files: Vec<_> =
            std::fs::read_dir(&self.0).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap()).collect();
        files.sort();
        files
    }
}

impl Drop for Uploads {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn submission(parts: &[(&str, Option<&str>, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, filename, content) in parts {
        let filename = filename.map(|f| format!("; filename=\"{f}\"")).unwrap_or_default();
        body.extend(format!("--XyZ\r\nContent-Disposition: form-data; name=\"{name}\"{filename}\r\n\r\n").bytes());
        body.extend(*content);
        body.extend(b"\r\n");
    }
    body.extend(b"--XyZ--\r\n");
    body
}

fn post(body: Vec<u8>) -> TestRequest {
    TestRequest::post("/upload").header("Content-Type", "multipart/form-data; boundary=XyZ").body(body)
}

#[test]
fn the_form_example_serves_the_form() {
    let uploads = Uploads::new("form");
    let resp = uploads.server().send(TestRequest::get("/"));
    assert_eq!((resp.status(), resp.header("content-type")), (200, Some("text/html; charset=utf-8")));
    assert!(resp.text().contains(r#"enctype="multipart/form-data""#));
    assert!(resp.text().contains(r#"<input type="file" name="files""#));
}

#[test]
fn the_form_example_stores_files_under_names_of_its_own() {
    let uploads = Uploads::new("store");
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let resp = uploads.server().send(post(submission(&[
        ("note", None, b"hi"),
        ("files", Some("../../etc/passwd"), b"not a path"),
        ("files", Some(""), b""),
        ("files", Some("big.bin"), &big),
    ])));
    assert_eq!(resp.status(), 200, "{}", resp.text());
    let lines: Vec<&str> = resp.text().lines().collect();
    assert_eq!(lines[0], "note: hi");
    assert!(lines[1].starts_with(r#"file "../../etc/passwd" (no type): 10 bytes, stored as upload-"#), "{}", lines[1]);
    assert!(lines[2].starts_with(r#"file "big.bin" (no type): 3000000 bytes, stored as upload-"#), "{}", lines[2]);
    assert_eq!(lines.len(), 3);
    let mut expected = vec![b"not a path".to_vec(), big];
    expected.sort();
    assert_eq!(uploads.files(), expected);
}

#[test]
fn the_form_example_removes_what_a_failed_submission_stored() {
    let uploads = Uploads::new("failed");
    let body = submission(&[("files", Some("a.txt"), b"stored first"), ("note", None, b"hi")]);
    // Cut off before the last boundary's dashes.
    let resp = uploads.server().send(post(body[..body.len() - 4].to_vec()));
    assert_eq!((resp.status(), resp.text()), (400, "multipart body ended before its closing boundary\n"));
    assert_eq!(uploads.files(), Vec::<Vec<u8>>::new());
}
