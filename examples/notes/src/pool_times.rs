//! A measurement, off by default: how long each handler waited in
//! `pool.get()` for a database connection, and how long it then held one.
//! `main` turns it on when `NOTES_POOL_WAIT` is set and prints the summary
//! when the server stops (BENCHMARKS.md, "A service on SQLite").
//!
//! The times come from r2d2's own events: a checkout's time counts from the
//! call to `get` until a connection is handed out (the wait on the pool's
//! lock and condition variable), a checkin's from then until it is back.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use r2d2::event::{CheckinEvent, CheckoutEvent, HandleEvent};

/// Each checkout's wait and each connection's time held, in microseconds.
#[derive(Debug, Default)]
pub struct PoolTimes {
    waited: Mutex<Vec<u32>>,
    held: Mutex<Vec<u32>>,
}

/// What the pool calls on its events (r2d2 takes a `Box` of its own).
#[derive(Debug)]
pub(crate) struct Recorder(pub(crate) Arc<PoolTimes>);

impl HandleEvent for Recorder {
    fn handle_checkout(&self, event: CheckoutEvent) {
        push(&self.0.waited, event.duration().as_micros());
    }

    fn handle_checkin(&self, event: CheckinEvent) {
        push(&self.0.held, event.duration().as_micros());
    }
}

fn push(times: &Mutex<Vec<u32>>, micros: u128) {
    // A poisoned lock only means another recording panicked: the times are whole.
    times.lock().unwrap_or_else(PoisonError::into_inner).push(u32::try_from(micros).unwrap_or(u32::MAX));
}

/// `p50 p99 max` of `times`, in milliseconds.
fn quantiles(times: &Mutex<Vec<u32>>) -> String {
    let mut times = times.lock().unwrap_or_else(PoisonError::into_inner).clone();
    times.sort_unstable();
    let at = |q: f64| times.get(((times.len() as f64 * q) as usize).min(times.len().saturating_sub(1)));
    let ms = |t: Option<&u32>| t.map_or(0.0, |&t| f64::from(t) / 1000.0);
    format!("p50 {:.3} p99 {:.3} max {:.3} ms", ms(at(0.5)), ms(at(0.99)), ms(times.last()))
}

impl fmt::Display for PoolTimes {
    /// One line: `pool: N checkouts; waited p50 .. p99 .. max .. ms; held ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.waited.lock().unwrap_or_else(PoisonError::into_inner).len();
        write!(f, "pool: {count} checkouts; waited {}; held {}", quantiles(&self.waited), quantiles(&self.held))
    }
}
