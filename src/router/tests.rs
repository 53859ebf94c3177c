//! The router through the test client: what a client sends, what it gets.

use super::*;
use crate::test::{TestRequest, TestServer};

fn app() -> Router {
    Router::new()
        .get("/", |_req| Response::text("home\n"))
        .get("/notes/new", |_req| Response::text("form\n"))
        .get("/notes/{id}", |req| match req.param_as::<i64>("id") {
            Ok(id) => Response::text(format!("note {id}\n")),
            Err(e) => e.into_response(),
        })
        .delete("/notes/{id}", |req| Response::text(format!("deleted {}\n", req.param("id").unwrap())))
        .post("/notes", |_req| Response::status(201))
        .get("/files/{*path}", |req| Response::text(format!("file {}\n", req.param("path").unwrap())))
        .route("PURGE", "/cache", |_req| Response::status(204))
}

#[test]
fn a_pattern_routes_by_method_and_path_with_parameters() {
    let app = app();
    let text = |req: TestRequest| app_text(&app, req);
    assert_eq!(text(TestRequest::get("/")), (200, "home\n".into()));
    assert_eq!(text(TestRequest::get("/notes/42")), (200, "note 42\n".into()));
    assert_eq!(text(TestRequest::get("/notes/new")), (200, "form\n".into()), "a static segment wins");
    assert_eq!(text(TestRequest::delete("/notes/7")), (200, "deleted 7\n".into()));
    assert_eq!(text(TestRequest::post("/notes")), (201, String::new()));
    assert_eq!(text(TestRequest::get("/files/a/b%20c.txt")), (200, "file a/b c.txt\n".into()), "decoded");
    assert_eq!(text(TestRequest::method("PURGE", "/cache")).0, 204);
}

fn app_text(app: &Router, req: TestRequest) -> (u16, String) {
    let resp = req.send(app);
    (resp.status(), resp.text().to_owned())
}

#[test]
fn head_is_answered_by_the_get_route_without_a_body() {
    let resp = TestRequest::head("/notes/3").send(&app());
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.header("content-length"), Some("7"), "the GET answer's length");
    assert_eq!(resp.body(), b"");
}

#[test]
fn an_unknown_path_is_404_and_a_wrong_method_405_with_allow() {
    let app = app();
    let missing = TestRequest::get("/nowhere").send(&app);
    assert_eq!((missing.status(), missing.text()), (404, "Not Found\n"));
    let exact = TestRequest::get("/notes/").send(&app);
    assert_eq!(exact.status(), 404, "paths match exactly: no parameter is empty");
    let wrong = TestRequest::put("/notes/3").send(&app);
    assert_eq!(wrong.status(), 405);
    assert_eq!(wrong.header("allow"), Some("GET, HEAD, DELETE, OPTIONS"));
    let post_only = TestRequest::get("/notes").send(&app);
    assert_eq!((post_only.status(), post_only.header("allow")), (405, Some("POST, OPTIONS")));
}

#[test]
fn options_is_answered_with_allow_unless_routed() {
    let resp = TestRequest::method("OPTIONS", "/notes/3").send(&app());
    assert_eq!((resp.status(), resp.header("allow")), (204, Some("GET, HEAD, DELETE, OPTIONS")));
    let routed = Router::new().route("OPTIONS", "/", |_req| Response::text("mine"));
    assert_eq!(TestRequest::method("OPTIONS", "/").send(&routed).text(), "mine");
}

#[test]
fn a_parameter_that_does_not_parse_is_400_naming_it() {
    let resp = TestRequest::get("/notes/abc").send(&app());
    assert_eq!(resp.status(), 400);
    assert!(resp.text().contains("`id` is \"abc\""), "{}", resp.text());
    let bad_escape = TestRequest::get("/notes/%zz").send(&app());
    assert_eq!(bad_escape.status(), 400);
}

