//! Deadlines: an `Option<Instant>`, where `None` means "never". The
//! helpers below are the only arithmetic done on them, so a timeout of
//! `Duration::MAX` stays "never" instead of overflowing.

use std::time::{Duration, Instant};

/// `at + d`, or `None` (no deadline) when that is beyond what an `Instant`
/// holds: a timeout of `Duration::MAX` means "never".
pub(crate) fn after(at: Instant, d: Duration) -> Option<Instant> {
    at.checked_add(d)
}

/// The earlier of two deadlines (`None`: never).
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// True once `deadline` has passed at `now`.
pub(crate) fn is_past(deadline: Option<Instant>, now: Instant) -> bool {
    deadline.is_some_and(|d| d <= now)
}
