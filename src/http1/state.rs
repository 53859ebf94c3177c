//! What a connection keeps between turns: its read buffer ([`ReadBuf`]),
//! its phase ([`Phase`]: deadlines and what happens at each), how far the
//! bytes received were parsed and what a body being collected still needs,
//! and whether its handler calls block.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use super::phase::{Drain, Dry, Phase, Then};
use super::read_buf::{ReadBuf, Released};
use super::worker::Ran;
use crate::body::{BodyError, ChunkedDecoder};
use crate::config::{Config, FREE_PENDING_BYTES};
use crate::parse::{Limits, ParseError, trim_empty_lines};
use crate::stats::{Counters, Held};

/// Handler calls a connection is expected to block after one did: a client
/// that asks for slow work tends to ask again, with quick requests between.
const SLOW_MEMORY: u8 = 4;

/// Handler calls after one was seen asleep that may start a thread for the
/// seat they let go (see [`Slow::Slept`]), though nobody looks at them: then
/// one must be seen asleep again. Longer than [`SLOW_MEMORY`]: each time it
/// runs out, a call that blocks may leave its seat unwatched for a monitor
/// tick, when no thread is idle.
pub(crate) const SLEPT_MEMORY: u8 = 16;

/// Whether a connection's next handler call is expected to block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slow {
    No,
    /// Calls ran long lately, and none was seen asleep: they may compute.
    Long,
    /// A call lately was seen asleep: it blocked.
    Slept,
}

/// When parsing the unparsed bytes again can tell more than last time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Reparse {
    /// Nothing was parsed since the bytes last changed.
    #[default]
    Now,
    /// The last parse of `len` bytes found an unfinished head: only a new
    /// line end, twice the bytes, or crossing a size limit can change that.
    Head { len: usize },
    /// The head (`head` bytes) is whole; its body, or the first part of it
    /// the server collects, is awaited until `len` bytes are in.
    Body { head: usize, len: usize },
    /// The head is whole and its chunked body is awaited, read as it comes
    /// (see [`ChunkScan`]).
    Chunked(ChunkScan),
}

impl Reparse {
    /// The bytes a body being collected needs in the buffer, from the
    /// first unparsed byte; 0 when none is.
    fn awaited_len(&self) -> usize {
        match *self {
            Reparse::Body { len, .. } => len,
            Reparse::Chunked(ChunkScan { limit, .. }) => limit,
            _ => 0,
        }
    }
}

/// Per-connection state that survives parking.
#[derive(Debug)]
pub(crate) struct ConnState {
    buf: ReadBuf,
    reparse: Reparse,
    pub(crate) phase: Phase,
    /// Requests answered on this connection.
    pub(crate) requests: u64,
    /// Non-zero after a handler call on this connection blocked (ran across
    /// monitor ticks): the next calls are expected to block too, until
    /// [`SLOW_MEMORY`] quick ones in a row.
    slow_score: u8,
    /// Non-zero for [`SLEPT_MEMORY`] calls after one was seen asleep (not
    /// only long: see [`Ran`]).
    slept: u8,
    /// The share of the server-wide budget for collected bodies that a
    /// buffer grown past the read buffer's size holds, until it shrinks back.
    share: Option<Held>,
    /// The share of the server-wide budget for unfinished heads
    /// (`max_pending_head_bytes`) that the buffer a parked connection keeps
    /// holds, past [`FREE_PENDING_BYTES`].
    head_share: Option<Held>,
    /// The budget was spent when this request's body needed more room: it
    /// is collected no further than the read buffer.
    refused: bool,
    /// An answer was cut short: the connection closes without ending its
    /// session as a whole one (no TLS close_notify).
    torn: bool,
    /// The client has sent a request before the answer to the one before
    /// it: it may have sent more that no read has seen yet, so a close the
    /// server chooses lingers (see [`close`](super::close::close)).
    pub(crate) pipelined: bool,
    /// Where the buffered request's call stands among the calls expected
    /// to block (see `shared/growth.rs`).
    place: Place,
}

/// Whether a request waits for a place among the calls expected to block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// None asked for.
    Unasked,
    /// Waiting in the queue: the request is whole, its head deadline no
    /// longer runs.
    Waits,
    /// Given one: the request runs when served next.
    Given,
}

impl Default for ConnState {
    fn default() -> ConnState {
        ConnState::new(None)
    }
}

