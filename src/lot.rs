//! The parking lot: where connections wait, without a thread, for their next
//! bytes. Shared by the poller and the workers under one short-held lock.
//!
//! A worker parks a connection by putting it in its slot and re-arming its
//! readiness registration *while holding the lock*, so the poller can never
//! see the readiness event before the connection is there to take, and never
//! closes a socket a worker is still registering.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use mio::{Interest, Registry, Token, Waker};

use crate::config::Config;
use crate::conn::ConnState;
use crate::net::{Peer, Stream};
use crate::stats::Counters;

/// Token of the listening socket.
pub(crate) const LISTENER: Token = Token(usize::MAX);
/// Token of the poller's waker.
pub(crate) const WAKER: Token = Token(usize::MAX - 1);

/// An open connection, owned by exactly one of: the lot, the work queue, a
/// worker.
pub(crate) struct Conn {
    pub(crate) stream: Stream,
    pub(crate) peer: Peer,
    pub(crate) state: ConnState,
    slot: u32,
    /// Bumped on every park: readiness events of earlier parks are stale.
    generation: u32,
    /// Registered with the poller (from its first park on).
    registered: bool,
}

/// The readiness token of a slot in one generation.
pub(crate) fn token(slot: u32, generation: u32) -> Token {
    Token((generation as usize) << 32 | slot as usize)
}

/// Splits a token into (slot, generation).
pub(crate) fn untoken(token: Token) -> (u32, u32) {
    ((token.0 & 0xffff_ffff) as u32, (token.0 >> 32) as u32)
}

enum Slot {
    Free,
    /// Queued or with a worker.
    Busy,
    Parked(Conn),
}

/// What the lock protects.
pub(crate) struct Lot {
    slots: Vec<Slot>,
    /// The latest generation handed out per slot. It keeps counting across
    /// the connections a slot holds, so a deadline or event left by an
    /// earlier occupant can never match a later one.
    generations: Vec<u32>,
    free: Vec<u32>,
    /// Deadlines of parks the poller has not seen yet: (deadline, slot, generation).
    pub(crate) new_timers: Vec<(Instant, u32, u32)>,
    /// Set at shutdown: parking closes instead.
    pub(crate) closed: bool,
    /// Connections in `Slot::Parked`.
    pub(crate) parked: usize,
}

impl Lot {
    /// Takes the connection parked under `token`, if it is still there.
    pub(crate) fn take(&mut self, token: Token) -> Option<Conn> {
        let (slot, generation) = untoken(token);
        let entry = self.slots.get_mut(slot as usize)?;
        match entry {
            Slot::Parked(conn) if conn.generation == generation => {
                let Slot::Parked(conn) = std::mem::replace(entry, Slot::Busy) else {
                    return None;
                };
                self.parked -= 1;
                Some(conn)
            }
            _ => None,
        }
    }

    /// Takes every parked connection (shutdown).
    pub(crate) fn take_all(&mut self) -> Vec<Conn> {
        let mut out = Vec::new();
        for entry in &mut self.slots {
            if let Slot::Parked(_) = entry {
                if let Slot::Parked(conn) = std::mem::replace(entry, Slot::Busy) {
                    out.push(conn);
                }
            }
        }
        self.parked = 0;
        out
    }

    pub(crate) fn is_parked(&self, token: Token) -> bool {
        let (slot, generation) = untoken(token);
        matches!(self.slots.get(slot as usize), Some(Slot::Parked(c)) if c.generation == generation)
    }

    pub(crate) fn open(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    fn next_generation(&mut self, slot: u32) -> u32 {
        let generation = &mut self.generations[slot as usize];
        *generation = generation.wrapping_add(1);
        *generation
    }

    fn free(&mut self, slot: u32) {
        self.slots[slot as usize] = Slot::Free;
        self.free.push(slot);
    }
}

/// State shared by the poller, the workers and the server handle.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) registry: Registry,
    pub(crate) waker: Waker,
    lot: Mutex<Lot>,
    /// Shutdown has begun.
    pub(crate) stopping: AtomicBool,
    /// The poller waits for queue room or a free connection slot: the next
    /// worker to make some wakes it.
    pub(crate) poller_waiting: AtomicBool,
    /// Readable connections waiting in the poller for queue room.
    pub(crate) backlog: AtomicUsize,
    pub(crate) counters: Counters,
}

