//! The response a handler returns, and its encoding (RFC 9112 §4, §6).

use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use crate::headers::{is_sensitive, is_valid_name, is_valid_value};
use crate::parse::{parse_decimal, tokens};
use crate::request::Version;
use crate::status::{forbids_body, reason};
use crate::stream::BodyWriter;
use crate::upgrade::{OnUpgrade, Upgraded};

/// A response body.
///
/// Built with `From` from `&'static str`, `&'static [u8]` (sent from where
/// they are, never copied into a buffer of their own), `String` and
/// `Vec<u8>` (moved in); a reader with [`Response::reader`], a file with
/// [`Response::file`], a stream with [`Response::stream`].
///
/// Text borrowed for less than `'static` (from the request, say) is copied
/// by the caller: `Response::text(req.path().to_owned())`. A `From<&'a
/// str>` that copies could not stand beside the `&'static str` one that
/// does not (Rust's impls cannot tell lifetimes apart), and copying every
/// `&str` would copy literals and `include_str!` files on every request.
pub struct Content(pub(crate) Payload);

pub(crate) enum Payload {
    Static(&'static [u8]),
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
}

/// A closure that writes a streamed body.
pub(crate) type StreamFn = Box<dyn FnOnce(&mut BodyWriter<'_>) -> std::io::Result<()> + Send>;

impl fmt::Debug for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Payload::Static(b) => write!(f, "Content({} bytes)", b.len()),
            Payload::Owned(b) => write!(f, "Content({} bytes)", b.len()),
            Payload::Reader { len, .. } => write!(f, "Content(reader, length {len:?})"),
            Payload::Writer(_) => f.write_str("Content(writer)"),
            Payload::File { len, .. } => write!(f, "Content(file, {len} bytes)"),
        }
    }
}

impl From<&'static str> for Content {
    fn from(s: &'static str) -> Content {
        Content(Payload::Static(s.as_bytes()))
    }
}

impl From<&'static [u8]> for Content {
    fn from(b: &'static [u8]) -> Content {
        Content(Payload::Static(b))
    }
}

