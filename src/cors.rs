//! Cross-origin requests (the Fetch standard's CORS protocol): [`cors`]
//! wraps a handler, answers preflights itself and marks the answers a page
//! of another origin may read.
//!
//! A browser lets a page read an answer from another origin (scheme, host
//! and port) only when the answer says so, and before a request a page
//! could not have sent with a plain form (a `PUT`, a custom header, a JSON
//! body) it asks first, with an `OPTIONS` request: the preflight. The
//! wrapper answers both sides of that exchange:
//!
//! ```
//! use std::time::Duration;
//! use httpool::test::TestRequest;
//! use httpool::{Request, Response};
//!
//! let api = httpool::cors(|_req: &mut Request| Response::text("{\"ok\":true}\n"))
//!     .allow_origin("https://app.example")
//!     .allow_methods(["PUT", "DELETE"])
//!     .allow_headers(["content-type", "x-token"])
//!     .allow_credentials(true)
//!     .max_age(Duration::from_secs(600));
//!
//! // The preflight never reaches the handler.
//! let preflight = TestRequest::method("OPTIONS", "/notes/7")
//!     .header("Origin", "https://app.example")
//!     .header("Access-Control-Request-Method", "PUT")
//!     .header("Access-Control-Request-Headers", "x-token")
//!     .send(&api);
//! assert_eq!(preflight.status(), 204);
//! assert_eq!(preflight.header("access-control-allow-origin"), Some("https://app.example"));
//! assert_eq!(preflight.header("access-control-allow-methods"), Some("PUT, DELETE"));
//! assert_eq!(preflight.header("access-control-allow-headers"), Some("content-type, x-token"));
//! assert_eq!(preflight.header("access-control-max-age"), Some("600"));
//!
//! // The request itself: the handler's answer, marked for that origin.
//! let put = TestRequest::put("/notes/7").header("Origin", "https://app.example").send(&api);
//! assert_eq!(put.header("access-control-allow-origin"), Some("https://app.example"));
//! assert_eq!(put.header("access-control-allow-credentials"), Some("true"));
//! assert_eq!(put.header("vary"), Some("Origin"));
//!
//! // Another origin's page gets the answer without the mark, so its
//! // browser keeps it from the page; its preflights are refused.
//! let other = TestRequest::get("/notes/7").header("Origin", "https://evil.example").send(&api);
//! assert_eq!((other.status(), other.header("access-control-allow-origin")), (200, None));
//! let refused = TestRequest::method("OPTIONS", "/notes/7")
//!     .header("Origin", "https://evil.example")
//!     .header("Access-Control-Request-Method", "PUT")
//!     .send(&api);
//! assert_eq!(refused.status(), 403);
//! ```
//!
//! The rules:
//!
//! - **Origins**: none is allowed until named: [`allow_origin`](Cors::allow_origin)
//!   (`scheme://host[:port]`, compared ignoring ASCII case; a path or a
//!   `/` at the end panics, as does `*`),
//!   [`allow_origin_fn`](Cors::allow_origin_fn) (a predicate, e.g. any port of
//!   `localhost`) and [`allow_any_origin`](Cors::allow_any_origin); an origin
//!   is allowed when any of them allows it.
//! - **Preflights** (`OPTIONS` with `Origin` and
//!   `Access-Control-Request-Method`) are answered by the wrapper, whatever
//!   the handler would do, so an authentication check inside it does not
//!   refuse them (browsers send no credentials with a preflight). Allowed:
//!   `204` with `Access-Control-Allow-Origin`, `-Allow-Credentials` (when
//!   on), `-Allow-Methods` (the list given; `GET`, `HEAD` and `POST` need
//!   no listing), `-Allow-Headers` (the list, or the names asked for after
//!   [`allow_any_header`](Cors::allow_any_header)) and `-Max-Age` (when
//!   set). Refused (an origin, method or header not allowed): `403` with
//!   none of them and a one-line reason, which the browser reports as a
//!   failed preflight. An `OPTIONS` without those two headers is not a
//!   preflight and goes to the handler (the router answers it with `Allow`).
//! - **Other requests** reach the handler. An answer to an allowed origin
//!   gets `Access-Control-Allow-Origin`, `-Allow-Credentials` (when on) and
//!   `-Expose-Headers` (when set); to any other origin, or a request without
//!   `Origin`, none.
//! - **`Vary: Origin`** is added to every answer (merged into a `Vary` the
//!   handler set), preflights also vary on the two headers they read: a
//!   cache must not give one origin the answer made for another.
//! - **Credentials** (cookies, `Authorization`): with
//!   [`allow_credentials`](Cors::allow_credentials) the allowed origin is
//!   echoed, never `*`, which browsers refuse with credentials. Without it,
//!   [`allow_any_origin`](Cors::allow_any_origin) answers `*`.
//!
//! CORS decides what a browser lets a page *read*; it is not access
//! control. A request from a disallowed origin that needs no preflight (a
//! `GET`, a form `POST`) still reaches the handler, and clients other than
//! browsers ignore CORS altogether. Check credentials in the handler, and
//! guard state-changing requests against cross-site forgery (`SameSite`
//! cookies, as the `sessions` feature's session cookie is, or a token).
//!
//! A server that does not wrap its handler pays nothing; a wrapped one
//! allocates only for what it adds to an answer with an `Origin`.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use crate::handler::Handler;
use crate::headers::is_valid_value;
use crate::proto::is_token;
use crate::request::Request;
use crate::response::Response;

