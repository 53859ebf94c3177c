//! The seats' board, under the hub lock: per seat its ready list (what
//! became readable), its later list (streams a sender woke), who polls it
//! and whether a thread is on its way to it, and its progress, by which the
//! monitor tells a stuck seat (see [`super::seats`] for the readiness sets
//! themselves, and for seat ownership).

use std::collections::VecDeque;

use super::slots::{Connection, Occupant};

/// Seats to wake, each once: a bit each for the first 64 (a server has a
/// seat per CPU), so that waking the seats of one event's stream
/// allocates nothing; a list for the rest.
#[derive(Default)]
pub(crate) struct SeatSet {
    low: u64,
    high: Vec<usize>,
}

impl SeatSet {
    pub(crate) fn insert(&mut self, seat: usize) {
        match seat {
            0..64 => self.low |= 1 << seat,
            _ if self.high.contains(&seat) => {}
            _ => self.high.push(seat),
        }
    }

    pub(crate) fn for_each(&self, mut f: impl FnMut(usize)) {
        (0..64).filter(|&seat| self.low & (1 << seat) != 0).for_each(&mut f);
        self.high.iter().copied().for_each(f);
    }
}

/// Room each ready list starts with, so that the first connections queued
/// there (a hand-over under load, say) allocate nothing; more grows it.
const READY_CAPACITY: usize = 16;

/// Connections taken from a seat's ready list in a row while some a sender
/// woke wait in its later list, at most: those are served after requests,
/// but not starved by them.
#[cfg(not(httpool_shuttle))]
const LATER_AFTER: u32 = 16;
/// Small in the model checks, whose few connections must reach it.
#[cfg(httpool_shuttle)]
const LATER_AFTER: u32 = 2;

/// Per seat: its ready list and who watches it. Lives under the hub lock.
pub(crate) struct SeatBoard<C = Box<Connection>> {
    /// Readable connections per seat, oldest first.
    ready: Vec<VecDeque<C>>,
    /// Per seat, streams a sender woke (their events to write), oldest
    /// first: served after the readable ones, as a request's answer is
    /// short and a broadcast to ten thousand streams must not queue the
    /// requests that come meanwhile behind it; but at least every
    /// [`LATER_AFTER`] + 1 connections taken from the seat.
    later: Vec<VecDeque<C>>,
    /// Per seat, connections taken from its ready list since one was taken
    /// from its later list (while some waited there).
    passed: Vec<u32>,
    /// Per seat, connections taken from its later list, or from other seats
    /// by its worker, since it was last polled: a worker draining a
    /// broadcast looks for new readiness every
    /// [`LATER_AFTER`] of them ([`SeatBoard::wants_look`]), so a request
    /// that comes meanwhile is not found only once the broadcast is out.
    unlooked: Vec<u32>,
    /// The monitor's looks so far ([`SeatBoard::tick`]), and per seat the
    /// look during which it was last polled: a worker draining woken
    /// streams, or other seats' work, polls its own seat at least once a
    /// look, so the seat is never left unwatched for a whole look.
    look_tick: u64,
    looked_at: Vec<u64>,
    /// Connections in the ready lists: what admission weighs against
    /// `queue_depth`.
    queued: usize,
    /// Connections in the later lists. Not weighed for admission: a
    /// broadcast to ten thousand streams must not hold back or refuse the
    /// clients that come meanwhile.
    woken: usize,
    /// A thread is polling the seat (or about to).
    polled: Vec<bool>,
    /// A thread was asked to take the seat over and has not yet.
    claimed: Vec<bool>,
    /// Work taken from each seat: the monitor's sign of life.
    progress: Vec<u64>,
    /// Seats being polled by workers (not the monitor).
    worker_pollers: usize,
    /// Round-robin seat for the next connection.
    next_seat: usize,
}

impl<C: Occupant> SeatBoard<C> {
    pub(crate) fn new(seats: usize) -> SeatBoard<C> {
        SeatBoard {
            ready: (0..seats).map(|_| VecDeque::with_capacity(READY_CAPACITY)).collect(),
            later: (0..seats).map(|_| VecDeque::new()).collect(),
            passed: vec![0; seats],
            unlooked: vec![0; seats],
            look_tick: 0,
            looked_at: vec![0; seats],
            queued: 0,
            woken: 0,
            polled: vec![false; seats],
            claimed: vec![false; seats],
            progress: vec![0; seats],
            worker_pollers: 0,
            next_seat: 0,
        }
    }

