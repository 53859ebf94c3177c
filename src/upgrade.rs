//! Protocol upgrades (RFC 9110 §7.8): after a `101 Switching Protocols`
//! response the connection belongs to the handler's closure.

use std::fmt;
use std::io::{self, Read, Write};
use std::time::Duration;

use crate::io::{Patience, Ready, Transport, read_wait, waiting, write_all_wait};

/// The closure a `101` response hands the connection to.
pub(crate) type OnUpgrade = Box<dyn FnOnce(Upgraded<'_>) + Send>;

/// A connection after `101 Switching Protocols`: raw bytes both ways, for
/// WebSocket or any other protocol.
///
/// It lives on the worker that served the upgrade request and holds that
/// worker until the closure returns; then the connection is closed. Size the
/// pool for the upgraded connections you expect: they share
/// [`Server::max_streaming_workers`](crate::Server::max_streaming_workers)
/// (half of `max_workers` by default) with streamed bodies. Reads and writes block: a read waits
/// for the client at most the server's
/// [`upgrade_idle_timeout`](crate::Server::upgrade_idle_timeout) (60 s by
/// default), a write for room at most its
/// [`write_timeout`](crate::Server::write_timeout) (10 s), each then
/// failing with `TimedOut`; [`Upgraded::set_read_timeout`] and
/// [`Upgraded::set_write_timeout`] change them.
pub struct Upgraded<'a> {
    io: &'a mut dyn Transport,
    /// Bytes the client sent after the request head, already received.
    early: &'a [u8],
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

impl<'a> Upgraded<'a> {
    pub(crate) fn new(
        io: &'a mut dyn Transport,
        early: &'a [u8],
        read_timeout: Duration,
        write_timeout: Duration,
    ) -> Upgraded<'a> {
        Upgraded { io, early, read_timeout: Some(read_timeout), write_timeout: Some(write_timeout) }
    }

    /// Limits how long one read waits for the peer (`TimedOut` after it);
    /// `None` waits without limit.
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout;
    }

    /// Limits how long one write waits for the peer to take bytes; `None`
    /// waits without limit.
    pub fn set_write_timeout(&mut self, timeout: Option<Duration>) {
        self.write_timeout = timeout;
    }
}

impl Read for Upgraded<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.early.is_empty() {
            let n = buf.len().min(self.early.len());
            buf[..n].copy_from_slice(&self.early[..n]);
            self.early = &self.early[n..];
            return Ok(n);
        }
        read_wait(self.io, buf, self.read_timeout.unwrap_or(Duration::MAX))
    }
}

impl Write for Upgraded<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let patience = Patience::EachWait(self.write_timeout.unwrap_or(Duration::MAX));
        waiting(self.io, Ready::Writable, patience, |io| io.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        write_all_wait(self.io, &[], self.write_timeout.unwrap_or(Duration::MAX))
    }
}

impl fmt::Debug for Upgraded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upgraded").field("early_bytes", &self.early.len()).finish_non_exhaustive()
    }
}
