//! The slot table: every open connection has a slot, and is in exactly one
//! place — parked in its slot, in a seat's ready list, or with a worker.

use std::time::Instant;

use mio::{Interest, Token};

use crate::http1::ConnState;
use crate::net::{Peer, Stream};

/// An open connection, owned by exactly one of: its slot (parked), a ready
/// list, a worker.
pub(crate) struct Connection {
    pub(crate) stream: Stream,
    pub(crate) peer: Peer,
    pub(crate) state: ConnState,
    slot: u32,
    /// The slot's generation when this connection took it: its readiness
    /// token, so events and deadlines of an earlier occupant never match.
    generation: u32,
    /// The seat that watches this connection once it has parked.
    pub(crate) seat: usize,
    /// What the seat watches for, once the connection is registered there.
    pub(crate) watching: Option<Interest>,
    /// When the current park ends; `None`: never (a timeout of
    /// `Duration::MAX`).
    pub(crate) deadline: Option<Instant>,
    /// A readiness event said the client's sending side is closed (or the
    /// socket failed): a short read may have left the end of stream unread,
    /// and no other event will tell of it.
    pub(crate) input_ended: bool,
}

/// What the slot table and the ready lists need to know of a connection
/// (the engine's model checks use a stand-in for [`Connection`]).
pub(crate) trait Occupant {
    /// Its slot and the slot's generation when it took it.
    fn place(&self) -> (u32, u32);
    /// When its current park ends.
    fn deadline(&self) -> Option<Instant>;
    /// The seat that watches it.
    fn seat(&self) -> usize;
    /// An event said its input has ended (see [`Connection::input_ended`]).
    fn input_ended(&mut self) {}
    /// True when it waits, kept alive, for a next request of which nothing
    /// has come: it may be closed to make room for a new client (see
    /// [`Slots::take_idle`]). Asked when it parks.
    fn idle_kept_alive(&self) -> bool {
        false
    }
    /// Its next call, which waited for a place among the calls expected to
    /// block, has one (see `growth.rs`).
    fn admitted(&mut self) {}
}

/// A connection moves between its slot, the ready lists and workers as a
/// box: one pointer, however large the connection's state.
impl<T: Occupant> Occupant for Box<T> {
    fn place(&self) -> (u32, u32) {
        (**self).place()
    }

    fn deadline(&self) -> Option<Instant> {
        (**self).deadline()
    }

    fn seat(&self) -> usize {
        (**self).seat()
    }

    fn input_ended(&mut self) {
        (**self).input_ended();
    }

    fn idle_kept_alive(&self) -> bool {
        (**self).idle_kept_alive()
    }

    fn admitted(&mut self) {
        (**self).admitted();
    }
}

impl Occupant for Connection {
    fn place(&self) -> (u32, u32) {
        (self.slot, self.generation)
    }

    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    fn seat(&self) -> usize {
        self.seat
    }

    fn input_ended(&mut self) {
        self.input_ended = true;
    }

    fn idle_kept_alive(&self) -> bool {
        self.state.idle_kept_alive()
    }

    fn admitted(&mut self) {
        self.state.admitted();
    }
}

/// A stand-in connection for the tests of the lists that hold them: its
/// number, and whether it was [admitted](Occupant::admitted).
#[cfg(test)]
#[derive(Debug, PartialEq)]
pub(crate) struct Numbered(pub(crate) u32, pub(crate) bool);

#[cfg(test)]
impl Occupant for Numbered {
    fn place(&self) -> (u32, u32) {
        (self.0, 0)
    }

    fn deadline(&self) -> Option<Instant> {
        None
    }

    fn seat(&self) -> usize {
        0
    }

    fn admitted(&mut self) {
        self.1 = true;
    }
}

impl Connection {
    /// A connection in the slot and generation [`Slots::take`] gave it,
    /// watched by `seat`.
    pub(crate) fn new(
        stream: Stream,
        peer: Peer,
        state: ConnState,
        (slot, generation): (u32, u32),
        seat: usize,
    ) -> Box<Connection> {
        Box::new(Connection {
            stream,
            peer,
            state,
            slot,
            generation,
            seat,
            watching: None,
            deadline: None,
            input_ended: false,
        })
    }

    /// The worker took the socket off its seat (see
    /// [`Transport::leave_seat`](crate::io::Transport::leave_seat)): the next
    /// park registers it again.
    pub(crate) fn left_seat(&mut self) {
        self.watching = None;
    }

