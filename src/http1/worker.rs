//! What a worker brings to a connection it serves: the handler, the
//! configuration, its scratch buffers, the stop clock, its seat (the
//! engine's side of a handler call: [`Seating`]), and what [`serve`](super::serve)
//! tells it to do next ([`Next`]); and the bounds of one connection's turn.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::phase::Drain;
use crate::config::{BodyBounds, Config};
use crate::date::DateCache;
use crate::encode::HeadStart;
use crate::net::Peer;
use crate::outbox::Policy;
use crate::parse::HeaderSpan;
use crate::stats::Counters;
use crate::stop::Stop;

/// The `Retry-After` of a `503` for a head refused a share of
/// `max_pending_head_bytes`, and for an answer refused a place among the
/// workers waiting on bodies or streaming.
pub(super) const BUSY_RETRY_AFTER: Duration = Duration::from_secs(1);

/// Bodies up to this size are copied behind the head, for one write.
pub(super) const INLINE_BODY: usize = 32 * 1024;

/// Queued answers to pipelined requests are written once they reach this
/// size, so the queue stays under it plus one answer.
pub(super) const PIPELINE_FLUSH: usize = 64 * 1024;

/// Capacity of the queued-answers buffer a worker keeps past a turn.
pub(super) const KEPT_OUT_CAPACITY: usize = 4 * PIPELINE_FLUSH;

/// Requests one connection is answered in a turn before the others of its
/// seat go first: a client that keeps pipelining cannot hold its worker.
pub(super) const TURN_REQUESTS: u32 = 64;

/// Bytes one connection may have read in a turn (requests, or input
/// discarded while lingering) before the others of its seat go first.
pub(super) const TURN_BYTES: usize = 256 * 1024;

/// Buffers a worker lends to its connections (none of it is kept while a
/// connection is parked, except the bytes of an unfinished head).
#[derive(Debug)]
pub(crate) struct Scratch {
    /// Responses not yet written; flushed before each read and before parking.
    pub(crate) out: Vec<u8>,
    pub(crate) spans: Vec<HeaderSpan>,
    pub(crate) date: DateCache,
    /// The start of the last common answer's head, appended again whole.
    pub(crate) head_start: HeadStart,
    /// Read buffers returned by parked connections.
    pub(crate) buffers: Vec<Vec<u8>>,
    /// Which of the request count's stripes this worker adds to.
    pub(crate) stripe: usize,
    /// The server's bounds on request bodies, which each request's body
    /// points to (a copy in each was some twenty instructions per request).
    pub(crate) body_bounds: BodyBounds,
}

/// The stripe the next worker's scratch counts requests on.
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

impl Scratch {
    pub(crate) fn new(config: &Config) -> Scratch {
        Scratch {
            out: Vec::with_capacity(INLINE_BODY + 1024),
            spans: Vec::with_capacity(config.limits.max_headers),
            date: DateCache::new(),
            head_start: HeadStart::new(),
            buffers: Vec::new(),
            stripe: NEXT_STRIPE.fetch_add(1, Ordering::Relaxed),
            body_bounds: config.body_bounds(),
        }
    }
}

/// What the worker does with the connection after [`serve`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Nothing to do until the socket reports readiness: park it.
    Park,
    /// It has had its turn and has more to do: serve the others of its
    /// seat first, then it again (it must not park: no edge would wake it).
    Yield,
    /// Its request is expected to block and every place for such calls is
    /// taken: it waits, held, until a call ends and gives it one.
    WaitForPlace,
    Close,
}

/// What the engine offers a worker around a handler call.
pub(crate) trait Seating {
    /// A handler expected to block is about to run: another thread should
    /// watch this worker's seat meanwhile. `slept`: a call on this
    /// connection was seen asleep (see [`Ran::Asleep`]); only then may a
    /// thread be added for it at once.
    fn handler_may_block(&mut self, slept: bool);

    /// The monitor's tick count: a handler call across two ticks blocked,
    /// unless the worker was running all along (see `seen_since`). The
    /// counter itself, read before and after each call: one call through
    /// the seat's table, not two.
    fn ticks(&self) -> &AtomicU64;

    /// What the monitor found of this worker during its call from tick
    /// `tick`, if it found its seat stuck meanwhile: asleep at its last look
    /// or in the run of looks up to it (`Some(true)`), or else running or
    /// waiting for a CPU (`Some(false)`). `None` when it did not look at
    /// this worker, or cannot tell.
    fn seen_since(&self, _tick: u64) -> Option<bool> {
        None
    }

