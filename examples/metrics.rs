//! A service as it runs behind nginx or HAProxy: the client's address
//! (from a trusted proxy's `X-Forwarded-For` or `Forwarded`) and a request
//! id in its access log, and metrics for Prometheus at `/metrics`.
//!
//! ```sh
//! cargo run --example metrics                   # 127.0.0.1:8016, trusting 127.0.0.1 and ::1
//! TRUSTED_PROXIES=10.0.0.0/8,unix cargo run --example metrics -- 0.0.0.0:8016
//! curl -H 'X-Forwarded-For: 203.0.113.9' localhost:8016/whoami   # 203.0.113.9 (from a trusted proxy)
//! curl localhost:8016/notes/7; curl localhost:8016/metrics
//! ```
//!
//! `GET /whoami` answers the client's address, scheme, host and the
//! request's id, a line each; `GET /notes/{id}` a note; `GET /testolope`
//! `Testolope`. The access log goes to stderr. ci/interop.sh puts it behind
//! nginx and HAProxy, ci/metrics.sh has Prometheus scrape it.
//!
//! `metrics ADDR WORKERS routed|metered|counted` serves the routes alone
//! (no log, no request id): without metrics, with them, and with counts
//! only (`Metrics::counts_only`), which benches/scripts/callgrind.sh
//! compares (`EXAMPLE=metrics EXAMPLE_ARGS=metered bash
//! benches/scripts/callgrind.sh`).

use httpool::{Metrics, Request, Response, Router, Server, access_log, request_id};

/// Access lines to stderr (a program would rather use a logging crate).
struct Stderr;

impl log::Log for Stderr {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.target() == httpool::ACCESS_LOG_TARGET || metadata.level() <= log::Level::Warn
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            eprintln!("{}", record.args());
        }
    }

    fn flush(&self) {}
}

/// What the request says of its client, a line each.
pub fn whoami(req: &mut Request) -> Response {
    let addr = req.client_addr().map_or("-".to_owned(), |ip| ip.to_string());
    let (scheme, host) = (req.client_scheme(), req.client_host().unwrap_or("-"));
    Response::text(format!("{addr}\n{scheme}\n{host}\n{}\n", req.request_id().unwrap_or("-")))
}

/// The routes, `/metrics` answered by `metrics`.
pub fn app(metrics: &Metrics) -> Router {
    Router::new()
        .get("/testolope", |_req| Response::text("Testolope").with_content_type("text/plain"))
        .get("/whoami", whoami)
        .get("/notes/{id}", |req| {
            let id: u64 = req.param_as("id")?;
            Ok::<_, httpool::Error>(Response::text(format!("note {id}\n")))
        })
        .get("/metrics", metrics.handler())
}

/// The whole service: every request logged with its client and id, and
/// counted.
pub fn service(metrics: &Metrics) -> impl httpool::Handler {
    access_log(request_id(metrics.wrap(app(metrics))))
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8016".into());
    let proxies = std::env::var("TRUSTED_PROXIES").unwrap_or_else(|_| "127.0.0.1,::1".into());
    let mut server = Server::bind(&addr)?.trusted_proxies(proxies.split(',').filter(|p| !p.is_empty()));
    if let Some(workers) = args.next().and_then(|w| w.parse().ok()) {
        server = server.workers(workers);
    }
    let metrics = Metrics::new();
    eprintln!("metrics listening on http://{}/ (trusting {proxies})", server.local_addr()?);
    match args.next().as_deref() {
        Some("routed") => return server.serve_handler(app(&metrics)),
        Some("metered") => return server.serve_handler(metrics.wrap(app(&metrics))),
        Some("counted") => {
            let counts = Metrics::counts_only();
            return server.serve_handler(counts.wrap(app(&counts)));
        }
        _ => {}
    }
    log::set_logger(&Stderr).expect("the first logger");
    log::set_max_level(log::LevelFilter::Info);
    // Spawned, for its handle: the server's own counters go in the metrics.
    let server = server.stop_on_signals(true).spawn_handler(service(&metrics))?;
    metrics.server(&server);
    server.join();
    eprintln!("metrics stopped");
    Ok(())
}