    /// Its readiness token.
    pub(crate) fn token(&self) -> Token {
        token(self.slot, self.generation)
    }

    pub(crate) fn slot(&self) -> u32 {
        self.slot
    }
}

/// Bits of a readiness token that hold the slot; the others hold its
/// generation (32 and 32 on 64-bit targets, 16 and 16 on 32-bit ones).
const SLOT_BITS: u32 = usize::BITS / 2;

/// Generations wrap at this mask, so they fit in their half of a token.
const GENERATION_MASK: u32 = (usize::MAX >> SLOT_BITS) as u32;

/// Slots at most: the two highest slot numbers are never handed out, so
/// no token is ever the listener's or a waker's (`usize::MAX`, one less).
pub(crate) const MAX_SLOTS: usize = (1 << SLOT_BITS) - 2;

/// The readiness token of a slot in one generation.
pub(crate) fn token(slot: u32, generation: u32) -> Token {
    Token(((generation & GENERATION_MASK) as usize) << SLOT_BITS | slot as usize)
}

/// Splits a token into (slot, generation).
pub(crate) fn untoken(token: Token) -> (u32, u32) {
    let slot = token.0 & ((1 << SLOT_BITS) - 1);
    (slot as u32, (token.0 >> SLOT_BITS) as u32)
}

enum Slot<C> {
    Free,
    /// In a ready list or with a worker; `pending` when it became readable
    /// since a worker took it, `ended` when an event said its input ended.
    Busy {
        pending: bool,
        ended: bool,
    },
    /// `idle`: whether it waits idle, kept alive
    /// ([`Occupant::idle_kept_alive`] when it parked, which does not change
    /// while it is parked), kept here so that [`Slots::take_idle`] scans
    /// the table without reaching into each connection.
    Parked {
        conn: C,
        idle: Idle,
    },
}

/// A parked connection's mark for [`Slots::take_idle`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Idle {
    /// Not idle: mid-request, before its first, sending, lingering.
    No,
    /// Idle, and parked since the search last passed it.
    Fresh,
    /// Idle, and passed once by the search since it parked: the next
    /// search to come by takes it.
    Passed,
}

/// A deadline entry for the monitor's heap: (deadline, slot, generation).
pub(crate) type Timer = (Instant, u32, u32);

/// The slots, and the deadlines of the parked connections in them.
pub(crate) struct Slots<C = Box<Connection>> {
    slots: Vec<Slot<C>>,
    /// The latest generation handed out per slot.
    generations: Vec<u32>,
    free: Vec<u32>,
    /// Per slot, the deadline of its live entry in the monitor's heap (one
    /// per connection: a park adds one only when none is due earlier).
    timer_at: Vec<Option<Instant>>,
    /// Deadlines the monitor has not moved to its heap yet.
    new_timers: Vec<Timer>,
    /// Connections in `Slot::Parked`.
    parked: usize,
    /// Of those, the ones waiting idle, kept alive.
    idle: usize,
    /// Where the last search for an idle connection stopped.
    hand: usize,
    /// Per slot, whether its connection is spared ([`Slots::spare`]).
    spared: Vec<bool>,
    /// Connections spared: open, but not counted against
    /// `max_connections`.
    spare: usize,
}

impl<C: Occupant> Slots<C> {
    pub(crate) fn new() -> Slots<C> {
        Slots {
            slots: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
            timer_at: Vec::new(),
            new_timers: Vec::with_capacity(256),
            parked: 0,
            idle: 0,
            hand: 0,
            spared: Vec::new(),
            spare: 0,
        }
    }

