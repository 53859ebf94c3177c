//! Live counters: relaxed atomics, cheap enough to bump on every request.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A snapshot of a running server, from [`ServerHandle::stats`](crate::ServerHandle::stats).
///
/// Counts are read one by one without a common lock, so a snapshot taken
/// under load may be off by the few events that happened while it was read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Connections accepted since start.
    pub accepted: u64,
    /// Connections open now.
    pub open: u64,
    /// Open connections parked, waiting for bytes (idle or mid-head).
    pub parked: u64,
    /// Of those parked, kept-alive connections idle between requests (no
    /// byte of the next one has come): the ones that may be closed to make
    /// room for new clients at
    /// [`max_connections`](crate::Server::max_connections); nginx's
    /// "waiting".
    pub idle: u64,
    /// Open connections queued for or held by a worker.
    pub active: u64,
    /// Ready connections waiting for a worker (bounded by `queue_depth` for
    /// new connections), and requests whose handler is expected to block
    /// waiting for a place among such calls (see the guide's "Handlers that
    /// block"); event streams and WebSockets woken to write what their
    /// senders queued are not counted.
    pub queued: u64,
    /// Responses written (error responses included).
    pub requests: u64,
    /// Requests refused because their head or framing was invalid or too large.
    pub parse_errors: u64,
    /// Connections closed for a timeout (idle, head, body read or write).
    pub timeouts: u64,
    /// Idle keep-alive connections closed before their idle timeout to make
    /// room for new clients, while
    /// [`max_connections`](crate::Server::max_connections) were open.
    pub reclaimed: u64,
    /// Handler panics.
    pub panics: u64,
    /// Accept and socket errors other than timeouts.
    pub io_errors: u64,
    /// Connections answered `503` because the server was saturated
    /// ([`Overload::Reject`](crate::Overload::Reject)), and requests
    /// answered `503` because every place for a worker waiting on a body
    /// was taken ([`Server::max_body_waits`](crate::Server::max_body_waits))
    /// or for a worker that streams a body or runs an upgraded connection
    /// ([`Server::max_streaming_workers`](crate::Server::max_streaming_workers)), and
    /// unfinished heads answered `503` because they would have parked past
    /// [`Server::max_pending_head_bytes`](crate::Server::max_pending_head_bytes)
    /// (TLS handshakes closed for it are not counted).
    pub rejected: u64,
    /// Response bytes held for clients slow to take them (see
    /// [`Server::max_unsent_bytes`](crate::Server::max_unsent_bytes)).
    pub unsent_bytes: u64,
    /// Workers waiting now for request body bytes a handler asked for (see
    /// [`Server::max_body_waits`](crate::Server::max_body_waits)).
    pub body_waits: u64,
    /// Workers held now by an answer written for as long as it lasts: a
    /// `Response::stream` or `Response::reader` body being sent, or an
    /// upgraded connection (see
    /// [`Server::max_streaming_workers`](crate::Server::max_streaming_workers)).
    pub streaming_workers: u64,
    /// Bytes of the server-wide budget for collected bodies that read
    /// buffers grown past their usual size hold now (each
    /// `body_buffer_bytes`; see
    /// [`Server::max_buffered_body_bytes`](crate::Server::max_buffered_body_bytes)).
    pub buffered_body_bytes: u64,
    /// Bytes of the server-wide budget for requests not yet begun that
    /// connections hold now: TLS handshakes and unfinished heads past a
    /// small allowance each (see
    /// [`Server::max_pending_head_bytes`](crate::Server::max_pending_head_bytes)).
    pub pending_head_bytes: u64,
    /// Worker threads alive now, core and on-demand ones (see
    /// [`Server::max_workers`](crate::Server::max_workers)).
    pub threads: u64,
    /// Worker threads serving a connection: reading it, in its handler or
    /// writing its answer.
    pub busy_threads: u64,
    /// Worker threads waiting for work (asleep, or for readiness at a seat).
    pub idle_threads: u64,
    /// Worker threads started since start, the core ones included.
    pub threads_spawned: u64,
    /// Worker threads that retired after waiting idle for the
    /// [`worker_idle_timeout`](crate::Server::worker_idle_timeout).
    pub threads_retired: u64,
    /// Looks the monitor took at the workers since start: one a
    /// millisecond while some worker is busy (and for 50 ms after), fewer
    /// when all are idle (at the next deadline, at least every 250 ms). A
    /// handler call that spans two or more is judged for blocking (and its
    /// worker's seat may be handed over meanwhile); a count that stops
    /// moving under load means a stalled monitor.
    pub monitor_ticks: u64,
}

/// Thread counts for a [`Stats`] snapshot.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Threads {
    pub(crate) live: usize,
    pub(crate) idle: usize,
    pub(crate) spawned: u64,
    pub(crate) retired: u64,
}

