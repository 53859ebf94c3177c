//! Metrics a Prometheus can scrape (feature `router`): requests by route
//! and status class, handler latencies, and the server's own counters, in
//! the Prometheus text exposition format (version 0.0.4).
//!
//! [`Metrics::wrap`] wraps a [`Router`]: each request it answers is counted
//! under the pattern of the route that took it ([`Request::route`]:
//! `/notes/{id}`, never the path a client sent, so a scanner trying a
//! million paths adds no series), or under `unmatched` (the router's
//! `404`); [`Metrics::handler`] answers a scrape, mounted where you choose
//! (`/metrics`, as Prometheus expects); [`Metrics::server`] adds
//! [`ServerHandle::stats`]. Behind a proxy, let it reach `/metrics` only
//! from your network, or route it on a server bound to another address.
//!
//! ```
//! use httpool::{Metrics, Response, Router, Server};
//!
//! # fn main() -> std::io::Result<()> {
//! let metrics = Metrics::new();
//! let app = Router::new()
//!     .get("/", |_req| Response::text("home\n"))
//!     .get("/notes/{id}", |req| Response::text(format!("note {}\n", req.param("id").unwrap_or_default())))
//!     .get("/metrics", metrics.handler());
//! let server = Server::bind("127.0.0.1:0")?.spawn_handler(metrics.wrap(app))?;
//! metrics.server(&server);
//! # let addr = server.local_addr();
//! # let get = |path: &str| {
//! #     use std::io::{Read, Write};
//! #     let mut conn = std::net::TcpStream::connect(addr).unwrap();
//! #     write!(conn, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
//! #     let mut out = String::new();
//! #     conn.read_to_string(&mut out).unwrap();
//! #     out
//! # };
//! # get("/notes/1");
//! # get("/notes/2");
//! # let scraped = get("/metrics");
//! # assert!(scraped.contains("httpool_requests_total{route=\"/notes/{id}\",status=\"2xx\"} 2\n"), "{scraped}");
//! # assert!(scraped.contains("# TYPE httpool_connections_accepted_total counter\n"), "{scraped}");
//! # server.shutdown();
//! # Ok(())
//! # }
//! ```
//!
//! What a scrape returns, for each route of the router and `unmatched`:
//!
//! ```text
//! # TYPE httpool_requests_total counter
//! httpool_requests_total{route="/notes/{id}",status="2xx"} 2
//! # TYPE httpool_request_duration_seconds histogram
//! httpool_request_duration_seconds_bucket{route="/notes/{id}",le="0.005"} 2
//! httpool_request_duration_seconds_sum{route="/notes/{id}"} 0.000043210
//! httpool_request_duration_seconds_count{route="/notes/{id}"} 2
//! ```
//!
//! (and every other status class, bucket and `# HELP` line), then the
//! server's counters (`httpool_connections_accepted_total`,
//! `httpool_responses_total`, `httpool_threads`, ... one for each field of
//! [`Stats`]). The status is the handler's (`500` for one that
//! panicked); the duration, the handler's call, from the request reaching
//! the wrapper to its response (a body sent afterwards, a file or a stream,
//! is not in it). Buckets: 5 ms to 10 s, as Prometheus' client libraries
//! have them.
//!
//! Recording allocates nothing and takes no lock: each route's counters are
//! made as the router is wrapped, and are atomics: a request adds to one
//! (and, when timed, to the sum of durations). (The routes of a router
//! mounted inside the wrapped one are made the first time each is taken.)
//! Its cost, on a keep-alive request to a router (callgrind, Linux, about
//! 3,200 instructions without metrics): about 190 instructions (6%), more
//! than half of them the two readings of the clock that time the call and
//! their difference; about 55 (1.8%) with [`Metrics::counts_only`], which
//! times nothing and writes no histogram.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::handler::Handler;
use crate::request::Request;
use crate::response::Response;
use crate::router::Router;
use crate::server::{ServerHandle, ShutdownSignal};
use crate::stats::Stats;

/// The route label of requests no route matched.
pub const UNMATCHED: &str = "unmatched";

/// The histogram's upper bounds in nanoseconds, and as they are written.
const BUCKETS: [(u64, &str); 11] = [
    (5_000_000, "0.005"),
    (10_000_000, "0.01"),
    (25_000_000, "0.025"),
    (50_000_000, "0.05"),
    (100_000_000, "0.1"),
    (250_000_000, "0.25"),
    (500_000_000, "0.5"),
    (1_000_000_000, "1"),
    (2_500_000_000, "2.5"),
    (5_000_000_000, "5"),
    (10_000_000_000, "10"),
];

/// The most whole seconds whose nanoseconds, and a second's more, fit a
/// `u64` (584 years).
const MAX_SECS: u64 = u64::MAX / 1_000_000_000 - 1;

