//! Each example's handler, through the test client: the requests its doc
//! comment shows, and the answers it promises. (`static_files` is
//! `ServeDir`, whose cases are in `tests/helpers.rs`; here the example's
//! three requests. Upgrades over a socket are in `tests/upgrade.rs`.)

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use httpool::test::{TestRequest, TestServer};
use httpool::{Request, Server, Version};

// Each example's `main` is the example's, not these tests'.
#[allow(dead_code)]
#[path = "../examples/cors.rs"]
mod cors;
#[allow(dead_code)]
#[path = "../examples/echo.rs"]
mod echo;
#[allow(dead_code)]
#[path = "../examples/hello.rs"]
mod hello;
#[allow(dead_code)]
#[cfg(all(feature = "http", feature = "router"))]
#[path = "../examples/http_router.rs"]
mod http_router;
#[allow(dead_code)]
#[cfg(feature = "json")]
#[path = "../examples/json_api.rs"]
mod json_api;
#[allow(dead_code)]
#[cfg(all(feature = "sessions", feature = "router"))]
#[path = "../examples/login.rs"]
mod login;
#[allow(dead_code)]
#[cfg(feature = "router")]
#[path = "../examples/routing.rs"]
mod routing;
#[allow(dead_code)]
#[path = "../examples/shutdown.rs"]
mod shutdown;
#[allow(dead_code)]
#[path = "../examples/sse.rs"]
mod sse;
#[allow(dead_code)]
#[path = "../examples/testolope.rs"]
mod testolope;
#[allow(dead_code)]
#[path = "../examples/upload.rs"]
mod upload;
#[allow(dead_code)]
#[path = "../examples/websocket.rs"]
mod websocket;

#[test]
fn hello_greets_at_the_root_only() {
    let resp = TestRequest::get("/").send(&hello::hello);
    assert_eq!((resp.status(), resp.text()), (200, "Hello, world!\n"));
    assert_eq!(resp.header("content-type"), Some("text/plain; charset=utf-8"));
    let resp = TestRequest::head("/").send(&hello::hello);
    assert_eq!((resp.header("content-length"), resp.body()), (Some("14"), &b""[..]));
    assert_eq!(TestRequest::get("/elsewhere").send(&hello::hello).status(), 404);
}

#[test]
fn testolope_keeps_the_connection_or_closes_it() {
    let resp = TestRequest::get("/testolope").send(&testolope::testolope);
    assert_eq!((resp.text(), resp.header("content-type")), ("Testolope", Some("text/plain")));
    assert!(resp.is_kept_alive());
    let resp = TestRequest::get("/testolope-nokeepalive").send(&testolope::testolope);
    assert_eq!(resp.text(), "Testolope");
    assert!(!resp.is_kept_alive());
    assert_eq!(TestRequest::get("/").send(&testolope::testolope).status(), 404);
}

#[test]
fn echo_answers_with_the_body_however_it_is_framed() {
    let resp = TestRequest::post("/").body("ping").send(&echo::echo);
    assert_eq!((resp.status(), resp.body()), (200, &b"ping"[..]));
    assert_eq!(resp.header("content-type"), Some("application/octet-stream"));
    assert_eq!(TestRequest::put("/").body("chunks").chunked().send(&echo::echo).body(), b"chunks");
    assert_eq!(TestRequest::get("/").send(&echo::echo).body(), b"");
}

#[test]
fn echo_bodies_over_the_server_limit_get_413() {
    let server = TestServer::new(echo::echo).max_body_bytes(8);
    assert_eq!(server.send(TestRequest::post("/").body("123456789")).status(), 413);
    assert_eq!(server.send(TestRequest::post("/").body("123456789").chunked()).status(), 413);
    assert_eq!(server.send(TestRequest::post("/").body("12345678")).status(), 200);
}

#[test]
fn shutdown_answers_while_it_runs() {
    let resp = TestRequest::get("/anything").send(&shutdown::still_here);
    assert_eq!((resp.status(), resp.text()), (200, "still here\n"));
}

