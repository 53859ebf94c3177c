//! The crate's one public error type.

use std::{error, fmt, io};

/// What went wrong, broadly. More kinds may be added.
///
/// Each kind says which status a handler should answer with when the error
/// came from reading a request (`Request::read_body`, `form`, `json`,
/// `path_decoded`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A request body was larger than the limit given, or than the server's
    /// `max_body_bytes`: `413 Content Too Large`.
    BodyTooLarge,
    /// A request body was not valid UTF-8: `400 Bad Request`.
    InvalidUtf8,
    /// The request's content is malformed: a form that does not decode to
    /// UTF-8, JSON that does not parse or does not fit the type asked for,
    /// a path with a bad percent-escape, a chunked body with bad framing:
    /// `400 Bad Request`.
    BadRequest,
    /// The request body's `Content-Type` is not the one the helper reads
    /// (or is missing): `415 Unsupported Media Type`.
    UnsupportedMediaType,
    /// A mistake in the program, not the client's (a route parameter asked
    /// for that its route does not have): `500 Internal Server Error`.
    Internal,
    /// Any other I/O error; see [`Error::source`](std::error::Error::source).
    /// When it came from reading the request body (the client went away or
    /// was too slow), the server answers by itself (`408`, or closes): the
    /// handler's response is not sent.
    Io,
}

/// An error from httpool: a kind, a short context and an optional source.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    context: &'static str,
    source: Option<Box<dyn error::Error + Send + Sync>>,
}

impl Error {
    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub(crate) fn new(kind: ErrorKind, context: &'static str) -> Error {
        Error { kind, context, source: None }
    }

    pub(crate) fn with_source(mut self, source: impl Into<Box<dyn error::Error + Send + Sync>>) -> Error {
        self.source = Some(source.into());
        self
    }

    pub(crate) fn body_too_large(_limit: usize) -> Error {
        Error::new(ErrorKind::BodyTooLarge, "request body over the limit")
    }

    pub(crate) fn invalid_utf8() -> Error {
        Error::new(ErrorKind::InvalidUtf8, "request body is not UTF-8")
    }

    pub(crate) fn from_body(e: io::Error) -> Error {
        Error::new(ErrorKind::Io, "reading the request body").with_source(e)
    }

    /// The `io::Error` this error wraps, if any.
    fn io_source(&self) -> Option<&io::Error> {
        self.source.as_deref().and_then(|s| s.downcast_ref::<io::Error>())
    }
}

impl Error {
    /// The status a handler answers this error with (what its
    /// [`IntoResponse`](crate::IntoResponse) impl sends):
    ///
    /// | kind | status |
    /// |---|---|
    /// | [`BodyTooLarge`](ErrorKind::BodyTooLarge) | `413 Content Too Large` |
    /// | [`InvalidUtf8`](ErrorKind::InvalidUtf8) | `400 Bad Request` |
    /// | [`BadRequest`](ErrorKind::BadRequest) | `400 Bad Request` |
    /// | [`UnsupportedMediaType`](ErrorKind::UnsupportedMediaType) | `415 Unsupported Media Type` |
    /// | [`Internal`](ErrorKind::Internal) | `500 Internal Server Error` |
    /// | [`Io`](ErrorKind::Io), the body read timed out | `408 Request Timeout` |
    /// | [`Io`](ErrorKind::Io), the body was malformed, cut short, or the client reset the connection | `400 Bad Request` |
    /// | [`Io`](ErrorKind::Io), too many workers wait on bodies already | `503 Service Unavailable` |
    /// | [`Io`](ErrorKind::Io), anything else | `500 Internal Server Error` |
    ///
    /// When reading the request body failed, the server answers by itself
    /// (`400`, `408`, `413` or `503`, or it closes the connection) whatever
    /// the handler returns; the status still says what went wrong, and is
    /// what the access log records. Only a `500` is the server's own fault:
    /// the crate's helpers log the others at `debug`
    /// ([`Error::is_server_fault`]).
    pub fn status(&self) -> u16 {
        // Matched in full: a new kind must choose its status here.
        match self.kind {
            ErrorKind::BodyTooLarge => 413,
            ErrorKind::InvalidUtf8 | ErrorKind::BadRequest => 400,
            ErrorKind::UnsupportedMediaType => 415,
            ErrorKind::Internal => 500,
            ErrorKind::Io => self.io_source().map_or(500, |e| body_io_status(e.kind())),
        }
    }

    /// True when the error is the server's own fault ([`Error::status`] is
    /// `500`): not the client's, which sent something wrong, too slowly, or
    /// went away (`4xx`), nor the load's (`503`). The crate's helpers log
    /// the server's faults at `error`, and the others at `debug`, as a
    /// client's doings are.
    ///
    /// ```
    /// # fn handler(req: &mut httpool::Request) -> httpool::Response {
    /// match req.read_body(1 << 20) {
    ///     Ok(body) => httpool::Response::bytes(body),
    ///     Err(e) if e.is_server_fault() => panic!("a fault of the server's: {e}"),
    ///     Err(e) => httpool::Response::status(e.status()),
    /// }
    /// # }
    /// ```
    pub fn is_server_fault(&self) -> bool {
        self.status() == 500
    }

    /// Logs an error a handler answers with: the server's own I/O failure
    /// at `error`; the rest at `debug` (a client's doing, the load, or an
    /// [`ErrorKind::Internal`] mistake, logged at `error` where it is made).
    pub(crate) fn log_answered(&self) {
        let code = self.status();
        if self.kind == ErrorKind::Io && code == 500 {
            error!("handler failed: {}; answering {code}", crate::logging::Escaped(self));
        } else {
            debug!("handler answered an error: {}; sending {code}", crate::logging::Escaped(self));
        }
    }
}

