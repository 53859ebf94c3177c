//! Testing handlers without sockets.
//!
//! A [`TestRequest`] is written out as the bytes a client would send and
//! run through the server's real connection loop over an in-memory
//! connection; the bytes the server writes back are parsed into a
//! [`TestResponse`]. So what a test sees is what a client would: framing
//! (`Content-Length` or `chunked`), no body for `HEAD`, the server's own
//! answers (`413` past the body limit, `500` for a handler that panics,
//! `400` for a malformed request) and whether the connection stays open.
//!
//! ```
//! use httpool::test::TestRequest;
//! use httpool::{Request, Response};
//!
//! fn greet(req: &mut Request) -> Result<Response, httpool::Error> {
//!     let name = req.read_body_string(64)?;
//!     Ok(Response::text(format!("Hello, {name}!\n")))
//! }
//!
//! let resp = TestRequest::post("/greet").body("world").send(&greet);
//! assert_eq!(resp.status(), 200);
//! assert_eq!(resp.header("content-type"), Some("text/plain; charset=utf-8"));
//! assert_eq!(resp.text(), "Hello, world!\n");
//!
//! // The handler's own limit (64 bytes) answers 413, and so would the
//! // server's `max_body_bytes`.
//! let resp = TestRequest::post("/greet").body(vec![b'x'; 100]).send(&greet);
//! assert_eq!(resp.status(), 413);
//! ```
//!
//! A [`TestServer`] holds a handler and the server's limits, set as on
//! [`Server`](crate::Server) or taken from one
//! ([`TestServer::config_of`]), and serves each request it is sent on a
//! connection of its own (or several on one with
//! [`TestServer::send_pipelined`]):
//!
//! ```
//! use httpool::test::{TestRequest, TestServer};
//! use httpool::Response;
//!
//! let server = TestServer::new(|req| Response::text(req.method())).max_body_bytes(4);
//! assert_eq!(server.send(TestRequest::put("/")).text(), "PUT");
//! assert_eq!(server.send(TestRequest::put("/").body("too long")).status(), 413);
//! ```
//!
//! The module is always compiled (no feature): it has no dependencies, and
//! a feature enabled for tests in `[dev-dependencies]` would be enabled in
//! the normal build as well.

mod answer;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::OnceLock;

use crate::config::Config;
use crate::handler::{Handler, IntoResponse};
use crate::http1::Driver;
use crate::io::Script;
use crate::net::Peer;
use crate::proto::Version;
use crate::request::Request;

pub use answer::TestResponse;

/// A request to send to a handler in memory.
///
/// `Host` is added unless set; `Content-Length` is added for a body (and
/// for `POST`, `PUT` and `PATCH` without one) unless `Content-Length` or
/// `Transfer-Encoding` is set, in which case the body is sent as given.
#[derive(Clone, Debug)]
pub struct TestRequest {
    method: String,
    target: String,
    version: Version,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    chunked: bool,
    peer: SocketAddr,
}

impl TestRequest {
    /// A request with this method (any token, sent as given) and target
    /// (e.g. `"/search?q=x"`).
    pub fn method(method: &str, target: &str) -> TestRequest {
        TestRequest {
            method: method.to_owned(),
            target: target.to_owned(),
            version: Version::Http11,
            headers: Vec::new(),
            body: Vec::new(),
            chunked: false,
            peer: SocketAddr::from((Ipv4Addr::LOCALHOST, 40000)),
        }
    }

    /// A `GET` request.
    pub fn get(target: &str) -> TestRequest {
        TestRequest::method("GET", target)
    }

    /// A `HEAD` request.
    pub fn head(target: &str) -> TestRequest {
        TestRequest::method("HEAD", target)
    }

    /// A `POST` request.
    pub fn post(target: &str) -> TestRequest {
        TestRequest::method("POST", target)
    }

    /// A `PUT` request.
    pub fn put(target: &str) -> TestRequest {
        TestRequest::method("PUT", target)
    }

    /// A `DELETE` request.
    pub fn delete(target: &str) -> TestRequest {
        TestRequest::method("DELETE", target)
    }

