//! The notes service through `httpool::test`: every route, each error,
//! HEAD, the form, static files and compression, on a database of its own.

use httpool::test::{TestRequest, TestServer};

/// The notes service on a database of its own in a temporary directory.
fn notes_server(name: &str) -> TestServer<impl httpool::Handler> {
    let dir = std::env::temp_dir().join(format!("httpool-notes-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let statics = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("static");
    TestServer::from_handler(httpool_notes::app(httpool_notes::Notes::open(dir.join("notes.db"), statics).unwrap()))
}

fn json_post(target: &str, body: &str) -> TestRequest {
    TestRequest::post(target).header("Content-Type", "application/json").body(body)
}

#[test]
fn notes_json_api_round_trip() {
    let server = notes_server("api");
    let created = server.send(json_post("/api/notes", r#"{"text":"buy milk"}"#));
    assert_eq!(created.status(), 201, "{}", created.text());
    assert_eq!(created.header("location"), Some("/api/notes/1"));
    assert!(created.text().starts_with(r#"{"id":1,"text":"buy milk","created":"#), "{}", created.text());
    server.send(json_post("/api/notes", r#"{"text":"100% sure_thing"}"#));
    let one = server.send(TestRequest::get("/api/notes/1"));
    assert_eq!((one.status(), one.header("content-type")), (200, Some("application/json")));
    let all = server.send(TestRequest::get("/api/notes"));
    assert!(all.text().starts_with(r#"[{"id":2,"#) && all.text().contains(r#""id":1,"#), "{}", all.text());
    // The search is a substring; `%` and `_` in it are literal.
    let found = server.send(TestRequest::get("/api/notes?q=milk"));
    assert!(found.text().contains("buy milk") && !found.text().contains("sure"), "{}", found.text());
    assert_eq!(server.send(TestRequest::get("/api/notes?q=0%25")).text().matches(r#""id""#).count(), 1);
    assert_eq!(server.send(TestRequest::get("/api/notes?q=_")).text().matches(r#""id""#).count(), 1);
    assert_eq!(server.send(TestRequest::get("/api/notes?q=zzz")).text(), "[]");
    let head = server.send(TestRequest::head("/api/notes/1"));
    assert_eq!((head.status(), head.body()), (200, &b""[..]));
    assert_eq!(head.header("content-length"), one.header("content-length"));
    assert_eq!(server.send(TestRequest::delete("/api/notes/1")).status(), 204);
    let gone = server.send(TestRequest::get("/api/notes/1"));
    assert_eq!((gone.status(), gone.text()), (404, r#"{"error":"no note 1"}"#));
    assert_eq!(server.send(TestRequest::delete("/api/notes/1")).status(), 404);
}

#[test]
fn notes_refuses_what_it_cannot_serve() {
    let server = notes_server("errors");
    let bad_id = server.send(TestRequest::get("/api/notes/abc"));
    assert_eq!((bad_id.status(), bad_id.text()), (400, r#"{"error":"\"abc\" is not a note id"}"#));
    assert_eq!(server.send(json_post("/api/notes", "{not json")).status(), 400);
    assert_eq!(server.send(json_post("/api/notes", r#"{"text":"x","more":1}"#)).status(), 400);
    assert_eq!(server.send(json_post("/api/notes", r#"{"text":"  "}"#)).status(), 400);
    let plain = TestRequest::post("/api/notes").header("Content-Type", "text/plain").body("hi");
    assert_eq!(server.send(plain).status(), 415);
    for (req, allow) in [
        (TestRequest::put("/api/notes/1"), "GET, HEAD, DELETE, OPTIONS"),
        (TestRequest::delete("/api/notes"), "GET, HEAD, POST, OPTIONS"),
        (TestRequest::post("/"), "GET, HEAD, OPTIONS"),
        (TestRequest::get("/notes"), "POST, OPTIONS"),
    ] {
        let resp = server.send(req);
        assert_eq!((resp.status(), resp.header("allow")), (405, Some(allow)));
    }
    assert_eq!(server.send(TestRequest::get("/nowhere")).status(), 404);
    assert_eq!(server.send(TestRequest::get("/static/nothing.css")).status(), 404);
}

#[test]
fn notes_html_form_static_files_and_compression() {
    let server = notes_server("html");
    let form = TestRequest::post("/notes")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("text=a+%3Cb%3E+%26+c");
    let posted = server.send(form);
    assert_eq!((posted.status(), posted.header("location")), (303, Some("/")));
    let page = server.send(TestRequest::get("/"));
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(page.text().contains("<li>a &lt;b&gt; &amp; c</ul>"), "{}", page.text());
    assert_eq!(server.send(TestRequest::head("/")).body(), b"");
    let css = server.send(TestRequest::get("/static/style.css"));
    assert_eq!((css.status(), css.header("content-type")), (200, Some("text/css; charset=utf-8")));
    for i in 0..40 {
        server.send(json_post("/api/notes", &format!(r#"{{"text":"note number {i} of a long list"}}"#)));
    }
    let gzipped = server.send(TestRequest::get("/api/notes").header("Accept-Encoding", "gzip"));
    assert_eq!(gzipped.header("content-encoding"), Some("gzip"));
    assert_eq!(gzipped.header("vary"), Some("Accept-Encoding"));
    assert_eq!(&gzipped.body()[..2], b"\x1f\x8b");
}

#[test]
fn notes_pool_times_count_each_wait_for_a_connection() {
    let dir = std::env::temp_dir().join(format!("httpool-notes-times-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let statics = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("static");
    let times = std::sync::Arc::new(httpool_notes::PoolTimes::default());
    let notes = httpool_notes::Notes::open_timed(dir.join("notes.db"), statics, times.clone()).unwrap();
    let server = TestServer::from_handler(httpool_notes::app(notes));
    assert_eq!(server.send(TestRequest::get("/api/notes?q=milk")).status(), 200);
    assert_eq!(server.send(TestRequest::get("/api/notes/7")).status(), 404);
    // Opening creates the table through the pool too: three checkouts.
    let summary = times.to_string();
    assert!(summary.starts_with("pool: 3 checkouts; waited p50 "), "{summary}");
    assert!(summary.contains("; held p50 "), "{summary}");
}
