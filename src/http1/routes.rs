//! Which routes' handlers block, remembered across connections.
//!
//! A connection whose handler blocked lately lets its seat go before its
//! next call (`http1::state`). A connection's first call has no such past:
//! behind a proxy that opens a connection per request, every call is a
//! first one, and each that blocks holds its seat until the monitor's next
//! look (a tick) finds it asleep. With a thousand such calls a second on two
//! seats, that stalled the seats a third of the time or more (BENCHMARKS.md).
//! So calls seen asleep are also remembered by method and path, in a small
//! table of hashed slots shared by the workers: a first call to a route
//! that blocked is handed over before it runs, like a connection's next
//! one. A call found asleep by mistake (a computing handler caught in a
//! page fault) marks its route for a few calls only: handed over, they are
//! found computing, which wears the mark off as quick calls do. The hash
//! is keyed per server, over at most the path's first [`PREFIX`] bytes and
//! its length, so a client can neither aim a mark at another route nor
//! make the hashing long; a collision costs a route an early hand-over now
//! and then, never a wrong answer. The table is read only once some call
//! was seen asleep.

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use super::worker::Ran;
// Calls to a route after one was seen asleep that are handed over before
// they run, as for a connection: then one must be seen asleep again.
use super::state::SLEPT_MEMORY;

/// Slots of the table (a power of two).
const SLOTS: usize = 256;

/// What a quick call takes off its route's memory: a route that stopped
/// blocking is forgotten after a few calls.
const QUICK_FORGETS: u8 = 4;

/// Bytes of a path hashed at most (with its length).
const PREFIX: usize = 64;

pub(crate) struct Routes {
    /// Some call was seen asleep since the server started: until then no
    /// path is hashed.
    seen: AtomicBool,
    /// Per slot, the calls left to hand over before running (0: none).
    /// Updated with plain loads and stores: a lost update only shifts when
    /// a route is looked at again.
    slots: [AtomicU8; SLOTS],
    keys: RandomState,
}

impl Routes {
    pub(crate) fn new() -> Routes {
        Routes {
            seen: AtomicBool::new(false),
            slots: std::array::from_fn(|_| AtomicU8::new(0)),
            keys: RandomState::new(),
        }
    }

    /// Some call was seen asleep since the server started (until then no
    /// route is expected to block).
    #[inline]
    pub(crate) fn remembers_any(&self) -> bool {
        self.seen.load(Ordering::Relaxed)
    }

    /// True when a call of `method` on `path` is expected to block: one was
    /// seen asleep lately.
    #[inline]
    pub(crate) fn blocks(&self, method: &str, path: &str) -> bool {
        self.seen.load(Ordering::Relaxed) && self.slot(method, path).load(Ordering::Relaxed) > 0
    }

    /// A call of `method` on `path` went as `ran` says.
    #[inline]
    pub(crate) fn ran(&self, method: &str, path: &str, ran: Ran) {
        if ran == Ran::Asleep {
            if !self.seen.load(Ordering::Relaxed) {
                self.seen.store(true, Ordering::Relaxed);
            }
            self.slot(method, path).store(SLEPT_MEMORY, Ordering::Relaxed);
        } else if self.seen.load(Ordering::Relaxed) {
            let slot = self.slot(method, path);
            let left = slot.load(Ordering::Relaxed);
            if left > 0 {
                let less = if ran == Ran::Quick { QUICK_FORGETS } else { 1 };
                slot.store(left.saturating_sub(less), Ordering::Relaxed);
            }
        }
    }

    /// True when two routes share a slot (collisions are allowed: the keys
    /// are random, so tests that tell routes apart must ask).
    #[cfg(test)]
    pub(crate) fn share_a_slot(&self, a: (&str, &str), b: (&str, &str)) -> bool {
        std::ptr::eq(self.slot(a.0, a.1), self.slot(b.0, b.1))
    }

    /// The slot of a route: its method, the first [`PREFIX`] bytes of its
    /// path and the path's length, hashed with the server's keys.
    fn slot(&self, method: &str, path: &str) -> &AtomicU8 {
        let prefix = &path.as_bytes()[..path.len().min(PREFIX)];
        let hash = self.keys.hash_one((method, prefix, path.len()));
        &self.slots[(hash >> 32) as usize % SLOTS]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_seen_asleep_is_expected_to_block_until_it_runs_quick_or_unwatched_for_long() {
        let routes = Routes::new();
        assert!(!routes.blocks("GET", "/report"));
        // Nothing is kept before a call is seen asleep.
        routes.ran("GET", "/report", Ran::Long);
        assert!(!routes.blocks("GET", "/report"));
        routes.ran("GET", "/report", Ran::Asleep);
        assert!(routes.blocks("GET", "/report"));
        for other in [("POST", "/report"), ("GET", "/")] {
            // The method is part of the route; another shares its mark only
            // when its slot is the same.
            let shared = routes.share_a_slot(other, ("GET", "/report"));
            assert_eq!(routes.blocks(other.0, other.1), shared, "{other:?}");
        }
        // Calls handed over are not watched: they count down the memory.
        for _ in 0..SLEPT_MEMORY - 1 {
            routes.ran("GET", "/report", Ran::Long);
        }
        assert!(routes.blocks("GET", "/report"));
        routes.ran("GET", "/report", Ran::Long);
        assert!(!routes.blocks("GET", "/report"), "to be seen asleep again");
        // A route that turns quick is forgotten in a few calls.
        routes.ran("GET", "/report", Ran::Asleep);
        for _ in 0..SLEPT_MEMORY.div_ceil(QUICK_FORGETS) {
            assert!(routes.blocks("GET", "/report"));
            routes.ran("GET", "/report", Ran::Quick);
        }
        assert!(!routes.blocks("GET", "/report"));
    }
}
