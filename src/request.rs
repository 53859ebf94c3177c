//! The request a handler sees: a view into the connection's buffer.

use std::io::{self, Read};
use std::net::SocketAddr;

use crate::net::Peer;
use crate::proto::{Version, is_scheme};

use crate::body::{Body, BodyError};
use crate::error::Error;
use crate::headers::{HeaderIter, Headers};
use crate::parse::{Head, HeaderSpan};
use crate::proxy::TrustedProxies;

mod fitness;
mod forwarded;
mod id;
#[cfg(feature = "router")]
mod params;
pub(crate) use fitness::{Unfit, fitness};
#[cfg(feature = "router")]
pub(crate) use id::{MADE_LEN, RequestIdText};
#[cfg(feature = "router")]
pub use params::MAX_PARAMS;
pub(crate) use params::{RouteParams, names};

/// Most bytes `read_body` reserves ahead on a `Content-Length`'s word.
const PREALLOCATE_MAX: u64 = 1 << 20;

/// Where the path ends: at the `?` that starts the query or the `#` that
/// starts a fragment, whichever comes first. A fragment is no part of a
/// request target (RFC 9112 §3.2), but a client may send one; it is
/// neither path nor query, as the `http` crate and URL parsers read it.
///
/// Eight bytes at a time: byte by byte, looking for two bytes cost 28 more
/// instructions per request than looking for `?` alone (callgrind,
/// pipelined); not `split_once`, whose char searcher is inlined on the
/// hot path only while few callers in the crate share it.
fn path_end(target: &str) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // The high bit of each byte of `x` that is zero, and maybe of bytes
    // above one that is (a borrow): the lowest one set is exact.
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let bytes = target.as_bytes();
    let mut at = 0;
    while let Some(word) = bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let word = u64::from_le_bytes(*word);
        let found = zero_bytes(word ^ (ONES * u64::from(b'?'))) | zero_bytes(word ^ (ONES * u64::from(b'#')));
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    bytes[at..].iter().position(|&b| b == b'?' || b == b'#').map(|i| at + i)
}

/// The path of a target (before its query) that does not start with `/`:
/// of an absolute-form one (`scheme://authority/path`), the path after the
/// authority (`/` when empty); any other (`*`, an authority) as it is.
#[cold]
fn absolute_path(target: &str) -> &str {
    let Some(colon) = target.find("://") else { return target };
    if !is_scheme(&target.as_bytes()[..colon]) {
        return target;
    }
    match target[colon + 3..].find('/') {
        Some(at) => &target[colon + 3 + at..],
        None => "/",
    }
}

/// The method at `(start, len)` of the head as text: the common ones as
/// they are written, without the check `text` makes.
#[inline(always)]
fn method_text(head: &[u8], (start, len): (u32, u32)) -> &str {
    // Told apart by their first four bytes as one word and their length
    // (a match on the slice compared them a byte or two at a time).
    let bytes = &head[start as usize..(start + len) as usize];
    if let Some(word) = head.get(start as usize..).and_then(<[u8]>::first_chunk::<4>) {
        match (u32::from_le_bytes(*word), len) {
            (w, 3) if w & 0x00ff_ffff == u32::from_le_bytes(*b"GET\0") => return "GET",
            (w, 4) if w == u32::from_le_bytes(*b"HEAD") => return "HEAD",
            (w, 4) if w == u32::from_le_bytes(*b"POST") => return "POST",
            (w, 3) if w & 0x00ff_ffff == u32::from_le_bytes(*b"PUT\0") => return "PUT",
            _ => {}
        }
    }
    // (A method is followed by at least a space and a target, so the
    // word is always there.)
    match bytes {
        b"DELETE" => "DELETE",
        b"PATCH" => "PATCH",
        b"OPTIONS" => "OPTIONS",
        _ => text(head, (start, len)),
    }
}

/// The bytes at `(start, len)` of the head as text: a method is a token
/// and a target visible ASCII (`parse::finish_head` refuses any other), so
/// the UTF-8 fallback is for safety, not for use.
#[allow(unsafe_code)]
fn text(head: &[u8], (start, len): (u32, u32)) -> &str {
    let bytes = &head[start as usize..(start + len) as usize];
    if bytes.is_ascii() {
        // SAFETY: ASCII is UTF-8, as checked on the line above. (Of a
        // 10-byte target, `from_utf8` costs 113 instructions under
        // callgrind, this check and the cast 20.)
        return unsafe { std::str::from_utf8_unchecked(bytes) };
    }
    std::str::from_utf8(bytes).unwrap_or("")
}

