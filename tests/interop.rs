//! A real HTTP client against the server: `ureq` (its own HTTP/1.1 stack,
//! connection pool and chunked codec), over plain TCP.

use std::io::{Read, Write};
use std::time::Duration;

use httpool::{Request, Response, Server, ServerHandle};

fn handler(req: &mut Request) -> Response {
    match (req.method(), req.path()) {
        ("GET", "/hello") => Response::text("hello\n"),
        ("POST", "/echo") => {
            // Tells the client how its body was framed.
            let framing = match req.header("transfer-encoding") {
                Some(_) => "chunked",
                None => "length",
            };
            let mut body = Vec::new();
            match req.read_to_end(&mut body) {
                Ok(_) => Response::bytes(body).with_header("X-Request-Framing", framing),
                Err(_) => Response::status(400),
            }
        }
        ("GET", "/stream") => Response::stream(|out| {
            for i in 0..5 {
                writeln!(out, "part {i}")?;
                out.flush()?;
            }
            Ok(())
        }),
        _ => Response::status(404),
    }
}

fn start() -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .expect("bind")
        .workers(4)
        .shutdown_grace(Duration::from_secs(5))
        .spawn(handler)
        .expect("spawn")
}

fn url(server: &ServerHandle, path: &str) -> String {
    format!("http://{}{path}", server.local_addr())
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(10))).build().into()
}

#[test]
fn keep_alive_reuses_one_connection() {
    let server = start();
    let agent = agent();
    for _ in 0..2 {
        let mut resp = agent.get(url(&server, "/hello")).call().expect("GET");
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
        assert_eq!(resp.body_mut().read_to_string().expect("body"), "hello\n");
    }
    let stats = server.stats();
    assert_eq!(stats.accepted, 1, "{stats:?}");
    assert_eq!(stats.requests, 2, "{stats:?}");
    assert!(server.shutdown());
}

#[test]
fn post_bodies_are_echoed() {
    let server = start();
    let agent = agent();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    for body in [&b"ping"[..], &big[..]] {
        let mut resp = agent.post(url(&server, "/echo")).send(body).expect("POST");
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["x-request-framing"], "length");
        assert_eq!(resp.body_mut().read_to_vec().expect("body"), body);
    }
    // A body of unknown length goes out chunked.
    let mut reader = &big[..];
    let mut resp = agent.post(url(&server, "/echo")).send(ureq::SendBody::from_reader(&mut reader)).expect("POST");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-request-framing"], "chunked");
    assert_eq!(resp.body_mut().read_to_vec().expect("body"), big);
    assert_eq!(server.stats().accepted, 1);
    assert!(server.shutdown());
}

#[test]
fn streamed_responses_are_chunked() {
    let server = start();
    let mut resp = agent().get(url(&server, "/stream")).call().expect("GET");
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["transfer-encoding"], "chunked");
    assert!(resp.headers().get("content-length").is_none());
    let expected: String = (0..5).map(|i| format!("part {i}\n")).collect();
    assert_eq!(resp.body_mut().read_to_string().expect("body"), expected);
    assert!(server.shutdown());
}

#[test]
fn unknown_paths_are_404() {
    let server = start();
    let agent = agent();
    match agent.get(url(&server, "/nope")).call() {
        Err(ureq::Error::StatusCode(404)) => {}
        other => panic!("expected a 404, got {other:?}"),
    }
    // And as a response, when statuses are not errors; the connection stays.
    let lenient: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    for _ in 0..2 {
        let resp = lenient.get(url(&server, "/nope")).call().expect("GET");
        assert_eq!(resp.status(), 404);
        assert_eq!(resp.headers()["content-length"], "0");
    }
    assert!(server.shutdown());
}
