//! Client-driven recursion: a JSON body nested as deep as the parser
//! allows, into an application type that recurses with many fields per
//! level, must be answered (a value, or `400` past the nesting limit) on a
//! worker with the default stack and on one with the least stack; a stack
//! overflow would abort this test binary. Run in debug by `cargo test` and
//! in release by `.ci/run` (frames differ in size between the two).
#![cfg(all(feature = "json", feature = "forms"))]

mod common;

use std::io::Write;

use common::{connect, read_reply, send};
use httpool::{DEFAULT_WORKER_STACK_SIZE, MIN_WORKER_STACK_SIZE, Request, Response, Server, ServerHandle};

/// A recursive type with `$n` optional strings per level beside its child:
/// each level of the derived deserialiser holds all of them in its frame.
macro_rules! node {
    ($name:ident; $($field:ident)*) => {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)] // Only the shape matters.
        struct $name {
            child: Option<Box<$name>>,
            $(#[serde(default)] $field: Option<String>,)*
        }

        impl $name {
            fn depth(&self) -> usize {
                1 + self.child.as_ref().map_or(0, |c| c.depth())
            }
        }
    };
}

node!(Narrow; f0 f1 f2 f3 f4);
node!(Wide; f0 f1 f2 f3 f4 f5 f6 f7 f8 f9 f10 f11 f12 f13 f14 f15 f16 f17 f18 f19 f20 f21 f22 f23 f24 f25 f26 f27 f28 f29 f30 f31 f32 f33 f34 f35 f36 f37 f38 f39 f40 f41 f42 f43 f44 f45 f46 f47 f48 f49 f50 f51 f52 f53 f54 f55 f56 f57 f58 f59 f60 f61 f62 f63 f64 f65 f66 f67 f68 f69 f70 f71 f72 f73 f74 f75 f76 f77 f78 f79 f80 f81 f82 f83 f84 f85 f86 f87 f88 f89 f90 f91 f92 f93 f94 f95 f96 f97 f98 f99 f100 f101 f102 f103 f104 f105 f106 f107 f108 f109 f110 f111 f112 f113 f114 f115 f116 f117 f118 f119 f120 f121 f122 f123 f124 f125 f126 f127 );

/// `{"child":` `levels` times, then `{}` and the closing braces.
fn nested(levels: usize) -> String {
    format!("{}{{}}{}", r#"{"child":"#.repeat(levels - 1), "}".repeat(levels - 1))
}

fn server(stack: usize) -> ServerHandle {
    Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(2)
        .worker_stack_size(stack)
        .spawn(|req: &mut Request| {
            let depth = match req.path() {
                "/narrow" => req.json::<Narrow>().map(|n| n.depth()),
                "/query" => req.query_as::<Wide>().map(|n| n.depth()),
                "/form" => req.form_as::<Wide>().map(|n| n.depth()),
                _ => req.json::<Wide>().map(|n| n.depth()),
            };
            match depth {
                Ok(depth) => Response::text(depth.to_string()),
                Err(e) => Response::status(e.status()).with_body(e.to_string()),
            }
        })
        .unwrap()
}

/// Posts `body` as JSON to `path`: the status and the body answered.
fn post(server: &ServerHandle, path: &str, body: &str) -> (u16, String) {
    post_as(server, path, "application/json", body)
}

/// Posts `body` of type `content_type` to `path`: the status and the body
/// answered.
fn post_as(server: &ServerHandle, path: &str, content_type: &str, body: &str) -> (u16, String) {
    let mut conn = connect(server.local_addr());
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    send(&mut conn, head.as_bytes());
    conn.get_mut().write_all(body.as_bytes()).unwrap();
    let reply = read_reply(&mut conn, false).expect("an answer: the server is up");
    (reply.status, String::from_utf8(reply.body).unwrap())
}

/// serde_json reads at most 127 nested arrays and objects, whatever the type.
const DEEPEST: usize = 127;

fn deepest_nesting_is_read_and_one_more_is_refused(stack: usize) {
    let server = server(stack);
    for path in ["/narrow", "/wide"] {
        assert_eq!(post(&server, path, &nested(DEEPEST)), (200, DEEPEST.to_string()), "{path}");
        let (status, body) = post(&server, path, &nested(DEEPEST + 1));
        assert_eq!(status, 400, "{path}: {body}");
        assert!(body.contains("recursion limit exceeded"), "{path}: {body}");
        // The same worker serves on.
        assert_eq!(post(&server, path, &nested(3)), (200, "3".into()), "{path}");
    }
    server.shutdown();
}

#[test]
fn deep_json_into_a_wide_recursive_type_at_the_default_stack() {
    deepest_nesting_is_read_and_one_more_is_refused(DEFAULT_WORKER_STACK_SIZE);
}

#[test]
fn deep_json_into_a_wide_recursive_type_at_the_least_stack() {
    deepest_nesting_is_read_and_one_more_is_refused(MIN_WORKER_STACK_SIZE);
}

/// Forms and query strings are flat (`name=value` pairs; no bracketed
/// nesting): a recursive type reads one level, and a value offered for the
/// child is refused `400`, however the client spells it.
fn forms_and_queries_read_one_level(stack: usize) {
    let server = server(stack);
    for pairs in ["f0=a&f127=b", "f0=a&child=x", "child[child][child]=x", "child.child=x&child=y"] {
        let (query, _) = post_as(&server, &format!("/query?{pairs}"), "text/plain", "");
        let (form, _) = post_as(&server, "/form", "application/x-www-form-urlencoded", pairs);
        assert_eq!((query, form), if pairs.contains("child=") { (400, 400) } else { (200, 200) }, "{pairs}");
    }
    let deep = "child=".repeat(5_000);
    assert_eq!(post_as(&server, "/form", "application/x-www-form-urlencoded", &deep).0, 400);
    assert_eq!(post_as(&server, "/form", "application/x-www-form-urlencoded", "f1=z").1, "1");
    server.shutdown();
}

#[test]
fn forms_and_queries_into_a_recursive_type_at_the_default_stack() {
    forms_and_queries_read_one_level(DEFAULT_WORKER_STACK_SIZE);
}

#[test]
fn forms_and_queries_into_a_recursive_type_at_the_least_stack() {
    forms_and_queries_read_one_level(MIN_WORKER_STACK_SIZE);
}
