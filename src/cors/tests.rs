use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::test::{TestRequest, TestResponse};

/// A handler that answers `200 handled`, with the `Vary` given, if any.
fn app(vary: Option<&'static str>) -> impl Fn(&mut Request<'_>) -> Response + Send + Sync + 'static {
    move |_req| match vary {
        Some(v) => Response::text("handled").with_header("Vary", v),
        None => Response::text("handled"),
    }
}

const APP: &str = "https://app.example";

fn api() -> Cors<impl Handler> {
    cors(app(None)).allow_origin(APP).allow_methods(["PUT", "DELETE"]).allow_headers(["Content-Type", "X-Token"])
}

/// The headers this wrapper may write (`Access-Control-*` and `Vary`), in
/// the order sent.
fn cors_headers(resp: &TestResponse) -> Vec<(String, String)> {
    let ours = |n: &str| n.to_ascii_lowercase().starts_with("access-control-") || n.eq_ignore_ascii_case("vary");
    resp.headers().iter().filter(|(n, _)| ours(n)).cloned().collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected.iter().map(|&(n, v)| (n.to_owned(), v.to_owned())).collect()
}

fn preflight(origin: &str, method: &str, headers: Option<&str>) -> TestRequest {
    let req = TestRequest::method("OPTIONS", "/notes/7")
        .header("Origin", origin)
        .header("Access-Control-Request-Method", method);
    match headers {
        Some(names) => req.header("Access-Control-Request-Headers", names),
        None => req,
    }
}

const PREFLIGHT_VARY: (&str, &str) = ("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers");

#[test]
fn an_allowed_preflight_gets_204_with_every_permission() {
    let api = api().allow_credentials(true).max_age(Duration::from_secs(600)).expose_headers(["ETag"]);
    let resp = preflight(APP, "PUT", Some("x-token,content-type")).send(&api);
    assert_eq!((resp.status(), resp.body()), (204, &b""[..]));
    assert_eq!(
        cors_headers(&resp),
        pairs(&[
            ("Access-Control-Allow-Origin", APP),
            ("Access-Control-Allow-Credentials", "true"),
            ("Access-Control-Allow-Methods", "PUT, DELETE"),
            ("Access-Control-Allow-Headers", "content-type, x-token"),
            ("Access-Control-Max-Age", "600"),
            PREFLIGHT_VARY,
        ])
    );
}

#[test]
fn preflights_never_reach_the_handler() {
    let calls = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let api = cors(move |_req: &mut Request| {
        counted.fetch_add(1, Ordering::Relaxed);
        Response::status(401)
    })
    .allow_origin(APP)
    .allow_methods(["PUT"]);
    assert_eq!(preflight(APP, "PUT", None).send(&api).status(), 204);
    assert_eq!(preflight("https://evil.example", "PUT", None).send(&api).status(), 403);
    assert_eq!(calls.load(Ordering::Relaxed), 0);
    // An OPTIONS that is not a preflight is the handler's.
    let plain = TestRequest::method("OPTIONS", "/").header("Origin", APP).send(&api);
    assert_eq!(plain.status(), 401);
    assert_eq!(TestRequest::method("OPTIONS", "/").send(&api).status(), 401);
    assert_eq!(calls.load(Ordering::Relaxed), 2);
}

#[test]
fn a_refused_preflight_gets_403_without_permissions() {
    let cases = [
        (preflight("https://evil.example", "PUT", None), "origin not allowed"),
        (preflight("https://app.example.evil.example", "GET", None), "origin not allowed"),
        (preflight("null", "GET", None), "origin not allowed"),
        (preflight(APP, "PATCH", None), "method \"PATCH\" not allowed"),
        (preflight(APP, "put", None), "method \"put\" not allowed"),
        (preflight(APP, "PUT", Some("x-token, authorization")), "header \"authorization\" not allowed"),
    ];
    for (req, why) in cases {
        let resp = req.send(&api());
        assert_eq!((resp.status(), resp.text()), (403, &*format!("CORS preflight refused: {why}\n")));
        assert_eq!(cors_headers(&resp), pairs(&[PREFLIGHT_VARY]), "{why}");
    }
}