    pub(crate) fn seats(&self) -> usize {
        self.ready.len()
    }

    /// Connections waiting in ready lists.
    pub(crate) fn queued(&self) -> usize {
        self.queued
    }

    /// Connections waiting in ready and later lists: work for a worker.
    pub(crate) fn pending(&self) -> usize {
        self.queued + self.woken
    }

    /// A look of the monitor's begins.
    pub(crate) fn tick(&mut self) {
        self.look_tick += 1;
    }

    pub(crate) fn has_ready(&self, seat: usize) -> bool {
        !self.ready[seat].is_empty() || !self.later[seat].is_empty()
    }

    /// Queues `conn` at the back of `seat`'s ready list.
    #[inline]
    pub(crate) fn push_ready(&mut self, seat: usize, conn: C) {
        self.ready[seat].push_back(conn);
        self.queued += 1;
    }

    /// Queues `conn`, woken by a sender, at the back of `seat`'s later list.
    pub(crate) fn push_later(&mut self, seat: usize, conn: C) {
        self.later[seat].push_back(conn);
        self.woken += 1;
    }

    /// The oldest ready connection of `seat`, or of its later list when the
    /// ready one is empty or has gone first [`LATER_AFTER`] times; taken by
    /// the seat's own worker, which is progress at the seat.
    #[inline]
    pub(crate) fn pop_ready(&mut self, seat: usize) -> Option<C> {
        // The common case, on every request: no stream woken here.
        if self.later[seat].is_empty() {
            let conn = self.ready[seat].pop_front()?;
            self.queued -= 1;
            self.progress[seat] += 1;
            return Some(conn);
        }
        let conn = self.take_ready_or_later(seat)?;
        self.progress[seat] += 1;
        Some(conn)
    }

    /// [`SeatBoard::pop_ready`] while woken streams wait at `seat`, with no
    /// progress counted.
    #[inline(never)]
    fn take_ready_or_later(&mut self, seat: usize) -> Option<C> {
        let later_waits = !self.later[seat].is_empty();
        if later_waits && (self.ready[seat].is_empty() || self.passed[seat] >= LATER_AFTER) {
            let conn = self.later[seat].pop_front()?;
            self.woken -= 1;
            self.passed[seat] = 0;
            self.unlooked[seat] = self.unlooked[seat].saturating_add(1);
            self.shrink_later(seat);
            return Some(conn);
        }
        let conn = self.ready[seat].pop_front()?;
        self.queued -= 1;
        if later_waits {
            self.passed[seat] += 1;
        }
        Some(conn)
    }

    /// Gives back what a broadcast grew an emptied later list to (a
    /// pointer per stream: some 80 KiB for ten thousand).
    fn shrink_later(&mut self, seat: usize) {
        let later = &mut self.later[seat];
        if later.is_empty() && later.capacity() > 4 * READY_CAPACITY {
            later.shrink_to(READY_CAPACITY);
        }
    }

    /// True when the worker at `seat`, which has served woken streams or
    /// other seats' work since it last polled its seat and has no
    /// readable connection there to serve, should first look (without
    /// waiting) for readiness: after [`LATER_AFTER`] of them, and at least
    /// once per look of the monitor's. Its seat is then neither left
    /// unwatched while a broadcast drains (a request that comes meanwhile
    /// is found at once), nor taken by the monitor for one whose worker is
    /// stuck (and, catching the worker waiting for a lock, for one
    /// blocked, starting a thread for it).
    pub(crate) fn wants_look(&self, seat: usize) -> bool {
        let unlooked = self.unlooked[seat];
        unlooked > 0
            && (unlooked >= LATER_AFTER || self.looked_at[seat] != self.look_tick)
            && self.ready[seat].is_empty()
            && !self.polled[seat]
    }