/// The status for an I/O error that reading a request body returned: the
/// client's doing (`4xx`), the server's load (`503`), or else the server's
/// own failure (`500`).
pub(crate) fn body_io_status(kind: io::ErrorKind) -> u16 {
    use io::ErrorKind::*;
    match kind {
        TimedOut => 408,
        // Malformed or cut short, or the client went away mid-body: either
        // way its request was not whole.
        InvalidData | UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe | NotConnected => 400,
        ResourceBusy => 503,
        _ => 500,
    }
}

/// The source of an `io::Error` that reading a request body returned,
/// which marks it as the client's or the load's, not the handler's own:
/// its `Display` and `source` are the inner error's.
#[derive(Debug)]
pub(crate) struct FromBody(Box<dyn error::Error + Send + Sync>);

impl FromBody {
    /// `e` marked as a body read's, with its kind kept.
    pub(crate) fn wrap(e: impl Into<Box<dyn error::Error + Send + Sync>>, kind: io::ErrorKind) -> io::Error {
        io::Error::new(kind, FromBody(e.into()))
    }

    /// True when `e` came from reading a request body.
    pub(crate) fn marks(e: &io::Error) -> bool {
        e.get_ref().is_some_and(|inner| inner.is::<FromBody>())
    }
}

impl fmt::Display for FromBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl error::Error for FromBody {
    fn source(&self) -> Option<&(dyn error::Error + 'static)> {
        self.0.source()
    }
}

/// A deserialisation error's message after the place it is about: `.` is
/// the whole and `?` a place not known yet (input that ended early), so
/// neither is written. The message of an unknown or duplicate field names
/// that field, which is the path's last segment: the place is its parent
/// (`items[1]: unknown field `bogus``); a missing field's path is already
/// its parent's.
#[cfg(any(feature = "json", feature = "forms"))]
pub(crate) fn naming<E: fmt::Display>(e: &serde_path_to_error::Error<E>) -> String {
    let (path, inner) = (e.path().to_string(), e.inner().to_string());
    let names_itself = inner.starts_with("unknown field") || inner.starts_with("duplicate field");
    let place = if names_itself { path.rfind(['.', '[']).map_or("", |at| &path[..at]) } else { &path };
    if place.is_empty() || place == "." || place == "?" { inner } else { format!("`{place}`: {inner}") }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{}: {source}", self.context),
            None => f.write_str(self.context),
        }
    }
}

impl error::Error for Error {
    fn source(&self) -> Option<&(dyn error::Error + 'static)> {
        self.source.as_deref().map(|e| e as _)
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let kind = match e.kind {
            ErrorKind::Io => e.io_source().map_or(io::ErrorKind::Other, io::Error::kind),
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_source_chain() {
        let e = Error::from_body(io::Error::new(io::ErrorKind::TimedOut, "slow"));
        assert_eq!(e.kind(), ErrorKind::Io);
        assert_eq!(e.to_string(), "reading the request body: slow");
        assert!(error::Error::source(&e).is_some());
        assert_eq!(io::Error::from(e).kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn each_kind_has_its_status() {
        let io = |kind| Error::from_body(io::Error::new(kind, "x")).status();
        assert_eq!(Error::body_too_large(1).status(), 413);
        assert_eq!(Error::invalid_utf8().status(), 400);
        assert_eq!(Error::new(ErrorKind::BadRequest, "bad JSON").status(), 400);
        assert_eq!(Error::new(ErrorKind::UnsupportedMediaType, "not JSON").status(), 415);
        assert_eq!((io(io::ErrorKind::TimedOut), io(io::ErrorKind::InvalidData)), (408, 400));
        assert_eq!(io(io::ErrorKind::Other), 500);
    }

    #[test]
    fn a_client_going_away_or_the_server_too_busy_is_not_the_servers_fault() {
        let io = |kind| Error::from_body(io::Error::new(kind, "x"));
        for (kind, status) in [
            (io::ErrorKind::ConnectionReset, 400),
            (io::ErrorKind::ConnectionAborted, 400),
            (io::ErrorKind::BrokenPipe, 400),
            (io::ErrorKind::UnexpectedEof, 400),
            (io::ErrorKind::TimedOut, 408),
            (io::ErrorKind::ResourceBusy, 503),
        ] {
            assert_eq!((io(kind).status(), io(kind).is_server_fault()), (status, false), "{kind:?}");
        }
        assert!(io(io::ErrorKind::Other).is_server_fault());
        assert!(Error::new(ErrorKind::Internal, "no such parameter").is_server_fault());
        assert!(!Error::body_too_large(1).is_server_fault());
    }

    #[test]
    fn a_body_error_keeps_its_kind_and_text_and_is_known_as_one() {
        let marked = FromBody::wrap(
            io::Error::new(io::ErrorKind::ConnectionReset, "reset by peer"),
            io::ErrorKind::ConnectionReset,
        );
        assert_eq!((marked.kind(), marked.to_string()), (io::ErrorKind::ConnectionReset, "reset by peer".into()));
        assert!(FromBody::marks(&marked));
        assert!(!FromBody::marks(&io::Error::new(io::ErrorKind::ConnectionReset, "reset by peer")));
    }

    #[test]
    fn content_errors_become_invalid_data() {
        let e = Error::new(ErrorKind::UnsupportedMediaType, "expected a form");
        assert_eq!(e.to_string(), "expected a form");
        assert!(error::Error::source(&e).is_none());
        assert_eq!(io::Error::from(e).kind(), io::ErrorKind::InvalidData);
    }
}