/// Wraps `handler` to answer CORS preflights and mark the answers that a
/// page of an allowed origin may read; see [the module](mod@crate::cors) for
/// the rules. No origin is allowed until one is named.
///
/// ```no_run
/// use httpool::{Request, Response, Server};
///
/// # fn main() -> std::io::Result<()> {
/// let api = httpool::cors(|_req: &mut Request| Response::text("[]"))
///     .allow_origin("http://localhost:5173")
///     .allow_methods(["PUT", "DELETE"])
///     .allow_headers(["content-type"]);
/// Server::bind("127.0.0.1:8000")?.serve_handler(api)
/// # }
/// ```
pub fn cors<H: Handler>(handler: H) -> Cors<H> {
    Cors {
        inner: handler,
        origins: Vec::new(),
        methods: Vec::new(),
        headers: AllowHeaders::Listed(Vec::new()),
        expose: Vec::new(),
        credentials: false,
        max_age: None,
    }
}

/// A handler whose answers follow the CORS protocol; see [`cors`].
pub struct Cors<H> {
    inner: H,
    origins: Vec<AllowOrigin>,
    methods: Vec<Box<str>>,
    headers: AllowHeaders,
    expose: Vec<Box<str>>,
    credentials: bool,
    /// Seconds.
    max_age: Option<u64>,
}

/// One rule by which an origin is allowed.
enum AllowOrigin {
    Exactly(Box<str>),
    Any,
    Matching(Box<dyn Fn(&str) -> bool + Send + Sync>),
}

/// The request headers a preflight may ask for.
enum AllowHeaders {
    /// These names (lower case).
    Listed(Vec<Box<str>>),
    /// Whatever it asks for.
    Any,
}

/// The methods a preflight never needs to ask for (Fetch, "CORS-safelisted
/// method"): a page may send them anyway.
const SAFELISTED_METHODS: [&str; 3] = ["GET", "HEAD", "POST"];

impl<H> Cors<H> {
    /// Allows the page origin `origin`, e.g. `"https://app.example"` or
    /// `"http://localhost:8080"` (the scheme and host compared ignoring
    /// case), or `"null"` (sandboxed frames and `file:` pages, which any
    /// site can make: allow it with care). Call it once for each origin.
    ///
    /// # Panics
    ///
    /// When `origin` is not `scheme://host[:port]` (a path or a `/` at the
    /// end, which a browser never sends) or `null`: `*` is
    /// [`allow_any_origin`](Cors::allow_any_origin).
    pub fn allow_origin(mut self, origin: &str) -> Cors<H> {
        assert!(origin != "*", "cors: allow_origin(\"*\"): call allow_any_origin() instead");
        assert!(is_origin(origin), "cors: {origin:?} is not an origin (scheme://host[:port], without a path)");
        self.origins.push(AllowOrigin::Exactly(origin.into()));
        self
    }

    /// Allows every origin for which `allows` is true; it gets the `Origin`
    /// header as sent (e.g. `"http://localhost:3000"`, or `"null"`).
    ///
    /// ```
    /// let api = httpool::cors(|_req: &mut httpool::Request| httpool::Response::text("ok"))
    ///     .allow_origin_fn(|origin| origin.starts_with("http://localhost:") || origin == "http://localhost");
    /// # let _ = api;
    /// ```
    pub fn allow_origin_fn(mut self, allows: impl Fn(&str) -> bool + Send + Sync + 'static) -> Cors<H> {
        self.origins.push(AllowOrigin::Matching(Box::new(allows)));
        self
    }

    /// Allows every origin: `*` without credentials; with
    /// [`allow_credentials`](Cors::allow_credentials) each origin is echoed,
    /// which lets any site read the answers its visitors' cookies get: only
    /// for data that is not private to them.
    pub fn allow_any_origin(mut self) -> Cors<H> {
        self.origins.push(AllowOrigin::Any);
        self
    }

