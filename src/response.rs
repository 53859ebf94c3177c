//! The response a handler returns, and its encoding (RFC 9112 §4, §6).

use std::borrow::Cow;
use std::fmt;
use std::io::Read;
use std::sync::Arc;

use crate::body_writer::BodyWriter;
use crate::headers::{is_sensitive, is_valid_name, is_valid_value};
use crate::proto::{parse_decimal, tokens};
use crate::upgrade::{OnUpgrade, Upgraded};

/// A response body.
///
/// Built with `From` from text and bytes: `&str` and `&[u8]` of any
/// lifetime are copied (short ones into the response itself, with no
/// allocation — `Response::text("Hello")` allocates nothing), `String` and
/// `Vec<u8>` are moved in; [`Content::from_static`] sends a `&'static`
/// slice from where it is, never copied (large embedded files, e.g. from
/// `include_bytes!`). A reader with [`Response::reader`], a file with
/// [`Response::file`], a stream with [`Response::stream`].
pub struct Content(pub(crate) Payload);

/// Bodies up to this many bytes given as `&str` or `&[u8]` are copied into
/// the response itself (the same room as its largest other kind of body).
const INLINE_BYTES: usize = 30;

pub(crate) enum Payload {
    Static(&'static [u8]),
    /// A short body, copied in.
    Inline(Short),
    Owned(Vec<u8>),
    Reader {
        reader: Box<dyn Read + Send>,
        len: Option<u64>,
    },
    Writer(StreamFn),
    /// `len` bytes of a file from its current position.
    File {
        file: std::fs::File,
        len: u64,
    },
    /// Bytes kept elsewhere (`ServeDir`'s small files), shared with every
    /// answer that sends them: never copied but into the output buffer.
    Shared(Arc<dyn SharedBody>),
    /// Server-sent events, queued by their senders and written while the
    /// connection parks between them (`http1::stream`); with a session,
    /// the frames of the protocol a `101` switches to (WebSocket).
    Events(crate::feed::Unstarted, Option<Box<dyn crate::feed::Session>>),
}

/// A body in memory that is kept beyond the answer, by a cache, and shared
/// by the answers that send it; it may keep its gzipped copy beside it,
/// which `compress` then sends instead of gzipping the body each time.
pub(crate) trait SharedBody: Send + Sync {
    fn bytes(&self) -> &[u8];

    /// The bytes gzipped at `level` (a zlib level) by `gzip`, which gives
    /// `None` when that would not make them smaller. A body that keeps its
    /// copy calls `gzip` once and answers from the copy after that; by
    /// default nothing is kept, and each call gzips.
    #[cfg_attr(not(feature = "compression"), allow(dead_code))] // Only `compress` asks.
    fn gzipped(&self, level: u32, gzip: &dyn Fn(&[u8]) -> Option<Vec<u8>>) -> Option<Arc<dyn SharedBody>> {
        let _ = level;
        gzip(self.bytes()).map(|gzipped| Arc::new(gzipped) as Arc<dyn SharedBody>)
    }
}

impl SharedBody for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// A short body: `len` bytes of `bytes`. Aligned, with its length inside:
/// as two fields of the enum, at byte offsets, the compiler copied them in
/// overlapping pieces, each read waiting for the stores before it (2% of
/// the server's CPU on pipelined requests).
#[derive(Clone, Copy)]
#[repr(align(8))]
pub(crate) struct Short {
    bytes: [u8; INLINE_BYTES],
    len: u8,
}

impl Short {
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Appends the body to `out`: all of `bytes` (a few moves), then cut
    /// to `len`, where a copy of `len` bytes is a call to memcpy.
    #[inline(always)]
    pub(crate) fn append_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.bytes);
        out.truncate(start + usize::from(self.len));
    }
}

