//! Where a connection is in its life, as far as time goes: its phase, the
//! moves the connection loop asks of it, the deadline each phase has, what
//! happens when that deadline passes, and what a connection whose socket
//! has nothing more does — park, or at shutdown (when nothing parks) wait
//! for what it must finish, or close. Nothing outside this file sets the
//! phase.

use std::time::{Duration, Instant};

use super::stream::Streaming;
use crate::config::Config;
use crate::deadline::{after, earliest};
use crate::outbox::Unsent;

/// The phase of a connection. Only the moves below change it.
#[derive(Debug)]
pub(crate) struct Phase(State);

#[derive(Debug)]
enum State {
    /// No request begun. `first`: a new connection, whose first head must
    /// arrive within the head timeout of its accept; else a kept-alive one,
    /// closed after the idle timeout. `since` is set when the connection
    /// first parks in this phase and never moves after: bytes that carry no
    /// request (empty lines) do not restart the clock.
    Waiting { since: Option<Instant>, first: bool },
    /// Part of a request head (and of a small body collected with it) is in;
    /// past the head timeout the client gets `408`.
    Head { since: Instant },
    /// The client is slow to take an answer: the rest of it, and what
    /// becomes of the connection once it is out. Closed after the write
    /// timeout without progress.
    Sending { unsent: Box<Unsent>, then: Then },
    /// Closing after an answer while the client may still send: what it
    /// sends is read and discarded until then.
    Lingering { until: Instant },
    /// An event stream under way: parked between events, watching for the
    /// client's room to write while bytes are pending. Past the write
    /// timeout (bytes pending) it closes; past the keep-alive interval
    /// (none pending) a worker writes a comment.
    Streaming(Box<Streaming>),
}

/// The phase as the connection loop sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Waiting { first: bool },
    Head,
    Sending,
    Lingering { until: Instant },
    Streaming,
}

/// What becomes of a connection after an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Then {
    KeepAlive,
    Close,
    /// Close, but the client may still be sending: a lingering close.
    Linger,
    /// The client went away (its request body could not be read): close
    /// once what is queued is out, without lingering.
    Abort,
}

impl Then {
    /// What follows an answer cut short (by the socket, or by its body:
    /// a stream's code, a file that fails) instead of this: a request
    /// body still coming is lingered over; else the connection closes,
    /// lingering when a read finds input (requests unread behind the cut
    /// answer would turn the close into a reset that can destroy the
    /// answers queued before it; a failed socket has none).
    pub(crate) fn cut_short(self) -> Then {
        match self {
            Then::Linger => Then::Linger,
            _ => Then::Close,
        }
    }
}

/// What the monitor does with a parked connection whose deadline passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// A head was begun: answer `408`, then close lingering (a timeout).
    RequestTimeout,
    /// Waiting for a request: close without an answer (a timeout of the
    /// client's), unless one came after all.
    TimedOut,
    /// The client stopped taking an answer or a stream: close (a timeout of
    /// the client's).
    Stalled,
    /// An event stream's keep-alive is due: a worker writes it.
    Resume,
    /// Close without an answer; the lingering close simply ran its time.
    Done,
}

/// What a connection whose socket has nothing more for now does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dry {
    /// Park until readiness (a shutdown that has swept hands it back to its
    /// worker when it has something to finish).
    Park,
    /// Shutdown: nothing parks, and something begun must be finished: the
    /// worker waits for the client, at most until then (`None`: no limit).
    Wait { until: Option<Instant> },
    /// Shutdown, and nothing begun: close.
    Close,
}

/// When the server is stopping, until when connections are drained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Drain {
    /// Not stopping.
    No,
    /// Stopping: requests already sent are read, and heads begun waited
    /// for, until then (`None`: no limit).
    Until(Option<Instant>),
}

impl Phase {
    /// A new connection, waiting for its first request; `accepted` starts
    /// its head deadline.
    pub(crate) fn new(accepted: Option<Instant>) -> Phase {
        Phase(State::Waiting { since: accepted, first: true })
    }

