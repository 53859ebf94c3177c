//! The server-wide stop clock: whether the server is shutting down, since
//! when, and the ends it sets for draining, for waiting on a client to take
//! an answer, and for a lingering close, under the shutdown grace.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::deadline::after;

/// How long a connection closing after an error answer goes on reading
/// (and discarding) what the client still sends (`http1::close_lingering`).
pub(crate) const LINGER: Duration = Duration::from_secs(2);

/// At shutdown, the time left at the end of the grace for a worker whose
/// last lingering close ran to its limit to close and leave.
const SETTLE: Duration = Duration::from_millis(100);

/// Whether the server is shutting down, and since when.
#[derive(Debug, Default)]
pub(crate) struct Stop {
    stopping: AtomicBool,
    since: OnceLock<Instant>,
}

impl Stop {
    pub(crate) fn set(&self) {
        let _ = self.since.set(Instant::now());
        self.stopping.store(true, Ordering::Release);
    }

    pub(crate) fn is_set(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    fn since(&self) -> Option<Instant> {
        self.since.get().copied()
    }

    /// Once the server is stopping, until when connections are drained
    /// under a shutdown grace of `grace`: the grace from the stop, less the
    /// time a lingering close may take after it. `None`: no limit, or not
    /// stopping.
    pub(crate) fn drain_end(&self, grace: Duration) -> Option<Instant> {
        after(self.since()?, grace.saturating_sub(LINGER))
    }

    /// Once the server is stopping, until when a worker may wait for a
    /// client to take an answer under a shutdown grace of `grace`: as
    /// [`Stop::drain_end`] while the grace is at least twice a lingering
    /// close, else half the grace, so that a short grace (2 s or less)
    /// still lets an answer under way reach a client that reads it rather
    /// than cutting it at the first wait for room. The lingering close that
    /// may follow is held to the grace by itself (`close_lingering`).
    /// `None`: no limit, or not stopping.
    pub(crate) fn room_end(&self, grace: Duration) -> Option<Instant> {
        after(self.since()?, grace.saturating_sub(LINGER.min(grace / 2)))
    }

    /// Once the server is stopping, when a lingering close ends at the
    /// latest under a shutdown grace of `grace`: the grace less a moment
    /// ([`SETTLE`], or a tenth of a shorter grace) for the worker to close
    /// and leave, so that [`ServerHandle::shutdown`](crate::ServerHandle::shutdown)
    /// finds it gone rather than give up on it at the very end. `None`: no
    /// limit, or not stopping.
    pub(crate) fn linger_end(&self, grace: Duration) -> Option<Instant> {
        after(self.since()?, grace.saturating_sub(SETTLE.min(grace / 10)))
    }
}
