//! Bytes owed to the client: queued answers, and what a slow reader has not
//! taken yet.
//!
//! Answers are written without waiting. What the socket does not take at
//! once — queued answers, a large in-memory body (kept, not copied), a file
//! body (the file at its first unsent byte) — becomes an [`Unsent`] that the
//! connection keeps while it parks, watching for room to write, so a slow
//! reader holds no worker. This module only reports how far sending got;
//! what becomes of the connection is for the connection loop to decide.

use std::borrow::Cow;
use std::fs::File;
use std::io;
use std::time::{Duration, Instant};

use crate::io::{Transport, earned, now, write_all_wait};
use crate::stats::{Counters, Held};

/// The rest of the answers a client is slow to take: encoded bytes, then
/// a large in-memory body or a file body.
#[derive(Debug)]
pub(crate) struct Unsent {
    bytes: Vec<u8>,
    body: Cow<'static, [u8]>,
    /// A file body: the file at the first byte not sent, and how many are
    /// left.
    file: Option<(File, u64)>,
    /// Sent so far of `bytes`, then of `body`.
    bytes_at: usize,
    body_at: usize,
    /// The last time the client took bytes: the write timeout runs from it.
    since: Instant,
    /// When the answer was first held, and the bytes the client has taken
    /// since: the least rate's account (all the time parked is time spent
    /// waiting for the client).
    held_since: Instant,
    taken: u64,
    /// Counted against [`Config::max_unsent_bytes`](crate::config::Config)
    /// until dropped.
    _held: Held,
}

/// How sending went.
#[derive(Debug)]
pub(crate) enum Sent {
    /// Everything is out.
    All,
    /// The client has not taken everything: the rest, to keep parked.
    Held(Box<Unsent>),
}

/// How answers are sent: the bounds and the state of the server.
#[derive(Clone, Copy)]
pub(crate) struct Policy<'a> {
    /// Shutting down: nothing parks any more, so the worker waits for the
    /// client instead, up to `timeout` each time it stops taking bytes.
    pub(crate) stopping: bool,
    pub(crate) timeout: Duration,
    /// Held bytes are counted here against `cap`; past it, the worker waits.
    pub(crate) counters: &'a Counters,
    pub(crate) cap: u64,
}

/// Writes the queued answers in `out`, then `body`, then `file` (a file
/// and the length to send from its position), as far as the client takes
/// them now; `out` is left empty. What the client did not take is returned
/// to be kept parked — unless the server is stopping or too much is held
/// for slow clients already: then the worker waits for the client.
pub(crate) fn send<T: Transport>(
    io: &mut T,
    out: &mut Vec<u8>,
    body: Cow<'static, [u8]>,
    mut file: Option<(File, u64)>,
    policy: Policy<'_>,
) -> io::Result<Sent> {
    if policy.stopping {
        let sent = send_all_waiting(io, out, &body, &mut file, policy.timeout);
        out.clear();
        return sent.map(|()| Sent::All);
    }
    let (mut bytes_at, mut body_at) = (0, 0);
    let done = write_now(io, out, &mut bytes_at)
        .and_then(|done| Ok(done && write_now(io, &body, &mut body_at)? && send_file_now(io, &mut file)?))
        .and_then(|done| Ok(done && flush_now(io)?));
    match done {
        Ok(false) => {}
        other => {
            out.clear();
            return other.map(|_| Sent::All);
        }
    }
    // Only bytes that live in memory for this answer are counted (not a
    // static body, not a file).
    let owned = if let Cow::Owned(b) = &body { b.len() } else { 0 };
    let Some(held) = policy.counters.hold((out.len() - bytes_at + owned) as u64, policy.cap) else {
        // Too much is held for slow clients already: this worker waits.
        let waited = send_all_waiting(io, &out[bytes_at..], &body[body_at..], &mut file, policy.timeout);
        out.clear();
        return waited.map(|()| Sent::All);
    };
    let bytes = out[bytes_at..].to_vec();
    out.clear();
    let since = Instant::now();
    let unsent = Unsent { bytes, body, file, bytes_at: 0, body_at, since, held_since: since, taken: 0, _held: held };
    Ok(Sent::Held(Box::new(unsent)))
}