/// A closure that writes a streamed body.
pub(crate) type StreamFn = Box<dyn FnOnce(&mut BodyWriter<'_>) -> std::io::Result<()> + Send>;

impl Payload {
    /// The body when it is in memory.
    pub(crate) fn in_memory(&self) -> Option<&[u8]> {
        match self {
            Payload::Static(b) => Some(b),
            Payload::Inline(short) => Some(short.as_slice()),
            Payload::Owned(b) => Some(b),
            Payload::Shared(shared) => Some(shared.bytes()),
            Payload::Reader { .. } | Payload::Writer(_) | Payload::File { .. } | Payload::Events(..) => None,
        }
    }

    /// A copy of `b`: in place when it is short.
    fn copied(b: &[u8]) -> Payload {
        if b.len() > INLINE_BYTES {
            return Payload::Owned(b.to_vec());
        }
        let mut bytes = [0; INLINE_BYTES];
        bytes[..b.len()].copy_from_slice(b);
        // At most INLINE_BYTES, which fits a u8.
        Payload::Inline(Short { bytes, len: b.len() as u8 })
    }
}

impl Content {
    /// A body sent from where it is, never copied: for large bodies that
    /// live as long as the program (an `include_bytes!` or `include_str!`
    /// file), which `From<&[u8]>` would copy at every response.
    ///
    /// ```
    /// use httpool::{Content, Response};
    ///
    /// static PAGE: &str = "<!doctype html><title>a page embedded in the binary</title>";
    /// let resp = Response::text(Content::from_static(PAGE.as_bytes())).with_content_type("text/html");
    /// # let _ = resp;
    /// ```
    pub fn from_static(body: &'static [u8]) -> Content {
        Content(Payload::Static(body))
    }

    /// A body kept by a cache, sent from where it is.
    #[cfg_attr(not(feature = "fs"), allow(dead_code))] // Only `ServeDir` has such a cache.
    pub(crate) fn shared(body: Arc<dyn SharedBody>) -> Content {
        Content(Payload::Shared(body))
    }
}

impl fmt::Debug for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Payload::Reader { len, .. } => write!(f, "Content(reader, length {len:?})"),
            Payload::Writer(_) => f.write_str("Content(writer)"),
            Payload::Events(_, None) => f.write_str("Content(events)"),
            Payload::Events(_, Some(_)) => f.write_str("Content(session)"),
            Payload::File { len, .. } => write!(f, "Content(file, {len} bytes)"),
            other => write!(f, "Content({} bytes)", other.in_memory().map_or(0, <[u8]>::len)),
        }
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Content {
        Content(Payload::copied(s.as_bytes()))
    }
}

impl From<&String> for Content {
    fn from(s: &String) -> Content {
        Content(Payload::copied(s.as_bytes()))
    }
}

impl From<&[u8]> for Content {
    fn from(b: &[u8]) -> Content {
        Content(Payload::copied(b))
    }
}

impl<const N: usize> From<&[u8; N]> for Content {
    fn from(b: &[u8; N]) -> Content {
        Content(Payload::copied(b))
    }
}

impl From<String> for Content {
    fn from(s: String) -> Content {
        Content(Payload::Owned(s.into_bytes()))
    }
}

impl From<Vec<u8>> for Content {
    fn from(b: Vec<u8>) -> Content {
        Content(Payload::Owned(b))
    }
}

impl From<Cow<'_, str>> for Content {
    fn from(s: Cow<'_, str>) -> Content {
        match s {
            Cow::Borrowed(s) => s.into(),
            Cow::Owned(s) => s.into(),
        }
    }
}