/// How many cache lines the request count is spread over.
const REQUEST_STRIPES: usize = 8;

/// The counters behind [`Stats`]; one cache line each so that workers
/// bumping different counters do not contend.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    accepted: Padded,
    closed: Padded,
    /// Counted at every request, so a line per worker (`stripe`) rather than
    /// one line every worker's count moves between CPUs: on pipelined
    /// requests that one increment was 1.4% of the server's CPU.
    requests: [Padded; REQUEST_STRIPES],
    parse_errors: Padded,
    timeouts: Padded,
    reclaimed: Padded,
    panics: Padded,
    io_errors: Padded,
    rejected: Padded,
    /// Workers waiting on request body bytes now.
    body_waits: Padded,
    /// Response bytes held for slow clients, shared with what holds them.
    unsent: Arc<AtomicU64>,
    /// The budget read buffers grown for collected bodies hold, likewise.
    buffered: Arc<AtomicU64>,
    /// Workers writing a body that holds them or running an upgrade,
    /// likewise (one each).
    streaming: Arc<AtomicU64>,
    /// What TLS handshakes and unfinished heads hold, likewise.
    pending: Arc<AtomicU64>,
}

/// A share of a budget: response bytes held for a slow client, a read
/// buffer grown for a body, or a streaming worker's place, given back
/// when dropped (the answer sent, the connection closed, the body written,
/// the upgrade over).
#[derive(Debug)]
pub(crate) struct Held {
    total: Arc<AtomicU64>,
    bytes: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, Relaxed);
    }
}

impl Held {
    /// Grows this share to `bytes` in all, unless the budget's total would
    /// pass `cap`: false then, and the share is as it was.
    pub(crate) fn grow_to(&mut self, bytes: u64, cap: u64) -> bool {
        let more = bytes.saturating_sub(self.bytes);
        if more > 0 && !add(&self.total, more, cap) {
            return false;
        }
        self.bytes += more;
        true
    }

    /// The bytes this share holds.
    #[cfg_attr(not(feature = "tls"), allow(dead_code))] // Read by a TLS handshake.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// A server-wide budget a connection draws on by itself, away from the
/// [`Counters`] (a TLS stream holds one for its handshake).
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "tls"), allow(dead_code))] // Only TLS streams draw on one.
pub(crate) struct Budget {
    total: Arc<AtomicU64>,
    cap: u64,
}

#[cfg_attr(not(feature = "tls"), allow(dead_code))]
impl Budget {
    /// `bytes` of the budget, unless the total would pass its cap.
    pub(crate) fn take(&self, bytes: u64) -> Option<Held> {
        take(&self.total, bytes, self.cap)
    }

    /// The bytes taken from this budget now.
    #[cfg(test)]
    pub(crate) fn taken(&self) -> u64 {
        self.total.load(Relaxed)
    }

    /// Grows `held` (taken from this budget) to `bytes`; false when the
    /// budget lacks room.
    pub(crate) fn grow(&self, held: &mut Held, bytes: u64) -> bool {
        held.grow_to(bytes, self.cap)
    }
}

/// `bytes` more of the budget `total` counts, unless that would pass `cap`.
fn take(total: &Arc<AtomicU64>, bytes: u64, cap: u64) -> Option<Held> {
    add(total, bytes, cap).then(|| Held { total: total.clone(), bytes })
}

/// Adds `bytes` to `total`, unless that would pass `cap`: false then.
fn add(total: &AtomicU64, bytes: u64, cap: u64) -> bool {
    total.fetch_update(Relaxed, Relaxed, |t| t.checked_add(bytes).filter(|&t| t <= cap)).is_ok()
}

#[derive(Debug, Default)]
#[repr(align(128))]
struct Padded(AtomicU64);

impl Padded {
    fn bump(&self) {
        self.0.fetch_add(1, Relaxed);
    }

    fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

impl Counters {
    pub(crate) fn accepted(&self) {
        self.accepted.bump();
    }
    pub(crate) fn closed(&self) {
        self.closed.bump();
    }
    /// Counts `n` requests answered on the worker that counts on `stripe`.
    pub(crate) fn requests(&self, stripe: usize, n: u64) {
        self.requests[stripe % REQUEST_STRIPES].0.fetch_add(n, Relaxed);
    }
    pub(crate) fn parse_error(&self) {
        self.parse_errors.bump();
    }
    pub(crate) fn timeout(&self) {
        self.timeouts.bump();
    }
    pub(crate) fn reclaimed(&self) {
        self.reclaimed.bump();
    }
    pub(crate) fn panic(&self) {
        self.panics.bump();
    }
    pub(crate) fn io_error(&self) {
        self.io_errors.bump();
    }
    pub(crate) fn rejected(&self) {
        self.rejected.bump();
    }