/// The method and path of the request whose head is `head` (its bytes) as
/// `parsed` describes it: what [`Request::method`] and [`Request::path`]
/// return, without building the request (the route a call is on, asked
/// before the call).
pub(crate) fn route<'a>(head: &'a [u8], parsed: &Head) -> (&'a str, &'a str) {
    let target = text(head, parsed.target);
    (method_text(head, parsed.method), path_of(&target[..path_end(target).unwrap_or(target.len())]))
}

/// The path a target's part before its query stands for: itself when it
/// starts with `/`, else see [`absolute_path`].
#[inline]
fn path_of(before_query: &str) -> &str {
    if before_query.starts_with('/') { before_query } else { absolute_path(before_query) }
}

/// An HTTP request, borrowed from the connection that received it.
///
/// The head (method, target, headers) is a view into the connection's read
/// buffer: building a `Request` allocates nothing. The body is read through
/// [`Read`] (on the request itself or [`Request::body`]).
pub struct Request<'a> {
    parsed: Head,
    /// The method and the target, read once (handlers and the router ask
    /// for them again and again).
    method: &'a str,
    target: &'a str,
    /// Where the path ends in the target (at `?` or `#`, or its end). Targets are
    /// shorter than the head, whose offsets fit in `u32`.
    path_end: u32,
    headers: Headers<'a>,
    peer: Peer,
    tls: bool,
    body: Body<'a>,
    /// Whose forwarding headers are believed (`Server::trusted_proxies`).
    proxies: &'a TrustedProxies,
    /// The request id, once `request_id` has given one.
    pub(crate) request_id: Option<RequestIdText<'a>>,
    /// The parameters of the route that matched (set by the router).
    #[cfg(feature = "router")]
    pub(crate) params: Option<RouteParams>,
    /// The pattern of the route that matched (set by the router).
    #[cfg(feature = "router")]
    pub(crate) route: Option<&'static str>,
}