    /// This worker's thread's sleeps so far and the CPU time it used (see
    /// `sys::sleeps_and_cpu`): a call handed over before it ran that slept,
    /// and ran for less than half its time, blocked. `None` when that
    /// cannot be told.
    fn sleeps_and_cpu(&self) -> Option<(u64, Duration)> {
        None
    }

    /// Some route was seen blocking: [`Seating::route_blocks`] may be true.
    fn routes_remembered(&self) -> bool {
        false
    }

    /// True when a call of `method` on `path` is expected to block, from
    /// calls on other connections (see `http1::routes`).
    fn route_blocks(&self, _method: &str, _path: &str) -> bool {
        false
    }

    /// A call of `method` on `path` went as `ran` says.
    fn route_ran(&self, _method: &str, _path: &str, _ran: Ran) {}

    /// Whether other connections wait for a worker (at shutdown any worker
    /// takes them): a close lingering at shutdown, which waits on its
    /// socket, looks every `close::LINGER_SLICE` and lets them go first
    /// (`close::linger`). `None`: no other connection can need this worker
    /// (a driver of one connection), so the wait is not cut up.
    fn others_ready(&self) -> Option<bool> {
        None
    }

    /// A place among the calls expected to block for the request at hand
    /// (`given`: it has one, given while it waited); false when none is
    /// free (see `shared/growth.rs`). Each place taken is given back with
    /// [`Seating::blocking_done`].
    fn admit_blocking(&mut self, _given: bool) -> bool {
        true
    }

    /// The call a place was taken for has ended.
    fn blocking_done(&mut self) {}
}

/// How a handler call went, as far as the worker can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ran {
    /// Within a monitor tick, or across ticks while the monitor saw the
    /// worker running or waiting for a CPU each time: not blocked.
    Quick,
    /// Across two monitor ticks, and nobody saw how: taken as blocked.
    Long,
    /// Across two ticks, and the monitor found the worker asleep, or (a
    /// call handed over before it ran, which the monitor does not watch)
    /// the thread slept during it and ran for less than half of it: blocked.
    Asleep,
}

/// A worker with no seat (tests and fuzzing).
#[derive(Debug, Default)]
pub(crate) struct NoSeat;

impl Seating for NoSeat {
    fn handler_may_block(&mut self, _: bool) {}

    fn ticks(&self) -> &AtomicU64 {
        static NEVER: AtomicU64 = AtomicU64::new(0);
        &NEVER
    }
}

/// What one worker brings to serving a connection.
pub(crate) struct Ctx<'w, H: ?Sized> {
    pub(crate) handler: &'w H,
    pub(crate) config: &'w Config,
    pub(crate) scratch: &'w mut Scratch,
    /// The server is shutting down: finish the request at hand, then close.
    pub(crate) stopping: &'w Stop,
    pub(crate) counters: &'w Counters,
    pub(crate) peer: Peer,
    pub(crate) seat: &'w mut dyn Seating,
    /// Some route had been seen blocking when the turn began
    /// ([`Seating::routes_remembered`]): asked once a turn, not at each
    /// request (two calls through the seat's table, some 15 instructions
    /// per pipelined request). One first seen during the turn counts from
    /// the next.
    pub(crate) routes_remembered: bool,
}

impl<'w, H: ?Sized> Ctx<'w, H> {
    pub(super) fn is_stopping(&self) -> bool {
        self.stopping.is_set()
    }

    /// At shutdown, until when a connection reads requests its client had
    /// already sent, and waits for one begun: the shutdown grace from the
    /// stop, less the time a lingering close may take after it. `None`:
    /// no limit (or not stopping).
    pub(super) fn drain_end(&self) -> Option<Instant> {
        self.stopping.drain_end(self.config.shutdown_grace)
    }

    /// Whether connections are being drained, and until when.
    pub(super) fn drain(&self) -> Drain {
        if self.is_stopping() { Drain::Until(self.drain_end()) } else { Drain::No }
    }

    pub(super) fn policy(&self) -> Policy<'w> {
        Policy {
            stopping: self.is_stopping(),
            timeout: self.config.write_timeout,
            counters: self.counters,
            cap: self.config.max_unsent_bytes,
        }
    }
}
