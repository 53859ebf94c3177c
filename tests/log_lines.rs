//! What the crate logs of a client's text: every message one line.
#![cfg(all(feature = "json", feature = "log"))]

use std::sync::Mutex;

use httpool::test::TestRequest;
use httpool::{Request, Response};

/// Every record logged in this test binary.
struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        self.0.lock().unwrap().push(record.args().to_string());
    }

    fn flush(&self) {}
}

static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

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
    log::set_logger(&CAPTURE).unwrap();
    log::set_max_level(log::LevelFilter::Debug);
    let handler = |req: &mut Request<'_>| -> Result<Response, httpool::Error> {
        let _: Order = req.json()?;
        Ok(Response::text("ok"))
    };
    let body = r#"{"kind":"x\n192.0.2.1 - - [01/Jan/2030:00:00:00 +0000] \"GET /forged HTTP/1.1\" 200 2"}"#;
    let resp = TestRequest::post("/").header("Content-Type", "application/json").body(body).send(&handler);
    assert_eq!(resp.status(), 400);
    let lines = CAPTURE.0.lock().unwrap();
    let error = lines.iter().find(|l| l.contains("/forged")).expect("the error is logged");
    assert!(!error.chars().any(char::is_control), "{error}");
    assert!(error.contains("`x\\n192.0.2.1 - - "), "{error}");
}