impl Unsent {
    /// When the connection times out unless the client takes more: `timeout`
    /// after it last took bytes, and no later than `min_rate` (bytes per
    /// second, 0: none) allows, as it does for a worker's waits
    /// ([`Server::write_min_rate`](crate::Server::write_min_rate)): all the
    /// time held may total `timeout` plus a second for every `min_rate`
    /// bytes taken. So a client taking a byte just often enough to beat
    /// `timeout` cannot keep a held answer (and its share of
    /// `max_unsent_bytes`) for ever. `None`: never.
    pub(crate) fn deadline(&self, timeout: Duration, min_rate: u64) -> Option<Instant> {
        // A deadline beyond what an `Instant` holds is none.
        let stall = self.since.checked_add(timeout);
        if min_rate == 0 {
            return stall;
        }
        let paced = self.held_since.checked_add(timeout.saturating_add(earned(self.taken, min_rate)));
        match (stall, paced) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Writes what the client takes now (waiting for it when the server is
    /// stopping): `Ok(true)` once everything is out (a TLS session's
    /// records included).
    pub(crate) fn resume<T: Transport>(&mut self, io: &mut T, policy: Policy<'_>) -> io::Result<bool> {
        if policy.stopping {
            let (bytes, body) = (&self.bytes[self.bytes_at..], &self.body[self.body_at..]);
            return send_all_waiting(io, bytes, body, &mut self.file, policy.timeout).map(|()| true);
        }
        let file_left = |u: &Unsent| u.file.as_ref().map_or(0, |(_, left)| *left);
        let before = (self.bytes_at, self.body_at, file_left(self));
        let done = write_now(io, &self.bytes, &mut self.bytes_at)?
            && write_now(io, &self.body, &mut self.body_at)?
            && send_file_now(io, &mut self.file)?
            && flush_now(io)?;
        let taken = (self.bytes_at - before.0) + (self.body_at - before.1);
        let taken = taken as u64 + (before.2 - file_left(self));
        if taken > 0 {
            self.since = Instant::now();
            self.taken = self.taken.saturating_add(taken);
        }
        Ok(done)
    }
}

/// Writes `bytes`, `body`, then the file body, waiting for the client up to
/// `timeout` each time it stops taking bytes.
fn send_all_waiting<T: Transport>(
    io: &mut T,
    bytes: &[u8],
    body: &[u8],
    file: &mut Option<(File, u64)>,
    timeout: Duration,
) -> io::Result<()> {
    write_all_wait(io, bytes, timeout)?;
    write_all_wait(io, body, timeout)?;
    match file {
        Some((file, left)) => io.send_file(file, *left, timeout),
        None => Ok(()),
    }
}

/// Sends what the socket takes now of a file body, if there is one.
fn send_file_now<T: Transport>(io: &mut T, file: &mut Option<(File, u64)>) -> io::Result<bool> {
    match file {
        Some((file, left)) => io.send_file_now(file, left),
        None => Ok(true),
    }
}

/// Writes `buf[*at..]` until done (`Ok(true)`) or the socket is full
/// (`Ok(false)`), advancing `at`.
#[inline]
fn write_now<T: Transport>(io: &mut T, buf: &[u8], at: &mut usize) -> io::Result<bool> {
    while *at < buf.len() {
        match now(|| io.write(&buf[*at..]))? {
            Some(0) => return Err(io::ErrorKind::WriteZero.into()),
            Some(n) => *at += n,
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// Sends what a TLS session holds: `Ok(false)` while the socket is full.
fn flush_now<T: Transport>(io: &mut T) -> io::Result<bool> {
    Ok(now(|| io.flush())?.is_some())
}
