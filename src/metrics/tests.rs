use std::time::Duration;

use super::*;
use crate::test::TestRequest;

fn app(metrics: &Metrics) -> Metered<Router> {
    let router = Router::new()
        .get("/", |_req| Response::text("home"))
        .get("/notes/{id}", |_req| Response::text("note"))
        .post("/notes/{id}", |_req| Response::status(500));
    metrics.wrap(router)
}

/// A scrape of a router of two patterns, with requests recorded at known
/// durations (and no server), exactly.
#[test]
fn the_exposition_exactly() {
    let metrics = Metrics::new();
    let app = app(&metrics);
    app.record(Some(app.inner.patterns().nth(1).unwrap()), 200, Some(Duration::from_millis(7)));
    app.record(Some(app.inner.patterns().nth(1).unwrap()), 201, Some(Duration::from_micros(1500)));
    app.record(Some(app.inner.patterns().nth(1).unwrap()), 503, Some(Duration::from_secs(11)));
    app.record(None, 404, Some(Duration::from_nanos(120)));
    let route_block = |route: &str, classes: [u64; 5]| {
        let mut out = String::new();
        for (i, n) in classes.iter().enumerate() {
            out += &format!("httpool_requests_total{{route=\"{route}\",status=\"{}xx\"}} {n}\n", i + 1);
        }
        out
    };
    let histogram = |route: &str, cumulative: [u64; 12], sum: &str| {
        let les = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"];
        let mut out = String::new();
        for (le, n) in les.iter().zip(cumulative) {
            out += &format!("httpool_request_duration_seconds_bucket{{route=\"{route}\",le=\"{le}\"}} {n}\n");
        }
        out += &format!("httpool_request_duration_seconds_sum{{route=\"{route}\"}} {sum}\n");
        out += &format!("httpool_request_duration_seconds_count{{route=\"{route}\"}} {}\n", cumulative[11]);
        out
    };
    let want = [
        "# HELP httpool_requests_total Requests answered, by route pattern and status class.\n".to_owned(),
        "# TYPE httpool_requests_total counter\n".to_owned(),
        route_block("/", [0; 5]),
        route_block("/notes/{id}", [0, 2, 0, 0, 1]),
        route_block("unmatched", [0, 0, 0, 1, 0]),
        "# HELP httpool_request_duration_seconds Time the handler took, by route pattern.\n".to_owned(),
        "# TYPE httpool_request_duration_seconds histogram\n".to_owned(),
        histogram("/", [0; 12], "0.000000000"),
        histogram("/notes/{id}", [1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3], "11.008500000"),
        histogram("unmatched", [1; 12], "0.000000120"),
    ]
    .concat();
    assert_eq!(metrics.render(), want);
}