#[test]
fn safelisted_methods_need_no_listing_and_header_names_no_case() {
    let api = cors(app(None)).allow_origin(APP).allow_headers(["X-Token"]);
    for method in ["GET", "HEAD", "POST"] {
        let resp = preflight(APP, method, Some("X-TOKEN")).send(&api);
        assert_eq!(resp.status(), 204, "{method}");
        assert_eq!(
            cors_headers(&resp),
            pairs(&[("Access-Control-Allow-Origin", APP), ("Access-Control-Allow-Headers", "x-token"), PREFLIGHT_VARY])
        );
    }
    assert_eq!(preflight(APP, "DELETE", None).send(&api).status(), 403);
}

#[test]
fn any_header_sends_back_the_names_asked_for() {
    let api = cors(app(None)).allow_origin(APP).allow_any_header();
    let resp = preflight(APP, "POST", Some("x-one, x-two")).send(&api);
    assert_eq!(resp.status(), 204);
    assert_eq!(
        cors_headers(&resp),
        pairs(&[
            ("Access-Control-Allow-Origin", APP),
            ("Access-Control-Allow-Headers", "x-one, x-two"),
            PREFLIGHT_VARY
        ])
    );
    assert_eq!(preflight(APP, "POST", Some("x-one, not a name")).send(&api).status(), 403);
}

#[test]
fn answers_carry_the_origin_only_for_allowed_origins_and_always_vary() {
    let allowed = TestRequest::put("/notes/7").header("Origin", APP).send(&api());
    assert_eq!(allowed.text(), "handled");
    assert_eq!(cors_headers(&allowed), pairs(&[("Access-Control-Allow-Origin", APP), ("Vary", "Origin")]));
    let other = TestRequest::get("/").header("Origin", "https://evil.example").send(&api());
    assert_eq!((other.text(), cors_headers(&other)), ("handled", pairs(&[("Vary", "Origin")])));
    let same_site = TestRequest::get("/").send(&api());
    assert_eq!((same_site.text(), cors_headers(&same_site)), ("handled", pairs(&[("Vary", "Origin")])));
}

#[test]
fn origins_compare_ignoring_ascii_case_and_the_request_s_is_echoed() {
    let api = cors(app(None)).allow_origin("https://App.Example");
    let resp = TestRequest::get("/").header("Origin", APP).send(&api);
    assert_eq!(resp.header("access-control-allow-origin"), Some(APP));
}

#[test]
fn vary_is_merged_into_the_handler_s() {
    let resp = TestRequest::get("/").header("Origin", APP).send(&cors(app(Some("Accept-Encoding"))).allow_origin(APP));
    assert_eq!(resp.header_all("vary").collect::<Vec<_>>(), ["Accept-Encoding, Origin"]);
    let resp = TestRequest::get("/").send(&cors(app(Some("origin"))));
    assert_eq!(resp.header_all("vary").collect::<Vec<_>>(), ["origin"]);
    let resp = TestRequest::get("/").send(&cors(app(Some("*"))));
    assert_eq!(resp.header_all("vary").collect::<Vec<_>>(), ["*"]);
}