impl<'a> Request<'a> {
    #[inline]
    pub(crate) fn new(
        head: &'a [u8],
        parsed: Head,
        spans: &'a [HeaderSpan],
        peer: Peer,
        tls: bool,
        body: Body<'a>,
        proxies: &'a TrustedProxies,
    ) -> Request<'a> {
        let (method, target) = (method_text(head, parsed.method), text(head, parsed.target));
        Request {
            parsed,
            method,
            target,
            path_end: path_end(target).unwrap_or(target.len()) as u32,
            headers: Headers::new(head, spans),
            peer,
            tls,
            body,
            proxies,
            request_id: None,
            #[cfg(feature = "router")]
            params: None,
            #[cfg(feature = "router")]
            route: None,
        }
    }

    /// The request method, e.g. `"GET"`. Any token is accepted (RFC 9110
    /// §9.1 lets servers define methods); compare case-sensitively.
    #[inline]
    pub fn method(&self) -> &str {
        self.method
    }

    /// The request target exactly as sent, e.g. `"/search?q=x"`.
    #[inline]
    pub fn target(&self) -> &str {
        self.target
    }

    /// The path part of the target (before `?`, and before a `#` a client
    /// sent a fragment with), still percent-encoded. Of a target in
    /// absolute form (`http://example.com/a?b`, which clients send to
    /// proxies and a server must accept, RFC 9112 §3.2.2), the path after
    /// the authority: `/a` (`/` when it is empty).
    #[inline]
    pub fn path(&self) -> &str {
        // `?`, `#`, `/` and `:` are ASCII: each side of them is a char boundary.
        path_of(&self.target[..self.path_end as usize])
    }

    /// The query part of the target (after `?`, up to a `#` a client sent
    /// a fragment with), if any.
    #[inline]
    pub fn query(&self) -> Option<&str> {
        let end = self.path_end as usize;
        if self.target.as_bytes().get(end) != Some(&b'?') {
            return None;
        }
        // `?` and `#` are ASCII: each side of them is a char boundary.
        let query = &self.target[end + 1..];
        Some(&query[..query.bytes().position(|b| b == b'#').unwrap_or(query.len())])
    }

    /// The host the request is for, with its port if one was given
    /// (`example.com:8080`): the authority of a target in absolute form
    /// (`http://example.com/a`: `example.com`; a server must take it over
    /// the `Host` header, RFC 9112 §3.2.2) or in authority form (`CONNECT
    /// example.com:443`), else the `Host` header. `None` without either (an
    /// HTTP/1.0 request may have none). Either way it passed the `Host`
    /// grammar check (RFC 9110 §7.2), or the request was refused.
    pub fn host(&self) -> Option<&str> {
        match self.target.as_bytes().first() {
            Some(b'/') | None => self.header("host"),
            _ if self.method == "CONNECT" => Some(self.target),
            _ => match self.target.split_once("://") {
                Some((_, rest)) => {
                    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
                    Some(authority.rsplit_once('@').map_or(authority, |(_, host)| host))
                }
                // `*`, for `OPTIONS` and the like.
                None => self.header("host"),
            },
        }
    }

    /// The protocol version.
    pub fn version(&self) -> Version {
        self.parsed.version
    }

    /// True when the request may be answered with a switch to `protocol`
    /// ([`Response::upgrade`](crate::Response::upgrade) with `Upgrade:
    /// protocol`): it is HTTP/1.1, not `HEAD`, has `upgrade` among its
    /// `Connection` options, and its `Upgrade` field lists `protocol`
    /// (compared without regard to case) among the protocols it offers
    /// (RFC 9110 §7.8). A `101` to any other request is not sent: the
    /// client gets `426 Upgrade Required` naming the protocol (`400` for
    /// a `HEAD`), or `500` when the request offered other protocols only.
    /// A protocol may ask more of the request (WebSocket: `GET`, a version
    /// and a key); a body the handler leaves unread must still be read
    /// before the switch (see
    /// [`Response::upgrade`](crate::Response::upgrade)).
    ///
    /// ```
    /// use httpool::test::TestRequest;
    /// use httpool::{Request, Response};
    ///
    /// fn handler(req: &mut Request) -> Response {
    ///     if !req.is_upgrade_to("echo") {
    ///         let required = Response::status(426).with_header("Upgrade", "echo");
    ///         return required.with_header("Connection", "upgrade");
    ///     }
    ///     Response::upgrade(|_conn| {}).with_header("Upgrade", "echo")
    /// }
    ///
    /// let asked = TestRequest::get("/").header("Connection", "upgrade").header("Upgrade", "ECHO");
    /// assert_eq!(asked.send(&handler).status(), 101);
    /// let not_for_this_hop = TestRequest::get("/").header("Upgrade", "echo");
    /// assert_eq!(not_for_this_hop.send(&handler).status(), 426);
    /// ```
    pub fn is_upgrade_to(&self, protocol: &str) -> bool {
        fitness(self, protocol.as_bytes()).is_ok()
    }

    /// `upgrade` is among the `Connection` options.
    pub(crate) fn has_upgrade_option(&self) -> bool {
        self.parsed.upgrade
    }

    /// The first value of the header `name` (case-insensitive), if present
    /// and valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)
    }

    /// Every value of the header `name` (case-insensitive), in order, as raw
    /// bytes.
    pub fn header_all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s [u8]> + 's {
        self.headers.all(name)
    }

    /// Every value of the header `name`, borrowed for as long as the
    /// request's head.
    pub(crate) fn header_values<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'a [u8]> + 's {
        self.headers.all(name)
    }

    /// The media type of `Content-Type`, parameters dropped
    /// (`application/json; charset=utf-8` → `application/json`).
    pub(crate) fn media_type(&self) -> Option<&str> {
        let value = self.header("content-type")?;
        Some(value.split_once(';').map_or(value, |(media, _)| media).trim())
    }

    /// All headers in the order received, as `(name, value)`.
    pub fn headers(&self) -> HeaderIter<'_> {
        self.headers.iter()
    }

    /// The address of the connection's peer; `None` on a Unix domain
    /// socket. Behind a proxy that is the proxy:
    /// [`Request::client_addr`] reads what a trusted one forwards.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer.ip()
    }

    /// The proxies whose forwarding headers are believed.
    pub(crate) fn proxies(&self) -> &'a TrustedProxies {
        self.proxies
    }

    /// True when the request came over TLS (a server with
    /// [`Server::tls`](crate::Server)): its scheme is `https`. Behind a
    /// proxy that ends TLS this is false; [`Request::client_scheme`] reads
    /// what a trusted proxy forwards.
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// The request body, with `chunked` framing removed. A registered coding
    /// applied before `chunked` (`Transfer-Encoding: gzip, chunked`) is
    /// left in place: check `Transfer-Encoding` and decode it, or answer
    /// `501` (unregistered codings get `501` before the handler runs).
    pub fn body(&mut self) -> &mut Body<'a> {
        &mut self.body
    }

    /// Reads the whole body into a `Vec`, refusing bodies over `limit` bytes.
    ///
    /// A body whose `Content-Length` is over `limit` is refused before any
    /// of it is read.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::BodyTooLarge`](crate::ErrorKind::BodyTooLarge) past
    /// `limit` or the server's own `max_body_bytes`,
    /// [`ErrorKind::BadRequest`](crate::ErrorKind::BadRequest) for bad
    /// chunked framing, or [`ErrorKind::Io`](crate::ErrorKind::Io) for a
    /// read that failed (timed out, or the client went away).
    pub fn read_body(&mut self, limit: usize) -> Result<Vec<u8>, Error> {
        let declared = self.body.remaining_len().map(|n| n.saturating_add(self.body.bytes_read()));
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(Error::body_too_large(limit));
        }
        // What Content-Length announces (within the limit, and no more than
        // a first megabyte before the bytes arrive): one allocation for a
        // body that says its size.
        let mut out = Vec::with_capacity(declared.map_or(0, |n| n.min(PREALLOCATE_MAX) as usize));
        let mut chunk = [0u8; 8192];
        loop {
            // Never more than one byte past the limit: a body over it is
            // refused after the same count of its bytes however they arrive,
            // and what the server drains after that (and finds there, such
            // as a malformed chunk) is the same too.
            let room = (limit - out.len()).saturating_add(1).min(chunk.len());
            let n = self.body.read(&mut chunk[..room]).map_err(|e| self.body_error(e))?;
            if n == 0 {
                return Ok(out);
            }
            if out.len() + n > limit {
                return Err(Error::body_too_large(limit));
            }
            out.extend_from_slice(&chunk[..n]);
        }
    }

    /// The status the crate answers with instead of the handler's response
    /// when reading the body failed (`None` when it did not, or when the
    /// client went away and nothing is answered).
    #[cfg(feature = "log")]
    pub(crate) fn body_failure_status(&self) -> Option<u16> {
        self.body.failure().and_then(BodyError::status)
    }

    /// The error of a failed body read, by what the body says went wrong.
    fn body_error(&self, e: io::Error) -> Error {
        self.body.read_error(e)
    }

    /// Reads the whole body as UTF-8 text, refusing bodies over `limit` bytes.
    ///
    /// # Errors
    ///
    /// As [`Request::read_body`], and
    /// [`ErrorKind::InvalidUtf8`](crate::ErrorKind::InvalidUtf8).
    pub fn read_body_string(&mut self, limit: usize) -> Result<String, Error> {
        String::from_utf8(self.read_body(limit)?).map_err(|_| Error::invalid_utf8())
    }

    /// Reads what the handler left of the body, as the connection loop
    /// does after it returns: see [`Body::settle`].
    #[cfg(feature = "log")]
    pub(crate) fn settle_body(&mut self, upgrading: bool) -> bool {
        self.body.settle(upgrading)
    }

    /// The body, where it is: the connection loop settles and finishes it
    /// in place (moved out, its hundred-odd bytes were copied on every
    /// request).
    pub(crate) fn body_mut(&mut self) -> &mut Body<'a> {
        &mut self.body
    }
}

