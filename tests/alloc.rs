//! A keep-alive request on the testolope path allocates nothing: an exact
//! count over a counting global allocator, across every thread of the
//! process (server and client). It runs without the libtest harness
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

/// One request and its whole response, with no allocation on this side.
fn round_trip(conn: &mut TcpStream, buf: &mut [u8; 1024]) {
    conn.write_all(b"GET /testolope HTTP/1.1\r\nHost: bench\r\n\r\n").unwrap();
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
    println!("1 passed, 0 failed");
}

fn keep_alive_requests_allocate_nothing() {
    // No extra threads: on a busy machine a request may run across two of
    // the monitor's ticks, look blocked, and start a thread (its buffers
    // are allocations of the pool's, not of the request path measured).
    let server = Server::bind("127.0.0.1:0").unwrap().workers(2).max_workers(2).spawn(testolope::testolope).unwrap();
    let mut conn = TcpStream::connect(server.local_addr()).unwrap();
    conn.set_nodelay(true).unwrap();
    let mut buf = [0u8; 1024];
    // Warm-up: buffers, pools, and the deadline heap reach their steady
    // size (it is compacted past 2 × parked + 1024 entries).
    for _ in 0..3000 {
        round_trip(&mut conn, &mut buf);
    }
    let region = Region::new(GLOBAL);
    for _ in 0..2000 {
        round_trip(&mut conn, &mut buf);
    }
    let change = region.change();
    assert_eq!((change.allocations, change.reallocations), (0, 0), "{change:?}");
    assert_eq!(server.stats().threads_spawned, 2, "{:?}", server.stats());
    drop(conn);
    assert!(server.shutdown());
}