/// The last bucket: past every bound, and where a request not timed is
/// counted.
const LAST_BUCKET: usize = BUCKETS.len();

/// The counters of one route.
#[derive(Debug)]
struct Series {
    route: &'static str,
    /// Requests by status class (`1xx` to `5xx`) and by the first bucket
    /// their duration fits (not cumulative; the last: past every bound, or
    /// not timed). One count a request: a row sums to a class's requests,
    /// a column to a bucket's.
    counts: [[AtomicU64; BUCKETS.len() + 1]; 5],
    nanos: AtomicU64,
}

impl Series {
    fn new(route: &'static str) -> Series {
        Series { route, counts: Default::default(), nanos: AtomicU64::new(0) }
    }

    /// Counts a request answered `status` that took `took` (`None`: not
    /// timed).
    #[inline]
    fn record(&self, status: u16, took: Option<Duration>) {
        let class = &self.counts[usize::from(status.clamp(100, 599) / 100 - 1)];
        let Some(took) = took else {
            class[LAST_BUCKET].fetch_add(1, Relaxed);
            return;
        };
        // Past 584 years does not fit: capped.
        let nanos = took.as_secs().min(MAX_SECS) * 1_000_000_000 + u64::from(took.subsec_nanos());
        let bucket = BUCKETS.iter().position(|&(bound, _)| nanos <= bound).unwrap_or(LAST_BUCKET);
        class[bucket].fetch_add(1, Relaxed);
        self.nanos.fetch_add(nanos, Relaxed);
    }

    /// The requests answered with each status class.
    fn classes(&self) -> impl Iterator<Item = u64> + '_ {
        self.counts.iter().map(|class| class.iter().map(|count| count.load(Relaxed)).sum())
    }

    /// The requests in each bucket (not cumulative), the last past every
    /// bound.
    fn buckets(&self) -> [u64; BUCKETS.len() + 1] {
        let mut buckets = [0; BUCKETS.len() + 1];
        for class in &self.counts {
            for (sum, count) in buckets.iter_mut().zip(class) {
                *sum += count.load(Relaxed);
            }
        }
        buckets
    }
}

/// What every copy of a [`Metrics`] shares.
#[derive(Debug)]
struct Registry {
    /// Requests are timed, and the histogram written.
    latency: bool,
    /// One series a label, made as routers are wrapped (or a nested
    /// router's route is first taken); never removed.
    routes: Mutex<Vec<Arc<Series>>>,
    unmatched: Arc<Series>,
    server: Mutex<Option<ShutdownSignal>>,
}

impl Registry {
    /// The series of `route`, made if it has none.
    fn series(&self, route: &'static str) -> Arc<Series> {
        let mut routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(series) = routes.iter().find(|s| s.route == route) {
            return series.clone();
        }
        let series = Arc::new(Series::new(route));
        routes.push(series.clone());
        series
    }
}

/// Request counts and latencies by route, and a server's counters, for a
/// Prometheus to scrape; see the [module](crate::metrics). Copies share
/// their counts.
#[derive(Clone, Debug)]
pub struct Metrics {
    registry: Arc<Registry>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// No route yet, no server.
    pub fn new() -> Metrics {
        Metrics::with_latency(true)
    }

    /// Counts only, no latency histogram: requests are not timed, which
    /// spares them most of what metrics cost (see the
    /// [module](crate::metrics)).
    pub fn counts_only() -> Metrics {
        Metrics::with_latency(false)
    }

    fn with_latency(latency: bool) -> Metrics {
        let registry = Registry {
            latency,
            routes: Mutex::new(Vec::new()),
            unmatched: Arc::new(Series::new(UNMATCHED)),
            server: Mutex::new(None),
        };
        Metrics { registry: Arc::new(registry) }
    }

