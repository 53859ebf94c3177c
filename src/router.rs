//! A small router: method and path patterns to handlers, on `matchit`
//! (the matcher axum uses).
//!
//! ```
//! use httpool::{Request, Response, Router};
//!
//! let app = Router::new()
//!     .get("/", |_req| Response::text("home\n"))
//!     .get("/notes/{id}", |req| {
//!         let id: i64 = req.param_as("id")?; // 400 when it is not a number
//!         Ok::<_, httpool::Error>(Response::text(format!("note {id}\n")))
//!     })
//!     .post("/notes", |req| Response::text(req.read_body_string(1024).unwrap_or_default()));
//!
//! # use httpool::test::TestRequest;
//! assert_eq!(TestRequest::get("/notes/7").send(&app).text(), "note 7\n");
//! assert_eq!(TestRequest::head("/notes/7").send(&app).status(), 200);
//! assert_eq!(TestRequest::get("/notes/x").send(&app).status(), 400);
//! assert_eq!(TestRequest::get("/nothing").send(&app).status(), 404);
//! let not_allowed = TestRequest::delete("/notes").send(&app);
//! assert_eq!((not_allowed.status(), not_allowed.header("allow")), (405, Some("POST, OPTIONS")));
//! ```
//!
//! - **Patterns**: `/notes/{id}` matches one segment (`req.param("id")`),
//!   `/static/{*path}` the rest of the path, `/` included, but not an empty
//!   rest: `/static/` itself is a route of its own (a guard on
//!   `/private/{*path}` in front of a `ServeDir` needs `/private/` too, or
//!   that directory's index is served). A static segment
//!   wins over a parameter (`/notes/new` before `/notes/{id}`). Paths match
//!   as sent (percent-encoded; parameters are decoded when read), and
//!   exactly: `/notes/` is not `/notes`.
//! - **Methods**: `HEAD` is answered by the `GET` route unless it has one
//!   of its own (the server drops the body). `OPTIONS` is answered `204`
//!   with `Allow` unless routed. Any other method a path has no route for
//!   gets `405 Method Not Allowed` with `Allow` listing those it has; a path
//!   no pattern matches gets `404`. Both answers can be replaced
//!   ([`Router::fallback`], [`Router::method_not_allowed`]).
//! - **State**: [`Router::with_state`] gives every handler a reference to
//!   one value (a connection pool, a cache) as its second argument: no
//!   `Arc` to clone into each closure.
//! - **Mounts**: [`Router::mount`] hands every request under a prefix, any
//!   method, to a [`Handler`] (a [`ServeDir`](crate::ServeDir), another
//!   router).
//!
//! Routing a request allocates nothing (`tests/alloc.rs`): the match and
//! its parameters live in the request, and patterns are `&'static str`
//! (string literals), so the parameters' names need no copy. Patterns
//! without parameters are found by their exact path and mounts by their
//! prefix, before the matcher. Two cases make `matchit` allocate once per
//! request: a route with more than three parameters (at most
//! [`MAX_PARAMS`]), and a pattern with a static segment where another has a
//! parameter (`/users/new/{x}` beside `/users/{id}`), which it must be able
//! to come back from.
//!
//! A `{*rest}` parameter is decoded, `%2F` into `/` and `..` left as it
//! is: never join it to a directory yourself (`/files/..%2F..%2Fetc%2Fpasswd`);
//! mount a [`ServeDir`](crate::ServeDir), which refuses a way out of its
//! root.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorKind};
use crate::handler::{Handler, IntoResponse};
use crate::request::{Request, RouteParams, names};
use crate::response::Response;
use crate::urlencoded::decode_component;

pub use crate::request::MAX_PARAMS;

/// A route's handler, with the router's state.
type Route<S> = Box<dyn Fn(&mut Request<'_>, &S) -> Response + Send + Sync>;

/// The state of a router made with [`Router::with_state`]: the value every
/// handler is given.
pub struct State<T>(T);

impl<T> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("State")
    }
}