    #[inline]
    pub(crate) fn kind(&self) -> Kind {
        match &self.0 {
            State::Waiting { first, .. } => Kind::Waiting { first: *first },
            State::Head { .. } => Kind::Head,
            State::Sending { .. } => Kind::Sending,
            State::Lingering { until } => Kind::Lingering { until: *until },
            State::Streaming(_) => Kind::Streaming,
        }
    }

    /// True while a kept-alive connection waits for its next request (its
    /// first served).
    #[inline]
    pub(crate) fn waits_kept_alive(&self) -> bool {
        matches!(self.0, State::Waiting { first: false, .. })
    }

    /// A head has begun: a connection waiting for a request starts its head
    /// clock — from its accept for its first request, else from `now`.
    #[inline]
    pub(crate) fn start_head(&mut self, now: Instant) {
        if let State::Waiting { since, first } = self.0 {
            let since = match (since, first) {
                (Some(accepted), true) => accepted,
                _ => now,
            };
            self.leave_plain(State::Head { since });
        }
    }

    /// The request at hand is answered: the connection waits for the next,
    /// its idle clock starting when it parks. (An answer still going out, or
    /// a lingering close, stays as it is.)
    #[inline]
    pub(crate) fn idle(&mut self) {
        if matches!(self.0, State::Waiting { .. } | State::Head { .. }) {
            self.leave_plain(State::Waiting { since: None, first: false });
        }
    }

    /// Moves from a phase that holds nothing (waiting, or a head arriving)
    /// to `next`. The phase left needs no drop, and is not given one: the
    /// call to the phase's drop glue (which a stream's phase has) was
    /// nine instructions on every request.
    #[inline]
    fn leave_plain(&mut self, next: State) {
        debug_assert!(matches!(self.0, State::Waiting { .. } | State::Head { .. }));
        std::mem::forget(std::mem::replace(&mut self.0, next));
    }

    /// True while an answer or a stream waits on the client or its senders:
    /// the turn ends (the loop's one look, on every request, for both).
    #[inline]
    pub(crate) fn holds_answer(&self) -> bool {
        matches!(self.0, State::Sending { .. } | State::Streaming(_))
    }

    /// The turn ends at `now`: a connection waiting for a request starts
    /// its clock, unless it runs already.
    #[inline]
    pub(crate) fn stamp(&mut self, now: Instant) {
        if let State::Waiting { since, .. } = &mut self.0 {
            since.get_or_insert(now);
        }
    }

    /// The client did not take all of an answer: the rest waits with the
    /// connection, which then goes on as `then`.
    pub(crate) fn sending(&mut self, unsent: Box<Unsent>, then: Then) {
        self.0 = State::Sending { unsent, then };
    }

    /// The answer waiting for the client, and what comes after it.
    pub(crate) fn unsent(&mut self) -> Option<(&mut Unsent, Then)> {
        match &mut self.0 {
            State::Sending { unsent, then } => Some((unsent, *then)),
            _ => None,
        }
    }

    /// An event stream begins.
    pub(crate) fn stream(&mut self, stream: Streaming) {
        self.0 = State::Streaming(Box::new(stream));
    }

    /// The event stream under way.
    pub(crate) fn streaming(&mut self) -> Option<&mut Streaming> {
        match &mut self.0 {
            State::Streaming(stream) => Some(stream),
            _ => None,
        }
    }

    /// The event stream under way, to look at.
    pub(crate) fn stream_ref(&self) -> Option<&Streaming> {
        match &self.0 {
            State::Streaming(stream) => Some(stream),
            _ => None,
        }
    }

    /// The waiting answer (or stream) is out, or failed: the connection
    /// waits for its next request (or is closed by the caller).
    pub(crate) fn sent(&mut self) {
        self.0 = State::Waiting { since: None, first: false };
    }

