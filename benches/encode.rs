//! Response encoding and the `Date` cache, through the hidden
//! `httpool::fuzz_entry` entry points.
//!
//! - `encode/*`: a response appended to a reused buffer, as the connection
//!   loop does: the testolope answer, one with five handler headers, and an
//!   owned body. Each includes building the `Response` (the handler's part).
//! - `date/*`: the cached `Date` (a clock read per call), a cache miss
//!   (formatting a second), and the public `http_date` (allocates a `String`).
//!
//! ```sh
//! cargo bench --bench encode -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use httpool::Response;
use httpool::fuzz_entry::{Date, encode, format_date};

const DATE: &[u8; 29] = b"Sun, 06 Nov 1994 08:49:37 GMT";

fn encoding(c: &mut Criterion) {
    let mut out = Vec::with_capacity(4096);
    let testolope = || Response::text("Testolope").with_content_type("text/plain");
    // Sanity: the bytes the benchmark measures are a whole, valid answer.
    encode(&testolope(), DATE, &mut out).expect("valid");
    assert_eq!(
        out,
        b"HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Type: text/plain\r\n\
Content-Length: 9\r\n\r\nTestolope"
    );

    let mut g = c.benchmark_group("encode");
    g.throughput(Throughput::Elements(1));
    g.bench_function("testolope", |b| {
        b.iter(|| {
            out.clear();
            encode(&black_box(testolope()), DATE, &mut out)
        })
    });
    g.bench_function("five_headers", |b| {
        b.iter(|| {
            let resp = Response::text("{\"ok\":true}")
                .with_content_type("application/json")
                .with_header("Cache-Control", "no-store")
                .with_header("ETag", "\"5f3c-61a2b9e4c1d80\"")
                .with_header("Vary", "Accept-Encoding")
                .with_header("X-Request-Id", "3f6a9c0d2b7e4f18a5c9")
                .with_header("Server", "httpool");
            out.clear();
            encode(&black_box(resp), DATE, &mut out)
        })
    });
    let body = vec![b'x'; 4096];
    g.bench_function("owned_4k_body", |b| {
        b.iter(|| {
            out.clear();
            encode(&black_box(Response::bytes(body.clone())), DATE, &mut out)
        })
    });
    g.finish();
}

fn date(c: &mut Criterion) {
    let mut g = c.benchmark_group("date");
    g.throughput(Throughput::Elements(1));
    let mut cache = Date::new();
    g.bench_function("cached", |b| b.iter(|| black_box(cache.now()).len()));
    let mut secs = 784_111_777u64;
    g.bench_function("format_one_second", |b| {
        b.iter(|| {
            secs += 1;
            format_date(black_box(secs))
        })
    });
    // The same with httpdate (written into a stack buffer: no allocation).
    let mut secs = 784_111_777u64;
    g.bench_function("format_one_second_httpdate", |b| {
        b.iter(|| {
            secs += 1;
            let mut out = [0u8; 29];
            let date = httpdate::HttpDate::from(UNIX_EPOCH + Duration::from_secs(black_box(secs)));
            std::io::Write::write_fmt(&mut &mut out[..], format_args!("{date}")).unwrap();
            out
        })
    });
    let time = UNIX_EPOCH + Duration::from_secs(784_111_777);
    g.bench_function("http_date_string", |b| b.iter(|| httpool::http_date(black_box(time))));
    g.bench_function("system_time_now", |b| b.iter(SystemTime::now));
    g.finish();
}

criterion_group!(benches, encoding, date);
criterion_main!(benches);