#[test]
fn requests_are_counted_by_pattern_never_by_path() {
    let metrics = Metrics::new();
    let app = app(&metrics);
    for path in ["/notes/1", "/notes/2", "/notes/%2e%2e", "/", "/nothing", "/scan/a", "/scan/b"] {
        TestRequest::get(path).send(&app);
    }
    TestRequest::post("/notes/3").send(&app);
    // A method the pattern has no route for: counted under the pattern.
    TestRequest::delete("/notes/3").send(&app);
    let text = metrics.render();
    for line in [
        "httpool_requests_total{route=\"/notes/{id}\",status=\"2xx\"} 3\n",
        "httpool_requests_total{route=\"/notes/{id}\",status=\"4xx\"} 1\n",
        "httpool_requests_total{route=\"/notes/{id}\",status=\"5xx\"} 1\n",
        "httpool_requests_total{route=\"/\",status=\"2xx\"} 1\n",
        "httpool_requests_total{route=\"unmatched\",status=\"4xx\"} 3\n",
        "httpool_request_duration_seconds_count{route=\"/notes/{id}\"} 5\n",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
    assert!(!text.contains("/scan") && !text.contains("/nothing") && !text.contains("notes/1"), "{text}");
}

#[test]
fn a_panic_is_a_5xx_and_a_nested_routers_routes_are_counted() {
    let metrics = Metrics::new();
    let inner = Router::new().get("/api/items/{id}", |_req| Response::text("item"));
    let app = metrics.wrap(Router::new().get("/boom", |_req| -> Response { panic!("boom") }).mount("/api", inner));
    assert_eq!(TestRequest::get("/boom").send(&app).status(), 500);
    TestRequest::get("/api/items/7").send(&app);
    TestRequest::get("/api/items/8").send(&app);
    // The mount's own label, for what the inner router does not match.
    TestRequest::get("/api/other").send(&app);
    let text = metrics.render();
    for line in [
        "httpool_requests_total{route=\"/boom\",status=\"5xx\"} 1\n",
        "httpool_requests_total{route=\"/api/items/{id}\",status=\"2xx\"} 2\n",
        "httpool_requests_total{route=\"unmatched\",status=\"4xx\"} 1\n",
        "httpool_requests_total{route=\"/api\",status=\"2xx\"} 0\n",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
}

/// A duration past what a `u64` of nanoseconds holds is counted past
/// every bound, its nanoseconds capped (no overflow).
#[test]
fn a_duration_past_584_years_is_capped() {
    let metrics = Metrics::new();
    let app = app(&metrics);
    app.record(app.inner.patterns().next(), 200, Some(Duration::MAX));
    let text = metrics.render();
    for line in [
        "httpool_request_duration_seconds_bucket{route=\"/\",le=\"10\"} 0\n",
        "httpool_request_duration_seconds_bucket{route=\"/\",le=\"+Inf\"} 1\n",
        "httpool_request_duration_seconds_sum{route=\"/\"} 18446744072.999999999\n",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
}

/// A call not timed that panics is counted too, as a 5xx: the untimed
/// drop of the guard is a path of its own.
#[test]
fn counts_only_counts_a_panic_as_a_5xx() {
    let metrics = Metrics::counts_only();
    let app = metrics.wrap(Router::new().get("/boom", |_req| -> Response { panic!("boom") }));
    assert_eq!(TestRequest::get("/boom").send(&app).status(), 500);
    let text = metrics.render();
    assert!(text.contains("httpool_requests_total{route=\"/boom\",status=\"5xx\"} 1\n"), "{text}");
}

#[test]
fn label_values_are_escaped() {
    let mut out = String::new();
    push_label(&mut out, "/a\"b\\c\nd/{é}");
    assert_eq!(out, "/a\\\"b\\\\c\\nd/{é}");
    let metrics = Metrics::new();
    let app = metrics.wrap(Router::new().get("/say/\"hi\"\\", |_req| Response::text("hi")));
    app.record(app.inner.patterns().next(), 200, Some(Duration::ZERO));
    let text = metrics.render();
    assert!(text.contains("httpool_requests_total{route=\"/say/\\\"hi\\\"\\\\\",status=\"2xx\"} 1\n"), "{text}");
}

#[test]
fn the_handler_answers_with_the_exposition_type() {
    let metrics = Metrics::new();
    let app = metrics.wrap(Router::new().get("/metrics", metrics.handler()));
    TestRequest::get("/metrics").send(&app);
    let resp = TestRequest::get("/metrics").send(&app);
    assert_eq!(resp.header("content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    assert!(resp.text().contains("httpool_requests_total{route=\"/metrics\",status=\"2xx\"} 1\n"), "{}", resp.text());
}

#[test]
fn counts_only_writes_no_histogram() {
    let metrics = Metrics::counts_only();
    let app = metrics.wrap(Router::new().get("/", |_req| Response::text("home")));
    TestRequest::get("/").send(&app);
    let text = metrics.render();
    assert!(text.contains("httpool_requests_total{route=\"/\",status=\"2xx\"} 1\n"), "{text}");
    assert!(!text.contains("duration"), "{text}");
}

/// Every pattern of a large router is found in the table, by its own
/// `&'static str`; a pattern with the same text elsewhere is not.
#[test]
fn the_table_finds_each_pattern_it_holds() {
    let patterns: Vec<&'static str> = (0..100).map(|i| &*String::leak(format!("/p{i}"))).collect();
    let series = |p| Arc::new(Series::new(p));
    let table = Table::new(patterns.iter().map(|&p| (key(p), series(p))));
    for &p in &patterns {
        assert_eq!(table.get(key(p)).map(|s| s.route), Some(p));
    }
    assert!(table.get(key(String::leak("/p7".to_owned()))).is_none());
    assert!(Table::new(std::iter::empty()).get(key("/")).is_none());
}
