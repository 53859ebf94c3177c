//! Protocol upgrades (RFC 9110 §7.8): after a `101 Switching Protocols`
//! response the connection belongs to the handler's closure.

use std::fmt;
use std::io::{self, Read, Write};
use std::time::Duration;

use crate::io::{Patience, Ready, Transport, read_wait, waiting, write_all_wait};
use crate::proto::tokens;
use crate::request::Request;
use crate::response::Response;

/// The closure a `101` response hands the connection to.
pub(crate) type OnUpgrade = Box<dyn FnOnce(Upgraded<'_>) + Send>;

/// Why the upgrade `resp` may not answer `req`, if it may not: the request
/// asked for none (HTTP/1.1, `Connection: upgrade` and an `Upgrade` field:
/// RFC 9110 §7.8), or the answer names no protocol in its own `Upgrade`
/// (§15.2.2), or one the request did not offer (§7.8). The server answers
/// such a response with a `500`, and the access log says so.
pub(crate) fn refusal(req: &Request<'_>, resp: &Response) -> Option<&'static str> {
    let offered = || req.header_all("upgrade").flat_map(tokens);
    if !req.asks_for_upgrade() || offered().next().is_none() {
        return Some("upgrade response to a request that did not ask for one");
    }
    let mut chosen = resp
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("upgrade"))
        .flat_map(|(_, v)| tokens(v.as_bytes()))
        .peekable();
    if chosen.peek().is_none() {
        return Some("101 without an Upgrade field naming the protocol");
    }
    if !chosen.all(|protocol| offered().any(|o| o.eq_ignore_ascii_case(protocol))) {
        return Some("upgrade to a protocol the request did not offer");
    }
    None
}

/// A connection after `101 Switching Protocols`: raw bytes both ways, for
/// WebSocket or any other protocol.
///
/// It lives on the worker that served the upgrade request and holds that
/// worker until the closure returns; then the connection is closed. Size the
/// pool for the upgraded connections you expect: at most
/// [`Server::max_upgrades`](crate::Server::max_upgrades) are open at once
/// (half of `max_workers` by default). Reads and writes block: a read waits
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
