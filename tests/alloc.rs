//! A keep-alive request on the testolope path allocates nothing, and
//! neither does one routed by `httpool::Router` to a route with path
//! parameters: an exact count over a counting global allocator, across
//! every thread of the process (server and client). It runs without the libtest harness
//! (`harness = false`), whose own threads may allocate while it waits.

use std::alloc::System;
use std::io::{Read, Write};
use std::net::TcpStream;

use httpool::Server;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[allow(dead_code)] // `main` is the example's, not ours.
#[path = "../examples/testolope.rs"]
mod testolope;

/// Two connections: one per seat, so that both workers serve during the
/// warm-up. A worker's buffers are made the first time it serves, and a
/// worker with nothing ready takes a ready connection of the other's seat:
/// with one connection, the worker that had not served yet could first do
/// so during the measurement (seen in CI: 2 allocations, 20,576 bytes, a
/// read buffer and the list that holds it).
fn connect_two(addr: std::net::SocketAddr) -> [TcpStream; 2] {
    [(); 2].map(|()| {
        let conn = TcpStream::connect(addr).unwrap();
        conn.set_nodelay(true).unwrap();
        conn
    })
}

/// One request and its whole response, with no allocation on this side.
fn round_trip(conn: &mut TcpStream, buf: &mut [u8; 1024]) {
    round_trip_to(conn, buf, b"GET /testolope HTTP/1.1\r\nHost: bench\r\n\r\n");
}

/// `request`, and its whole response (the body `Testolope`).
fn round_trip_to(conn: &mut TcpStream, buf: &mut [u8; 1024], request: &[u8]) {
    conn.write_all(request).unwrap();
    let mut got = 0;
    while !buf[..got].ends_with(b"\r\n\r\nTestolope") {
        let n = conn.read(&mut buf[got..]).unwrap();
        assert!(n > 0, "server closed");
        got += n;
    }
    assert!(buf.starts_with(b"HTTP/1.1 200 OK\r\n"));
}

fn main() {
    keep_alive_requests_allocate_nothing();
    println!("test keep_alive_requests_allocate_nothing ... ok");
    #[cfg(feature = "router")]
    {
        routed_requests_allocate_nothing(routes());
        println!("test routed_requests_allocate_nothing ... ok");
        metered_requests_allocate_nothing();
        println!("test metered_requests_allocate_nothing ... ok");
    }
    println!("{} passed, 0 failed", if cfg!(feature = "router") { 3 } else { 1 });
}

fn keep_alive_requests_allocate_nothing() {
    // No extra threads: on a busy machine a request may run across two of
    // the monitor's ticks, look blocked, and start a thread (its buffers
    // are allocations of the pool's, not of the request path measured).
    let server = Server::bind("127.0.0.1:0").unwrap().workers(2).max_workers(2).spawn(testolope::testolope).unwrap();
    let [mut conn, mut other] = connect_two(server.local_addr());
    let mut buf = [0u8; 1024];
    // Warm-up: buffers, pools, and the deadline heap reach their steady
    // size (it is compacted past 2 × parked + 1024 entries).
    for _ in 0..3000 {
        round_trip(&mut conn, &mut buf);
        round_trip(&mut other, &mut buf);
    }
    let region = Region::new(GLOBAL);
    for _ in 0..2000 {
        round_trip(&mut conn, &mut buf);
    }
    let change = region.change();
    assert_eq!((change.allocations, change.reallocations), (0, 0), "{change:?}");
    assert_eq!(server.stats().threads_spawned, 2, "{:?}", server.stats());
    drop((conn, other));
    assert!(server.shutdown());
}

/// Requests routed among 20 patterns and a mount at `/`: to a route with
/// two parameters, which the handler reads (decoded and parsed), to one with
/// three, and to static routes beside a parameter; no allocation either.
/// (matchit allocates to go back from a static segment beside a parameter,
/// and for a fourth parameter: static patterns are found before it, and the
/// documented bound for no allocation is three parameters.)
#[cfg(feature = "router")]
fn routes() -> httpool::Router {
    let mut router = httpool::Router::new();
    for pattern in ROUTES {
        router = router.get(pattern, |_req| "other");
    }
    router
        .get("/users/{user}/notes/{id}", |req| {
            let ok = req.param("user").as_deref() == Some("ann") && req.param_as::<u64>("id").is_ok_and(|id| id == 42);
            // The client checks the status.
            httpool::Response::text("Testolope").with_status(if ok { 200 } else { 500 })
        })
        .get("/a/{x}/{y}/{z}", |_req| "Testolope")
        .get("/notes/new", |_req| "Testolope")
        .mount("/", |_req: &mut httpool::Request| "Testolope")
}

/// The same requests counted by `Metrics` under their patterns (a route
/// with parameters, static ones, a mount): counting allocates nothing
/// either.
#[cfg(feature = "router")]
fn metered_requests_allocate_nothing() {
    let metrics = httpool::Metrics::new();
    routed_requests_allocate_nothing(metrics.wrap(routes()));
    let text = metrics.render();
    let counted = "httpool_requests_total{route=\"/users/{user}/notes/{id}\",status=\"2xx\"} 7000\n";
    assert!(text.contains(counted), "{text}");
}

#[cfg(feature = "router")]
fn routed_requests_allocate_nothing(router: impl httpool::Handler) {
    let server = Server::bind("127.0.0.1:0").unwrap().workers(2).max_workers(2).spawn_handler(router).unwrap();
    let [mut conn, mut other] = connect_two(server.local_addr());
    let mut buf = [0u8; 1024];
    let requests: [&[u8]; 5] = [
        b"GET /users/ann/notes/42 HTTP/1.1\r\nHost: bench\r\n\r\n",
        b"GET /a/1/2/3 HTTP/1.1\r\nHost: bench\r\n\r\n",
        b"GET /notes/new HTTP/1.1\r\nHost: bench\r\n\r\n",
        b"GET /health HTTP/1.1\r\nHost: bench\r\n\r\n",
        b"GET /anything/else HTTP/1.1\r\nHost: bench\r\n\r\n",
    ];
    for request in requests {
        for _ in 0..3000 {
            round_trip_to(&mut conn, &mut buf, request);
            round_trip_to(&mut other, &mut buf, request);
        }
        let region = Region::new(GLOBAL);
        for _ in 0..1000 {
            round_trip_to(&mut conn, &mut buf, request);
        }
        let change = region.change();
        let line = String::from_utf8_lossy(request).lines().next().unwrap_or_default().to_owned();
        assert_eq!((change.allocations, change.reallocations), (0, 0), "{line}: {change:?}");
    }
    drop((conn, other));
    assert!(server.shutdown());
}

/// Other routes beside the one measured.
#[cfg(feature = "router")]
const ROUTES: [&str; 19] = [
    "/",
    "/about",
    "/login",
    "/logout",
    "/users",
    "/users/{user}",
    "/users/{user}/notes",
    "/users/{user}/settings",
    "/notes",
    "/notes/{id}",
    "/notes/{id}/edit",
    "/search",
    "/api/v1/users",
    "/api/v1/users/{user}",
    "/api/v1/notes",
    "/api/v1/notes/{id}",
    "/static/{*path}",
    "/metrics",
    "/favicon.ico",
];