    /// Adds a header, sent as given (so an invalid one tests the server's
    /// `400`).
    pub fn header(mut self, name: &str, value: &str) -> TestRequest {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> TestRequest {
        self.body = body.into();
        self
    }

    /// Sends the body `chunked` (one chunk, then the last), with
    /// `Transfer-Encoding: chunked`.
    pub fn chunked(mut self) -> TestRequest {
        self.chunked = true;
        self
    }

    /// Sets the protocol version (default: HTTP/1.1).
    pub fn version(mut self, version: Version) -> TestRequest {
        self.version = version;
        self
    }

    /// Sets the client's address, which
    /// [`Request::peer_addr`](crate::Request::peer_addr) returns (default:
    /// `127.0.0.1:40000`).
    pub fn peer(mut self, addr: SocketAddr) -> TestRequest {
        self.peer = addr;
        self
    }

    /// Sends the request to `handler` — a function, a [`Router`](crate::Router),
    /// a wrapped handler, any [`Handler`] — on a connection of its own, with
    /// the server's default limits. For limits of your own, use a
    /// [`TestServer`].
    ///
    /// A closure written in place needs its argument's type
    /// (`&|req: &mut Request| ...`): Rust infers it only where the closure
    /// is passed as a closure, as to [`Server::serve`](crate::Server::serve)
    /// or [`TestServer::new`].
    ///
    /// # Panics
    ///
    /// When the server's answer is not HTTP/1.1 (a bug in httpool), or
    /// when it answered nothing because it waits for the rest of the
    /// request (a `Content-Length` larger than the body).
    pub fn send<H: Handler + ?Sized>(self, handler: &H) -> TestResponse {
        static DEFAULTS: OnceLock<Config> = OnceLock::new();
        exchange(handler, DEFAULTS.get_or_init(Config::default), vec![self]).remove(0)
    }

    fn is_head(&self) -> bool {
        self.method == "HEAD"
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// The request as a client sends it: the head, then the body. The body
    /// is empty when it goes out with the head.
    fn to_wire(&self) -> (Vec<u8>, Vec<u8>) {
        let mut head = format!("{} {} {}\r\n", self.method, self.target, self.version.as_str()).into_bytes();
        let mut add = |name: &str, value: &str| head.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        if !self.has_header("host") {
            add("Host", "localhost");
        }
        for (name, value) in &self.headers {
            add(name, value);
        }
        let framed_by_caller = self.has_header("content-length") || self.has_header("transfer-encoding");
        let mut body = self.body.clone();
        if !framed_by_caller && self.chunked {
            add("Transfer-Encoding", "chunked");
            body = chunk(&self.body);
        } else if !framed_by_caller && (!body.is_empty() || matches!(&*self.method, "POST" | "PUT" | "PATCH")) {
            add("Content-Length", &body.len().to_string());
        }
        head.extend_from_slice(b"\r\n");
        // A client that asked for `100 Continue` holds the body back until
        // it comes (or until the answer does).
        let waits = self
            .headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("expect") && v.eq_ignore_ascii_case("100-continue"));
        if !waits {
            head.append(&mut body);
        }
        (head, body)
    }
}

/// `body` as one chunk and the last chunk.
fn chunk(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if !body.is_empty() {
        out.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// A handler and the limits of the server it runs in, answering requests in
/// memory: each [`send`](TestServer::send) is a new connection through the
/// real connection loop.
///
/// The limits that apply to a request and its body can be set, as on
/// [`Server`](crate::Server); timeouts do not apply (a body shorter than
/// its `Content-Length` times out at once, with `408`).
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use httpool::test::{TestRequest, TestServer};
/// use httpool::Response;
///
/// let hits = Arc::new(AtomicU64::new(0));
/// let counted = hits.clone();
/// let server = TestServer::new(move |_req| {
///     Response::text(format!("{}\n", counted.fetch_add(1, Ordering::Relaxed) + 1))
/// });
/// assert_eq!(server.send(TestRequest::get("/")).text(), "1\n");
/// assert_eq!(server.send(TestRequest::get("/")).text(), "2\n");
/// assert_eq!(hits.load(Ordering::Relaxed), 2);
/// ```
pub struct TestServer<H> {
    handler: H,
    config: Config,
}

impl<F> TestServer<F> {
    /// A test server for a closure or a function (as
    /// [`Server::serve`](crate::Server::serve) takes), with the default
    /// limits.
    pub fn new<R>(handler: F) -> TestServer<F>
    where
        F: Fn(&mut Request<'_>) -> R + Send + Sync + 'static,
        R: IntoResponse,
    {
        TestServer { handler, config: Config::default() }
    }
}

impl<H: Handler> TestServer<H> {
    /// A test server for a type implementing [`Handler`] (as
    /// [`Server::serve_handler`](crate::Server::serve_handler) takes).
    pub fn from_handler(handler: H) -> TestServer<H> {
        TestServer { handler, config: Config::default() }
    }

    /// The handler.
    pub fn handler(&self) -> &H {
        &self.handler
    }

    /// Sends `req` on a new connection and returns the answer.
    ///
    /// # Panics
    ///
    /// As [`TestRequest::send`].
    pub fn send(&self, req: TestRequest) -> TestResponse {
        exchange(&self.handler, &self.config, vec![req]).remove(0)
    }

    /// Sends `requests` on one connection, all at once (pipelined), and
    /// returns the answers the server gave before it closed the connection
    /// or ran out of requests: fewer than the requests when an answer
    /// closed it. The connection's peer address is the first request's.
    ///
    /// ```
    /// use httpool::test::{TestRequest, TestServer};
    /// use httpool::Response;
    ///
    /// let server = TestServer::new(|req| match req.path() {
    ///     "/bye" => Response::text("bye\n").with_close(),
    ///     _ => Response::text("hi\n"),
    /// });
    /// let requests = ["/", "/bye", "/"].map(TestRequest::get);
    /// let answers = server.send_pipelined(requests);
    /// assert_eq!(answers.len(), 2);
    /// assert!(answers[0].is_kept_alive());
    /// assert!(!answers[1].is_kept_alive());
    /// ```
    ///
    /// # Panics
    ///
    /// As [`TestRequest::send`], for the first request.
    pub fn send_pipelined(&self, requests: impl IntoIterator<Item = TestRequest>) -> Vec<TestResponse> {
        exchange(&self.handler, &self.config, requests.into_iter().collect())
    }

    /// Serves under the whole configuration of `server` — its limits, body
    /// buffering and everything else a request meets on the way to the
    /// handler — so that a test sees what that server would answer. The
    /// server is not started; timeouts still do not apply.
    ///
    /// ```
    /// use httpool::test::{TestRequest, TestServer};
    /// use httpool::{Response, Server};
    ///
    /// let server = Server::bind("127.0.0.1:0")?.max_body_bytes(4).max_headers(8);
    /// let test = TestServer::new(|_req| Response::text("ok")).config_of(&server);
    /// assert_eq!(test.send(TestRequest::post("/").body("too long")).status(), 413);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn config_of(mut self, server: &crate::Server) -> TestServer<H> {
        self.config = server.config().clone();
        self
    }

    /// Largest request head; as [`Server::max_head_bytes`](crate::Server::max_head_bytes).
    pub fn max_head_bytes(mut self, n: usize) -> TestServer<H> {
        self.config.set_max_head_bytes(n);
        self
    }

    /// Most request headers; as [`Server::max_headers`](crate::Server::max_headers).
    pub fn max_headers(mut self, n: usize) -> TestServer<H> {
        self.config.set_max_headers(n);
        self
    }

    /// Longest request target; as [`Server::max_uri_bytes`](crate::Server::max_uri_bytes).
    pub fn max_uri_bytes(mut self, n: usize) -> TestServer<H> {
        self.config.set_max_uri_bytes(n);
        self
    }

    /// Largest request body; as [`Server::max_body_bytes`](crate::Server::max_body_bytes).
    pub fn max_body_bytes(mut self, n: u64) -> TestServer<H> {
        self.config.limits.max_body_bytes = n;
        self
    }

    /// Most unread body bytes discarded to keep the connection; as
    /// [`Server::max_drain_bytes`](crate::Server::max_drain_bytes).
    pub fn max_drain_bytes(mut self, n: u64) -> TestServer<H> {
        self.config.max_drain_bytes = n;
        self
    }

    /// Accept any method token; as [`Server::any_method`](crate::Server::any_method).
    pub fn any_method(mut self, allow: bool) -> TestServer<H> {
        self.config.limits.any_method = allow;
        self
    }

    /// Read Icecast and RTSP request lines as HTTP/1.0; as
    /// [`Server::legacy_protocols`](crate::Server::legacy_protocols).
    pub fn legacy_protocols(mut self, allow: bool) -> TestServer<H> {
        self.config.limits.legacy_protocols = allow;
        self
    }

    /// Believe the forwarding headers of these peers; as
    /// [`Server::trusted_proxies`](crate::Server::trusted_proxies) (a
    /// request's peer is [`TestRequest::peer`]).
    ///
    /// # Panics
    ///
    /// As [`Server::trusted_proxies`](crate::Server::trusted_proxies).
    pub fn trusted_proxies<S: AsRef<str>>(mut self, proxies: impl IntoIterator<Item = S>) -> TestServer<H> {
        self.config.set_trusted_proxies(proxies);
        self
    }
}

impl<H> std::fmt::Debug for TestServer<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer").field("limits", &self.config.limits).finish_non_exhaustive()
    }
}

/// Sends `requests` on one in-memory connection and parses the answers.
fn exchange<H: Handler + ?Sized>(handler: &H, config: &Config, requests: Vec<TestRequest>) -> Vec<TestResponse> {
    let Some(first) = requests.first() else { return Vec::new() };
    let peer = Peer::Ip(first.peer);
    // What the client sends before it waits for the server: a body held
    // back for `100 Continue` starts a new chunk, and what follows it
    // goes out with it.
    let (mut chunks, mut sending) = (Vec::new(), Vec::new());
    for req in &requests {
        let (head, body) = req.to_wire();
        sending.extend_from_slice(&head);
        if !body.is_empty() {
            chunks.push(std::mem::replace(&mut sending, body));
        }
    }
    chunks.push(sending);
    let mut io = Script { chunks: chunks.into(), patient: true, ..Script::default() };
    let mut driver = Driver::with_config(handler, config.clone());
    driver.peer = peer;
    let end = driver.run(&mut io, None);
    let heads: Vec<bool> = requests.iter().map(TestRequest::is_head).collect();
    let answers = answer::parse_all(&io.written, &heads, end.closed, end.streaming);
    if answers.is_empty() && end.awaits_request {
        panic!("httpool test: no answer: the server waits for the rest of the request (is Content-Length right?)");
    }
    answers
}

#[cfg(test)]
mod tests;
