//! The crate's one public error type.

use std::{error, fmt, io};

/// What went wrong, broadly. More kinds may be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A request body was larger than the limit given.
    BodyTooLarge,
    /// A request body was not valid UTF-8.
    InvalidUtf8,
    /// Any other I/O error; see [`Error::source`](std::error::Error::source).
    Io,
}

/// An error from httpool: a kind, a short context and an optional source.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    context: &'static str,
    source: Option<io::Error>,
}

impl Error {
    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub(crate) fn body_too_large(_limit: usize) -> Error {
        Error { kind: ErrorKind::BodyTooLarge, context: "request body over the limit", source: None }
    }

    pub(crate) fn invalid_utf8() -> Error {
        Error { kind: ErrorKind::InvalidUtf8, context: "request body is not UTF-8", source: None }
    }

    pub(crate) fn from_body(e: io::Error) -> Error {
        Error { kind: ErrorKind::Io, context: "reading the request body", source: Some(e) }
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
    /// | [`Io`](ErrorKind::Io), the body read timed out | `408 Request Timeout` |
    /// | [`Io`](ErrorKind::Io), the body was malformed or cut short | `400 Bad Request` |
    /// | [`Io`](ErrorKind::Io), anything else | `500 Internal Server Error` |
    ///
    /// When reading the request body failed, the server answers by itself
    /// (`400`, `408` or `413`, or it closes the connection) whatever the
    /// handler returns; the status still says what went wrong.
    pub fn status(&self) -> u16 {
        // Matched in full: a new kind must choose its status here.
        match self.kind {
            ErrorKind::BodyTooLarge => 413,
            ErrorKind::InvalidUtf8 => 400,
            ErrorKind::Io => match self.source.as_ref().map(io::Error::kind) {
                Some(io::ErrorKind::TimedOut) => 408,
                Some(io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof) => 400,
                _ => 500,
            },
        }
    }
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
        self.source.as_ref().map(|e| e as _)
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let kind = match e.kind {
            ErrorKind::BodyTooLarge | ErrorKind::InvalidUtf8 => io::ErrorKind::InvalidData,
            ErrorKind::Io => e.source.as_ref().map_or(io::ErrorKind::Other, io::Error::kind),
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
}