#[test]
fn parameters_are_only_those_of_the_route_that_matched() {
    let app = Router::new()
        .get("/a/{x}", |req| format!("{:?} {:?} {}", req.param("x"), req.param("y"), req.param_as::<u8>("y").is_err()));
    assert_eq!(TestRequest::get("/a/1").send(&app).text(), "Some(\"1\") None true");
    // A request no router saw has none.
    let plain = |req: &mut Request<'_>| format!("{:?}", req.param("x"));
    assert_eq!(TestRequest::get("/a/1").send(&plain).text(), "None");
}

#[test]
fn state_is_given_to_every_handler() {
    let app = Router::with_state(String::from("shared"))
        .get("/", |_req, s: &String| Response::text(format!("{s}\n")))
        .fallback(|_req, s| Response::text(format!("{s} fallback\n")).with_status(404));
    assert_eq!(TestRequest::get("/").send(&app).text(), "shared\n");
    assert_eq!(TestRequest::get("/x").send(&app).text(), "shared fallback\n");
    assert_eq!(app.state(), "shared");
}

#[test]
fn fallback_and_method_not_allowed_can_be_replaced_and_keep_allow() {
    let app = Router::new()
        .get("/", |_req| "home")
        .fallback(|_req| Response::text("{\"error\":\"not found\"}").with_status(404))
        .method_not_allowed(|req| Response::text(format!("no {}", req.method())).with_status(405));
    assert_eq!(TestRequest::get("/x").send(&app).text(), "{\"error\":\"not found\"}");
    let wrong = TestRequest::post("/").send(&app);
    assert_eq!((wrong.status(), wrong.text(), wrong.header("allow")), (405, "no POST", Some("GET, HEAD, OPTIONS")));
}

#[test]
fn a_mount_takes_every_method_at_and_below_its_prefix() {
    let inner = Router::new()
        .get("/api/v1/ping", |_req| "pong")
        .post("/api/v1/echo", |req| req.read_body_string(100).unwrap_or_default());
    let app = Router::new().get("/", |_req| "home").mount("/api/", inner);
    assert_eq!(TestRequest::get("/api/v1/ping").send(&app).text(), "pong");
    assert_eq!(TestRequest::post("/api/v1/echo").body("hi").send(&app).text(), "hi");
    assert_eq!(TestRequest::get("/api").send(&app).status(), 404, "the inner router's 404");
    assert_eq!(TestRequest::get("/").send(&app).text(), "home");
}

#[test]
fn a_router_runs_under_a_test_server_and_wrappers() {
    let server = TestServer::from_handler(app()).max_body_bytes(4);
    assert_eq!(server.send(TestRequest::post("/notes").body("too long")).status(), 413);
    assert_eq!(server.send(TestRequest::get("/notes/1")).text(), "note 1\n");
}

#[test]
#[should_panic(expected = "GET is routed twice")]
fn a_method_routed_twice_for_a_pattern_is_a_mistake_found_at_build() {
    let _ = Router::new().get("/a", |_req| "1").get("/a", |_req| "2");
}

#[test]
#[should_panic(expected = "route \"/a/{x}\"")]
fn conflicting_patterns_are_found_at_build() {
    let _ = Router::new().get("/a/{id}", |_req| "1").get("/a/{x}", |_req| "2");
}

#[test]
#[should_panic(expected = "more than 8 parameters")]
fn too_many_parameters_are_found_at_build() {
    let _ = Router::new().get("/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}", |_req| "");
}

#[test]
fn names_in_patterns() {
    let names = |p| names(p).collect::<Vec<_>>();
    assert_eq!(names("/a/{id}/b/{*rest}"), ["id", "rest"]);
    assert_eq!(names("/{{literal}}/{x}"), ["x"]);
    assert_eq!(names("/a}}/{x}/{{y}}"), ["x"]);
    assert!(names("/plain").is_empty());
}

