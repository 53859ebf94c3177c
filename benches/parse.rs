//! The request-head parser, through the hidden `httpool::fuzz_entry::parse` entry
//! point.
//!
//! The limits are built once (`Config::default` asks the OS for the core
//! count); each call parses into a fresh spans `Vec`, which the connection
//! loop reuses, so the marginal cost per request in the loop is better read
//! from `roundtrip`'s pipelined benches.
//!
//! ```sh
//! cargo bench --bench parse -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// What `wrk -t2 -c64 http://127.0.0.1:9999/testolope` sends.
const WRK_GET: &[u8] = b"GET /testolope HTTP/1.1\r\nHost: 127.0.0.1:9999\r\n\r\n";

/// A browser-like navigation: 12 headers, ~700 bytes.
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

fn parse(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse");
    for (name, head) in [("wrk_get", WRK_GET), ("browser_12_headers", BROWSER_GET)] {
        g.throughput(Throughput::Bytes(head.len() as u64));
        g.bench_function(name, |b| b.iter(|| httpool::fuzz_entry::parse(black_box(head))));
    }
    g.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