    /// Wraps `router` so that each request it answers is counted under its
    /// route's pattern; the counters of every route are made now.
    pub fn wrap<S: Send + Sync + 'static>(&self, router: Router<S>) -> Metered<Router<S>> {
        let table = Table::new(router.patterns().map(|p| (key(p), self.registry.series(p))));
        Metered { inner: router, table, latency: self.registry.latency, registry: self.registry.clone() }
    }

    /// Adds the counters of the server `handle` runs ([`ServerHandle::stats`])
    /// to what a scrape returns.
    pub fn server(&self, handle: &ServerHandle) {
        *self.registry.server.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle.signal());
    }

    /// A handler answering a scrape: [`Metrics::response`].
    pub fn handler(&self) -> impl Fn(&mut Request<'_>) -> Response + Send + Sync + 'static {
        let metrics = self.clone();
        move |_req: &mut Request<'_>| metrics.response()
    }

    /// The exposition as a response, with the content type Prometheus
    /// asks for.
    pub fn response(&self) -> Response {
        Response::text(self.render()).with_content_type("text/plain; version=0.0.4; charset=utf-8")
    }

    /// The exposition: every route's counts and histogram (by route, in
    /// order, `unmatched` last), then the server's counters.
    pub fn render(&self) -> String {
        let mut routes = self.registry.routes.lock().unwrap_or_else(PoisonError::into_inner).clone();
        routes.sort_by_key(|s| s.route);
        routes.push(self.registry.unmatched.clone());
        let mut out = String::with_capacity(1024 + routes.len() * 1024);
        render_requests(&mut out, &routes);
        if self.registry.latency {
            render_durations(&mut out, &routes);
        }
        let server = self.registry.server.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(server) = server {
            render_stats(&mut out, &server.stats());
        }
        out
    }
}

/// A route pattern's place in memory (address, length).
type Key = (usize, usize);

/// A pattern's series, by its key.
type Entry = (Key, Arc<Series>);

/// A route pattern's place in memory: patterns are `&'static str`, and
/// the router hands the very one it was given to each request.
fn key(pattern: &'static str) -> Key {
    (pattern.as_ptr() as usize, pattern.len())
}

/// The series of a router's patterns by [`key`]: open addressing, at
/// most half full, hashed by address (a binary search cost 50
/// instructions a request).
#[derive(Debug)]
struct Table {
    slots: Box<[Option<Entry>]>,
    /// 64 less the bits of a slot's index.
    shift: u32,
}

impl Table {
    fn new(entries: impl Iterator<Item = Entry>) -> Table {
        let entries: Vec<_> = entries.collect();
        let len = (entries.len() * 2).next_power_of_two().max(2);
        let mut table = Table { slots: vec![None; len].into(), shift: 64 - len.trailing_zeros() };
        for (key, series) in entries {
            let mut at = table.slot(key);
            while let Some((other, _)) = &table.slots[at] {
                if *other == key {
                    break;
                }
                at = (at + 1) & (len - 1);
            }
            table.slots[at] = Some((key, series));
        }
        table
    }

    /// Where the search for `key` starts (Fibonacci hashing of the address).
    fn slot(&self, key: Key) -> usize {
        ((key.0 as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    #[inline]
    fn get(&self, key: Key) -> Option<&Series> {
        let mut at = self.slot(key);
        // Half the slots at least are empty: the search ends.
        loop {
            match &self.slots[at] {
                Some((found, series)) if *found == key => return Some(series),
                Some(_) => at = (at + 1) & (self.slots.len() - 1),
                None => return None,
            }
        }
    }
}

/// A router whose requests are counted; see [`Metrics::wrap`].
#[derive(Debug)]
pub struct Metered<H> {
    inner: H,
    table: Table,
    latency: bool,
    registry: Arc<Registry>,
}

impl<H> Metered<H> {
    /// Counts a request on `route` (`None`: unmatched).
    #[inline]
    fn record(&self, route: Option<&'static str>, status: u16, took: Option<Duration>) {
        let Some(route) = route else { return self.registry.unmatched.record(status, took) };
        match self.table.get(key(route)) {
            Some(series) => series.record(status, took),
            None => self.record_nested(route, status, took),
        }
    }

    /// Counts a request on a route of a router mounted in the wrapped one:
    /// its series is made the first time, then found under the lock.
    #[cold]
    #[inline(never)]
    fn record_nested(&self, route: &'static str, status: u16, took: Option<Duration>) {
        self.registry.series(route).record(status, took);
    }
}

impl<H: Handler> Handler for Metered<H> {
    #[inline]
    fn handle(&self, req: &mut Request<'_>) -> Response {
        // Counted as the call ends, by the guard's drop: as the crate's
        // `500` if it unwinds. (A `catch_unwind` moved the response
        // through a copy: 30 instructions a request, and so did a count
        // between the call and the return.)
        let mut call = Call { metered: self, req, status: 500, started: self.latency.then(Instant::now) };
        let resp = self.inner.handle(call.req);
        call.status = resp.status;
        resp
    }
}

/// A call under way, counted when it is dropped.
struct Call<'m, 'r, 'a, H> {
    metered: &'m Metered<H>,
    req: &'r mut Request<'a>,
    status: u16,
    started: Option<Instant>,
}

impl<H> Drop for Call<'_, '_, '_, H> {
    #[inline(always)]
    fn drop(&mut self) {
        match self.started {
            None => self.metered.record(self.req.route(), self.status, None),
            Some(started) => self.record_timed(started),
        }
    }
}

impl<H> Call<'_, '_, '_, H> {
    /// Counts the call, timed from `started` to now. Apart from the drop:
    /// the drop of an untimed call then saves fewer registers (15
    /// instructions a request).
    #[inline(never)]
    fn record_timed(&self, started: Instant) {
        self.metered.record(self.req.route(), self.status, Some(started.elapsed()));
    }
}