    /// The methods a preflight may ask for beyond `GET`, `HEAD` and `POST`
    /// (which need no permission), e.g. `["PUT", "DELETE"]`; sent as they
    /// are in `Access-Control-Allow-Methods`. None by default. Methods are
    /// case-sensitive: `"put"` is not `"PUT"`.
    ///
    /// # Panics
    ///
    /// When a method is not a token.
    pub fn allow_methods<S: AsRef<str>>(mut self, methods: impl IntoIterator<Item = S>) -> Cors<H> {
        self.methods.extend(methods.into_iter().map(|m| token(m.as_ref(), "method")));
        self
    }

    /// The request headers a preflight may ask for (case-insensitive), e.g.
    /// `["content-type", "authorization"]`. None by default: a page may
    /// send only the safelisted ones (`Accept`, `Accept-Language`,
    /// `Content-Language`, and `Content-Type` for a form or plain text).
    ///
    /// # Panics
    ///
    /// When a name is not a token.
    pub fn allow_headers<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Cors<H> {
        let names = names.into_iter().map(|n| token(&n.as_ref().to_ascii_lowercase(), "header name"));
        match &mut self.headers {
            AllowHeaders::Listed(listed) => listed.extend(names),
            AllowHeaders::Any => {}
        }
        self
    }

    /// Allows every request header a preflight asks for: the names it
    /// lists are sent back in `Access-Control-Allow-Headers`.
    pub fn allow_any_header(mut self) -> Cors<H> {
        self.headers = AllowHeaders::Any;
        self
    }

    /// The response headers a page may read beyond the safelisted ones
    /// (`Cache-Control`, `Content-Language`, `Content-Length`,
    /// `Content-Type`, `Expires`, `Last-Modified`, `Pragma`), e.g.
    /// `["etag", "x-request-id"]`: sent in `Access-Control-Expose-Headers`.
    ///
    /// # Panics
    ///
    /// When a name is not a token.
    pub fn expose_headers<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Cors<H> {
        self.expose.extend(names.into_iter().map(|n| token(n.as_ref(), "header name")));
        self
    }

    /// Lets a page send credentials (cookies, HTTP authentication) with its
    /// requests (`fetch(url, { credentials: "include" })`) and read the
    /// answers: `Access-Control-Allow-Credentials: true`, and the origin
    /// echoed, never `*`. Off by default.
    pub fn allow_credentials(mut self, allow: bool) -> Cors<H> {
        self.credentials = allow;
        self
    }

    /// How long a browser may keep a preflight's answer and skip the next
    /// ones (`Access-Control-Max-Age`, whole seconds; browsers cap it, at
    /// 2 hours for Chromium). Unset by default: the browser's own default
    /// (5 seconds).
    pub fn max_age(mut self, max_age: Duration) -> Cors<H> {
        self.max_age = Some(max_age.as_secs());
        self
    }
}

impl<H: Handler> Handler for Cors<H> {
    fn handle(&self, req: &mut Request<'_>) -> Response {
        if req.method() == "OPTIONS" && req.header("origin").is_some() {
            if let Some(method) = req.header("access-control-request-method") {
                return self.preflight(req, method);
            }
        }
        let allowed = req.header("origin").and_then(|origin| self.allowed(origin));
        let mut resp = self.inner.handle(req);
        if let Some(allowed) = allowed {
            self.mark(&mut resp, allowed);
            if !self.expose.is_empty() {
                resp.headers.push((Cow::Borrowed("Access-Control-Expose-Headers"), self.expose.join(", ").into()));
            }
        }
        resp.add_vary("Origin");
        resp
    }
}

impl<H> Cors<H> {
    /// The answer to a preflight asking for `method`.
    fn preflight(&self, req: &Request<'_>, method: &str) -> Response {
        let origin = req.header("origin").unwrap_or_default();
        let mut resp = match self.check(req, origin, method) {
            Ok(allowed) => self.permission(req, allowed),
            Err(why) => {
                debug!("refused a CORS preflight from {origin:?} for {method:?}: {why}");
                Response::text(format!("CORS preflight refused: {why}\n")).with_status(403)
            }
        };
        resp.add_vary("Origin");
        resp.add_vary("Access-Control-Request-Method");
        resp.add_vary("Access-Control-Request-Headers");
        resp
    }