impl ConnState {
    /// A new connection; `accepted` starts its first head deadline.
    pub(crate) fn new(accepted: Option<Instant>) -> ConnState {
        ConnState {
            buf: ReadBuf::default(),
            reparse: Reparse::Now,
            phase: Phase::new(accepted),
            requests: 0,
            slow_score: 0,
            slept: 0,
            share: None,
            head_share: None,
            refused: false,
            torn: false,
            pipelined: false,
            place: Place::Unasked,
        }
    }

    /// The buffered request's call found no place: it waits, and is parsed
    /// again when served.
    pub(crate) fn wait_for_place(&mut self) {
        self.place = Place::Waits;
        self.reparse_now();
    }

    /// The waiting request has a place (see [`ConnState::wait_for_place`]).
    pub(crate) fn admitted(&mut self) {
        self.place = Place::Given;
    }

    /// True, once, when the request has been given a place.
    pub(crate) fn take_place(&mut self) -> bool {
        let given = self.place == Place::Given;
        self.place = Place::Unasked;
        given
    }

    /// A whole request waits for (or was given) a place: no deadline of
    /// the client's runs.
    pub(crate) fn waits_for_place(&self) -> bool {
        self.place != Place::Unasked
    }

    /// An answer was cut short instead of `then` (by the socket, or by its
    /// body): what follows ([`Then::cut_short`]); the session will end
    /// torn.
    pub(crate) fn cut_short(&mut self, then: Then) -> Then {
        self.torn = true;
        then.cut_short()
    }

    /// True when an answer was cut short (see [`ConnState::cut_short`]).
    pub(crate) fn is_torn(&self) -> bool {
        self.torn
    }

    /// When the current park ends: the phase's deadline, with what a body
    /// being collected has earned.
    pub(crate) fn deadline(&self, config: &Config) -> Option<Instant> {
        self.phase.deadline(config, || self.body_allowance(config))
    }

    /// What the connection does when its socket has nothing now (see
    /// [`Phase::when_dry`]).
    pub(crate) fn when_dry(&self, config: &Config, drain: Drain) -> Dry {
        self.phase.when_dry(|| self.deadline(config), drain)
    }

    /// The time a body being collected has earned beyond the head timeout:
    /// a second per `body_min_rate` bytes received (the body timeout when
    /// there is no least rate).
    fn body_allowance(&self, config: &Config) -> Duration {
        let head = match self.reparse {
            Reparse::Body { head, .. } | Reparse::Chunked(ChunkScan { head, .. }) => head,
            _ => return Duration::ZERO,
        };
        let rate = config.body_min_rate;
        if rate == 0 {
            return config.body_timeout;
        }
        let received = self.buf.unparsed().len().saturating_sub(head) as u128;
        Duration::from_nanos(u64::try_from(received * 1_000_000_000 / u128::from(rate)).unwrap_or(u64::MAX))
    }

    /// True when something begun must be finished, even at shutdown (see
    /// [`Phase::must_finish`]).
    pub(crate) fn must_finish(&self) -> bool {
        self.phase.must_finish()
    }

    /// True while an answer waits for the client to take it.
    pub(crate) fn is_sending(&self) -> bool {
        self.phase.kind() == super::phase::Kind::Sending
    }

    /// True while an event stream is under way.
    pub(crate) fn is_streaming(&self) -> bool {
        self.phase.kind() == super::phase::Kind::Streaming
    }

    /// True when the connection parks watching for room to write: an answer
    /// or a stream's bytes wait for the client to take them.
    pub(crate) fn waits_for_room(&self) -> bool {
        match self.phase.kind() {
            super::phase::Kind::Sending => true,
            super::phase::Kind::Streaming => self.phase.stream_ref().is_some_and(|s| s.is_blocked()),
            _ => false,
        }
    }

    /// The feed of the event stream under way, if one is.
    pub(crate) fn feed(&self) -> Option<&std::sync::Arc<crate::feed::Feed>> {
        self.phase.stream_ref().map(|s| s.feed())
    }

    /// True when no request has begun: the connection waits for one, and
    /// has received nothing since but empty lines.
    pub(crate) fn awaits_request(&self) -> bool {
        matches!(self.phase.kind(), super::phase::Kind::Waiting { .. }) && trim_empty_lines(self.unparsed()).is_empty()
    }

    /// True when it waits for a next request on a kept-alive connection
    /// (not its first), and nothing of one has come (at a turn's end the
    /// first byte of a head moves it to the head phase: see
    /// [`ConnState::begin_head`]): a server short of connections may close
    /// it (RFC 9112 §9.5).
    pub(crate) fn idle_kept_alive(&self) -> bool {
        self.phase.waits_kept_alive()
    }

