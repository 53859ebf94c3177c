//! Request bodies: the `Read` a handler gets, framed by `Content-Length` or
//! `chunked` (RFC 9112 §6 and §7.1).
//!
//! The reader never consumes a byte past the end of its body, so what
//! follows in the connection's buffer is the next request, untouched.

use std::io::{self, Read};
use std::time::{Duration, Instant};

use crate::config::BodyBounds;
use crate::error::{Error, ErrorKind, FromBody};
use crate::io::{Transport, now, read_wait, write_all_wait};

/// One read of body bytes, waiting up to `timeout` for them. A worker that
/// must wait takes one of the places for body waits
/// ([`Transport::begin_body_wait`]); with none left the read fails at once
/// (`ResourceBusy`), so slow uploads cannot hold every thread. At shutdown
/// the wait ends with the drain, as a timeout (see `Socket::shutdown`).
fn read_body_bytes(io: &mut dyn Transport, buf: &mut [u8], timeout: Duration) -> io::Result<usize> {
    if let Some(n) = now(|| io.read(buf))? {
        return Ok(n);
    }
    if !io.begin_body_wait() {
        return Err(BodyError::Busy.into_io());
    }
    let read = read_wait(io, buf, timeout);
    io.end_body_wait();
    read
}
use crate::proto::BodyKind;

mod chunked;
mod error;
pub(crate) use chunked::ChunkedDecoder;
pub(crate) use error::BodyError;

const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// `now + d`, or a century from now when `d` is too large to add (a
/// timeout of `Duration::MAX` means no limit).
fn far_after(now: Instant, d: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    now.checked_add(d.min(CENTURY)).unwrap_or(now)
}

enum Decoding {
    Length { left: u64 },
    Chunked(ChunkedDecoder),
}

/// A request body as `impl Read`.
///
/// Each read waits for the client up to the server's body read timeout, the
/// waits add up to no more than the least rate allows, and the whole body
/// must arrive within the body timeout. The first read sends `100 Continue`
/// when the client asked for it. Errors: the framing was malformed or over
/// the size limit (`InvalidData`), the client was too slow (`TimedOut`), too
/// many workers wait on request bodies already (`ResourceBusy`), or the
/// client went away (`UnexpectedEof`); after an error the server answers
/// with the matching status (400, 413, 408, 503) and closes.
pub struct Body<'a> {
    io: &'a mut dyn Transport,
    /// The connection's buffer after the head: `buf[pos..end]` are bytes
    /// received but not yet consumed.
    buf: &'a mut [u8],
    pos: usize,
    end: usize,
    framing: Decoding,
    received: u64,
    bounds: &'a BodyBounds,
    /// Bytes read from the socket (framing included), and the time spent
    /// waiting for them: the least rate's account.
    arrived: u64,
    waited: Duration,
    /// When the whole body must have arrived; set by the first socket read.
    deadline: Option<Instant>,
    send_continue: bool,
    error: Option<BodyError>,
    /// The failure in `error` is one an answer that stands without the body
    /// forgives (out of patience, no place to wait): kept before an
    /// upgrade, it is cleared if the answer turns out not to switch.
    forgivable: bool,
    /// What [`Body::settle`] found, once it has run.
    settled: Option<Settled>,
}

/// What [`Body::settle`] found, and for which answer.
#[derive(Clone, Copy, Debug)]
struct Settled {
    /// The body was read before a protocol switch.
    upgrading: bool,
    /// The body was read to its end.
    done: bool,
}

/// What the connection needs to know once the handler is done with a body.
pub(crate) struct BodyEnd {
    pub(crate) pos: usize,
    pub(crate) end: usize,
    pub(crate) error: Option<BodyError>,
    /// `100 Continue` was due but never sent: the client may be holding the
    /// body back, so the connection cannot be reused.
    pub(crate) continue_withheld: bool,
}