#[test]
fn any_origin_is_a_star_without_credentials_and_echoed_with_them() {
    let open = cors(app(None)).allow_any_origin().allow_methods(["PUT"]);
    let resp = TestRequest::get("/").header("Origin", "https://anyone.example").send(&open);
    assert_eq!(cors_headers(&resp), pairs(&[("Access-Control-Allow-Origin", "*"), ("Vary", "Origin")]));
    let resp = preflight("https://anyone.example", "PUT", None).send(&open);
    assert_eq!(resp.header("access-control-allow-origin"), Some("*"));

    let credentialed = cors(app(None)).allow_any_origin().allow_methods(["PUT"]).allow_credentials(true);
    let resp = TestRequest::get("/").header("Origin", "https://anyone.example").send(&credentialed);
    assert_eq!(
        cors_headers(&resp),
        pairs(&[
            ("Access-Control-Allow-Origin", "https://anyone.example"),
            ("Access-Control-Allow-Credentials", "true"),
            ("Vary", "Origin"),
        ])
    );
    let resp = preflight("https://anyone.example", "PUT", None).send(&credentialed);
    assert_eq!(resp.header("access-control-allow-origin"), Some("https://anyone.example"));
    assert_eq!(resp.header("access-control-allow-credentials"), Some("true"));
    // A named origin wins over `*` (its answer is the same for every
    // client of that origin either way).
    let both = cors(app(None)).allow_any_origin().allow_origin(APP);
    let resp = TestRequest::get("/").header("Origin", APP).send(&both);
    assert_eq!(resp.header("access-control-allow-origin"), Some(APP));
}

#[test]
fn a_predicate_allows_origins() {
    let api = cors(app(None)).allow_origin_fn(|o| o.starts_with("http://localhost:"));
    let resp = TestRequest::get("/").header("Origin", "http://localhost:5173").send(&api);
    assert_eq!(resp.header("access-control-allow-origin"), Some("http://localhost:5173"));
    let resp = TestRequest::get("/").header("Origin", "http://localhost.evil.example").send(&api);
    assert_eq!(resp.header("access-control-allow-origin"), None);
}

#[test]
fn exposed_headers_go_on_answers_not_on_preflights() {
    let api = api().expose_headers(["ETag", "X-Request-Id"]);
    let resp = TestRequest::get("/").header("Origin", APP).send(&api);
    assert_eq!(resp.header("access-control-expose-headers"), Some("ETag, X-Request-Id"));
    assert_eq!(preflight(APP, "PUT", None).send(&api).header("access-control-expose-headers"), None);
    let other = TestRequest::get("/").header("Origin", "https://evil.example").send(&api);
    assert_eq!(other.header("access-control-expose-headers"), None);
}

#[test]
fn an_origin_that_could_not_be_echoed_is_not_allowed() {
    let api = cors(app(None)).allow_origin_fn(|_| true);
    let resp = TestRequest::get("/").header("Origin", "").send(&api);
    assert_eq!(resp.header("access-control-allow-origin"), None);
}

#[test]
fn settings_that_cannot_match_a_browser_panic_when_built() {
    let panics = |f: fn()| std::panic::catch_unwind(f).is_err();
    assert!(panics(|| drop(cors(app(None)).allow_origin("*"))));
    assert!(panics(|| drop(cors(app(None)).allow_origin("https://app.example/"))));
    assert!(panics(|| drop(cors(app(None)).allow_origin("https://app.example/api"))));
    assert!(panics(|| drop(cors(app(None)).allow_origin("app.example"))));
    assert!(panics(|| drop(cors(app(None)).allow_origin("https://"))));
    assert!(panics(|| drop(cors(app(None)).allow_methods(["GET PUT"]))));
    assert!(panics(|| drop(cors(app(None)).allow_headers(["x-a, x-b"]))));
    assert!(panics(|| drop(cors(app(None)).expose_headers([""]))));
    assert!(!panics(|| drop(cors(app(None)).allow_origin("null").allow_origin("http://[::1]:8080"))));
}

#[test]
fn debug_shows_the_settings() {
    let shown = format!("{:?}", api().allow_origin_fn(|_| true).max_age(Duration::from_secs(5)));
    assert_eq!(
        shown,
        "Cors { origins: [\"https://app.example\", \"<fn>\"], methods: [\"PUT\", \"DELETE\"], \
         headers: [\"content-type\", \"x-token\"], expose: [], credentials: false, max_age: Some(5), .. }"
    );
}