impl Shared {
    pub(crate) fn new(config: Config, registry: Registry, waker: Waker) -> Shared {
        let lot = Lot {
            slots: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
            new_timers: Vec::new(),
            closed: false,
            parked: 0,
        };
        Shared {
            config,
            registry,
            waker,
            lot: Mutex::new(lot),
            stopping: AtomicBool::new(false),
            poller_waiting: AtomicBool::new(false),
            backlog: AtomicUsize::new(0),
            counters: Counters::default(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Lot> {
        // Nothing panics while holding the lock; a poisoned lot is still whole.
        self.lot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Gives a newly accepted connection a slot. It goes straight to a
    /// worker (its request has usually arrived by the time it is accepted),
    /// and is registered with the poller only if it ever parks.
    pub(crate) fn admit(&self, stream: Stream, peer: Peer) -> Conn {
        let mut lot = self.lock();
        let slot = match lot.free.pop() {
            Some(slot) => slot,
            None => {
                lot.slots.push(Slot::Free);
                lot.generations.push(0);
                (lot.slots.len() - 1) as u32
            }
        };
        lot.slots[slot as usize] = Slot::Busy;
        self.counters.accepted();
        Conn { stream, peer, state: ConnState::default(), slot, generation: 0, registered: false }
    }

    /// Hands a connection with nothing to read back to the poller.
    pub(crate) fn park(&self, mut conn: Conn) {
        let now = Instant::now();
        let deadline = match conn.state.head_started() {
            Some(started) => started + self.config.head_timeout,
            None if conn.state.requests == 0 => now + self.config.head_timeout,
            None => now + self.config.idle_timeout,
        };
        let mut lot = self.lock();
        if lot.closed {
            self.forget(&mut lot, conn);
            return;
        }
        conn.generation = lot.next_generation(conn.slot);
        let (slot, generation) = (conn.slot, conn.generation);
        // Arming while holding the lock: bytes that arrived since the last
        // read raise an event only the poller can act on, after we release.
        let armed = if conn.registered {
            self.registry.reregister(&mut conn.stream, token(slot, generation), Interest::READABLE)
        } else {
            self.registry.register(&mut conn.stream, token(slot, generation), Interest::READABLE)
        };
        conn.registered = true;
        if let Err(e) = armed {
            debug!("{}: re-arming failed: {e}", conn.peer);
            self.forget(&mut lot, conn);
            return;
        }
        lot.new_timers.push((deadline, slot, generation));
        lot.slots[slot as usize] = Slot::Parked(conn);
        lot.parked += 1;
    }

    /// Closes a connection and frees its slot.
    pub(crate) fn close(&self, conn: Conn) {
        let slot = conn.slot;
        drop(conn);
        self.lock().free(slot);
        self.counters.closed();
        self.wake_poller_if_waiting();
    }

    /// Frees the slot of a connection the poller dropped itself.
    pub(crate) fn forget(&self, lot: &mut Lot, conn: Conn) {
        lot.free(conn.slot);
        self.counters.closed();
    }

    pub(crate) fn wake_poller_if_waiting(&self) {
        if self.poller_waiting.load(Ordering::Relaxed) && self.poller_waiting.swap(false, Ordering::AcqRel) {
            if let Err(e) = self.waker.wake() {
                error!("waking the poller failed: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_never_collide_with_reserved_ones() {
        for (slot, generation) in [(0, 0), (7, 1), (u32::MAX - 2, u32::MAX)] {
            let t = token(slot, generation);
            assert_eq!(untoken(t), (slot, generation));
            assert_ne!(t, LISTENER);
            assert_ne!(t, WAKER);
        }
    }
}
