//! What the crate logs of a client's doings: every message one line, and
//! never at `error`.
#![cfg(all(feature = "json", feature = "log"))]

mod common;

use std::io::Write;
use std::sync::{Mutex, Once};

use httpool::test::TestRequest;
use httpool::{JsonError, Request, Response, Server, access_log};

/// Every record logged in this test binary: its level and its text.
struct Capture(Mutex<Vec<(log::Level, String)>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        self.0.lock().unwrap().push((record.level(), record.args().to_string()));
    }

    fn flush(&self) {}
}

static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

fn capture() {
    static SET: Once = Once::new();
    SET.call_once(|| {
        log::set_logger(&CAPTURE).unwrap();
        log::set_max_level(log::LevelFilter::Debug);
    });
}

/// The records so far whose text contains `needle`.
fn logged(needle: &str) -> Vec<(log::Level, String)> {
    CAPTURE.0.lock().unwrap().iter().filter(|(_, text)| text.contains(needle)).cloned().collect()
}

/// The body the handler expects: a `kind` of one known name.
#[derive(serde::Deserialize)]
#[allow(dead_code)] // Only parsed.
struct Order {
    kind: Kind,
}

#[derive(serde::Deserialize)]
enum Kind {
    Book,
}

/// A client's JSON names an unknown variant holding a line feed: the error
/// answered quotes it, and the `debug` record of that error must not carry
/// the line feed into the log (a forged line after it).
#[test]
fn a_clients_text_in_an_error_message_cannot_forge_a_log_line() {
    capture();
    let handler = |req: &mut Request<'_>| -> Result<Response, httpool::Error> {
        let _: Order = req.json()?;
        Ok(Response::text("ok"))
    };
    let body = r#"{"kind":"x\n192.0.2.1 - - [01/Jan/2030:00:00:00 +0000] \"GET /forged HTTP/1.1\" 200 2"}"#;
    let resp = TestRequest::post("/").header("Content-Type", "application/json").body(body).send(&handler);
    assert_eq!(resp.status(), 400);
    let lines = logged("/forged");
    let (_, error) = lines.first().expect("the error is logged");
    assert!(!error.chars().any(char::is_control), "{error}");
    assert!(error.contains("`x\\n192.0.2.1 - - "), "{error}");
}

/// A client that resets its connection in the middle of a JSON upload made
/// `req.json()?` log an ERROR line and record a `500` in the access log,
/// as if the server had failed. The reset is the client's doing: `400`
/// (the request was never whole), logged at `debug`.
#[test]
fn a_client_resetting_mid_upload_is_not_logged_as_the_servers_error() {
    capture();
    let handler = |req: &mut Request<'_>| -> Result<Response, JsonError> {
        let _: serde_json::Value = req.json()?;
        Ok(Response::text("ok"))
    };
    let server = Server::bind("127.0.0.1:0").unwrap().workers(1).spawn_handler(access_log(handler)).unwrap();
    let mut conn = common::connect(server.local_addr());
    let head = "POST /reset-mid-upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
                Expect: 100-continue\r\nContent-Length: 100\r\n\r\n";
    conn.get_mut().write_all(head.as_bytes()).unwrap();
    // The handler is reading the body once `100 Continue` has come; left
    // unread, it makes the close below a reset (RFC 9293 §3.6: data
    // pending at a close).
    let mut peeked = [0; 12];
    while conn.get_ref().peek(&mut peeked).unwrap() < peeked.len() {}
    assert_eq!(&peeked, b"HTTP/1.1 100");
    drop(conn);
    let waited = std::time::Instant::now();
    while logged("POST /reset-mid-upload").is_empty() {
        assert!(waited.elapsed() < common::PATIENCE, "no access log line");
        std::thread::yield_now();
    }
    server.shutdown();
    let access = logged("POST /reset-mid-upload");
    let [(_, line)] = &access[..] else { panic!("one access log line: {access:?}") };
    assert!(line.contains("\" 400 "), "{line}");
    let errors: Vec<_> =
        CAPTURE.0.lock().unwrap().iter().filter(|(level, _)| *level <= log::Level::Warn).cloned().collect();
    assert!(errors.is_empty(), "{errors:?}");
}