/// `# HELP` and `# TYPE` of a metric.
fn preamble(out: &mut String, name: &str, kind: &str, help: &str) {
    writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}").ok();
}

/// A label value as the exposition format writes it: `\`, `"` and a line
/// feed escaped.
fn push_label(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn render_requests(out: &mut String, routes: &[Arc<Series>]) {
    let name = "httpool_requests_total";
    preamble(out, name, "counter", "Requests answered, by route pattern and status class.");
    for series in routes {
        for (class, count) in series.classes().enumerate() {
            out.push_str(name);
            out.push_str("{route=\"");
            push_label(out, series.route);
            writeln!(out, "\",status=\"{}xx\"}} {count}", class + 1).ok();
        }
    }
}

fn render_durations(out: &mut String, routes: &[Arc<Series>]) {
    let name = "httpool_request_duration_seconds";
    preamble(out, name, "histogram", "Time the handler took, by route pattern.");
    for series in routes {
        let mut cumulative = 0;
        let les = BUCKETS.iter().map(|&(_, le)| le).chain(["+Inf"]);
        for (le, count) in les.zip(series.buckets()) {
            cumulative += count;
            out.push_str(name);
            out.push_str("_bucket{route=\"");
            push_label(out, series.route);
            writeln!(out, "\",le=\"{le}\"}} {cumulative}").ok();
        }
        let nanos = series.nanos.load(Relaxed);
        for (suffix, value) in [
            ("sum", format!("{}.{:09}", nanos / 1_000_000_000, nanos % 1_000_000_000)),
            ("count", cumulative.to_string()),
        ] {
            write!(out, "{name}_{suffix}{{route=\"").ok();
            push_label(out, series.route);
            writeln!(out, "\"}} {value}").ok();
        }
    }
}

/// The server's counters: name, type, help, value.
fn render_stats(out: &mut String, stats: &Stats) {
    let s = stats;
    let all: [(&str, &str, &str, u64); 24] = [
        ("connections_accepted_total", "counter", "Connections accepted.", s.accepted),
        ("connections_open", "gauge", "Connections open.", s.open),
        ("connections_parked", "gauge", "Open connections parked, waiting for bytes.", s.parked),
        ("connections_idle", "gauge", "Parked keep-alive connections idle between requests.", s.idle),
        ("connections_active", "gauge", "Open connections queued for or held by a worker.", s.active),
        ("connections_queued", "gauge", "Ready connections waiting for a worker.", s.queued),
        ("connections_reclaimed_total", "counter", "Idle connections closed to make room.", s.reclaimed),
        ("responses_total", "counter", "Responses written, error responses included.", s.requests),
        ("parse_errors_total", "counter", "Requests refused for an invalid or too large head.", s.parse_errors),
        ("timeouts_total", "counter", "Connections closed for a timeout.", s.timeouts),
        ("panics_total", "counter", "Handler panics.", s.panics),
        ("io_errors_total", "counter", "Accept and socket errors other than timeouts.", s.io_errors),
        ("rejected_total", "counter", "Connections and requests answered 503 for want of room.", s.rejected),
        ("unsent_bytes", "gauge", "Response bytes held for clients slow to take them.", s.unsent_bytes),
        ("body_waits", "gauge", "Workers waiting for request body bytes.", s.body_waits),
        ("streaming_workers", "gauge", "Workers held by a streamed answer or an upgrade.", s.streaming_workers),
        ("buffered_body_bytes", "gauge", "Bytes of collected bodies past the read buffers.", s.buffered_body_bytes),
        ("pending_head_bytes", "gauge", "Bytes held for TLS handshakes and unfinished heads.", s.pending_head_bytes),
        ("threads", "gauge", "Worker threads alive.", s.threads),
        ("threads_busy", "gauge", "Worker threads serving a connection.", s.busy_threads),
        ("threads_idle", "gauge", "Worker threads waiting for work.", s.idle_threads),
        ("threads_spawned_total", "counter", "Worker threads started.", s.threads_spawned),
        ("threads_retired_total", "counter", "Worker threads retired after idling.", s.threads_retired),
        ("monitor_ticks_total", "counter", "Looks the monitor took at the workers.", s.monitor_ticks),
    ];
    for (name, kind, help, value) in all {
        let name = format!("httpool_{name}");
        preamble(out, &name, kind, help);
        writeln!(out, "{name} {value}").ok();
    }
}

#[cfg(test)]
mod tests;