impl<const N: usize> From<&'static [u8; N]> for Content {
    fn from(b: &'static [u8; N]) -> Content {
        Content(Payload::Static(b))
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
    /// A response with this status and no body.
    ///
    /// A status outside `100..=999` makes the response invalid (the client
    /// gets a `500`).
    pub fn status(code: u16) -> Response {
        Response {
            status: code,
            content_type: None,
            headers: Vec::new(),
            body: Payload::Static(b""),
            declared_length: None,
            close: false,
            has_date: false,
            invalid: (!(100..=999).contains(&code)).then_some("status code out of range"),
            upgrade: None,
        }
    }

    /// `200 OK` with a `text/plain; charset=utf-8` body: a `&'static str`
    /// (not copied) or a `String`; see [`Content`].
    ///
    /// ```
    /// use httpool::{Request, Response};
    ///
    /// fn handler(req: &mut Request) -> Response {
    ///     match req.path() {
    ///         "/" => Response::text("Hello, world!\n"),
    ///         // Borrowed from the request: copied into a String.
    ///         path => Response::text(path.to_owned()).with_status(404),
    ///     }
    /// }
    /// # let _ = handler;
    /// ```
    pub fn text(body: impl Into<Content>) -> Response {
        Response::status(200).with_content_type("text/plain; charset=utf-8").with_body(body)
    }

    /// `200 OK` with an `application/octet-stream` body: a `&'static [u8]`
    /// (not copied), a `Vec<u8>`, or text; see [`Content`].
    pub fn bytes(body: impl Into<Content>) -> Response {
        Response::status(200).with_content_type("application/octet-stream").with_body(body)
    }

    /// `200 OK` streaming `reader`. With `len` the body is sent with
    /// `Content-Length` (the reader must yield exactly that many bytes, or the
    /// connection is closed); without it, `chunked` to HTTP/1.1 clients and
    /// close-delimited to HTTP/1.0 clients.
    pub fn reader(reader: impl Read + Send + 'static, len: Option<u64>) -> Response {
        let body = Content(Payload::Reader { reader: Box::new(reader), len });
        Response::status(200).with_content_type("application/octet-stream").with_body(body)
    }

    /// `101 Switching Protocols`: after it is sent, `on_upgrade` gets the
    /// raw connection (see [`Upgraded`]) on this worker; the connection is
    /// closed when it returns. Add the `Upgrade` header (and whatever the
    /// protocol needs, e.g. `Sec-WebSocket-Accept`); `Connection: upgrade`
    /// is written by the crate. The request must have asked for an upgrade
    /// (`Connection: upgrade` on HTTP/1.1), or the client gets a `500`.
    ///
    /// ```
    /// use std::io::{Read, Write};
    /// use httpool::{Request, Response};
    ///
    /// fn handler(req: &mut Request) -> Response {
    ///     if req.header("upgrade") != Some("echo") {
    ///         return Response::status(426).with_header("Upgrade", "echo");
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
    /// error from `write` closes the connection.
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
        Response::status(200).with_content_type("application/octet-stream").with_body(body)
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
    /// `Connection: close` is the same as [`Response::with_close`].
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
        } else if name.eq_ignore_ascii_case("connection")
            && tokens(value.as_bytes())
                .all(|t| t.eq_ignore_ascii_case(b"close") || t.eq_ignore_ascii_case(b"keep-alive"))
        {
            self.close |= tokens(value.as_bytes()).any(|t| t.eq_ignore_ascii_case(b"close"));
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
        match &self.body {
            Payload::Static(b) => Some(b),
            Payload::Owned(b) => Some(b),
            Payload::Reader { .. } | Payload::Writer(_) | Payload::File { .. } => None,
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

    /// The status line and a short text body for an error the crate answers
    /// itself; always closes.
    pub(crate) fn error(code: u16) -> Response {
        Response::status(code).with_content_type("text/plain; charset=utf-8").with_body(reason(code)).with_close()
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

/// How the body of a response is delimited on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body bytes follow (HEAD, 1xx, 204, 304); `Content-Length` may still
    /// be announced.
    None {
        announce: Option<u64>,
    },
    Length(u64),
    Chunked,
    /// The end of the body is the end of the connection (HTTP/1.0 streams).
    CloseDelimited,
}

/// Chooses the framing of `resp` for a request of `version` (RFC 9112 §6.3).
/// `Err` when the handler's headers contradict the body.
pub(crate) fn plan(resp: &Response, version: Version, is_head: bool) -> Result<Framing, &'static str> {
    if let Some(why) = resp.invalid {
        return Err(why);
    }
    if (resp.status == 101) != resp.upgrade.is_some() {
        return Err("101 needs Response::upgrade, and an upgrade needs 101");
    }
    if resp.status < 200 && resp.status != 101 {
        // An interim answer is not an answer: the client would take the
        // next final response for this request's.
        return Err("a 1xx status other than 101 is not a final response");
    }
    let known = match &resp.body {
        Payload::Static(b) => Some(b.len() as u64),
        Payload::Owned(b) => Some(b.len() as u64),
        Payload::Reader { len, .. } => *len,
        Payload::Writer(_) => None,
        Payload::File { len, .. } => Some(*len),
    };
    let len = match (known, resp.declared_length) {
        (Some(k), Some(d)) if k != d && !(is_head && k == 0) => {
            return Err("Content-Length contradicts the body");
        }
        (k, d) => d.or(k),
    };
    Ok(match (resp.status, len) {
        (code, _) if code < 200 || code == 204 => Framing::None { announce: None },
        (304, len) => Framing::None { announce: resp.declared_length.or(len.filter(|&n| n > 0)) },
        (_, len) if is_head => Framing::None { announce: len },
        (_, Some(n)) => Framing::Length(n),
        (_, None) if version == Version::Http11 => Framing::Chunked,
        (_, None) => Framing::CloseDelimited,
    })
}

/// Appends a whole answer the crate makes itself ([`Response::error`], with
/// any extra headers): head, `Connection: close` and its short body (none
/// for a HEAD request).
pub(crate) fn encode_closing(resp: &Response, is_head: bool, date: &[u8], out: &mut Vec<u8>) {
    let framing = plan(resp, Version::Http11, is_head).unwrap_or(Framing::None { announce: None });
    encode_in_memory(resp, framing, false, date, out);
}

/// Appends the head of `resp` as the answer to an HTTP/1.1 request and, when
/// `framing` sends one, its body if that is in memory (a reader, stream or
/// file body is the caller's to send).
pub(crate) fn encode_in_memory(resp: &Response, framing: Framing, keep_alive: bool, date: &[u8], out: &mut Vec<u8>) {
    encode_head(resp, framing, keep_alive, Version::Http11, date, out);
    if let Framing::Length(_) = framing {
        match &resp.body {
            Payload::Static(body) => out.extend_from_slice(body),
            Payload::Owned(body) => out.extend_from_slice(body),
            _ => {}
        }
    }
}

/// Appends the status line and headers of `resp` to `out`.
pub(crate) fn encode_head(
    resp: &Response,
    framing: Framing,
    keep_alive: bool,
    version: Version,
    date: &[u8],
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(b"HTTP/1.1 ");
    push_u64(out, u64::from(resp.status));
    out.push(b' ');
    out.extend_from_slice(reason(resp.status).as_bytes());
    out.extend_from_slice(b"\r\n");
    if !resp.has_date {
        push_header(out, b"Date", date);
    }
    if let Some(ct) = &resp.content_type {
        if !forbids_body(resp.status) {
            push_header(out, b"Content-Type", ct.as_bytes());
        }
    }
    for (name, value) in &resp.headers {
        push_header(out, name.as_bytes(), value.as_bytes());
    }
    match framing {
        Framing::Length(n) | Framing::None { announce: Some(n) } => {
            out.extend_from_slice(b"Content-Length: ");
            push_u64(out, n);
            out.extend_from_slice(b"\r\n");
        }
        Framing::Chunked => push_header(out, b"Transfer-Encoding", b"chunked"),
        Framing::None { announce: None } | Framing::CloseDelimited => {}
    }
    match (keep_alive, version) {
        _ if resp.upgrade.is_some() => push_header(out, b"Connection", b"upgrade"),
        (false, _) => push_header(out, b"Connection", b"close"),
        (true, Version::Http10) => push_header(out, b"Connection", b"keep-alive"),
        (true, Version::Http11) => {}
    }
    out.extend_from_slice(b"\r\n");
}

fn push_header(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal.
pub(crate) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

pub(crate) mod build;
#[cfg(test)]
mod tests;