    /// True when received bytes wait to be parsed.
    pub(crate) fn has_unparsed(&self) -> bool {
        self.buf.has_unparsed()
    }

    /// True when the request in the buffer, whole or not, is a HEAD
    /// request: an error answer to it carries no body.
    pub(crate) fn holds_head_request(&self) -> bool {
        trim_empty_lines(self.unparsed()).starts_with(b"HEAD ")
    }

    pub(crate) fn unparsed(&self) -> &[u8] {
        self.buf.unparsed()
    }

    /// The unparsed bytes, and the stream under way (a session reads them).
    pub(crate) fn stream_and_input(&mut self) -> (Option<&mut super::stream::Streaming>, &[u8]) {
        (self.phase.streaming(), self.buf.unparsed())
    }

    pub(crate) fn unparsed_mut(&mut self) -> &mut [u8] {
        self.buf.unparsed_mut()
    }

    /// The buffer from the first unparsed byte: the head, then what follows.
    pub(crate) fn split_at_head(&mut self, head_len: usize) -> (&[u8], &mut [u8]) {
        self.buf.split_at_head(head_len)
    }

    /// The whole buffer, for reads whose bytes are not kept (a lingering
    /// close).
    pub(crate) fn scratch_space(&mut self) -> &mut [u8] {
        self.buf.scratch_space()
    }