    /// Work of another seat (one whose worker is busy) for the worker of
    /// `own`, whose own lists are empty: readable connections first, then
    /// woken streams, each searched from the seat after `own` on. It counts
    /// as progress at `own`, not at the seat it came from: taking its work
    /// polls nobody's seat, and a seat whose worker is stuck must still be
    /// seen stuck, and handed over, however busy thieves keep its lists.
    /// `own` counts it among those taken since it was last polled
    /// ([`SeatBoard::wants_look`]).
    pub(crate) fn steal(&mut self, own: usize) -> Option<C> {
        // The common case, a worker that served its seat's last request:
        // nothing queued anywhere.
        if self.queued == 0 && self.woken == 0 {
            return None;
        }
        let n = self.ready.len();
        let order = (1..=n).map(|i| (own + i) % n);
        let seat = order
            .clone()
            .find(|&s| !self.ready[s].is_empty())
            .or_else(|| order.clone().find(|&s| !self.later[s].is_empty()))?;
        let conn = match self.later[seat].is_empty() {
            true => {
                let conn = self.ready[seat].pop_front()?;
                self.queued -= 1;
                conn
            }
            false => self.take_ready_or_later(seat)?,
        };
        self.progress[own] += 1;
        if !self.polled[own] {
            self.unlooked[own] = self.unlooked[own].saturating_add(1);
        }
        Some(conn)
    }

    pub(crate) fn is_polled(&self, seat: usize) -> bool {
        self.polled[seat]
    }

    pub(crate) fn any_polled(&self) -> bool {
        self.polled.iter().any(|&p| p)
    }

    /// A seat some worker waits at, other than those in `except`.
    pub(crate) fn polled_seat_except(&self, except: &[usize]) -> Option<usize> {
        (0..self.seats()).find(|&s| self.polled[s] && !except.contains(&s))
    }

    /// True when nobody polls the seat and nobody was asked to.
    pub(crate) fn is_free(&self, seat: usize) -> bool {
        !self.polled[seat] && !self.claimed[seat]
    }

    /// The caller will poll the seat (it was free, or claimed for it).
    pub(crate) fn begin_poll(&mut self, seat: usize, by_worker: bool) {
        debug_assert!(!self.polled[seat], "two threads polling one seat");
        self.polled[seat] = true;
        self.claimed[seat] = false;
        self.worker_pollers += usize::from(by_worker);
    }

    /// The caller stopped polling the seat; a worker's poll is progress.
    pub(crate) fn end_poll(&mut self, seat: usize, by_worker: bool) {
        self.polled[seat] = false;
        self.unlooked[seat] = 0;
        self.looked_at[seat] = self.look_tick;
        if by_worker {
            self.worker_pollers -= 1;
            self.progress[seat] += 1;
        }
    }

    /// Records that a thread was asked to take the seat over.
    pub(crate) fn claim(&mut self, seat: usize) {
        self.claimed[seat] = true;
    }

    /// The thread asked to take the seat over could not be had, or has
    /// arrived: it takes the seat's ready work or polls it, and a seat that
    /// is left unpolled again (its new worker blocked in turn) may be
    /// handed over again.
    pub(crate) fn unclaim(&mut self, seat: usize) {
        self.claimed[seat] = false;
    }

    /// Work taken from the seat so far.
    pub(crate) fn progress(&self, seat: usize) -> u64 {
        self.progress[seat]
    }

    /// Workers waiting for readiness at a seat.
    pub(crate) fn worker_pollers(&self) -> usize {
        self.worker_pollers
    }

    /// The seat a new connection is watched by: round-robin.
    pub(crate) fn next_seat(&mut self) -> usize {
        let seat = self.next_seat;
        self.next_seat = (seat + 1) % self.seats();
        seat
    }
}

#[cfg(test)]
mod board_tests {
    use super::{LATER_AFTER, SeatBoard};
    use crate::shared::slots::Numbered as Conn;