/// Method and path patterns to handlers; itself a [`Handler`].
///
/// `Router<()>` (from [`Router::new`]) takes handlers of one argument, the
/// request, as [`Server::serve`](crate::Server::serve) does;
/// `Router<State<T>>` (from [`Router::with_state`]) takes handlers of two,
/// the request and `&T`.
///
/// # Panics
///
/// The building methods panic on a pattern `matchit` refuses (a parameter
/// that conflicts with another at the same place, a `{` not closed), on a
/// method routed twice for one pattern, and on more than [`MAX_PARAMS`]
/// parameters: mistakes in the program, found when the router is built.
pub struct Router<S = ()> {
    state: S,
    /// The patterns without parameters, by path.
    exact: HashMap<Box<str>, usize>,
    /// Mounted prefixes (without their last `/`), the longest first.
    mounts: Vec<(Box<str>, usize)>,
    matcher: matchit::Router<usize>,
    paths: Vec<Path<S>>,
    fallback: Option<Route<S>>,
    method_not_allowed: Option<Route<S>>,
}

/// One pattern and its routes.
struct Path<S> {
    /// The pattern, which names the parameters a handler reads; for a
    /// mount, its prefix (`/` for the root), which names none.
    pattern: &'static str,
    /// How many parameters it has.
    params: usize,
    methods: Vec<(Box<str>, Route<S>)>,
    /// A mount: every method.
    any: Option<Route<S>>,
    /// The `Allow` value: the methods routed, `HEAD` with `GET`.
    allow: String,
}

impl Router<()> {
    /// A router with no routes (every request: `404`) and no state.
    pub fn new() -> Router<()> {
        Router {
            state: (),
            exact: HashMap::new(),
            mounts: Vec::new(),
            matcher: matchit::Router::new(),
            paths: Vec::new(),
            fallback: None,
            method_not_allowed: None,
        }
    }
}

impl Default for Router<()> {
    fn default() -> Router<()> {
        Router::new()
    }
}

impl<T: Send + Sync + 'static> Router<State<T>> {
    /// A router whose handlers are each given `&state` as their second
    /// argument.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use httpool::{Response, Router};
    ///
    /// let app = Router::with_state(AtomicU64::new(0))
    ///     .post("/hits", |_req, hits| Response::text(format!("{}\n", hits.fetch_add(1, Ordering::Relaxed) + 1)));
    /// # use httpool::test::TestRequest;
    /// assert_eq!(TestRequest::post("/hits").send(&app).text(), "1\n");
    /// assert_eq!(TestRequest::post("/hits").send(&app).text(), "2\n");
    /// ```
    pub fn with_state(state: T) -> Router<State<T>> {
        Router {
            state: State(state),
            exact: HashMap::new(),
            mounts: Vec::new(),
            matcher: matchit::Router::new(),
            paths: Vec::new(),
            fallback: None,
            method_not_allowed: None,
        }
    }

    /// The state.
    pub fn state(&self) -> &T {
        &self.state.0
    }
}