    /// Counts a worker about to wait on body bytes, unless `most` do
    /// already.
    pub(crate) fn begin_body_wait(&self, most: usize) -> bool {
        let most = u64::try_from(most).unwrap_or(u64::MAX);
        self.body_waits.0.fetch_update(Relaxed, Relaxed, |n| (n < most).then_some(n + 1)).is_ok()
    }

    pub(crate) fn end_body_wait(&self) {
        self.body_waits.0.fetch_sub(1, Relaxed);
    }

    /// True when fewer than `most` workers wait on bodies now.
    pub(crate) fn body_wait_free(&self, most: usize) -> bool {
        self.body_waits.get() < u64::try_from(most).unwrap_or(u64::MAX)
    }

    /// Counts `bytes` held for a slow client, unless the total would pass
    /// `cap`.
    pub(crate) fn hold(&self, bytes: u64, cap: u64) -> Option<Held> {
        take(&self.unsent, bytes, cap)
    }

    /// Counts `bytes` a read buffer may grow by to collect a body, unless
    /// the total would pass `cap`.
    pub(crate) fn hold_body(&self, bytes: u64, cap: u64) -> Option<Held> {
        take(&self.buffered, bytes, cap)
    }

    /// Counts `bytes` a parked connection keeps for an unfinished head,
    /// unless the total would pass `cap`.
    pub(crate) fn hold_pending(&self, bytes: u64, cap: u64) -> Option<Held> {
        take(&self.pending, bytes, cap)
    }

    /// The budget for TLS handshakes and unfinished heads, capped at `cap`.
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    pub(crate) fn pending_heads(&self, cap: u64) -> Budget {
        Budget { total: self.pending.clone(), cap }
    }

    /// A place for one more worker writing a body that holds it or running
    /// an upgrade, unless `most` are taken.
    pub(crate) fn streaming_slot(&self, most: usize) -> Option<Held> {
        take(&self.streaming, 1, u64::try_from(most).unwrap_or(u64::MAX))
    }

    /// Response bytes held for slow clients now.
    #[cfg(test)]
    pub(crate) fn unsent_bytes(&self) -> u64 {
        self.unsent.load(Relaxed)
    }

    pub(crate) fn snapshot(&self, parked: usize, idle: usize, queued: usize, threads: Threads, ticks: u64) -> Stats {
        let accepted = self.accepted.get();
        let open = accepted.saturating_sub(self.closed.get());
        Stats {
            accepted,
            open,
            parked: parked as u64,
            idle: idle as u64,
            active: open.saturating_sub(parked as u64),
            queued: queued as u64,
            requests: self.requests.iter().map(Padded::get).sum(),
            parse_errors: self.parse_errors.get(),
            timeouts: self.timeouts.get(),
            reclaimed: self.reclaimed.get(),
            panics: self.panics.get(),
            io_errors: self.io_errors.get(),
            rejected: self.rejected.get(),
            unsent_bytes: self.unsent.load(Relaxed),
            body_waits: self.body_waits.get(),
            streaming_workers: self.streaming.load(Relaxed),
            buffered_body_bytes: self.buffered.load(Relaxed),
            pending_head_bytes: self.pending.load(Relaxed),
            threads: threads.live as u64,
            busy_threads: threads.live.saturating_sub(threads.idle) as u64,
            idle_threads: threads.idle as u64,
            threads_spawned: threads.spawned,
            threads_retired: threads.retired,
            monitor_ticks: ticks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Counters;

    fn pending(counters: &Counters) -> u64 {
        counters.snapshot(0, 0, 0, Default::default(), 0).pending_head_bytes
    }

    /// Shares grow and go back whole; a take or a growth that would pass
    /// the cap is refused and changes nothing.
    #[test]
    fn a_pending_head_share_grows_within_the_cap_and_goes_back_when_dropped() {
        let counters = Counters::default();
        let budget = counters.pending_heads(100);
        let mut a = budget.take(40).unwrap();
        assert!(budget.take(61).is_none());
        let b = budget.take(60).unwrap();
        assert_eq!(pending(&counters), 100);
        assert!(!budget.grow(&mut a, 41));
        assert_eq!((a.bytes(), pending(&counters)), (40, 100));
        drop(b);
        assert!(budget.grow(&mut a, 90));
        assert!(budget.grow(&mut a, 10), "shrinking is no growth");
        assert_eq!((a.bytes(), pending(&counters)), (90, 90));
        drop(a);
        assert_eq!(pending(&counters), 0);
        assert!(counters.pending_heads(u64::MAX).take(u64::MAX).is_some());
        assert_eq!(pending(&counters), 0);
        assert!(counters.pending_heads(0).take(1).is_none());
    }
}