#[cfg(feature = "router")]
fn routing() -> TestServer<impl httpool::Handler> {
    TestServer::from_handler(routing::app())
}

#[cfg(feature = "router")]
#[test]
fn routing_creates_reads_lists_and_deletes_users() {
    let app = routing();
    let created = app.send(TestRequest::post("/users").body("alice\n"));
    assert_eq!((created.status(), created.text()), (201, "1\n"));
    assert_eq!(created.header("location"), Some("/users/1"));
    app.send(TestRequest::post("/users").body("bob"));
    assert_eq!(app.send(TestRequest::get("/users")).text(), "1 alice\n2 bob\n");
    assert_eq!(app.send(TestRequest::get("/users/1")).text(), "alice\n");
    let head = app.send(TestRequest::head("/users/1"));
    assert_eq!((head.status(), head.header("content-length"), head.body()), (200, Some("6"), &b""[..]));
    assert_eq!(app.send(TestRequest::delete("/users/1")).status(), 204);
    assert_eq!(app.send(TestRequest::get("/users/1")).status(), 404);
    assert_eq!(app.send(TestRequest::delete("/users/1")).status(), 404);
}

#[cfg(feature = "router")]
#[test]
fn routing_answers_404_405_and_bad_ids() {
    let app = routing();
    let wrong = app.send(TestRequest::put("/users"));
    assert_eq!((wrong.status(), wrong.header("allow")), (405, Some("GET, HEAD, POST, OPTIONS")));
    let wrong = app.send(TestRequest::post("/users/1"));
    assert_eq!((wrong.status(), wrong.header("allow")), (405, Some("GET, HEAD, DELETE, OPTIONS")));
    assert_eq!(app.send(TestRequest::get("/nope")).status(), 404);
    let bad = app.send(TestRequest::get("/users/abc"));
    assert_eq!(bad.status(), 400);
    assert!(bad.text().contains("`id` is \"abc\""), "{}", bad.text());
    let empty = app.send(TestRequest::post("/users").body("  "));
    assert_eq!((empty.status(), empty.text()), (400, "the body must be a name\n"));
    // `?` on the body read: its errors answer as httpool::Error::status says.
    assert_eq!(app.send(TestRequest::post("/users").body(vec![b'a'; 1025])).status(), 413);
    assert_eq!(app.send(TestRequest::post("/users").body(vec![0xff])).status(), 400);
}

#[cfg(feature = "json")]
fn json_api() -> TestServer<impl httpool::Handler> {
    let todos = std::sync::Mutex::new(json_api::Todos::default());
    TestServer::new(move |req| json_api::api(&todos, req))
}

#[cfg(feature = "json")]
fn post_json(body: &str) -> TestRequest {
    TestRequest::post("/todos").header("Content-Type", "application/json; charset=utf-8").body(body)
}