/// matchit gives a match's parameters in the pattern's order, which is how
/// they are found by name.
#[test]
fn parameters_are_found_by_name_in_any_number() {
    let app = Router::new().get("/{a}/{b}/{c}/x/{*d}", |req| {
        ["a", "b", "c", "d"].map(|n| req.param(n).unwrap_or_default().into_owned()).join(",")
    });
    assert_eq!(TestRequest::get("/1/2/3/x/4/5").send(&app).text(), "1,2,3,4/5");
}

/// A target in absolute form (as a client sends to a proxy; a server must
/// accept it, RFC 9112 §3.2.2) is routed by its path.
#[test]
fn an_absolute_form_target_is_routed_by_its_path() {
    let resp = TestRequest::get("http://example.com/notes/5?x=1").send(&app());
    assert_eq!((resp.status(), resp.text()), (200, "note 5\n"));
    assert_eq!(TestRequest::get("http://example.com").send(&app()).text(), "home\n");
}

/// Found by review: each of these answered otherwise.
#[test]
fn review_findings_on_routes() {
    // A mount takes its prefix with its slash (a directory's index).
    let mounted = Router::new().mount("/static", |req: &mut Request<'_>| format!("mounted {}", req.path()));
    for path in ["/static", "/static/", "/static/a/b"] {
        assert_eq!(TestRequest::get(path).send(&mounted).text(), format!("mounted {path}"));
    }
    // A value that does not decode to UTF-8 is decoded, lossily.
    let files = Router::new().get("/files/{*path}", |req| req.param("path").unwrap().into_owned());
    assert_eq!(TestRequest::get("/files/a%20b%FF").send(&files).text(), "a b\u{FFFD}");
    // `OPTIONS *` is about the whole server.
    let resp = TestRequest::method("OPTIONS", "*").send(&app());
    assert_eq!((resp.status(), resp.header("allow")), (204, Some("GET, HEAD, OPTIONS, DELETE, POST, PURGE")));
    // A parameter the route does not have is the program's mistake: 500.
    let typo = Router::new().get("/notes/{id}", |req| req.param_as::<u64>("note_id").map(|n| n.to_string()));
    assert_eq!(TestRequest::get("/notes/7").send(&typo).status(), 500);
    // A 405 handler's own Allow is kept, not doubled.
    let own = Router::new()
        .get("/", |_req| "home")
        .method_not_allowed(|_req| Response::status(405).with_header("Allow", "GET"));
    let resp = TestRequest::post("/").send(&own);
    assert_eq!(resp.headers().iter().filter(|(n, _)| n.eq_ignore_ascii_case("allow")).count(), 1);
    assert_eq!(resp.header("allow"), Some("GET"));
}

/// A router inside another sees its own route's parameters only.
#[test]
fn a_nested_router_sees_its_own_parameters() {
    let inner = Router::new().get("/users/{id}/plain", |req| format!("{:?}", req.param("id")));
    let outer = Router::new().mount("/users", inner);
    assert_eq!(TestRequest::get("/users/7/plain").send(&outer).text(), "Some(\"7\")");
    let inner = Router::new().get("/a/b", |req| format!("{:?}", req.param("x")));
    let outer = Router::new().get("/{x}/b", move |req| inner.handle(req));
    assert_eq!(TestRequest::get("/a/b").send(&outer).text(), "None");
    // Its fallback too: no route of its own matched, so none of the outer
    // router's parameters are its own.
    let inner = Router::new().get("/a/b", |_req| "routed").fallback(|req| format!("{:?}", req.param("x")));
    let outer = Router::new().get("/{x}/c", move |req| inner.handle(req));
    assert_eq!(TestRequest::get("/a/c").send(&outer).text(), "None");
}

#[test]
#[should_panic(expected = "a pattern starts with /")]
fn a_pattern_without_a_leading_slash_is_found_at_build() {
    let _ = Router::new().get("notes", |_req| "");
}

#[test]
#[should_panic(expected = "a prefix has no parameters")]
fn a_mount_prefix_with_parameters_is_found_at_build() {
    let _ = Router::new().mount("/users/{id}", |_req: &mut Request<'_>| "");
}

#[test]
#[should_panic(expected = "is not a method")]
fn an_empty_method_is_found_at_build() {
    let _ = Router::new().route("", "/x", |_req| "");
}

/// A route goes first; a method it has no route for falls to a mount over
/// its path rather than getting a 405; the longest prefix wins.
#[test]
fn routes_go_before_mounts_and_mounts_take_the_other_methods() {
    let app = Router::new()
        .get("/api/health", |_req| "routed")
        .mount("/api", |req: &mut Request<'_>| format!("api {}", req.method()))
        .mount("/api/v2", |_req: &mut Request<'_>| "v2");
    assert_eq!(TestRequest::get("/api/health").send(&app).text(), "routed");
    assert_eq!(TestRequest::post("/api/health").send(&app).text(), "api POST");
    assert_eq!(TestRequest::get("/api/v2/x").send(&app).text(), "v2");
    assert_eq!(TestRequest::get("/api/v2x").send(&app).text(), "api GET", "a prefix covers whole segments");
    assert_eq!(TestRequest::get("/other").send(&app).status(), 404);
}

/// `OPTIONS *` lists the methods of the routes; a mount, which takes any
/// method, adds none. (Its empty list was joined in: a trailing `, `,
/// which made the answer a `500`, a leading `, `, or an empty `Allow`.)
#[test]
fn options_star_beside_a_mount_lists_the_routed_methods() {
    let mount = |_req: &mut Request<'_>| "mounted";
    let after = Router::new().get("/", |_req| "home").mount("/static", mount);
    let before = Router::new().mount("/static", mount).get("/", |_req| "home");
    for app in [after, before] {
        let resp = TestRequest::method("OPTIONS", "*").send(&app);
        assert_eq!((resp.status(), resp.header("allow")), (204, Some("GET, HEAD, OPTIONS")));
    }
    let resp = TestRequest::method("OPTIONS", "*").send(&Router::new().mount("/static", mount));
    assert_eq!((resp.status(), resp.header("allow")), (204, Some("OPTIONS")));
}

/// `Request::route` is the pattern that matched, the same `&'static str`
/// the router was given (or a mount's prefix), whatever path took it;
/// `None` where nothing matched. A route beside a mount at the same path
/// is a route of its own.
#[test]
fn the_route_is_the_pattern_that_matched() {
    let route = |req: &mut Request<'_>| req.route().unwrap_or("none").to_owned();
    let inner = Router::new().get("/api/items/{id}", route).fallback(route);
    let app = Router::new()
        .get("/", route)
        .get("/notes/{id}", route)
        .post("/notes/{id}/{*rest}", route)
        .get("/static", route)
        .mount("/static", route)
        .mount("/api", inner)
        .fallback(route);
    for (req, want) in [
        (TestRequest::get("/"), "/"),
        (TestRequest::get("/notes/12?x=1"), "/notes/{id}"),
        (TestRequest::post("/notes/12/a/b"), "/notes/{id}/{*rest}"),
        (TestRequest::get("/static"), "/static"),
        (TestRequest::get("/static/app.css"), "/static"),
        (TestRequest::get("/api/items/3"), "/api/items/{id}"),
        (TestRequest::get("/api/elsewhere"), "none"),
        (TestRequest::get("/nothing"), "none"),
    ] {
        assert_eq!(req.send(&app).text(), want);
    }
    let resp = TestRequest::delete("/notes/1").send(&Router::new().get("/notes/{id}", route).method_not_allowed(route));
    assert_eq!(resp.text(), "/notes/{id}");
    let mounted_at_root = Router::new().mount("/", route);
    assert_eq!(TestRequest::get("/x").send(&mounted_at_root).text(), "/");
}