    /// Bytes after the unparsed ones as they were received, handed to an
    /// upgrade. A buffer that holds a share of a budget (grown for a body,
    /// or kept for a head that arrived slowly) goes now, with its share (an
    /// upgraded connection may last for hours): its bytes are copied out.
    pub(crate) fn take_unparsed(&mut self) -> Cow<'_, [u8]> {
        let body_share = self.share.take().is_some();
        let head_share = self.head_share.take().is_some();
        if body_share || head_share {
            let early = self.buf.take_unparsed().to_vec();
            self.buf = ReadBuf::default();
            return Cow::Owned(early);
        }
        Cow::Borrowed(self.buf.take_unparsed())
    }

    /// Gets a worker's buffer for the turn (see [`ReadBuf::attach`]).
    pub(crate) fn attach(&mut self, pool: &mut Vec<Vec<u8>>, size: usize) {
        self.buf.attach(pool, size);
    }

    /// Makes the buffer full-size (a request is about to be answered: a
    /// body reader needs the room), keeping unparsed bytes.
    #[inline(always)]
    pub(crate) fn make_full(&mut self, pool: &mut Vec<Vec<u8>>, size: usize) {
        self.buf.make_full(pool, size);
    }

    /// Room to read into: empty lines before an unfinished head are dropped,
    /// unparsed bytes move to the front of a full buffer, and a small one
    /// grows (doubling, up to `size`, or to the bytes a body being collected
    /// needs).
    pub(crate) fn read_space(&mut self, size: usize) -> &mut [u8] {
        if let (Reparse::Head { len }, Some(b'\r' | b'\n')) = (self.reparse, self.unparsed().first()) {
            self.drop_empty_lines(len);
        }
        let (share, reparse) = (&self.share, &self.reparse);
        self.buf.space(|| if share.is_some() { size.max(reparse.awaited_len()) } else { size })
    }

    /// `n` bytes were read into [`ConnState::read_space`].
    pub(crate) fn filled(&mut self, n: usize) {
        self.buf.filled(n);
    }

    /// Ends a turn: gives a worker's buffer back to `pool`, keeps only
    /// unparsed bytes (empty lines dropped), and starts the phase's clock.
    /// A head begun in the buffer starts the head clock only when the
    /// connection is `to_wait_for_the_client`: one that yielded its turn
    /// waits for a worker, with whole requests perhaps buffered, and the
    /// next turn starts the clock if it must read on.
    pub(crate) fn detach(&mut self, pool: &mut Vec<Vec<u8>>, size: usize, now: Instant, to_wait_for_the_client: bool) {
        // Empty lines before a request line are ignored (RFC 9112 §2.2);
        // they start no head and move no clock.
        let empty = self.unparsed().len() - trim_empty_lines(self.unparsed()).len();
        if empty > 0 {
            self.buf.skip(empty);
            self.reparse = Reparse::Now;
        }
        // An empty buffer restarts at its front.
        let (start, end) = self.buf.bounds();
        self.buf.consume(start, end);
        if to_wait_for_the_client {
            self.begin_head(now, false);
        }
        self.phase.stamp(now);
        if self.buf.release(pool, size) == Released::Shrunk {
            // Grown for a body now answered: the share goes back.
            self.share = None;
        }
        if self.head_share.is_some() && self.parked_head_bytes(size) <= FREE_PENDING_BYTES {
            self.head_share = None;
        }
    }

    /// The bytes the buffer keeps for a request not yet handed to its
    /// handler once the turn ends (see [`ReadBuf::release`]): its unfinished
    /// head, or the start of a body collected within the read buffer's
    /// `size`. 0 when nothing is unparsed, or when a buffer grown for a
    /// body holds a share of `max_buffered_body_bytes` instead.
    fn parked_head_bytes(&self, size: usize) -> usize {
        if self.share.is_some() || !self.has_unparsed() { 0 } else { self.buf.kept_capacity(size) }
    }

    /// Before the connection parks to wait for the rest of a request:
    /// takes (or grows) the share of `max_pending_head_bytes` that the
    /// buffer it keeps needs past [`FREE_PENDING_BYTES`]. False when
    /// the budget has no room: the connection must not park holding it.
    /// Inlined: a connection parking with nothing unparsed (after each
    /// answer, when the client waits for it) holds nothing, and must pay
    /// no more than this test.
    #[inline(always)]
    pub(crate) fn hold_parked_head(&mut self, counters: &Counters, config: &Config) -> bool {
        if !self.has_unparsed() && self.head_share.is_none() {
            return true;
        }
        self.hold_parked_head_bytes(counters, config.max_pending_head_bytes, config.read_buffer_size())
    }

    #[inline(never)]
    fn hold_parked_head_bytes(&mut self, counters: &Counters, cap: u64, size: usize) -> bool {
        let kept = self.parked_head_bytes(size);
        if kept <= FREE_PENDING_BYTES {
            self.head_share = None;
            return true;
        }
        let kept = kept as u64;
        match &mut self.head_share {
            Some(held) => held.grow_to(kept, cap),
            None => {
                self.head_share = counters.hold_pending(kept, cap);
                self.head_share.is_some()
            }
        }
    }

    /// Moves a connection waiting for a request to the head phase once the
    /// bytes received begin one, or `below` says input has begun that the
    /// buffer does not show yet (TLS: part of a record). A turn's end does
    /// it (`detach`), and so does a worker that must wait for the rest of a
    /// head within its turn (at shutdown, when nothing parks).
    pub(crate) fn begin_head(&mut self, now: Instant, below: bool) {
        // Empty lines before a request line begin no head (RFC 9112 §2.2),
        // nor does a CR first: it can only start one (what else a head may
        // have after it is refused when parsed).
        let rest = trim_empty_lines(self.unparsed());
        if below || rest.first().is_some_and(|&b| b != b'\r') {
            self.phase.start_head(now);
        }
    }

    /// The bytes up to `to` were a request (and its body), and received
    /// bytes now end at `end` (a body reader may have read more): the
    /// connection waits for the next request, whose clock starts when it
    /// parks.
    pub(crate) fn consumed(&mut self, to: usize, end: usize) {
        self.buf.consume(to, end);
        self.reparse = Reparse::Now;
        self.refused = false;
        self.phase.idle();
    }

    /// A lingering close after an answer already out (its write side
    /// shut): what is unparsed is dropped, and what the client still sends
    /// is read and discarded until `until`. A buffer grown for a body goes
    /// now, with its share of the budget: the reads ahead keep nothing.
    pub(crate) fn linger_after_answer(&mut self, until: Instant) {
        self.discard_unparsed();
        if self.share.take().is_some() {
            self.buf = ReadBuf::default();
        }
        self.phase.linger(until);
    }

    /// Drops every unparsed byte: nothing more is served on the connection.
    pub(crate) fn discard_unparsed(&mut self) {
        let (_, end) = self.buf.bounds();
        self.consumed(end, end);
    }

    /// Offsets into the buffer of the unparsed bytes.
    pub(crate) fn bounds(&self) -> (usize, usize) {
        self.buf.bounds()
    }

    /// Moves unparsed bytes to the front of the buffer, so the space after a
    /// head (at most `max_head_bytes`) is at least the slack a body reader
    /// needs.
    pub(crate) fn make_body_room(&mut self) {
        self.buf.compact();
    }

    /// True when parsing the unparsed bytes again may tell more than the
    /// last parse did: a trickled head is parsed when a line ends or a byte
    /// arrives that no head may hold where it is (a control, a CR, the byte
    /// after a CR), at each doubling and at each size limit it crosses — not
    /// at every byte, so the work stays linear in its size. (A malformed
    /// token in an unfinished line is found when the line ends.)
    #[inline(always)]
    pub(crate) fn worth_parsing(&self, limits: &Limits) -> bool {
        match self.reparse {
            Reparse::Now => true,
            _ => self.worth_parsing_again(limits),
        }
    }

    #[inline(never)]
    fn worth_parsing_again(&self, limits: &Limits) -> bool {
        let (start, end) = self.buf.bounds();
        let len = end - start;
        match self.reparse {
            Reparse::Now => true,
            Reparse::Body { len: needed, .. } => len >= needed,
            // Decided by `scan_awaited`.
            Reparse::Chunked(_) => false,
            Reparse::Head { len: old } => {
                let crossed = |limit: usize| old < limit && len >= limit;
                let (seen, new) = self.unparsed().split_at(old.min(len));
                len >= old.saturating_mul(2)
                    || (seen.last() == Some(&b'\r') && len > old)
                    || new.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
                    || crossed(limits.max_uri_bytes.saturating_add(65))
                    || crossed(limits.max_head_bytes)
            }
        }
    }

    /// The last parse found the head unfinished.
    pub(crate) fn parsed_partial(&mut self) {
        self.reparse = Reparse::Head { len: self.unparsed().len() };
    }

    /// Drops the empty lines before an unfinished head, before more of it
    /// is read: they are no part of it (RFC 9112 §2.2) and count for no
    /// limit, so they must neither fill the buffer nor move the points
    /// where [`ConnState::worth_parsing`] parses again. What the last parse
    /// saw shrinks by as much (to nothing if it had not seen them all).
    #[cold]
    fn drop_empty_lines(&mut self, parsed: usize) {
        let dropped = self.unparsed().len() - trim_empty_lines(self.unparsed()).len();
        self.buf.skip(dropped);
        self.reparse = Reparse::Head { len: parsed.saturating_sub(dropped) };
    }

    /// Drops the empty lines before a request line (RFC 9112 §2.2) ahead
    /// of a parse. They are no part of the head, nor of its size limit;
    /// parsed with it, they counted in its length, and a head within its
    /// limit behind them could fill the read buffer, leaving a body read
    /// on the socket no room (the room a body needs is the buffer's size
    /// past `max_head_bytes`).
    #[cold]
    pub(crate) fn skip_empty_lines(&mut self) {
        let dropped = self.unparsed().len() - trim_empty_lines(self.unparsed()).len();
        self.buf.skip(dropped);
    }

    /// The head is whole; its body is awaited until `len` bytes are in.
    pub(crate) fn await_body(&mut self, head: usize, len: usize) {
        self.reparse = Reparse::Body { head, len };
    }

    /// Awaits a chunked body, `scan` having read what is here, until it
    /// ends or its limit is in.
    pub(crate) fn await_chunked(&mut self, scan: ChunkScan) {
        self.reparse = Reparse::Chunked(scan);
    }

    /// True when the body being collected needs the buffer to grow past
    /// `size` and the buffer holds no share of the server-wide budget.
    pub(crate) fn needs_budget(&self, size: usize) -> bool {
        self.share.is_none()
            && !self.refused
            && self.awaited_len() > size
            && self.buf.is_full()
            && self.buf.capacity() >= size
    }

    /// The share was given: the buffer may grow past the read buffer's
    /// size, as far as a body being collected needs.
    pub(crate) fn budget_given(&mut self, held: Held) {
        self.share = Some(held);
    }

    /// The server-wide budget is spent: the request is collected no
    /// further than the read buffer holds, and parsed again to go on.
    pub(crate) fn budget_refused(&mut self) {
        self.refused = true;
        self.reparse = Reparse::Now;
    }

    /// True when this request may not collect past the read buffer.
    pub(crate) fn budget_spent(&self) -> bool {
        self.refused
    }

    /// The bytes a body being collected needs in the buffer, from the
    /// first unparsed byte; 0 when none is.
    fn awaited_len(&self) -> usize {
        self.reparse.awaited_len()
    }

    /// Reads what arrived of a chunked body being collected; once it ended,
    /// failed or reached its limit, the head is parsed again (and the body
    /// scanned once more, whole, to decide).
    #[inline(always)]
    pub(crate) fn scan_awaited(&mut self) {
        if let Reparse::Chunked(_) = self.reparse {
            self.scan_chunked();
        }
    }

    #[inline(never)]
    fn scan_chunked(&mut self) {
        let Reparse::Chunked(mut scan) = self.reparse else { return };
        self.reparse = if scan.advance(self.buf.unparsed()) { Reparse::Now } else { Reparse::Chunked(scan) };
    }

    /// Bytes changed in place (a rewritten version): parse again.
    pub(crate) fn reparse_now(&mut self) {
        self.reparse = Reparse::Now;
    }

    /// True when the next handler call is expected to block.
    pub(crate) fn expects_slow_handler(&self) -> bool {
        self.slow_score > 0
    }

    /// Whether the next handler call is expected to block, and why.
    pub(crate) fn slow_handler(&self) -> Slow {
        match (self.slow_score, self.slept) {
            (0, _) => Slow::No,
            (_, 0) => Slow::Long,
            _ => Slow::Slept,
        }
    }

    /// A handler call ended, and went as `ran` says. A call seen asleep
    /// counts for the next [`SLEPT_MEMORY`] ones, which nobody looks at
    /// (the seat is let go before them): then they must be seen asleep
    /// again, or a call seen once, by mistake, would count for good.
    pub(crate) fn handler_ran(&mut self, ran: Ran) {
        match ran {
            Ran::Quick => {
                self.slow_score = self.slow_score.saturating_sub(1);
                // No longer expected to block: what was seen goes too.
                self.slept = if self.slow_score == 0 { 0 } else { self.slept.saturating_sub(1) };
            }
            Ran::Long => {
                self.slow_score = SLOW_MEMORY;
                self.slept = self.slept.saturating_sub(1);
            }
            Ran::Asleep => (self.slow_score, self.slept) = (SLOW_MEMORY, SLEPT_MEMORY),
        }
    }

    /// Capacity of the read buffer, for tests of what a parked connection
    /// keeps.
    #[cfg(test)]
    pub(crate) fn buffer_len(&self) -> usize {
        self.buf.capacity()
    }
}