    /// Open connections.
    pub(crate) fn open(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Open connections that count against `max_connections`: all but
    /// those spared.
    pub(crate) fn counted(&self) -> usize {
        self.open() - self.spare
    }

    /// Spares the connection in `slot`, closed to make room but lingering
    /// over what its client may still send: until its slot is freed it no
    /// longer counts against `max_connections`, so the new client it was
    /// closed for is let in at once. False (nothing done) when `most` are
    /// spared already.
    pub(crate) fn spare(&mut self, slot: u32, most: usize) -> bool {
        let spared = &mut self.spared[slot as usize];
        if self.spare >= most || *spared {
            return false;
        }
        *spared = true;
        self.spare += 1;
        true
    }

    pub(crate) fn parked(&self) -> usize {
        self.parked
    }

    /// Parked connections waiting idle, kept alive, for a next request.
    pub(crate) fn idle(&self) -> usize {
        self.idle
    }

    /// A slot for a new connection, busy (the caller holds it): its index
    /// and generation.
    pub(crate) fn take(&mut self) -> (u32, u32) {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot::Free);
            self.generations.push(0);
            self.timer_at.push(None);
            self.spared.push(false);
            (self.slots.len() - 1) as u32
        });
        let i = slot as usize;
        let generation = self.generations[i].wrapping_add(1) & GENERATION_MASK;
        self.generations[i] = generation;
        self.timer_at[i] = None;
        self.slots[i] = Slot::Busy { pending: false, ended: false };
        (slot, generation)
    }

    /// A readiness event, `ended` when it said the input ended (the
    /// client's sending side closed, or the socket failed): a parked
    /// connection is taken from its slot (to be queued); one a worker holds
    /// is marked to be served again.
    pub(crate) fn wake(&mut self, token: Token, ended: bool) -> Option<C> {
        let (slot, generation) = untoken(token);
        if self.generations.get(slot as usize) != Some(&generation) {
            return None;
        }
        match &mut self.slots[slot as usize] {
            Slot::Parked { .. } => {
                let mut conn = self.unpark(slot as usize)?;
                if ended {
                    conn.input_ended();
                }
                Some(conn)
            }
            Slot::Busy { pending, ended: was_ended } => {
                *pending = true;
                *was_ended |= ended;
                None
            }
            Slot::Free => None,
        }
    }

    /// A worker takes the connection from a ready list: events until now
    /// were for bytes it will read (and an end of input they told of is
    /// passed on).
    pub(crate) fn served(&mut self, conn: &mut C) {
        let i = conn.place().0 as usize;
        if let Slot::Busy { ended: true, .. } = self.slots[i] {
            conn.input_ended();
        }
        self.slots[i] = Slot::Busy { pending: false, ended: false };
    }

    /// Parks `conn` in its slot, with a deadline entry for the monitor when
    /// none is due earlier. Returns it instead when it became readable while
    /// the worker held it: serve it again.
    #[must_use]
    pub(crate) fn park(&mut self, mut conn: C) -> Option<C> {
        let (slot, generation) = conn.place();
        let i = slot as usize;
        if let Slot::Busy { pending: true, ended } = self.slots[i] {
            self.slots[i] = Slot::Busy { pending: false, ended: false };
            if ended {
                conn.input_ended();
            }
            return Some(conn);
        }
        if let Some(deadline) = conn.deadline() {
            if self.timer_at[i].is_none_or(|at| deadline < at) {
                self.timer_at[i] = Some(deadline);
                self.new_timers.push((deadline, slot, generation));
            }
        }
        let idle = if conn.idle_kept_alive() { Idle::Fresh } else { Idle::No };
        self.slots[i] = Slot::Parked { conn, idle };
        self.parked += 1;
        self.idle += usize::from(idle != Idle::No);
        None
    }

    /// Frees the slot of a closed connection.
    pub(crate) fn free(&mut self, slot: u32) {
        self.slots[slot as usize] = Slot::Free;
        self.free.push(slot);
        if std::mem::take(&mut self.spared[slot as usize]) {
            self.spare -= 1;
        }
    }

    /// Moves the deadlines added since the last call to `heap`.
    pub(crate) fn drain_new_timers(&mut self, heap: &mut impl Extend<Timer>) {
        heap.extend(self.new_timers.drain(..));
    }

    /// A heap entry came due. Returns the connection if its deadline has
    /// passed; re-queues the entry (pushed to `later`) if the connection is
    /// parked with a later deadline; drops it if the connection is busy
    /// (its next park adds a new one) or gone.
    pub(crate) fn timer_due(
        &mut self,
        (at, slot, generation): Timer,
        now: Instant,
        later: &mut Vec<Timer>,
    ) -> Option<C> {
        let i = slot as usize;
        if !self.is_live_timer(at, slot, generation) {
            return None;
        }
        let deadline = match &self.slots[i] {
            Slot::Parked { conn, .. } => conn.deadline(),
            _ => None,
        };
        match deadline {
            Some(deadline) if deadline > now => {
                self.timer_at[i] = Some(deadline);
                later.push((deadline, slot, generation));
                None
            }
            Some(_) => {
                self.timer_at[i] = None;
                self.unpark(i)
            }
            None => {
                self.timer_at[i] = None;
                None
            }
        }
    }

    /// True when `(at, slot, generation)` is a slot's live heap entry (the
    /// monitor drops the others when it compacts the heap).
    pub(crate) fn is_live_timer(&self, at: Instant, slot: u32, generation: u32) -> bool {
        let i = slot as usize;
        self.generations.get(i) == Some(&generation) && self.timer_at[i] == Some(at)
    }

    /// Takes a parked connection waiting idle, kept alive, for a next
    /// request, if any; its slot stays busy. One idle for long rather than
    /// one just answered, whose client is likelier to send its next
    /// request on it at once, by the clock algorithm of page replacement:
    /// the search goes on round the table from where the last stopped,
    /// marks each idle connection parked since it last came by, and takes
    /// the first it had marked before. So a park costs no more than a mark
    /// in its slot, and a search no more than two turns of the table (and
    /// most often a few slots, when many connections are idle). (A search
    /// for the one idle longest by its deadline took 24 ns a slot, 0.2 ms
    /// at 8,000, under the hub lock; a queue kept in park order cost some
    /// 40 instructions per keep-alive request.)
    pub(crate) fn take_idle(&mut self) -> Option<C> {
        if self.idle == 0 {
            return None;
        }
        for _ in 0..=2 * self.slots.len() {
            let at = self.hand.min(self.slots.len() - 1);
            self.hand = if at + 1 < self.slots.len() { at + 1 } else { 0 };
            if let Slot::Parked { idle, .. } = &mut self.slots[at] {
                match idle {
                    Idle::No => {}
                    Idle::Fresh => *idle = Idle::Passed,
                    Idle::Passed => return self.unpark(at),
                }
            }
        }
        debug_assert!(false, "{} idle connections counted, none found", self.idle);
        None
    }

    /// Takes every parked connection (shutdown); their slots stay busy.
    pub(crate) fn take_parked(&mut self) -> Vec<C> {
        (0..self.slots.len()).filter_map(|i| self.unpark(i)).collect()
    }

    /// Takes the connection parked in slot `i`, if any; the slot stays busy.
    fn unpark(&mut self, i: usize) -> Option<C> {
        match std::mem::replace(&mut self.slots[i], Slot::Busy { pending: false, ended: false }) {
            Slot::Parked { conn, idle } => {
                self.parked -= 1;
                self.idle -= usize::from(idle != Idle::No);
                Some(conn)
            }
            other => {
                self.slots[i] = other;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::tests::conn_pair;

    #[test]
    fn tokens_round_trip_and_never_collide_with_reserved_ones() {
        let top = MAX_SLOTS as u32 - 1;
        for (slot, generation) in [(0, 0), (7, 1), (top, GENERATION_MASK)] {
            let t = token(slot, generation);
            assert_eq!(untoken(t), (slot, generation));
            assert_ne!(t, crate::shared::LISTENER);
            assert_ne!(t, crate::shared::WAKER);
        }
    }

    /// An event's word that the input ended reaches the connection
    /// wherever it is: parked (taken with it), queued (when a worker takes
    /// it from the ready list), or with a worker (when it tries to park).
    #[test]
    fn an_end_of_input_reaches_the_connection_wherever_it_is() {
        let mut slots = Slots::new();
        let (stream, peer) = conn_pair();
        let conn = Connection::new(stream, peer, ConnState::default(), slots.take(), 0);
        let token = conn.token();
        // Held: the park fails, and the connection is told.
        assert!(slots.wake(token, true).is_none());
        let mut conn = slots.park(conn).expect("readable since: serve it again");
        assert!(conn.input_ended);
        conn.input_ended = false;
        // Parked: the event takes it, told.
        assert!(slots.park(conn).is_none());
        let mut conn = slots.wake(token, true).expect("parked: the event takes it");
        assert!(conn.input_ended);
        conn.input_ended = false;
        // Queued (taken by the event, not yet served): told when served.
        assert!(slots.wake(token, true).is_none());
        slots.served(&mut conn);
        assert!(conn.input_ended);
        // An event without it says nothing of the kind.
        conn.input_ended = false;
        assert!(slots.wake(token, false).is_none());
        let conn = slots.park(conn).expect("readable since");
        assert!(!conn.input_ended);
    }

    /// A stand-in occupant: its place, deadline and whether it waits idle.
    struct Stand((u32, u32), Option<Instant>, bool);

    impl Occupant for Stand {
        fn place(&self) -> (u32, u32) {
            self.0
        }
        fn deadline(&self) -> Option<Instant> {
            self.1
        }
        fn seat(&self) -> usize {
            0
        }
        fn idle_kept_alive(&self) -> bool {
            self.2
        }
    }

    /// Room at `max_connections` is made from the idle kept-alive
    /// connections only, round the table, but one parked since the search
    /// last came by is passed over once.
    #[test]
    fn idle_connections_are_taken_to_make_room_a_recent_one_last() {
        let mut slots = Slots::new();
        assert!(slots.take_idle().is_none());
        // Slot 0 is mid-request (not idle); 1 to 4 idle.
        let mut tokens = Vec::new();
        for idle in [false, true, true, true, true] {
            let place = slots.take();
            tokens.push(token(place.0, place.1));
            assert!(slots.park(Stand(place, None, idle)).is_none());
        }
        assert_eq!(slots.idle(), 4);
        let mut taken = vec![slots.take_idle().expect("idle ones").0.0];
        // Slot 3 is woken (its next request) and, answered, parks again.
        let mut conn = slots.wake(tokens[3], false).expect("parked");
        assert_eq!(slots.idle(), 2);
        slots.served(&mut conn);
        assert!(slots.park(conn).is_none());
        assert_eq!(slots.idle(), 3);
        while let Some(conn) = slots.take_idle() {
            taken.push(conn.0.0);
        }
        assert_eq!(taken, [1, 2, 4, 3], "the one answered just now last");
        assert_eq!((slots.idle(), slots.parked()), (0, 1), "the connection mid-request is never taken");
        // At shutdown every parked connection is taken, and none is idle.
        let place = slots.take();
        assert!(slots.park(Stand(place, None, true)).is_none());
        assert_eq!(slots.take_parked().len(), 2);
        assert_eq!(slots.idle(), 0);
        assert!(slots.take_idle().is_none());
    }

    #[test]
    fn an_event_while_a_worker_holds_the_connection_makes_its_park_fail() {
        let mut slots = Slots::new();
        let (stream, peer) = conn_pair();
        let conn = Connection::new(stream, peer, ConnState::default(), slots.take(), 0);
        let token = conn.token();
        assert!(slots.wake(token, false).is_none(), "held by the caller: marked, not taken");
        let conn = slots.park(conn).expect("readable since: serve it again");
        assert!(slots.park(conn).is_none());
        assert_eq!(slots.parked(), 1);
        let conn = slots.wake(token, false).expect("parked: the event takes it");
        assert_eq!(slots.parked(), 0);
        slots.free(conn.slot());
        assert_eq!(slots.open(), 0);
        // A stale token of the freed slot matches nothing in its next life.
        let (stream, peer) = conn_pair();
        let next = Connection::new(stream, peer, ConnState::default(), slots.take(), 0);
        assert!(slots.park(next).is_none());
        assert!(slots.wake(token, false).is_none());
        assert_eq!(slots.parked(), 1);
    }

    /// Connections spared (closed for room, lingering) do not count
    /// against `max_connections`, at most `most` at a time; a slot freed
    /// counts no more either way.
    #[test]
    fn spared_connections_are_not_counted_and_are_bounded() {
        let mut slots: Slots<Stand> = Slots::new();
        let places: Vec<_> = (0..3).map(|_| slots.take()).collect();
        assert_eq!((slots.open(), slots.counted()), (3, 3));
        assert!(slots.spare(places[0].0, 2));
        assert!(!slots.spare(places[0].0, 2), "spared twice");
        assert!(slots.spare(places[1].0, 2));
        assert!(!slots.spare(places[2].0, 2), "past the bound");
        assert_eq!((slots.open(), slots.counted()), (3, 1));
        slots.free(places[0].0);
        assert_eq!((slots.open(), slots.counted()), (2, 1));
        // The slot, taken again, is counted; and the bound has room again.
        let again = slots.take();
        assert_eq!(again.0, places[0].0);
        assert_eq!((slots.open(), slots.counted()), (3, 2));
        assert!(slots.spare(places[2].0, 2));
        assert_eq!(slots.counted(), 1);
    }
}