impl Read for Request<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.body.read(buf)
    }
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method())
            .field("target", &self.target())
            .field("version", &self.version())
            .field("headers", &self.headers)
            .field("peer", &self.peer)
            .field("body", &self.body)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use crate::request_fixture::with_request;

    /// Eight bytes at a time finds what a byte search does, wherever the
    /// `?` or `#` falls (either side of a word's edge, several, none), and
    /// whatever bytes are near it (a borrow across bytes).
    #[test]
    fn the_path_ends_where_a_byte_search_says() {
        let bytes = [b'a', b'/', b'?', b'#', 0x00, 0x01, 0x7f, 0x80, 0xff, b'>', b'@', b'"', b'"' - 1];
        let mut target = Vec::new();
        for seed in 0u32..20_000 {
            target.clear();
            let mut x = seed.wrapping_mul(2_654_435_761);
            for _ in 0..(seed % 27) {
                target.push(bytes[(x % bytes.len() as u32) as usize]);
                x = x.rotate_left(7).wrapping_mul(2_246_822_519).wrapping_add(seed);
            }
            // `&str` only in name: the search reads bytes.
            let text = String::from_utf8_lossy(&target);
            let want = text.bytes().position(|b| b == b'?' || b == b'#');
            assert_eq!(super::path_end(&text), want, "{text:?}");
        }
    }

    /// `(target, path, query)` as the request reads them.
    fn parts(target: &str) -> (String, String, Option<String>) {
        let method = if target == "*" { "OPTIONS" } else { "GET" };
        let raw = format!("{method} {target} HTTP/1.1\r\nHost: x\r\n\r\n");
        with_request(raw.as_bytes(), |req| {
            (req.target().to_owned(), req.path().to_owned(), req.query().map(str::to_owned))
        })
    }

    #[test]
    fn path_and_query_of_each_target_form() {
        let expect = |path: &str, query: Option<&str>| (path.to_owned(), query.map(str::to_owned));
        for (target, path, query) in [
            ("/a/b?x=1&y", "/a/b", Some("x=1&y")),
            ("/a?", "/a", Some("")),
            ("/", "/", None),
            // Absolute form, as sent to a proxy: the path after the authority.
            ("http://example.com/a/b?x=1", "/a/b", Some("x=1")),
            ("HTTPS://example.com:8443/", "/", None),
            ("http://example.com", "/", None),
            ("http://example.com?x", "/", Some("x")),
            // Not a scheme: taken as it is.
            ("*", "*", None),
            ("/x://y", "/x://y", None),
            // A fragment (no part of a request target, but sent by some
            // clients) is neither path nor query, as the `http` crate and
            // URL parsers read it: it hid the authority's end, and a path
            // in it was routed.
            ("/a#b", "/a", None),
            ("/a?x=1#b", "/a", Some("x=1")),
            ("/a#b?x=1", "/a", None),
            ("/a?#b", "/a", Some("")),
            ("http://example.com#/admin", "/", None),
            ("http://example.com/a#/admin?x", "/a", None),
        ] {
            let (t, p, q) = parts(target);
            assert_eq!(t, target);
            assert_eq!((p, q), expect(path, query), "{target}");
        }
    }

    /// The host is the target's authority when it has one, else `Host`.
    #[test]
    fn host_of_each_target_form() {
        for (head, host) in [
            ("GET /a HTTP/1.1\r\nHost: b.example\r\n\r\n", Some("b.example")),
            ("GET /a HTTP/1.1\r\nHost: b.example:8080\r\n\r\n", Some("b.example:8080")),
            ("GET http://a.example/x HTTP/1.1\r\nHost: b.example\r\n\r\n", Some("a.example")),
            ("GET http://a.example:81?q HTTP/1.1\r\nHost: b.example\r\n\r\n", Some("a.example:81")),
            ("GET http://u:p@a.example/x HTTP/1.1\r\nHost: b\r\n\r\n", Some("a.example")),
            ("GET http://a.example HTTP/1.1\r\nHost: b\r\n\r\n", Some("a.example")),
            ("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n", Some("a.example:443")),
            ("OPTIONS * HTTP/1.1\r\nHost: b.example\r\n\r\n", Some("b.example")),
            ("GET / HTTP/1.0\r\n\r\n", None),
        ] {
            let got = with_request(head.as_bytes(), |req| req.host().map(str::to_owned));
            assert_eq!(got.as_deref(), host, "{head:?}");
        }
    }

    /// The route asked before a call is the request's own method and path.
    #[test]
    fn the_route_before_the_call_is_the_requests_method_and_path() {
        let limits = crate::config::Config::default().limits;
        for (method, target) in [
            ("GET", "/a/b?x=1"),
            ("POST", "/"),
            ("DELETE", "http://example.com/a?b"),
            ("OPTIONS", "*"),
            ("PATCH", "/pot?"),
        ] {
            let raw = format!("{method} {target} HTTP/1.1\r\nHost: x\r\n\r\n");
            let mut spans = Vec::new();
            let head = crate::parse::parse_head(raw.as_bytes(), &limits, &mut spans).unwrap().unwrap();
            let route = super::route(&raw.as_bytes()[..head.len], &head);
            with_request(raw.as_bytes(), |req| assert_eq!(route, (req.method(), req.path()), "{raw:?}"));
        }
    }
}