    /// The `Access-Control-Allow-Origin` value for a preflight from
    /// `origin` asking for `method`, or why it is refused.
    fn check(&self, req: &Request<'_>, origin: &str, method: &str) -> Result<Cow<'static, str>, String> {
        let Some(allowed) = self.allowed(origin) else { return Err("origin not allowed".into()) };
        let listed = |m: &str| SAFELISTED_METHODS.contains(&m) || self.methods.iter().any(|l| &**l == m);
        if !is_token(method.as_bytes()) || !listed(method) {
            return Err(format!("method {} not allowed", printable(method)));
        }
        let names = requested_headers(req);
        if let AllowHeaders::Listed(listed) = &self.headers {
            let missing = names.into_iter().find(|n| !listed.iter().any(|l| l.eq_ignore_ascii_case(n)));
            if let Some(name) = missing {
                return Err(format!("header {} not allowed", printable(name)));
            }
        } else if let Some(name) = names.into_iter().find(|n| !is_token(n.as_bytes())) {
            return Err(format!("header {} not allowed", printable(name)));
        }
        Ok(allowed)
    }

    /// The `204` to an allowed preflight, `allowed` its
    /// `Access-Control-Allow-Origin`.
    fn permission(&self, req: &Request<'_>, allowed: Cow<'static, str>) -> Response {
        let mut resp = Response::status(204);
        self.mark(&mut resp, allowed);
        let mut add = |name: &'static str, value: String| resp.headers.push((Cow::Borrowed(name), value.into()));
        if !self.methods.is_empty() {
            add("Access-Control-Allow-Methods", self.methods.join(", "));
        }
        let names = match &self.headers {
            AllowHeaders::Listed(listed) => listed.join(", "),
            AllowHeaders::Any => requested_headers(req).join(", "),
        };
        if !names.is_empty() {
            add("Access-Control-Allow-Headers", names);
        }
        if let Some(secs) = self.max_age {
            add("Access-Control-Max-Age", secs.to_string());
        }
        resp
    }

    /// The `Access-Control-Allow-Origin` value for `origin`, when it is
    /// allowed.
    fn allowed(&self, origin: &str) -> Option<Cow<'static, str>> {
        // Echoed into a header: what could not be one is no origin.
        if origin.is_empty() || !is_valid_value(origin) {
            return None;
        }
        let mut any = false;
        for rule in &self.origins {
            match rule {
                AllowOrigin::Exactly(o) if o.eq_ignore_ascii_case(origin) => return Some(origin.to_owned().into()),
                AllowOrigin::Matching(allows) if allows(origin) => return Some(origin.to_owned().into()),
                AllowOrigin::Any => any = true,
                _ => {}
            }
        }
        match (any, self.credentials) {
            (false, _) => None,
            (true, false) => Some(Cow::Borrowed("*")),
            (true, true) => Some(origin.to_owned().into()),
        }
    }

    /// `Access-Control-Allow-Origin` (and `-Credentials`) on `resp`.
    fn mark(&self, resp: &mut Response, allowed: Cow<'static, str>) {
        resp.headers.push((Cow::Borrowed("Access-Control-Allow-Origin"), allowed));
        if self.credentials {
            resp.headers.push((Cow::Borrowed("Access-Control-Allow-Credentials"), Cow::Borrowed("true")));
        }
    }
}

/// The names in the preflight's `Access-Control-Request-Headers` (Fetch
/// sends one header, names lower case and comma-separated).
fn requested_headers<'r>(req: &'r Request<'_>) -> Vec<&'r str> {
    req.header_all("access-control-request-headers")
        .filter_map(|v| std::str::from_utf8(v).ok())
        .flat_map(|v| v.split(','))
        .map(|n| n.trim_matches([' ', '\t']))
        .filter(|n| !n.is_empty())
        .collect()
}

/// `null`, or `scheme://host[:port]` in visible ASCII.
fn is_origin(origin: &str) -> bool {
    if origin == "null" {
        return true;
    }
    let Some((scheme, authority)) = origin.split_once("://") else { return false };
    crate::proto::is_scheme(scheme.as_bytes())
        && !authority.is_empty()
        && authority.bytes().all(|b| b.is_ascii_graphic() && !b"/?#@".contains(&b))
}

/// `name` as given, when it is a token; a panic naming `what` otherwise.
fn token(name: &str, what: &str) -> Box<str> {
    assert!(is_token(name.as_bytes()), "cors: {name:?} is not a {what} (a token)");
    name.into()
}

/// A client's text for a log line or an answer: at most 64 characters, in
/// `Debug` quoting.
fn printable(text: &str) -> String {
    let cut = text.char_indices().nth(64).map_or(text, |(i, _)| &text[..i]);
    format!("{cut:?}")
}

impl<H> fmt::Debug for Cors<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let origins: Vec<&str> = self
            .origins
            .iter()
            .map(|rule| match rule {
                AllowOrigin::Exactly(o) => o,
                AllowOrigin::Any => "*",
                AllowOrigin::Matching(_) => "<fn>",
            })
            .collect();
        let headers: &dyn fmt::Debug = match &self.headers {
            AllowHeaders::Listed(listed) => listed,
            AllowHeaders::Any => &"*",
        };
        f.debug_struct("Cors")
            .field("origins", &origins)
            .field("methods", &self.methods)
            .field("headers", headers)
            .field("expose", &self.expose)
            .field("credentials", &self.credentials)
            .field("max_age", &self.max_age)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