impl<'a> Body<'a> {
    pub(crate) fn new(
        kind: BodyKind,
        io: &'a mut dyn Transport,
        buf: &'a mut [u8],
        end: usize,
        bounds: &'a BodyBounds,
        expect_continue: bool,
    ) -> Body<'a> {
        let framing = match kind {
            BodyKind::Empty => Decoding::Length { left: 0 },
            BodyKind::Length(n) => Decoding::Length { left: n },
            BodyKind::Chunked => Decoding::Chunked(ChunkedDecoder::new(bounds.limit)),
        };
        let send_continue = expect_continue && !matches!(kind, BodyKind::Empty);
        Body {
            io,
            buf,
            pos: 0,
            end,
            framing,
            received: 0,
            bounds,
            arrived: 0,
            waited: Duration::ZERO,
            deadline: None,
            send_continue,
            error: None,
            forgivable: false,
            settled: None,
        }
    }

    /// True once the whole body has been read.
    pub fn is_complete(&self) -> bool {
        match &self.framing {
            Decoding::Length { left } => *left == 0,
            Decoding::Chunked(d) => d.is_done(),
        }
    }

    /// Bytes of body read so far.
    pub fn bytes_read(&self) -> u64 {
        self.received
    }

    /// The bytes still to come when `Content-Length` says it; `None` for a
    /// chunked body.
    pub(crate) fn remaining_len(&self) -> Option<u64> {
        match &self.framing {
            Decoding::Length { left } => Some(*left),
            Decoding::Chunked(_) => None,
        }
    }

    /// How reading failed, once it has.
    pub(crate) fn failure(&self) -> Option<BodyError> {
        self.error
    }

    /// The [`Error`] a failed read of this body stands for, by what the
    /// body says went wrong.
    pub(crate) fn read_error(&self, e: io::Error) -> Error {
        match self.error {
            Some(BodyError::TooLarge) => Error::body_too_large(usize::MAX),
            Some(BodyError::Malformed) => Error::new(ErrorKind::BadRequest, "malformed chunked body").with_source(e),
            _ => Error::from_body(e),
        }
    }

    fn fail(&mut self, e: BodyError) -> io::Error {
        self.error = Some(e);
        e.into_io()
    }

    fn io_error(&mut self, e: io::Error) -> io::Error {
        self.error = Some(match e.kind() {
            io::ErrorKind::TimedOut => BodyError::TimedOut,
            io::ErrorKind::ResourceBusy => BodyError::Busy,
            _ => BodyError::Io,
        });
        // Marked as the body's, so that a handler passing it on with `?`
        // is answered as the client's doing, not as a fault of its own.
        match FromBody::marks(&e) {
            true => e,
            false => {
                let kind = e.kind();
                FromBody::wrap(e, kind)
            }
        }
    }

    fn send_continue(&mut self) -> io::Result<()> {
        // A worker will wait for the body `100 Continue` asks for: with no
        // place free for that, the client is answered `503` before it sends
        // the body (the continue withheld, the connection then closes)
        // rather than after. (A place taken meanwhile still fails the wait.)
        if !self.io.body_wait_free() {
            return Err(self.fail(BodyError::Busy));
        }
        self.send_continue = false;
        let timeout = self.wait_budget()?;
        write_all_wait(self.io, CONTINUE, timeout).map_err(|e| self.io_error(e))
    }

    /// How long the next socket operation may wait: the read timeout, cut
    /// short by what is left of the whole-body deadline and of what the
    /// least rate allows.
    fn wait_budget(&mut self) -> io::Result<Duration> {
        let now = Instant::now();
        let deadline = *self.deadline.get_or_insert_with(|| far_after(now, self.bounds.total_timeout));
        let left = deadline.saturating_duration_since(now).min(self.rate_allows());
        if left.is_zero() {
            return Err(self.fail(BodyError::TimedOut));
        }
        Ok(left.min(self.bounds.read_timeout))
    }

    /// What is left of the waits the least rate allows: `read_timeout`, a
    /// second more for every `min_rate` bytes arrived, less the time waited.
    fn rate_allows(&self) -> Duration {
        let rate = self.bounds.min_rate;
        if rate == 0 {
            return Duration::MAX;
        }
        let nanos = u128::from(self.arrived) * 1_000_000_000 / u128::from(rate);
        let earned = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
        self.bounds.read_timeout.saturating_add(earned).saturating_sub(self.waited)
    }

    /// Reads body bytes from the socket into `buf[..]`, waiting up to the
    /// budget; the time it waits goes to the least rate's account.
    fn read_socket(&mut self, to_caller: Option<&mut [u8]>, want: usize) -> io::Result<usize> {
        let timeout = self.wait_budget()?;
        let started = Instant::now();
        let buf = match to_caller {
            Some(out) => &mut out[..want],
            None => &mut *self.buf,
        };
        let read = read_body_bytes(self.io, buf, timeout);
        self.waited = self.waited.saturating_add(started.elapsed());
        match read {
            Ok(0) => Err(self.fail(BodyError::Io)),
            Ok(n) => {
                self.arrived = self.arrived.saturating_add(n as u64);
                Ok(n)
            }
            Err(e) => Err(self.io_error(e)),
        }
    }

    fn read_length(&mut self, out: &mut [u8], left: u64) -> io::Result<usize> {
        let want = out.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = if self.pos < self.end {
            let n = want.min(self.end - self.pos);
            out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
            self.pos += n;
            n
        } else {
            // Nothing buffered: read straight into the caller's buffer, never
            // past the end of this body.
            self.read_socket(Some(out), want)?
        };
        self.framing = Decoding::Length { left: left - n as u64 };
        Ok(n)
    }

    fn read_chunked(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            let Decoding::Chunked(decoder) = &mut self.framing else {
                return Ok(0);
            };
            if decoder.is_done() {
                return Ok(0);
            }
            if self.pos < self.end {
                let input = &self.buf[self.pos..self.end];
                // A chunk too large for the limit fails as `TooLarge` at
                // the digit of its size that passes it (the decoder knows
                // the limit).
                let (used, produced) = match decoder.decode(input, out) {
                    Ok(r) => r,
                    Err(e) => return Err(self.fail(e)),
                };
                self.pos += used;
                if produced > 0 || decoder.is_done() {
                    return Ok(produced);
                }
            } else {
                self.fill()?;
            }
        }
    }

    /// Reads more framing bytes into the (empty) buffer.
    fn fill(&mut self) -> io::Result<()> {
        // A read into no room would return 0, taken for the end of stream.
        debug_assert!(!self.buf.is_empty(), "a chunked body with no buffer to read its framing into");
        self.pos = 0;
        self.end = 0;
        self.end = self.read_socket(None, 0)?;
        Ok(())
    }

    /// Reads and discards the rest of the body, up to `max` bytes. True when
    /// the body ended within the bound.
    pub(crate) fn drain(&mut self, max: u64) -> bool {
        self.discard_rest(max, false)
    }

    /// [`Body::drain`]; `upgrading`: before a protocol switch, which no
    /// answer made without the body can stand for, so how the read failed
    /// stays the body's failure: a wait refused for want of a place
    /// (`Busy`, `503`), a read that timed out (`408`).
    fn discard_rest(&mut self, max: u64, upgrading: bool) -> bool {
        if self.send_continue {
            // The client waits for 100 before sending; it was never asked.
            return false;
        }
        let patience = far_after(Instant::now(), self.bounds.drain_wait);
        let whole = self.deadline;
        self.deadline = Some(whole.map_or(patience, |d| d.min(patience)));
        let mut scratch = [0u8; 4096];
        let start = self.received;
        while !self.is_complete() && self.error.is_none() {
            if self.received - start > max {
                return false;
            }
            if self.read(&mut scratch).is_err() {
                // Out of patience for a body the handler did not want, or no
                // place left to wait for it: its response stands, and the
                // connection closes after it. Before an upgrade there is no
                // response to stand: the failure is answered in its stead.
                let patience_ran_out =
                    self.error == Some(BodyError::TimedOut) && whole.is_none_or(|d| d > Instant::now());
                self.forgivable = patience_ran_out || self.error == Some(BodyError::Busy);
                if self.forgivable && !upgrading {
                    self.error = None;
                }
                return false;
            }
        }
        self.error.is_none()
    }

    /// Reads and discards the rest of the body before a protocol switch,
    /// sending the `100 Continue` first if it is still due (RFC 9110 §7.8):
    /// what follows the body is the other protocol's. True when the body
    /// ended within `max` bytes.
    pub(crate) fn drain_before_upgrade(&mut self, max: u64) -> bool {
        if self.is_complete() {
            return true;
        }
        // A read of it failed already (the handler's: no place was free to
        // wait on it, say): the client is not asked for it now, to be
        // answered with that failure once it has sent it.
        if self.error.is_some() {
            return false;
        }
        if self.send_continue && self.send_continue().is_err() {
            // An answer that does not switch would not have asked for it.
            self.forgivable = self.error != Some(BodyError::Io);
            return false;
        }
        self.discard_rest(max, true)
    }

    /// Reads what the handler left of the body, once the handler is done
    /// with it: before a protocol switch (`upgrading`) as
    /// [`Body::drain_before_upgrade`], else as [`Body::drain`], up to the
    /// server's `max_drain_bytes`. True when the body was read to its end.
    /// Reads once: a later call for the same answer returns the first one's
    /// answer (the access log settles the body before the connection loop
    /// does, so as to log the answer a failure here puts in the handler's
    /// place). A handler around the access log may change whether the
    /// answer switches: a later call for the other kind settles the body
    /// again for it (see [`Body::settle_rest`]).
    ///
    /// Before an upgrade it first takes a place for the upgraded
    /// connection ([`Transport::begin_streaming`]); with none left the
    /// switch is off, the body is read as after any answer, and the answer
    /// is a `503` ([`BodyError::UpgradesFull`]).
    #[inline]
    pub(crate) fn settle(&mut self, upgrading: bool) -> bool {
        match self.settled {
            // The common case, on every request: nothing left to read.
            None if !upgrading && self.is_complete() => true,
            Some(s) if s.upgrading == upgrading => s.done,
            _ => self.settle_rest(upgrading),
        }
    }

    /// [`Body::settle`] when there is something to read, or when it was
    /// settled for the other kind of answer. Settled for an ordinary
    /// answer, the body is read on before a switch, as if for the first
    /// time (the failures that answer forgave are met again, its patience
    /// spent). Settled before a switch that is then not made, the place
    /// is given back and the answer stands as any does: no place for the
    /// switch, or a failure such an answer forgives, is no failure.
    #[inline(never)]
    fn settle_rest(&mut self, upgrading: bool) -> bool {
        let before = self.settled;
        let done = match before {
            Some(before) if before.upgrading => {
                self.io.end_streaming();
                if self.forgivable || self.error == Some(BodyError::UpgradesFull) {
                    self.error = None;
                }
                before.done
            }
            _ => {
                let max = self.bounds.max_drain;
                let placed = upgrading && self.io.begin_streaming();
                let done = match before {
                    _ if placed => self.drain_before_upgrade(max),
                    Some(before) => before.done,
                    None => self.is_complete() || self.drain(max),
                };
                if upgrading && !placed && self.error.is_none() {
                    self.error = Some(BodyError::UpgradesFull);
                }
                done
            }
        };
        self.settled = Some(Settled { upgrading, done });
        done
    }

    pub(crate) fn finish(&self) -> BodyEnd {
        BodyEnd { pos: self.pos, end: self.end, error: self.error, continue_withheld: self.send_continue }
    }
}

impl Read for Body<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.error {
            return Err(e.into_io());
        }
        if out.is_empty() || self.is_complete() {
            return Ok(0);
        }
        if self.send_continue {
            self.send_continue()?;
        }
        let n = match self.framing {
            Decoding::Length { left } => self.read_length(out, left)?,
            Decoding::Chunked(_) => self.read_chunked(out)?,
        };
        self.received += n as u64;
        if self.received > self.bounds.limit {
            return Err(self.fail(BodyError::TooLarge));
        }
        Ok(n)
    }
}

impl std::fmt::Debug for Body<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body")
            .field("bytes_read", &self.received)
            .field("complete", &self.is_complete())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
