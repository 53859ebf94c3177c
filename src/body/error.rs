//! How a request body ended badly, the status that earns the client, and
//! the `io::Error` its handler's read returns.

use std::io;

use crate::error::FromBody;

/// How a body ended badly; decides the status the client gets instead of the
/// handler's response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyError {
    /// Bad chunked framing: 400.
    Malformed,
    /// More than `max_body_bytes`: 413.
    TooLarge,
    /// The client stopped sending for longer than the read timeout, or sent
    /// slower than the least rate: 408.
    TimedOut,
    /// As many workers as allowed wait on request bodies already
    /// (`Server::max_body_waits`): 503.
    Busy,
    /// The handler answered with an upgrade while as many workers as
    /// allowed stream bodies or run upgrades (`Server::max_streaming_workers`):
    /// 503.
    UpgradesFull,
    /// The client closed or the socket failed: no response is possible.
    Io,
}

impl BodyError {
    pub(crate) fn status(self) -> Option<u16> {
        match self {
            BodyError::Malformed => Some(400),
            BodyError::TooLarge => Some(413),
            BodyError::TimedOut => Some(408),
            BodyError::Busy | BodyError::UpgradesFull => Some(503),
            BodyError::Io => None,
        }
    }

    pub(super) fn into_io(self) -> io::Error {
        let (kind, text) = match self {
            BodyError::Malformed => (io::ErrorKind::InvalidData, "malformed chunked body"),
            BodyError::TooLarge => (io::ErrorKind::InvalidData, "request body over the size limit"),
            BodyError::TimedOut => (io::ErrorKind::TimedOut, "request body read timed out"),
            BodyError::Busy => (io::ErrorKind::ResourceBusy, "too many workers wait on request bodies"),
            BodyError::UpgradesFull => (io::ErrorKind::ResourceBusy, "too many upgraded connections"),
            BodyError::Io => (io::ErrorKind::UnexpectedEof, "request body cut short"),
        };
        FromBody::wrap(text, kind)
    }
}