/// True when `body` holds a whole chunked body (its last chunk and
/// trailers), or enough of one to refuse it (bad framing, a chunk past
/// `max_body`): a client that sent `Expect: 100-continue` and the body at
/// once needs no `100 Continue`, and one whose body will be refused must
/// not be invited to send more of it.
pub(crate) fn chunked_body_settled_in(body: &[u8], max_body: u64) -> bool {
    let mut scan = ChunkScan::new(0, usize::MAX, max_body);
    scan.advance(body) && (scan.decoder.is_done() || scan.failed.is_some())
}

/// A chunked body read as it arrives, to tell when it has ended; what it
/// decodes is not kept (the handler's reader decodes the bytes again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChunkScan {
    head: usize,
    /// Offset, from the head's first byte, of the first byte not yet read.
    scanned: usize,
    limit: usize,
    decoder: ChunkedDecoder,
    /// Why the body is refused, once its bytes have told.
    failed: Option<BodyError>,
}

impl ChunkScan {
    /// A body after a head of `head` bytes, collected up to `limit` bytes
    /// (head included), of at most `max_body` bytes.
    pub(crate) fn new(head: usize, limit: usize, max_body: u64) -> ChunkScan {
        ChunkScan { head, scanned: head, limit, decoder: ChunkedDecoder::new(max_body), failed: None }
    }

    /// The refusal the body's bytes read so far call for: bad framing
    /// (400), or a chunk larger than the body may be (413).
    pub(crate) fn refusal(&self) -> Option<ParseError> {
        self.failed.map(|e| match e {
            BodyError::TooLarge => ParseError::BodyTooLarge,
            _ => ParseError::Malformed("malformed chunked body"),
        })
    }

    /// Reads the bytes of `unparsed` (the head first) not read yet. True
    /// when that settles it: the body ended, its framing is wrong or a
    /// chunk is larger than the body may be (either is refused before the
    /// handler runs, [`ChunkScan::refusal`]), or `limit` bytes are in.
    pub(crate) fn advance(&mut self, unparsed: &[u8]) -> bool {
        let mut sink = [0u8; 1024];
        while self.scanned < unparsed.len() && !self.decoder.is_done() {
            match self.decoder.decode(&unparsed[self.scanned..], &mut sink) {
                Ok((0, 0)) => break,
                Ok((used, _)) => self.scanned += used,
                // Malformed, or a chunk over `max_body` (`TooLarge`).
                Err(e) => {
                    self.failed = Some(e);
                    return true;
                }
            }
        }
        self.decoder.is_done() || unparsed.len() >= self.limit
    }
}
