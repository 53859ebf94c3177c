//! One request through the whole connection loop.
//!
//! - `serve_chunks/*`: `httpool::fuzz_entry::serve_chunks`, the connection loop
//!   over in-memory I/O (parse + handler + encode + queue the write). Each
//!   call also builds a `Config`, a worker `Scratch` (a 33 KiB output buffer)
//!   and a fresh 20 KiB read buffer, and copies the input: that setup is
//!   included, so these are upper bounds for the per-request cost. The
//!   fuzz handler reads the (empty) body and answers it with `Response::bytes`.
//!   `Config::default()` alone costs tens of µs (`available_parallelism`,
//!   see `benches/parse.rs`), so read the marginal cost of one request as
//!   `(pipelined_64 - pipelined_16) / 48`, which cancels the setup.
//! - `loopback/*`: a real server (`Server::spawn`, default workers) on
//!   127.0.0.1 and a blocking `std::net::TcpStream` client: write a GET,
//!   read the whole response, repeat — the full path (syscalls, poller,
//!   work queue, park/unpark) at a concurrency of one.
//!
//! ```sh
//! cargo bench --bench roundtrip -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use httpool::{Request, Response, Server};

const GET: &[u8] = b"GET /testolope HTTP/1.1\r\nHost: 127.0.0.1:9999\r\n\r\n";
const GET_CLOSE: &[u8] = b"GET /testolope-nokeepalive HTTP/1.1\r\nHost: 127.0.0.1:9999\r\n\r\n";
const PIPELINED: usize = 16;
const PIPELINED_MORE: usize = 64;

/// A browser-like navigation: 12 headers, ~700 bytes (as in `benches/parse.rs`).
const BROWSER_GET: &[u8] = b"GET /static/app/index.html?lang=en&v=3 HTTP/1.1\r\n\
Host: www.example.com\r\n\
User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n\
Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8\r\n\
Accept-Language: en-US,en;q=0.5\r\n\
Accept-Encoding: gzip, deflate, br, zstd\r\n\
Referer: https://www.example.com/static/app/\r\n\
Connection: keep-alive\r\n\
Cookie: session=3f6a9c0d2b7e4f18a5c9; theme=dark; _ga=GA1.2.123456789.1700000000\r\n\
Upgrade-Insecure-Requests: 1\r\n\
Sec-Fetch-Dest: document\r\n\
Sec-Fetch-Mode: navigate\r\n\
If-None-Match: \"5f3c-61a2b9e4c1d80\"\r\n\
\r\n";

/// Same handler as `examples/testolope.rs`.
fn testolope(req: &mut Request) -> Response {
    let body = Response::text("Testolope").with_content_type("text/plain");
    match req.path() {
        "/testolope" => body,
        "/testolope-nokeepalive" => body.with_close(),
        _ => Response::status(404),
    }
}

fn count_responses(out: &[u8]) -> usize {
    out.windows(9).filter(|w| w == b"HTTP/1.1 ").count()
}

fn serve_chunks(c: &mut Criterion) {
    let pipelined: Vec<u8> = GET.repeat(PIPELINED);
    let pipelined_more: Vec<u8> = GET.repeat(PIPELINED_MORE);
    let browser_16: Vec<u8> = BROWSER_GET.repeat(PIPELINED);
    let browser_64: Vec<u8> = BROWSER_GET.repeat(PIPELINED_MORE);

    // Sanity: the loop answers every request with a 200.
    let out = httpool::fuzz_entry::serve_chunks(&[GET]);
    assert!(out.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&out));
    let out = httpool::fuzz_entry::serve_chunks(&[&pipelined]);
    assert_eq!(count_responses(&out), PIPELINED);
    assert_eq!(out.windows(12).filter(|w| w == b"HTTP/1.1 200").count(), PIPELINED);

    let mut g = c.benchmark_group("serve_chunks");
    g.throughput(Throughput::Elements(1));
    g.bench_function("one_keepalive_get", |b| b.iter(|| httpool::fuzz_entry::serve_chunks(black_box(&[GET]))));
    for (name, input, n) in [
        ("pipelined_16_gets", &pipelined, PIPELINED),
        ("pipelined_64_gets", &pipelined_more, PIPELINED_MORE),
        ("pipelined_16_browser_gets", &browser_16, PIPELINED),
        ("pipelined_64_browser_gets", &browser_64, PIPELINED_MORE),
    ] {
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(name, |b| b.iter(|| httpool::fuzz_entry::serve_chunks(black_box(&[&input[..]]))));
    }
    g.finish();
}

/// Reads one response (head + `Content-Length` body) into `buf`; returns its
/// length. Bytes past it are not expected (one request in flight).
fn read_response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> usize {
    buf.clear();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).expect("read");
        assert!(n > 0, "server closed early");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..head_end]).expect("utf-8 head");
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse().ok())?
                })
                .unwrap_or(0);
            let total = head_end + 4 + len;
            while buf.len() < total {
                let n = stream.read(&mut chunk).expect("read body");
                assert!(n > 0, "server closed mid-body");
                buf.extend_from_slice(&chunk[..n]);
            }
            return total;
        }
    }
}

fn loopback(c: &mut Criterion) {
    let server = Server::bind("127.0.0.1:0").expect("bind").spawn(testolope).expect("spawn");
    let addr: SocketAddr = server.local_addr();
    let mut buf = Vec::with_capacity(4096);

    let mut g = c.benchmark_group("loopback");
    g.throughput(Throughput::Elements(1));

    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    stream.write_all(GET).expect("write");
    read_response(&mut stream, &mut buf);
    assert!(buf.starts_with(b"HTTP/1.1 200"));
    g.bench_function("keepalive_get", |b| {
        b.iter(|| {
            stream.write_all(GET).expect("write");
            black_box(read_response(&mut stream, &mut buf))
        })
    });
    drop(stream);

    // A connection per request (connect, GET, response, server closes).
    g.bench_function("connect_get_close", |b| {
        b.iter(|| {
            let mut s = TcpStream::connect(addr).expect("connect");
            s.set_nodelay(true).expect("nodelay");
            s.write_all(GET_CLOSE).expect("write");
            let n = read_response(&mut s, &mut buf);
            let mut rest = [0u8; 64];
            assert_eq!(s.read(&mut rest).expect("read eof"), 0, "server did not close");
            black_box(n)
        })
    });
    g.finish();

    let stats = server.stats();
    eprintln!("loopback server stats: {stats:?}");
    assert!(server.shutdown(), "server did not shut down cleanly");
}

criterion_group!(benches, serve_chunks, loopback);
criterion_main!(benches);