#[cfg(feature = "json")]
#[test]
fn json_api_creates_and_lists_todos() {
    let api = json_api();
    let created = api.send(post_json(r#"{"title":"write docs"}"#));
    assert_eq!(created.status(), 201);
    assert_eq!(created.header("content-type"), Some("application/json"));
    assert_eq!(created.header("location"), Some("/todos/1"));
    assert_eq!(created.text(), r#"{"id":1,"title":"write docs","done":false}"#);
    api.send(post_json(r#"{"title":"test","done":true}"#));
    let list = api.send(TestRequest::get("/todos"));
    assert_eq!(list.text(), r#"[{"id":1,"title":"write docs","done":false},{"id":2,"title":"test","done":true}]"#);
}

#[cfg(feature = "json")]
#[test]
fn json_api_answers_errors_as_json() {
    let api = json_api();
    let error = |resp: httpool::test::TestResponse| {
        assert_eq!(resp.header("content-type"), Some("application/json"));
        let value: serde_json::Value = serde_json::from_slice(resp.body()).expect("JSON");
        (resp.status(), value["error"].as_str().unwrap_or_default().to_owned())
    };
    let (status, message) = error(api.send(TestRequest::post("/todos").body(r#"{"title":"x"}"#)));
    assert_eq!((status, &*message), (415, "expected Content-Type: application/json"));
    let (status, message) = error(api.send(post_json(r#"{"name":"x"}"#)));
    assert_eq!(status, 400);
    assert!(message.starts_with("invalid JSON body: unknown field `name`"), "{message}");
    let too_big = format!(r#"{{"title":"{}"}}"#, "x".repeat(json_api::MAX_BODY));
    assert_eq!(error(api.send(post_json(&too_big))), (413, "request body over the limit".into()));
    let not_allowed = api.send(TestRequest::delete("/todos"));
    assert_eq!(not_allowed.header("allow"), Some("GET, HEAD, POST"));
    assert_eq!(error(not_allowed), (405, "use GET or POST".into()));
    assert_eq!(error(api.send(TestRequest::get("/elsewhere"))), (404, "not found".into()));
}

/// A directory of its own for one upload test, removed when dropped.
struct Uploads(std::path::PathBuf);

impl Uploads {
    fn new(test: &str) -> Uploads {
        let dir = std::env::temp_dir().join(format!("httpool-examples-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Uploads(dir)
    }

    fn server(&self) -> TestServer<impl httpool::Handler> {
        let dir = self.0.clone();
        // As in the example's `main`: the handler decides up to its limit.
        TestServer::new(move |req| upload::handler(&dir, req)).max_body_bytes(2 * upload::LIMIT)
    }
}

impl Drop for Uploads {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn upload_stores_a_body_under_its_name() {
    let uploads = Uploads::new("store");
    let resp = uploads.server().send(TestRequest::put("/upload/notes.txt").body("some notes"));
    assert_eq!((resp.status(), resp.text()), (201, "stored 10 bytes as notes.txt\n"));
    assert_eq!(resp.header("location"), Some("/upload/notes.txt"));
    assert_eq!(std::fs::read(uploads.0.join("notes.txt")).unwrap(), b"some notes");
    // Nothing else was left behind (the partial file was renamed).
    assert_eq!(std::fs::read_dir(&uploads.0).unwrap().count(), 1);
}

#[test]
fn upload_sends_100_continue_only_when_it_reads_the_body() {
    let uploads = Uploads::new("continue");
    let server = uploads.server();
    let resp = server.send(TestRequest::put("/upload/a.bin").header("Expect", "100-continue").body("abc"));
    assert!(resp.raw().starts_with(b"HTTP/1.1 100 Continue\r\n\r\n"));
    assert_eq!(resp.status(), 201);
    let over = (upload::LIMIT + 1).to_string();
    let resp = server
        .send(TestRequest::put("/upload/big.bin").header("Expect", "100-continue").header("Content-Length", &over));
    assert!(resp.raw().starts_with(b"HTTP/1.1 413 "), "{:?}", String::from_utf8_lossy(resp.raw()));
    assert_eq!(resp.text(), format!("uploads are limited to {} bytes\n", upload::LIMIT));
    assert!(!uploads.0.join("big.bin").exists());
}

#[test]
fn upload_cuts_off_a_chunked_body_past_the_limit() {
    let uploads = Uploads::new("chunked");
    let body = vec![7u8; upload::LIMIT as usize + 1];
    let resp = uploads.server().send(TestRequest::put("/upload/big.bin").body(body).chunked());
    assert_eq!(resp.status(), 413);
    assert_eq!(std::fs::read_dir(&uploads.0).unwrap().count(), 0, "the partial file is removed");
}

/// The upload directory holds at most its quota: an upload that would take
/// it past is refused with `507` and stores nothing, and one of unknown
/// length (chunked) counts as one of the largest size.
#[test]
fn upload_refuses_what_would_fill_the_directory_past_its_quota() {
    let uploads = Uploads::new("quota");
    let dir = uploads.0.clone();
    let server = TestServer::new(move |req| upload::handler_within(&dir, 15, req)).max_body_bytes(2 * upload::LIMIT);
    assert_eq!(server.send(TestRequest::put("/upload/a.txt").body("0123456789")).status(), 201);
    let resp = server.send(TestRequest::put("/upload/b.txt").header("Expect", "100-continue").body("0123456789"));
    assert!(
        resp.raw().starts_with(b"HTTP/1.1 507 Insufficient Storage\r\n"),
        "{:?}",
        String::from_utf8_lossy(resp.raw())
    );
    assert_eq!(resp.text(), "no room for more uploads\n");
    assert_eq!(server.send(TestRequest::put("/upload/c.txt").body("01234")).status(), 201);
    let empty = Uploads::new("quota-chunked");
    let dir = empty.0.clone();
    let server = TestServer::new(move |req| upload::handler_within(&dir, 15, req)).max_body_bytes(2 * upload::LIMIT);
    assert_eq!(server.send(TestRequest::put("/upload/d.txt").body("x").chunked()).status(), 507);
    assert_eq!(std::fs::read_dir(&uploads.0).unwrap().count(), 2);
    assert_eq!(std::fs::read_dir(&empty.0).unwrap().count(), 0);
}

#[test]
fn upload_refuses_bad_names_other_methods_and_paths() {
    let uploads = Uploads::new("refuse");
    let server = uploads.server();
    assert_eq!(server.send(TestRequest::put("/upload/.hidden").body("x")).status(), 400);
    assert_eq!(server.send(TestRequest::put("/upload/a%2Fb").body("x")).status(), 400);
    let get = server.send(TestRequest::get("/upload/a.txt"));
    assert_eq!((get.status(), get.header("allow")), (405, Some("PUT")));
    assert_eq!(server.send(TestRequest::put("/elsewhere").body("x")).status(), 404);
}

#[test]
fn sse_streams_ticks_then_done() {
    let ticks = sse::Ticks::new();
    let app = Arc::clone(&ticks);
    let handler = move |req: &mut Request| app.handle(req);
    let resp = TestRequest::get("/events?n=1").send(&handler);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    assert_eq!(resp.header("cache-control"), Some("no-cache"));
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    // The first tick comes at once; the stream is still open.
    let text = resp.text();
    assert!(text.starts_with("retry: 5000\n\nevent: tick\nid: 1\ndata: {\"tick\":1,\"of\":1,\"unix\":"), "{text}");
    // Its `done` comes at the next tick, and ends it.
    ticks.tick();
    let resp = TestRequest::get("/events?n=0").send(&handler);
    assert_eq!(resp.text(), "retry: 5000\n\nevent: done\ndata: bye\n\n");
    assert!(resp.is_kept_alive());
}

#[test]
fn sse_sends_every_tick_asked_for_from_one_thread_to_parked_streams() {
    let ticks = sse::Ticks::new();
    let app = Arc::clone(&ticks);
    let server =
        Server::bind("127.0.0.1:0").unwrap().workers(1).spawn(move |req: &mut Request| app.handle(req)).unwrap();
    let mut streams: Vec<_> = (0..3).map(|_| std::net::TcpStream::connect(server.local_addr()).unwrap()).collect();
    for stream in &mut streams {
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream.write_all(b"GET /events?n=3 HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    }
    // Read each stream up to `until`.
    let read_up_to = |stream: &mut std::net::TcpStream, until: &str| {
        let mut got = Vec::new();
        let mut byte = [0];
        while !String::from_utf8_lossy(&got).contains(until) {
            assert_eq!(stream.read(&mut byte).unwrap(), 1, "{}", String::from_utf8_lossy(&got));
            got.push(byte[0]);
        }
    };
    for stream in &mut streams {
        read_up_to(stream, "id: 1\n");
    }
    for i in 2..=3 {
        ticks.tick();
        for stream in &mut streams {
            read_up_to(stream, &format!("id: {i}\n"));
        }
    }
    ticks.tick();
    for stream in &mut streams {
        read_up_to(stream, "event: done\ndata: bye\n\n\r\n0\r\n\r\n");
    }
    assert!(server.shutdown());
}

#[test]
fn sse_reads_n_from_the_query_capped() {
    let ticks = |target: &str| {
        let resp = TestRequest::get(target)
            .send(&|req: &mut httpool::Request| httpool::Response::text(sse::ticks(req).to_string()));
        resp.text().parse::<u32>().unwrap()
    };
    assert_eq!(ticks("/events"), 5);
    assert_eq!(ticks("/events?n=3"), 3);
    assert_eq!(ticks("/events?a=1&n=7"), 7);
    assert_eq!(ticks("/events?n=%37"), 7);
    assert_eq!(ticks("/events?n=x"), 5);
    assert_eq!(ticks("/events?n=1000"), sse::MAX_TICKS);
}

#[test]
fn sse_serves_its_page_and_refuses_the_rest() {
    let ticks = sse::Ticks::new();
    let handler = move |req: &mut Request| ticks.handle(req);
    let page = TestRequest::get("/").send(&handler);
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(page.text().contains("new EventSource(\"/events?n=10\")"));
    let post = TestRequest::post("/").send(&handler);
    assert_eq!((post.status(), post.header("allow")), (405, Some("GET, HEAD")));
    let post = TestRequest::post("/events").send(&handler);
    assert_eq!((post.status(), post.header("allow")), (405, Some("GET")));
    assert_eq!(TestRequest::get("/elsewhere").send(&handler).status(), 404);
}

#[test]
fn websocket_answers_plain_requests_without_upgrading() {
    let resp = TestRequest::get("/echo").send(&websocket::handler);
    assert_eq!((resp.status(), resp.header("upgrade")), (426, Some("websocket")));
    assert_eq!(resp.header("connection"), Some("upgrade"));
    assert!(resp.is_kept_alive());
    let resp =
        TestRequest::get("/echo").header("Upgrade", "h2c").header("Connection", "upgrade").send(&websocket::handler);
    assert_eq!(resp.status(), 426);
    assert_eq!(TestRequest::get("/elsewhere").send(&websocket::handler).status(), 404);
}

#[test]
fn websocket_accepts_the_handshake() {
    // The key and accept value of RFC 6455 §1.3. The upgraded connection
    // closes at once here (no client speaks WebSocket on it); a real
    // session is in tests/upgrade.rs.
    let resp = TestRequest::get("/echo")
        .header("Connection", "Upgrade")
        .header("Upgrade", "websocket")
        .header("Sec-WebSocket-Version", "13")
        .header("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
        .send(&websocket::handler);
    assert_eq!(resp.status(), 101);
    assert_eq!(resp.header("upgrade"), Some("websocket"));
    assert_eq!(resp.header("sec-websocket-accept"), Some("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
}

/// RFC 6455 §4.1, §4.2.1: the handshake is a `GET` that asks for an
/// upgrade to `websocket` (HTTP/1.1, `Connection: upgrade`), of version 13,
/// with a key that is 16 bytes in base64. Any other is refused with the
/// status that tells the client what to change, never with a `101` (which
/// the server then refused for the client as a handler's `500`).
#[test]
fn websocket_refuses_bad_handshakes() {
    // An upgrade to WebSocket of `version`, with `key` when given.
    let handshake = |req: TestRequest, version: &str, key: Option<&str>| {
        let req = req.header("Connection", "Upgrade").header("Upgrade", "websocket");
        let req = req.header("Sec-WebSocket-Version", version);
        match key {
            Some(key) => req.header("Sec-WebSocket-Key", key),
            None => req,
        }
    };
    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
    let key = Some(KEY);
    for method in ["HEAD", "POST", "PUT"] {
        let resp = handshake(TestRequest::method(method, "/echo"), "13", key).send(&websocket::handler);
        assert_eq!((resp.status(), resp.header("allow")), (405, Some("GET")), "{method}");
    }
    let not_asked = [
        TestRequest::get("/echo").header("Upgrade", "websocket").header("Sec-WebSocket-Key", KEY),
        handshake(TestRequest::get("/echo"), "13", key).version(Version::Http10),
        TestRequest::get("/echo").header("Connection", "upgrade").header("Upgrade", "h2c"),
    ];
    for req in not_asked {
        let resp = req.send(&websocket::handler);
        assert_eq!((resp.status(), resp.header("upgrade")), (426, Some("websocket")));
    }
    let resp = handshake(TestRequest::get("/echo"), "8", key).send(&websocket::handler);
    assert_eq!((resp.status(), resp.header("upgrade")), (426, Some("websocket")));
    assert_eq!(resp.header("sec-websocket-version"), Some("13"));
    // None, empty, 5 bytes, unpadded, 16 bytes with bits past them, not base64.
    let keys = [
        None,
        Some(""),
        Some("c2hvcnQ="),
        Some("dGhlIHNhbXBsZSBub25jZQ"),
        Some("dGhlIHNhbXBsZSBub25jZR=="),
        Some("dGhl*HNhbXBsZSBub25jZQ=="),
    ];
    for key in keys {
        let resp = handshake(TestRequest::get("/echo"), "13", key).send(&websocket::handler);
        assert_eq!(resp.status(), 400, "{key:?}");
    }
}

#[cfg(all(feature = "http", feature = "router"))]
#[test]
fn http_router_routes_http_crate_handlers() {
    let app = TestServer::from_handler(http_router::app());
    let user = app.send(TestRequest::get("/users/7"));
    assert_eq!((user.status(), user.text()), (200, "{\"id\":7}\n"));
    assert_eq!(user.header("content-type"), Some("application/json"));
    // An id that is no number is no user: it never reaches the JSON.
    assert_eq!(app.send(TestRequest::get("/users/%22%7D")).status(), 404);
    assert_eq!(app.send(TestRequest::get("/health")).text(), "ok\n");
    assert_eq!(app.send(TestRequest::get("/nope")).status(), 404);
}

/// `static_files` serves a directory with `ServeDir`: the three requests
/// its doc comment shows — a file, a range (206) and a revalidation (304).
#[cfg(feature = "fs")]
#[test]
fn static_files_serves_a_file_a_range_and_a_304() {
    let dir = std::env::temp_dir().join(format!("httpool-example-static-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("index.html"), "<h1>hello</h1>\n").unwrap();
    let server = TestServer::from_handler(httpool::ServeDir::new(&dir).unwrap());
    let whole = server.send(TestRequest::get("/index.html"));
    assert_eq!(whole.status(), 200);
    assert_eq!(whole.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(whole.text(), "<h1>hello</h1>\n");
    let range = server.send(TestRequest::get("/index.html").header("Range", "bytes=0-3"));
    assert_eq!((range.status(), range.text()), (206, "<h1>"));
    assert_eq!(range.header("content-range"), Some("bytes 0-3/15"));
    let etag = whole.header("etag").expect("an ETag").to_string();
    let again = server.send(TestRequest::get("/index.html").header("If-None-Match", &etag));
    assert_eq!(again.status(), 304);
    std::fs::remove_dir_all(&dir).unwrap();
}

const PAGE_ORIGIN: &str = "http://127.0.0.1:8012";

#[test]
fn cors_page_calls_the_api_of_its_origin() {
    let page = cors::page("http://127.0.0.1:8013".into());
    let resp = TestRequest::get("/").send(&page);
    assert!(resp.text().contains("const api = \"http://127.0.0.1:8013\";"));
    let api = cors::api(PAGE_ORIGIN);
    let preflight = TestRequest::method("OPTIONS", "/api/notes/1")
        .header("Origin", PAGE_ORIGIN)
        .header("Access-Control-Request-Method", "PUT")
        .header("Access-Control-Request-Headers", "content-type,x-token")
        .send(&api);
    assert_eq!(preflight.status(), 204);
    assert_eq!(preflight.header("access-control-allow-headers"), Some("x-token, content-type"));
    let put = TestRequest::put("/api/notes/1").header("Origin", PAGE_ORIGIN).header("X-Token", "letmein").body("hi");
    let put = put.send(&api);
    assert_eq!((put.text(), put.header("access-control-allow-origin")), ("stored hi", Some(PAGE_ORIGIN)));
    let hello = TestRequest::get("/api/hello").header("Origin", PAGE_ORIGIN).send(&api);
    assert_eq!(hello.header("access-control-expose-headers"), Some("x-api-version"));
    assert_eq!(hello.header("access-control-allow-credentials"), Some("true"));
}

#[test]
fn cors_api_keeps_other_origins_out() {
    let api = cors::api(PAGE_ORIGIN);
    let other = TestRequest::get("/api/hello").header("Origin", "http://127.0.0.1:8014").send(&api);
    assert_eq!((other.text(), other.header("access-control-allow-origin")), ("hello from the API", None));
    let refused = TestRequest::method("OPTIONS", "/api/notes/1")
        .header("Origin", PAGE_ORIGIN)
        .header("Access-Control-Request-Method", "PUT")
        .header("Access-Control-Request-Headers", "x-other")
        .send(&api);
    assert_eq!(refused.status(), 403);
}

#[test]
fn cors_api_reads_back_the_cookie_it_set() {
    let api = cors::api(PAGE_ORIGIN);
    let visit = TestRequest::post("/api/visit").send(&api);
    let cookie = visit.header("set-cookie").unwrap().split(';').next().unwrap().to_owned();
    let back = TestRequest::get("/api/visit").header("Cookie", &cookie).send(&api);
    assert_eq!(back.text(), format!("visitor {}", &cookie["visitor=".len()..]));
    assert_eq!(TestRequest::get("/api/visit").send(&api).status(), 401);
}

#[cfg(all(feature = "sessions", feature = "router"))]
#[test]
fn login_signs_in_shows_the_private_page_and_signs_out() {
    let app = login::app(httpool::cookie::Key::generate());
    assert_eq!(TestRequest::get("/private").send(&app).status(), 401);
    let form = "application/x-www-form-urlencoded";
    let wrong = TestRequest::post("/login").header("Content-Type", form).body("user=alice&password=guess");
    let wrong = wrong.send(&app);
    assert_eq!((wrong.status(), wrong.header("set-cookie")), (401, None));
    let signed_in = TestRequest::post("/login").header("Content-Type", form).body("user=alice&password=wonderland");
    let signed_in = signed_in.send(&app);
    assert_eq!((signed_in.status(), signed_in.header("location")), (303, Some("/private")));
    let set = signed_in.header("set-cookie").unwrap();
    assert!(set.ends_with("; HttpOnly; SameSite=Lax; Path=/"), "{set}");
    let cookie = set.split(';').next().unwrap();
    let private = TestRequest::get("/private").header("Cookie", cookie).send(&app);
    assert_eq!(private.status(), 200);
    assert!(private.text().contains("Welcome, alice."));
    let out = TestRequest::post("/logout").header("Cookie", cookie).send(&app);
    assert_eq!(out.status(), 303);
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    assert_eq!(TestRequest::get("/private").header("Cookie", cookie).send(&app).status(), 401);
}

#[cfg(all(feature = "sessions", feature = "router"))]
#[test]
fn login_refuses_a_tampered_cookie() {
    let app = login::app(httpool::cookie::Key::generate());
    let signed_in = TestRequest::post("/login")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("user=alice&password=wonderland")
        .send(&app);
    let cookie = signed_in.header("set-cookie").unwrap().split(';').next().unwrap().to_owned();
    let mut bytes = cookie.into_bytes();
    let at = bytes.len() / 2;
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    assert_eq!(TestRequest::get("/private").header("Cookie", &tampered).send(&app).status(), 401);
}