    /// When the last answer of a connection waiting for its next request
    /// went out: when it parked after it, or `now` when it has not parked
    /// since (the answer went out in this turn). `None` when it has
    /// answered nothing, or is in another phase.
    pub(crate) fn answered_at(&self, now: Instant) -> Option<Instant> {
        match self.0 {
            State::Waiting { since, first: false } => Some(since.unwrap_or(now)),
            _ => None,
        }
    }

    /// A lingering close, until `until`.
    pub(crate) fn linger(&mut self, until: Instant) {
        self.0 = State::Lingering { until };
    }

    /// When the current park ends. `collected` tells what a body being
    /// collected has earned beyond the head timeout (asked only of a head).
    #[inline]
    pub(crate) fn deadline(&self, config: &Config, collected: impl FnOnce() -> Duration) -> Option<Instant> {
        match &self.0 {
            // Stamped by every park; a connection never parks without it.
            State::Waiting { .. } => self.waiting_deadline(config),
            State::Head { since } => after(*since, config.head_timeout.saturating_add(collected())),
            State::Sending { unsent, .. } => unsent.deadline(config.write_timeout, config.write_min_rate),
            State::Lingering { until } => Some(*until),
            State::Streaming(stream) => stream.deadline(config.write_timeout),
        }
    }

    /// [`Phase::deadline`] of a connection waiting for a request whose clock
    /// runs; `None` in any other phase.
    #[inline]
    pub(crate) fn waiting_deadline(&self, config: &Config) -> Option<Instant> {
        match &self.0 {
            State::Waiting { since: Some(since), first: true } => after(*since, config.head_timeout),
            State::Waiting { since: Some(since), first: false } => after(*since, config.idle_timeout),
            _ => None,
        }
    }

    /// What happens when [`Phase::deadline`] passes.
    pub(crate) fn expiry(&self) -> Expiry {
        match self.0 {
            State::Head { .. } => Expiry::RequestTimeout,
            State::Waiting { .. } => Expiry::TimedOut,
            State::Sending { .. } => Expiry::Stalled,
            State::Streaming(ref stream) if stream.stalls() => Expiry::Stalled,
            State::Streaming(_) => Expiry::Resume,
            State::Lingering { .. } => Expiry::Done,
        }
    }

    /// True when something begun must be finished, even at shutdown: a
    /// head or small body arriving, an answer going out, a close lingering
    /// (closing at once could reset the connection under its answer).
    #[inline]
    pub(crate) fn must_finish(&self) -> bool {
        !matches!(self.0, State::Waiting { .. })
    }

    /// What the connection does when its socket has nothing now (`deadline`
    /// tells its own, [`Phase::deadline`]). The one place where shutdown decides
    /// between parking, waiting and closing: when stopping nothing parks;
    /// a head begun is waited for until its deadline or the end of the
    /// drain, a lingering close until its end; an idle connection closes.
    #[inline]
    pub(crate) fn when_dry(&self, deadline: impl FnOnce() -> Option<Instant>, drain: Drain) -> Dry {
        let Drain::Until(drain_end) = drain else { return Dry::Park };
        match self.0 {
            State::Waiting { .. } => Dry::Close,
            State::Head { .. } => Dry::Wait { until: earliest(deadline(), drain_end) },
            State::Lingering { until } => Dry::Wait { until: Some(until) },
            // At shutdown an answer is written waiting for the client (see
            // `outbox::Policy`); one held from before goes back to its worker
            // to be finished. A stream is ended by its worker
            // (`stream::turn`).
            State::Sending { .. } | State::Streaming(_) => Dry::Park,
        }
    }

    /// A kept-alive connection waiting for its next request, its idle
    /// clock started at `since` (tests).
    #[cfg(test)]
    pub(crate) fn kept_alive_since(since: Instant) -> Phase {
        Phase(State::Waiting { since: Some(since), first: false })
    }

    /// The clock of a connection waiting for a request or for the rest of
    /// a head (tests).
    #[cfg(test)]
    pub(crate) fn since(&self) -> Option<Instant> {
        match self.0 {
            State::Waiting { since, .. } => since,
            State::Head { since } => Some(since),
            _ => None,
        }
    }
}
