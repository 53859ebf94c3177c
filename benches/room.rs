//! What a new client pays at `max_connections` when an idle keep-alive
//! connection is closed to make room for it (`Shared::make_room`), against
//! the same server below the bound.
//!
//! For each N: N keep-alive connections are opened and answered once (so
//! they wait idle), with `max_connections` N (every new client needs room)
//! and 2N (none does); then 2,000 new clients, one after another, connect,
//! send a request and read the answer. (N stops at 6,000: both ends of
//! every connection, new ones included, then fit a limit of 20,000
//! descriptors.) Prints the p50, p99 and worst time
//! from connect to answer, and how many connections were closed for room.
//! Not a criterion bench: each sample changes the server's state (one
//! connection more, or one closed).
//!
//! ```sh
//! taskset -c 0,1 cargo bench --bench room
//! ```

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use httpool::{Request, Response, Server};

const NEW_CLIENTS: usize = 2_000;
const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";

fn main() {
    for idle in [500, 2_000, 6_000] {
        for max in [idle, 2 * idle] {
            run(idle, max);
        }
    }
}

fn run(idle: usize, max: usize) {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .max_connections(max)
        .idle_timeout(Duration::from_secs(3600))
        .spawn(|_: &mut Request| Response::text("ok"))
        .unwrap();
    let addr = server.local_addr();
    let mut open = Vec::with_capacity(idle + NEW_CLIENTS);
    let mut buf = [0u8; 512];
    let mut exchange = |conn: &mut TcpStream| {
        conn.write_all(REQUEST).unwrap();
        let n = conn.read(&mut buf).unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"), "{:?}", String::from_utf8_lossy(&buf[..n]));
    };
    for _ in 0..idle {
        let mut conn = TcpStream::connect(addr).unwrap();
        exchange(&mut conn);
        open.push(conn);
    }
    let mut times = Vec::with_capacity(NEW_CLIENTS);
    for _ in 0..NEW_CLIENTS {
        let start = Instant::now();
        let mut conn = TcpStream::connect(addr).unwrap();
        exchange(&mut conn);
        times.push(start.elapsed());
        // Kept open: at the bound, each new client needs room again.
        open.push(conn);
    }
    times.sort_unstable();
    let stats = server.stats();
    println!(
        "{idle:>5} idle, max_connections {max:>5}: new client p50 {:>6.1} us, p99 {:>7.1} us, worst {:>8.1} us; closed for room {}",
        micros(times[NEW_CLIENTS / 2]),
        micros(times[NEW_CLIENTS * 99 / 100]),
        micros(times[NEW_CLIENTS - 1]),
        stats.reclaimed,
    );
    drop(open);
    server.shutdown();
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