/// An HTTP response.
///
/// The crate writes `Date`, `Content-Length` (or `Transfer-Encoding:
/// chunked`) and `Connection` itself. Headers set here are validated: a name
/// that is not a token or a value containing CR, LF, NUL or another control
/// makes the response invalid, and the client gets a `500` instead.
///
/// ```
/// use httpool::Response;
///
/// let ok = Response::text("hello\n").with_header("Cache-Control", "no-store");
/// let missing = Response::status(404);
/// # let _ = (ok, missing);
/// ```
pub struct Response {
    pub(crate) status: u16,
    pub(crate) content_type: Option<Cow<'static, str>>,
    pub(crate) headers: Vec<(Cow<'static, str>, Cow<'static, str>)>,
    pub(crate) body: Payload,
    /// A `Content-Length` the handler set (e.g. for `HEAD`).
    pub(crate) declared_length: Option<u64>,
    pub(crate) close: bool,
    pub(crate) has_date: bool,
    pub(crate) invalid: Option<&'static str>,
    pub(crate) upgrade: Option<OnUpgrade>,
}

impl Response {
    /// True when the response switches protocols (a `101`): by a closure
    /// on the worker ([`Response::upgrade`]), or a session that parks
    /// (`crate::websocket`).
    #[inline]
    pub(crate) fn switches(&self) -> bool {
        self.upgrade.is_some() || (self.status == 101 && matches!(self.body, Payload::Events(_, Some(_))))
    }

    /// True when dropping the response would free nothing: no heap memory,
    /// file or closure in it. (Every field is named, so that a new one
    /// cannot be missed here.)
    #[inline(always)]
    pub(crate) fn holds_nothing(&self) -> bool {
        let Response {
            status: _,
            content_type,
            headers,
            body,
            declared_length: _,
            close: _,
            has_date: _,
            invalid: _,
            upgrade,
        } = self;
        matches!(content_type, None | Some(Cow::Borrowed(_)))
            && headers.capacity() == 0
            && matches!(body, Payload::Static(_) | Payload::Inline(_))
            && upgrade.is_none()
    }

    /// A response with this status and no body.
    ///
    /// A status outside `100..=599` makes the response invalid (the client
    /// gets a `500`): RFC 9110 §15 has no others, and a client takes one
    /// as a server error anyway.
    pub fn status(code: u16) -> Response {
        Response {
            status: code,
            content_type: None,
            headers: Vec::new(),
            body: Payload::Static(b""),
            declared_length: None,
            close: false,
            has_date: false,
            invalid: (!(100..=599).contains(&code)).then_some("status code out of range"),
            upgrade: None,
        }
    }

    /// `200 OK` with a `text/plain; charset=utf-8` body: a `&str` (copied:
    /// a short one into the response itself) or a `String` (moved in); see
    /// [`Content`].
    ///
    /// ```
    /// use httpool::{Request, Response};
    ///
    /// fn handler(req: &mut Request) -> Response {
    ///     match req.path() {
    ///         "/" => Response::text("Hello, world!\n"),
    ///         // Borrowed from the request: copied.
    ///         path => Response::text(path).with_status(404),
    ///     }
    /// }
    /// # let _ = handler;
    /// ```
    pub fn text(body: impl Into<Content>) -> Response {
        Response::ok("text/plain; charset=utf-8", body.into().0)
    }

    /// `200 OK` with an `application/octet-stream` body: a `&[u8]` (copied:
    /// a short one into the response itself), a `Vec<u8>` (moved in), a
    /// [`Content::from_static`] slice (sent from where it is), or text; see
    /// [`Content`].
    pub fn bytes(body: impl Into<Content>) -> Response {
        Response::ok("application/octet-stream", body.into().0)
    }

    /// `200 OK` with the crate's own `Content-Type` and `body`, made whole
    /// (not a status then a body set: that wrote the body twice and moved
    /// it between, on every short answer).
    fn ok(content_type: &'static str, body: Payload) -> Response {
        Response {
            status: 200,
            content_type: Some(Cow::Borrowed(content_type)),
            headers: Vec::new(),
            body,
            declared_length: None,
            close: false,
            has_date: false,
            invalid: None,
            upgrade: None,
        }
    }