/// The building methods, for a router without state (handlers take the
/// request) and one with (handlers take the request and the state).
macro_rules! building_methods {
    ($args:tt, $handler:ident, $call:expr) => {
        building_methods!(@verbs $args
            get "GET" "Routes `GET` (and `HEAD`, unless it has a route of its own) requests for `pattern` to `handler`.",
            post "POST" "Routes `POST` requests for `pattern` to `handler`.",
            put "PUT" "Routes `PUT` requests for `pattern` to `handler`.",
            patch "PATCH" "Routes `PATCH` requests for `pattern` to `handler`.",
            delete "DELETE" "Routes `DELETE` requests for `pattern` to `handler`."
        );

        /// Routes requests with `method` (any token, compared
        /// case-sensitively) for `pattern` to `handler`.
        pub fn route<F, R>(self, method: &str, pattern: &'static str, $handler: F) -> Self
        where
            F: Fn $args -> R + Send + Sync + 'static,
            R: IntoResponse,
        {
            self.add(method, pattern, Box::new($call))
        }

        /// Answers the requests no pattern matches (`404` by default).
        pub fn fallback<F, R>(mut self, $handler: F) -> Self
        where
            F: Fn $args -> R + Send + Sync + 'static,
            R: IntoResponse,
        {
            self.fallback = Some(Box::new($call));
            self
        }

        /// Answers the requests whose path matches but whose method has no
        /// route (`405` by default); the router adds `Allow` to the answer.
        pub fn method_not_allowed<F, R>(mut self, $handler: F) -> Self
        where
            F: Fn $args -> R + Send + Sync + 'static,
            R: IntoResponse,
        {
            self.method_not_allowed = Some(Box::new($call));
            self
        }
    };
    (@verbs $args:tt $($name:ident $method:literal $doc:literal),*) => {
        $(
            #[doc = $doc]
            pub fn $name<F, R>(self, pattern: &'static str, handler: F) -> Self
            where
                F: Fn $args -> R + Send + Sync + 'static,
                R: IntoResponse,
            {
                self.route($method, pattern, handler)
            }
        )*
    };
}

impl Router<()> {
    building_methods!((&mut Request<'_>), handler, move |req: &mut Request<'_>, _: &()| handler(req).into_response());
}

impl<T: Send + Sync + 'static> Router<State<T>> {
    building_methods!((&mut Request<'_>, &T), handler, move |req: &mut Request<'_>, state: &State<T>| {
        handler(req, &state.0).into_response()
    });
}

impl<S: Send + Sync + 'static> Router<S> {
    /// Hands every request for `prefix` or below it (`prefix/...`), any
    /// method, to `handler`, which sees the whole path (a
    /// [`ServeDir`](crate::ServeDir) strips the prefix itself with
    /// [`strip_prefix`](crate::ServeDir::strip_prefix)). A route of this
    /// router for the same path goes first; for a method it has no route
    /// for, the mount answers (not a `405`). The longest prefix wins.
    ///
    /// `handler` is any [`Handler`]; a closure written here needs its
    /// argument's type (`|req: &mut Request| ...`).
    ///
    /// ```
    /// # #[cfg(feature = "fs")] {
    /// use httpool::{Response, Router, ServeDir};
    ///
    /// let dir = std::env::temp_dir();
    /// let app = Router::new()
    ///     .get("/", |_req| Response::text("home\n"))
    ///     .mount("/static", ServeDir::new(&dir).unwrap().strip_prefix("/static"));
    /// # }
    /// ```
    pub fn mount(mut self, prefix: &str, handler: impl Handler) -> Self {
        let prefix = prefix.trim_end_matches('/');
        assert!(prefix.is_empty() || prefix.starts_with('/'), "mount {prefix:?}: a prefix starts with /");
        assert!(!prefix.contains(['{', '}']), "mount {prefix:?}: a prefix has no parameters");
        assert!(self.mounts.iter().all(|(p, _)| &**p != prefix), "mount {prefix:?}: mounted twice");
        let route: Route<S> = Box::new(move |req: &mut Request<'_>, _: &S| handler.handle(req));
        // What `Request::route` says of the requests it takes: a label made
        // once, as the router is built, for the life of the program (a
        // router is made once; its patterns are string literals).
        let label: &'static str = if prefix.is_empty() { "/" } else { Box::leak(prefix.into()) };
        let path = Path { pattern: label, params: 0, methods: Vec::new(), any: Some(route), allow: String::new() };
        self.paths.push(path);
        self.mounts.push((prefix.into(), self.paths.len() - 1));
        // The longest prefix first.
        self.mounts.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        self
    }

    /// The mount whose prefix covers `path`, the longest first.
    fn mount_for(&self, path: &str) -> Option<usize> {
        let covers =
            |prefix: &str| path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        self.mounts.iter().find(|(prefix, _)| covers(prefix)).map(|&(_, index)| index)
    }

    /// Adds a route for `method` and `pattern`.
    fn add(mut self, method: &str, pattern: &'static str, route: Route<S>) -> Self {
        assert!(pattern.starts_with('/'), "route {pattern:?}: a pattern starts with /");
        let is_token = !method.is_empty() && method.bytes().all(crate::proto::is_tchar);
        assert!(is_token, "route {pattern:?}: {method:?} is not a method");
        let index = match self.paths.iter().position(|path| path.any.is_none() && path.pattern == pattern) {
            Some(index) => index,
            None => {
                let params = names(pattern).count();
                assert!(params <= MAX_PARAMS, "route {pattern:?}: more than {MAX_PARAMS} parameters");
                // A pattern without braces is found by its exact path, before
                // the matcher, which would allocate to go back from a static
                // segment beside a parameter (`/notes/new` beside
                // `/notes/{id}`, anything beside a mount at `/`).
                let inserted = if pattern.contains(['{', '}']) {
                    self.matcher.insert(pattern, self.paths.len())
                } else {
                    self.exact.insert(pattern.into(), self.paths.len());
                    Ok(())
                };
                if let Err(e) = inserted {
                    panic!("route {pattern:?}: {e}");
                }
                let path = Path { pattern, params, methods: Vec::new(), any: None, allow: String::new() };
                self.paths.push(path);
                self.paths.len() - 1
            }
        };
        let path = &mut self.paths[index];
        assert!(path.methods.iter().all(|(m, _)| &**m != method), "route {pattern:?}: {method} is routed twice");
        path.methods.push((method.into(), route));
        path.allow = allow(&path.methods);
        self
    }

    /// The patterns routed and the prefixes mounted, each once: what
    /// [`Request::route`] may say of a request this router answers (its
    /// own routes'; a router mounted in it says its own).
    pub(crate) fn patterns(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.paths.iter().map(|path| path.pattern)
    }

    /// The route for `method` at `path`: its own, `GET`'s for `HEAD`, the
    /// mount's.
    fn find<'r>(path: &'r Path<S>, method: &str) -> Option<&'r Route<S>> {
        let own = |m: &str| path.methods.iter().find(|(name, _)| &**name == m).map(|(_, route)| route);
        own(method).or_else(|| if method == "HEAD" { own("GET") } else { None }).or(path.any.as_ref())
    }
}

/// The `Allow` value for `methods`: each once, in the order routed, `HEAD`
/// right after `GET` when it has no route of its own, `OPTIONS` last (the
/// router answers it).
fn allow<S>(methods: &[(Box<str>, Route<S>)]) -> String {
    let mut names: Vec<&str> = methods.iter().map(|(m, _)| &**m).collect();
    if let Some(get) = names.iter().position(|m| *m == "GET") {
        if !names.contains(&"HEAD") {
            names.insert(get + 1, "HEAD");
        }
    }
    if !names.contains(&"OPTIONS") {
        names.push("OPTIONS");
    }
    names.join(", ")
}

impl<S: Send + Sync + 'static> Handler for Router<S> {
    fn handle(&self, req: &mut Request<'_>) -> Response {
        let path = req.path();
        let mut params = RouteParams { pattern: "", len: 0, spans: [(0, 0); MAX_PARAMS] };
        let index = match self.exact.get(path) {
            Some(&index) => index,
            None => match self.matcher.at(path) {
                Ok(found) => {
                    let entry = &self.paths[*found.value];
                    params.pattern = entry.pattern;
                    // In the pattern's order, as `names` reads them.
                    for (i, (_, value)) in found.params.iter().enumerate().take(entry.params) {
                        let start = value.as_ptr() as usize - path.as_ptr() as usize;
                        params.spans[i] = (start as u32, (start + value.len()) as u32);
                        params.len += 1;
                    }
                    *found.value
                }
                Err(_) if req.target() == "*" && req.method() == "OPTIONS" => {
                    // About the server as a whole (RFC 9110 §9.3.7).
                    req.route = None;
                    return Response::status(204).with_header("Allow", self.all_methods());
                }
                Err(_) => match self.mount_for(path) {
                    Some(index) => index,
                    None => {
                        // No route of this router's: no parameters of
                        // its own (an outer router's are not).
                        req.params = None;
                        req.route = None;
                        return match &self.fallback {
                            Some(fallback) => fallback(req, &self.state),
                            None => Response::text("Not Found\n").with_status(404),
                        };
                    }
                },
            },
        };
        let entry = &self.paths[index];
        req.route = Some(entry.pattern);
        // Those of this route only (a router inside another sets its own).
        if params.len > 0 || req.params.is_some() {
            req.params = (params.len > 0).then_some(params);
        }
        let method = req.method();
        // A route for the method, else a mount over the path.
        let mounted = || self.mount_for(req.path()).and_then(|index| self.paths[index].any.as_ref());
        if let Some(route) = Self::find(entry, method).or_else(mounted) {
            return route(req, &self.state);
        }
        if method == "OPTIONS" {
            return Response::status(204).with_header("Allow", entry.allow.clone());
        }
        let mut answer = match &self.method_not_allowed {
            Some(handler) => handler(req, &self.state),
            None => Response::text("Method Not Allowed\n").with_status(405),
        };
        if answer.header("allow").is_none() {
            answer.set_header("Allow", entry.allow.clone());
        }
        answer
    }
}

