//! The client behind a trusted proxy, and request ids, over real sockets:
//! exact requests from a peer that is trusted and from one that is not.

mod common;

use common::{connect, read_reply, send};
use httpool::{Request, Response, Server, request_id};

/// Answers what the request says of its client, one field a line.
fn who(req: &mut Request) -> Response {
    let addr = req.client_addr().map_or("-".to_owned(), |ip| ip.to_string());
    let host = req.client_host().unwrap_or("-");
    Response::text(format!("{addr}\n{}\n{host}\n{}\n", req.client_scheme(), req.request_id().unwrap_or("-")))
}

const FORWARDED: &[u8] = b"GET /who HTTP/1.1\r\nHost: app.internal:8080\r\n\
    X-Forwarded-For: 6.6.6.6, 203.0.113.9\r\nX-Forwarded-Proto: https\r\n\
    X-Forwarded-Host: shop.example\r\nX-Request-Id: edge-7f3a\r\n\r\n";

const RFC_7239: &[u8] = b"GET /who HTTP/1.1\r\nHost: app.internal:8080\r\n\
    Forwarded: for=\"[2001:db8::17]:4711\";proto=https;host=shop.example\r\n\
    Forwarded: for=10.1.2.3;proto=http;host=app.internal\r\n\r\n";

/// What `who` answers for `request` sent over one connection to a server
/// trusting `proxies` (the client is 127.0.0.1).
fn ask(proxies: &[&str], requests: &[&[u8]]) -> Vec<(String, Option<String>)> {
    let server = Server::bind("127.0.0.1:0").unwrap().trusted_proxies(proxies).spawn_handler(request_id(who)).unwrap();
    let mut conn = connect(server.local_addr());
    let answers = requests
        .iter()
        .map(|request| {
            send(&mut conn, request);
            let reply = read_reply(&mut conn, false).unwrap();
            assert_eq!(reply.status, 200);
            (String::from_utf8(reply.body.clone()).unwrap(), reply.header("x-request-id").map(str::to_owned))
        })
        .collect();
    drop(conn);
    assert!(server.shutdown());
    answers
}

#[test]
fn a_trusted_proxy_is_believed() {
    let answers = ask(&["127.0.0.1", "10.0.0.0/8"], &[FORWARDED, RFC_7239]);
    let (body, id) = &answers[0];
    assert_eq!(body, "203.0.113.9\nhttps\nshop.example\nedge-7f3a\n");
    assert_eq!(id.as_deref(), Some("edge-7f3a"));
    let (body, id) = &answers[1];
    let made = id.as_deref().unwrap();
    assert_eq!(body, &format!("2001:db8::17\nhttps\nshop.example\n{made}\n"));
}

#[test]
fn a_peer_that_is_not_a_trusted_proxy_is_its_own_client() {
    let answers = ask(&["10.0.0.0/8"], &[FORWARDED, RFC_7239]);
    for (body, id) in &answers {
        let made = id.as_deref().unwrap();
        assert_ne!(made, "edge-7f3a");
        assert_eq!(body, &format!("127.0.0.1\nhttp\napp.internal:8080\n{made}\n"));
    }
    // The default: no proxy at all.
    let (body, _) = &ask(&[], &[FORWARDED])[0];
    assert!(body.starts_with("127.0.0.1\nhttp\napp.internal:8080\n"), "{body}");
}

#[allow(dead_code)] // `main` is the example's.
#[cfg(all(feature = "log", feature = "router"))]
#[path = "../examples/metrics.rs"]
mod metrics_example;

/// The example's service: `/whoami` says who asked, the id echoed, and a
/// scrape counts `/notes/{id}` under its pattern.
#[cfg(all(feature = "log", feature = "router"))]
#[test]
fn the_metrics_example_answers_as_its_doc_says() {
    use httpool::test::{TestRequest, TestServer};
    let metrics = httpool::Metrics::new();
    let app = TestServer::from_handler(metrics_example::service(&metrics)).trusted_proxies(["127.0.0.1"]);
    let whoami = app.send(TestRequest::get("/whoami").header("X-Forwarded-For", "203.0.113.9"));
    let id = whoami.header("x-request-id").unwrap().to_owned();
    assert_eq!(whoami.text(), format!("203.0.113.9\nhttp\nlocalhost\n{id}\n"));
    assert_eq!(app.send(TestRequest::get("/notes/7")).text(), "note 7\n");
    assert_eq!(app.send(TestRequest::get("/notes/x")).status(), 400);
    let scraped = app.send(TestRequest::get("/metrics"));
    assert!(scraped.text().contains("httpool_requests_total{route=\"/notes/{id}\",status=\"2xx\"} 1\n"));
    assert!(scraped.text().contains("httpool_requests_total{route=\"/notes/{id}\",status=\"4xx\"} 1\n"));
}