    /// `200 OK` streaming `reader`. With `len` the body is sent with
    /// `Content-Length` (the reader must yield exactly that many bytes, or the
    /// connection is closed); without it, `chunked` to HTTP/1.1 clients and
    /// close-delimited to HTTP/1.0 clients.
    pub fn reader(reader: impl Read + Send + 'static, len: Option<u64>) -> Response {
        let body = Content(Payload::Reader { reader: Box::new(reader), len });
        Response::status(200).with_own_type("application/octet-stream").with_body(body)
    }

    /// `101 Switching Protocols`: after it is sent, `on_upgrade` gets the
    /// raw connection (see [`Upgraded`]) on this worker; the connection is
    /// closed when it returns. Add the `Upgrade` header (and whatever the
    /// protocol needs, e.g. `Sec-WebSocket-Accept`); `Connection: upgrade`
    /// is written by the crate. The request must have asked for a switch
    /// to the protocol the answer's `Upgrade` names (RFC 9110 §7.8, see
    /// [`Request::is_upgrade_to`](crate::Request::is_upgrade_to)): to one
    /// that did not, the client gets `426 Upgrade Required` naming the
    /// protocol (`400` to a `HEAD`); an answer that names no protocol, or
    /// one the request did not offer when it offered another, is the
    /// handler's fault, a `500`. A request body the handler left unread is read
    /// and discarded before the switch, as one is to keep a connection
    /// ([`Server::max_drain_bytes`](crate::Server::max_drain_bytes), 64 KiB,
    /// within a second): a larger one gets `413`, and one that stops coming
    /// `408`, instead of the `101`. A handler that wants the body (an `h2c`
    /// upgrade may carry one) reads it before it answers.
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use httpool::{Request, Response};
    ///
    /// fn handler(req: &mut Request) -> Response {
    ///     if !req.is_upgrade_to("echo") {
    ///         let required = Response::status(426).with_header("Upgrade", "echo");
    ///         return required.with_header("Connection", "upgrade");
    ///     }
    ///     Response::upgrade(|mut conn| {
    ///         let mut buf = [0; 1024];
    ///         while let Ok(n) = conn.read(&mut buf) {
    ///             if n == 0 || conn.write_all(&buf[..n]).is_err() {
    ///                 break;
    ///             }
    ///         }
    ///     })
    ///     .with_header("Upgrade", "echo")
    /// }
    /// # let _ = handler;
    /// ```
    pub fn upgrade(on_upgrade: impl FnOnce(Upgraded<'_>) + Send + 'static) -> Response {
        let mut resp = Response::status(101);
        resp.upgrade = Some(Box::new(on_upgrade));
        resp
    }

    /// `200 OK` whose body `write` produces while it is sent (`chunked` to
    /// HTTP/1.1 clients, close-delimited to HTTP/1.0). Call
    /// [`flush`](std::io::Write::flush) on the writer to push what was
    /// written so far to the client — e.g. after each server-sent event. An
    /// error from `write` (or a panic in it) cuts the answer short: the
    /// answers before it still reach the client, then the connection closes
    /// (the client sees the body end unfinished: its last chunk never
    /// comes). So does a failed write to the client, even if the closure
    /// goes on or returns `Ok`. An HTTP/1.0 client is the exception: its
    /// body ends with the connection, and one cut short looks whole to it;
    /// give the body a length (`Content-Length`, or [`Response::reader`]
    /// with a length) when such a client must be able to tell.
    ///
    /// ```
    /// use std::io::Write;
    /// use httpool::Response;
    ///
    /// let events = Response::stream(|out| {
    ///     for i in 0..3 {
    ///         write!(out, "data: tick {i}\n\n")?;
    ///         out.flush()?;
    ///     }
    ///     Ok(())
    /// })
    /// .with_content_type("text/event-stream");
    /// # let _ = events;
    /// ```
    pub fn stream(write: impl FnOnce(&mut BodyWriter<'_>) -> std::io::Result<()> + Send + 'static) -> Response {
        Response::status(200).with_body(Content(Payload::Writer(Box::new(write))))
    }

    /// `200 OK` sending `len` bytes of `file` from its current position
    /// (seek first to send a range), with `Content-Length`. On plain TCP the
    /// kernel copies the file to the socket (`sendfile` on Linux) without
    /// passing it through the worker; over TLS it is copied through a
    /// buffer. A file shorter than `len` closes the connection.
    ///
    /// ```no_run
    /// # fn main() -> std::io::Result<()> {
    /// let file = std::fs::File::open("index.html")?;
    /// let len = file.metadata()?.len();
    /// let resp = httpool::Response::file(file, len).with_content_type("text/html");
    /// # let _ = resp;
    /// # Ok(())
    /// # }
    /// ```
    pub fn file(file: std::fs::File, len: u64) -> Response {
        let body = Content(Payload::File { file, len });
        Response::status(200).with_own_type("application/octet-stream").with_body(body)
    }

    /// Replaces the status code.
    pub fn with_status(mut self, code: u16) -> Response {
        let fresh = Response::status(code);
        self.status = code;
        self.invalid = self.invalid.or(fresh.invalid);
        self
    }

    /// Replaces the body.
    pub fn with_body(mut self, body: impl Into<Content>) -> Response {
        self.body = body.into().0;
        self
    }

    /// Sets a `Content-Type` of the crate's own, known to be valid (a
    /// handler's is checked: [`Response::with_content_type`]).
    pub(crate) fn with_own_type(mut self, value: &'static str) -> Response {
        debug_assert!(is_valid_value(value), "{value:?}");
        self.content_type = Some(Cow::Borrowed(value));
        self
    }

    /// Sets `Content-Type`.
    pub fn with_content_type(mut self, value: impl Into<Cow<'static, str>>) -> Response {
        let value = value.into();
        if is_valid_value(&value) {
            self.content_type = Some(value);
        } else {
            error!("handler set an invalid Content-Type {value:?}; answering 500");
            self.invalid = Some("invalid header name or value");
        }
        self
    }

    /// Adds a header; see [`Response::set_header`].
    pub fn with_header(mut self, name: impl Into<Cow<'static, str>>, value: impl Into<Cow<'static, str>>) -> Response {
        self.set_header(name, value);
        self
    }

    /// Asks the server to close the connection after this response
    /// (`Connection: close`).
    pub fn with_close(mut self) -> Response {
        self.close = true;
        self
    }

    /// Adds a header.
    ///
    /// `Content-Type` replaces any earlier one. `Content-Length` is only
    /// checked against the body (a contradiction is a `500`) and is what a
    /// `HEAD` response or a reader body of unknown length is framed with.
    /// `Transfer-Encoding` is ignored: the crate chooses the framing.
    /// A `close` among the `Connection` options is the same as
    /// [`Response::with_close`] (and `keep-alive` is the server's to send);
    /// the other options go out as they are.
    pub fn set_header(&mut self, name: impl Into<Cow<'static, str>>, value: impl Into<Cow<'static, str>>) {
        let (name, value) = (name.into(), value.into());
        if !is_valid_name(&name) || !is_valid_value(&value) {
            error!("handler set an invalid header {name:?}; answering 500");
            self.invalid = Some("invalid header name or value");
        } else if name.eq_ignore_ascii_case("content-type") {
            self.content_type = Some(value);
        } else if name.eq_ignore_ascii_case("content-length") {
            match parse_decimal(value.as_bytes()) {
                Some(n) => self.declared_length = Some(n),
                None => self.invalid = Some("invalid Content-Length"),
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            debug!("ignoring Transfer-Encoding set by handler");
        } else if name.eq_ignore_ascii_case("connection") {
            // `close` and `keep-alive` are the server's to send (it sends
            // one of them, and closes after a `close`, RFC 9112 §9.6); any
            // other option goes out as the handler set it.
            let persistence = |t: &[u8]| t.eq_ignore_ascii_case(b"close") || t.eq_ignore_ascii_case(b"keep-alive");
            self.close |= tokens(value.as_bytes()).any(|t| t.eq_ignore_ascii_case(b"close"));
            if tokens(value.as_bytes()).any(persistence) {
                let others: Vec<&str> = value
                    .split(',')
                    .map(|t| t.trim_matches([' ', '\t']))
                    .filter(|t| !t.is_empty() && !persistence(t.as_bytes()))
                    .collect();
                if !others.is_empty() {
                    self.headers.push((name, others.join(", ").into()));
                }
            } else {
                self.headers.push((name, value));
            }
        } else {
            self.has_date |= name.eq_ignore_ascii_case("date");
            self.headers.push((name, value));
        }
    }

    /// The status code.
    pub fn status_code(&self) -> u16 {
        self.status
    }

    /// The body, when it is in memory (built from bytes or text); `None`
    /// for a reader, a file or a stream, which exist only as they are sent.
    ///
    /// ```
    /// use httpool::Response;
    ///
    /// assert_eq!(Response::text("hi").body_bytes(), Some(&b"hi"[..]));
    /// assert_eq!(Response::status(204).body_bytes(), Some(&b""[..]));
    /// assert_eq!(Response::reader(std::io::empty(), None).body_bytes(), None);
    /// ```
    pub fn body_bytes(&self) -> Option<&[u8]> {
        self.body.in_memory()
    }

    /// Adds `name` to `Vary`: to the first `Vary` header if there is one,
    /// unless it already names it or is `*` (RFC 9110 §12.5.5), else as a
    /// header of its own. Wrappers whose answer depends on a request header
    /// (`compress`, `cors`) call it.
    pub(crate) fn add_vary(&mut self, name: &'static str) {
        let vary = self.headers.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case("vary"));
        match vary {
            None => self.headers.push((Cow::Borrowed("Vary"), Cow::Borrowed(name))),
            Some((_, value)) => {
                let named = value.split(',').map(str::trim).any(|v| v == "*" || v.eq_ignore_ascii_case(name));
                if !named {
                    *value = Cow::Owned(format!("{value}, {name}"));
                }
            }
        }
    }

    /// The first value of the header `name` (case-insensitive) set on this
    /// response; `Content-Type` included.
    pub fn header(&self, name: &str) -> Option<&str> {
        if name.eq_ignore_ascii_case("content-type") {
            return self.content_type.as_deref();
        }
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| &**v)
    }
}

impl fmt::Debug for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<_> =
            self.headers.iter().map(|(n, v)| (n, if is_sensitive(n) { "<redacted>" } else { &**v })).collect();
        f.debug_struct("Response")
            .field("status", &self.status)
            .field("content_type", &self.content_type)
            .field("headers", &headers)
            .field("close", &self.close)
            .finish_non_exhaustive()
    }
}

pub(crate) mod build;
mod refusal;

pub(crate) use build::error_response;
pub(crate) use refusal::{Refusal, refusal};

#[cfg(test)]
mod tests {
    use super::Response;

    /// `holds_nothing` lets the connection loop skip the drop of a sent
    /// answer: it must say false for any answer that owns something.
    #[test]
    fn holds_nothing_only_when_nothing_is_owned() {
        assert!(Response::status(204).holds_nothing());
        assert!(Response::text("short").holds_nothing());
        assert!(Response::bytes(super::Content::from_static(b"static")).holds_nothing());
        assert!(Response::text("x").with_content_type("text/html").holds_nothing());
        for (what, owns) in [
            ("a long body", Response::text("x".repeat(1000))),
            ("a header", Response::text("x").with_header("X-A", "b")),
            ("a type made at run time", Response::text("x").with_content_type(String::from("text/x"))),
            ("a reader", Response::reader(std::io::empty(), None)),
            ("a writer", Response::stream(|_| Ok(()))),
            ("an upgrade", Response::upgrade(|_| {})),
        ] {
            assert!(!owns.holds_nothing(), "{what}");
        }
    }
}