impl<S> Router<S> {
    /// Every method routed anywhere, for `OPTIONS *`. A mount takes any
    /// method and lists none (its `allow` is empty, not a list).
    fn all_methods(&self) -> String {
        let mut all: Vec<&str> = Vec::new();
        let routed = self.paths.iter().filter(|path| path.any.is_none());
        for method in routed.flat_map(|path| path.allow.split(", ")) {
            if !all.contains(&method) {
                all.push(method);
            }
        }
        if all.is_empty() {
            all.push("OPTIONS");
        }
        all.join(", ")
    }
}

impl<S> fmt::Debug for Router<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router").field("paths", &self.paths.len()).finish_non_exhaustive()
    }
}

impl Request<'_> {
    /// The pattern of the route a [`Router`] matched the request to, as
    /// written there (`/notes/{id}`), or the prefix of the
    /// [mount](Router::mount) that took it (`/static`; `/` for one at the
    /// root); `None` for a request no route matched (the router's `404`
    /// or its [`fallback`](Router::fallback)) or that was not routed.
    /// Matched by path: a `405` for a method the pattern has no route for
    /// says it too. Of routers within routers, the innermost that matched
    /// says. A label for metrics and logs that a client cannot multiply
    /// as it can raw paths.
    pub fn route(&self) -> Option<&'static str> {
        self.route
    }

    /// The value of the parameter `name` (`{name}` or `{*name}`) of the
    /// route that matched, percent-decoded; `None` when that route has no
    /// such parameter (or the request was not routed). Bytes that do not
    /// decode to UTF-8 become U+FFFD.
    pub fn param(&self, name: &str) -> Option<Cow<'_, str>> {
        let raw = self.params.as_ref()?.get(self.path(), name)?;
        if !raw.contains('%') {
            return Some(Cow::Borrowed(raw));
        }
        Some(percent_encoding::percent_decode_str(raw).decode_utf8_lossy())
    }

    /// The parameter `name`, percent-decoded and parsed as a `T` (a number,
    /// a `String`, any `FromStr`).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::BadRequest`] (`400`) naming the parameter when it does
    /// not parse, or does not decode (a `%` without two hex digits, bytes
    /// that are not UTF-8); [`ErrorKind::Internal`] (`500`, logged) when the
    /// route has no such parameter (a mistake in the program).
    pub fn param_as<T>(&self, name: &str) -> Result<T, Error>
    where
        T: FromStr,
        T::Err: fmt::Display,
    {
        let bad = |why: String| Error::new(ErrorKind::BadRequest, "bad path parameter").with_source(why);
        let Some(raw) = self.params.as_ref().and_then(|params| params.get(self.path(), name)) else {
            // The program's mistake, not the client's.
            error!("{} {}: the route has no parameter `{name}`; answering 500", self.method(), self.path());
            return Err(Error::new(ErrorKind::Internal, "no such route parameter"));
        };
        let value = decode(raw).map_err(|e| bad(format!("`{name}` is {raw:?}: {e}")))?;
        value.parse().map_err(|e| bad(format!("`{name}` is {value:?}: {e}")))
    }
}

/// A parameter's value percent-decoded (strictly, as
/// [`Request::path_decoded`]); most have nothing to decode.
fn decode(raw: &str) -> Result<Cow<'_, str>, Error> {
    if raw.contains('%') { decode_component(raw) } else { Ok(Cow::Borrowed(raw)) }
}

#[cfg(test)]
mod tests;