    /// Streams a sender woke go after readable connections, but one goes
    /// every `LATER_AFTER + 1` while both wait; alone, they go at once.
    #[test]
    fn woken_streams_go_after_readable_connections_but_are_not_starved() {
        let mut board = SeatBoard::new(1);
        for n in 0..3 {
            board.push_later(0, Conn(1000 + n, false));
        }
        for n in 0..40 {
            board.push_ready(0, Conn(n, false));
        }
        assert_eq!((board.queued(), board.pending()), (40, 43));
        let order: Vec<u32> = std::iter::from_fn(|| board.pop_ready(0).map(|c| c.0)).collect();
        let first_later = LATER_AFTER as usize;
        assert_eq!(order[..first_later], (0..LATER_AFTER).collect::<Vec<_>>()[..]);
        assert_eq!(order[first_later], 1000);
        assert_eq!(order[2 * first_later + 1], 1001);
        assert_eq!(order.len(), 43);
        assert_eq!(board.pending(), 0);
        board.push_later(0, Conn(7, false));
        assert!(board.has_ready(0));
        assert_eq!(board.steal(0).map(|c| c.0), Some(7));
    }

    /// Streams a sender woke wait for a worker, but not for admission: a
    /// broadcast to more streams than `queue_depth` must not hold back or
    /// refuse new clients.
    #[test]
    fn woken_streams_are_work_but_not_weighed_for_admission() {
        let mut board = SeatBoard::new(2);
        for n in 0..5 {
            board.push_later(n % 2, Conn(n as u32, false));
        }
        board.push_ready(0, Conn(10, false));
        assert_eq!((board.queued(), board.pending()), (1, 6));
        assert!(board.pop_ready(0).is_some());
        assert_eq!((board.queued(), board.pending()), (0, 5));
        while board.steal(0).is_some() {}
        assert_eq!((board.queued(), board.pending()), (0, 0));
    }

    /// A thief takes other seats' readable connections before their woken
    /// streams, from the seat after its own on; what it takes is progress
    /// at its own seat, not at the seat it came from (whose worker may be
    /// stuck, and must still be seen so).
    #[test]
    fn a_thief_takes_requests_first_and_credits_its_own_seat() {
        let mut board = SeatBoard::new(3);
        board.push_later(1, Conn(1, false));
        board.push_ready(2, Conn(2, false));
        board.push_ready(0, Conn(0, false));
        let before = (0..3).map(|s| board.progress(s)).collect::<Vec<_>>();
        assert_eq!(board.steal(1).map(|c| c.0), Some(2), "seat 2's request, before seat 1's stream");
        assert_eq!(board.steal(1).map(|c| c.0), Some(0));
        assert_eq!(board.steal(1).map(|c| c.0), Some(1));
        assert_eq!(board.progress(0), before[0], "taken from seat 0, but no progress there");
        assert_eq!(board.progress(2), before[2]);
        assert_eq!(board.progress(1), before[1] + 3);
    }

    /// A worker draining woken streams looks at its seat after
    /// `LATER_AFTER` of them, and at least once per look of the monitor's;
    /// a worker that only serves requests never needs to.
    #[test]
    fn a_worker_draining_woken_streams_looks_at_its_seat_each_monitor_look() {
        let mut board = SeatBoard::new(1);
        for n in 0..100 {
            board.push_later(0, Conn(n, false));
        }
        board.push_ready(0, Conn(1000, false));
        assert!(board.pop_ready(0).is_some());
        board.tick();
        assert!(!board.wants_look(0), "a request served: nothing unlooked");
        assert!(board.pop_ready(0).is_some());
        assert!(board.wants_look(0), "the monitor looked since the seat was polled");
        board.begin_poll(0, true);
        assert!(!board.wants_look(0), "polled now");
        board.end_poll(0, true);
        for _ in 1..LATER_AFTER {
            assert!(board.pop_ready(0).is_some());
            assert!(!board.wants_look(0));
        }
        assert!(board.pop_ready(0).is_some());
        assert!(board.wants_look(0), "LATER_AFTER streams since the last poll");
        board.begin_poll(0, true);
        board.end_poll(0, true);
        assert!(board.pop_ready(0).is_some());
        assert!(!board.wants_look(0));
        board.tick();
        assert!(board.wants_look(0));
        // The count saturates: a worker stealing for ever never overflows it.
        board.unlooked[0] = u32::MAX;
        board.push_ready(0, Conn(7, false));
        assert!(board.steal(0).is_some());
        assert_eq!(board.unlooked[0], u32::MAX);
    }
}
