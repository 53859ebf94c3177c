//! `httpool::cors` over real sockets: exact bytes in, exact answers out
//! (`Date` values shown as `D`), in front of a router whose routes
//! authenticate, on a keep-alive connection.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;

use common::{connect, send};
use httpool::{Request, Response, Server, ServerHandle};

/// Reads one answer as text: the head exactly, `Date` shown as `D`, and a
/// `Content-Length` body.
fn answer(conn: &mut BufReader<TcpStream>) -> String {
    let mut text = String::new();
    let mut len = 0;
    loop {
        let mut line = String::new();
        assert!(conn.read_line(&mut line).unwrap() > 0, "closed after {text:?}");
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            len = n.trim().parse().unwrap();
        }
        if line.starts_with("Date: ") {
            line = "Date: D\r\n".into();
        }
        text.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; len];
    conn.read_exact(&mut body).unwrap();
    text + &String::from_utf8_lossy(&body)
}

/// An API that wants `Authorization: Bearer letmein` on every route, behind
/// `cors` for one page origin.
fn spawn() -> ServerHandle {
    let authorized = |req: &Request| req.header("authorization") == Some("Bearer letmein");
    let notes = move |req: &mut Request| match authorized(req) {
        true => Response::text("note 7\n"),
        false => Response::status(401),
    };
    #[cfg(feature = "router")]
    let app = httpool::Router::new().get("/notes/7", notes).put("/notes/7", notes);
    #[cfg(not(feature = "router"))]
    let app = notes;
    let api = httpool::cors(app)
        .allow_origin("http://127.0.0.1:5500")
        .allow_methods(["PUT"])
        .allow_headers(["authorization"])
        .allow_credentials(true);
    Server::bind("127.0.0.1:0").unwrap().workers(2).spawn_handler(api).unwrap()
}

#[test]
fn a_preflight_then_the_request_on_one_connection() {
    let server = spawn();
    let mut conn = connect(server.local_addr());
    send(
        &mut conn,
        b"OPTIONS /notes/7 HTTP/1.1\r\nHost: api\r\nOrigin: http://127.0.0.1:5500\r\n\
          Access-Control-Request-Method: PUT\r\nAccess-Control-Request-Headers: authorization\r\n\r\n",
    );
    assert_eq!(
        answer(&mut conn),
        "HTTP/1.1 204 No Content\r\nDate: D\r\n\
         Access-Control-Allow-Origin: http://127.0.0.1:5500\r\nAccess-Control-Allow-Credentials: true\r\n\
         Access-Control-Allow-Methods: PUT\r\nAccess-Control-Allow-Headers: authorization\r\n\
         Vary: Origin, Access-Control-Request-Method, Access-Control-Request-Headers\r\n\r\n"
    );
    send(
        &mut conn,
        b"PUT /notes/7 HTTP/1.1\r\nHost: api\r\nOrigin: http://127.0.0.1:5500\r\n\
          Authorization: Bearer letmein\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(
        answer(&mut conn),
        "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Access-Control-Allow-Origin: http://127.0.0.1:5500\r\nAccess-Control-Allow-Credentials: true\r\n\
         Vary: Origin\r\nContent-Length: 7\r\n\r\nnote 7\n"
    );
    drop(conn);
    server.shutdown();
}

#[test]
fn another_origin_is_refused_its_preflight_and_unmarked_otherwise() {
    let server = spawn();
    let mut conn = connect(server.local_addr());
    send(
        &mut conn,
        b"OPTIONS /notes/7 HTTP/1.1\r\nHost: api\r\nOrigin: http://localhost:5500\r\n\
          Access-Control-Request-Method: PUT\r\n\r\n",
    );
    assert_eq!(
        answer(&mut conn),
        "HTTP/1.1 403 Forbidden\r\nDate: D\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Vary: Origin, Access-Control-Request-Method, Access-Control-Request-Headers\r\nContent-Length: 43\r\n\r\n\
         CORS preflight refused: origin not allowed\n"
    );
    send(
        &mut conn,
        b"GET /notes/7 HTTP/1.1\r\nHost: api\r\nOrigin: http://localhost:5500\r\nAuthorization: Bearer letmein\r\n\r\n",
    );
    assert_eq!(
        answer(&mut conn),
        "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Type: text/plain; charset=utf-8\r\nVary: Origin\r\n\
         Content-Length: 7\r\n\r\nnote 7\n"
    );
    drop(conn);
    server.shutdown();
}

/// The router's own `OPTIONS` answer for requests that are not
/// preflights, and the authentication inside for the rest.
#[cfg(feature = "router")]
#[test]
fn what_is_not_a_preflight_is_the_router_s() {
    let server = spawn();
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"OPTIONS /notes/7 HTTP/1.1\r\nHost: api\r\nOrigin: http://127.0.0.1:5500\r\n\r\n");
    assert_eq!(
        answer(&mut conn),
        "HTTP/1.1 204 No Content\r\nDate: D\r\nAllow: GET, HEAD, PUT, OPTIONS\r\n\
         Access-Control-Allow-Origin: http://127.0.0.1:5500\r\nAccess-Control-Allow-Credentials: true\r\n\
         Vary: Origin\r\n\r\n"
    );
    send(
        &mut conn,
        b"PUT /notes/7 HTTP/1.1\r\nHost: api\r\nOrigin: http://127.0.0.1:5500\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(
        answer(&mut conn),
        "HTTP/1.1 401 Unauthorized\r\nDate: D\r\n\
         Access-Control-Allow-Origin: http://127.0.0.1:5500\r\nAccess-Control-Allow-Credentials: true\r\n\
         Vary: Origin\r\nContent-Length: 0\r\n\r\n"
    );
    drop(conn);
    server.shutdown();
}
