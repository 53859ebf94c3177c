//! Model checks of the engine's core ([`Engine`]): its real code, with the
//! locks and condition variables of the shuttle model checker (`--cfg
//! httpool_shuttle`, see `src/sync.rs`), whose scheduler runs many
//! interleavings of the threads, chosen at random and by probabilistic
//! concurrency testing. The network is simulated in memory as the kernel
//! behaves: edge-triggered readiness (an arrival on a registered connection
//! queues one event for its seat; registering a connection with bytes
//! already in queues one too, with the read-closed flag when the client's
//! end of stream is in), reads that take every byte there is and the end of
//! stream only once an event has said it came (a short read's rule).
//!
//! The workers and the monitor here make the same [`Engine`] calls as
//! `pool.rs` and `monitor.rs`; only the connection is a stand-in ([`Fake`]).
//! The hub itself is out of reach (private to `engine.rs`), so nothing here
//! can set up a state the engine could not reach.
//!
//! A lost wake-up, a seat no thread takes over, a worker that never wakes or
//! leaves, shows up as threads all blocked (shuttle reports a deadlock) or a
//! monitor spinning for ever (shuttle's step bound): the check fails. Each
//! check was seen to fail with its bug put back: a readiness edge dropped
//! for a connection a worker holds (`Slots::wake`), an adoption without its
//! wake-up (`Engine::hand_over`), a stuck seat not polled at the bound
//! (`Engine::poll_for_busy_workers`), an event's end-of-stream flag dropped
//! on any of its four paths in `Slots` (parked, held, queued, parking),
//! an event stream armed with an event already queued (`Feed::arm`), a
//! place among blocking calls freed between a refusal and the wait for one
//! (`Admissions::wait`). A
//! seat's wake for woken streams that is never made is not caught: the
//! monitor nudges a poller whose seat has work waiting, which is the
//! design's own net for it. Run by `ci/test.sh`:
//!
//! ```sh
//! RUSTFLAGS="--cfg httpool_shuttle" cargo test --lib shared::model_tests
//! ```

use std::sync::Arc;
use std::time::Instant;

use mio::Token;
use shuttle::sync::{Condvar, Mutex};
use shuttle::thread;

use super::board::SeatSet;
use super::crew::HandOver;
use super::engine::{Engine, Parking, Work};
use super::slots::{Occupant, token};

/// A connection as the engine sees it.
struct Fake {
    slot: u32,
    generation: u32,
    seat: usize,
    /// Its index in the simulated network.
    id: usize,
    /// An event said its input has ended: it reads on to the end of
    /// stream (else a read that takes every byte there is ends its turn,
    /// as a short read does, with the end of stream left unread).
    told_end: bool,
    /// Its request waited for a place among the calls expected to block
    /// and was given one.
    given: bool,
}

impl Occupant for Fake {
    fn place(&self) -> (u32, u32) {
        (self.slot, self.generation)
    }

    fn deadline(&self) -> Option<Instant> {
        None
    }

    fn seat(&self) -> usize {
        self.seat
    }

    fn input_ended(&mut self) {
        self.told_end = true;
    }

    fn admitted(&mut self) {
        self.given = true;
    }
}

/// The simulated kernel: per connection, bytes arrived and not read, and
/// the seat it is registered with; per seat, readiness events not yet
/// polled (each with its read-closed flag).
#[derive(Default)]
struct Net {
    unread: Vec<u32>,
    /// The client's end of stream has arrived.
    fin: Vec<bool>,
    /// A worker read the end of stream and closed the connection.
    closed: Vec<bool>,
    registered: Vec<Option<Token>>,
    seat_of: Vec<usize>,
    events: Vec<Vec<(Token, bool)>>,
    /// Bytes read by workers, per connection.
    served: Vec<u32>,
    /// Requests the gate holds: a handler waits while its connection is
    /// listed here.
    gated: Vec<usize>,
    /// Handlers expected to block (of the connections listed in
    /// `blocking`) inside at once now, and at most so far.
    blocking: Vec<usize>,
    inside: usize,
    most_inside: usize,
    /// Events handed to the engine by a poll.
    delivered: Vec<Token>,
    /// Seats whose poller is asked to return (the monitor's nudge).
    nudged: Vec<bool>,
    /// Shutdown: pollers return at once.
    stopped: bool,
    /// Event streams (see [`World::push`]): per connection, events its
    /// sender queued and not yet taken, events taken by workers, and
    /// whether it parked armed (its next event wakes it).
    feed: Vec<u32>,
    taken: Vec<u32>,
    armed: Vec<bool>,
    /// Per seat, a wake for queued work is on its way (the seat's `woken`
    /// flag): another is not made until a poll returns.
    woken: Vec<bool>,
}

struct World {
    engine: Engine<Fake>,
    /// Connections `0..streams` are event streams.
    streams: usize,
    net: Mutex<Net>,
    /// Signalled on every change of `net`.
    changed: Condvar,
}

impl World {
    fn new(seats: usize, conns: usize, core: usize, max: usize) -> Arc<World> {
        let net = Net {
            unread: vec![0; conns],
            fin: vec![false; conns],
            closed: vec![false; conns],
            registered: vec![None; conns],
            seat_of: (0..conns).map(|c| c % seats).collect(),
            events: vec![Vec::new(); seats],
            nudged: vec![false; seats],
            served: vec![0; conns],
            feed: vec![0; conns],
            taken: vec![0; conns],
            armed: vec![false; conns],
            woken: vec![false; seats],
            ..Net::default()
        };
        Arc::new(World {
            engine: Engine::new(seats, core, max, std::time::Duration::from_secs(1)),
            streams: 0,
            net: Mutex::new(net),
            changed: Condvar::new(),
        })
    }

    /// Admits connection `id` through the engine, as the acceptor does: with
    /// `first_bytes` (a request arrived with it: deferred accept) it joins
    /// its seat's ready list; else it parks at once, unregistered until a
    /// worker first parks it (as after the accept on other systems).
    fn admit(&self, id: usize, first_bytes: bool) {
        let seats = self.net.lock().unwrap().events.len();
        let make =
            |(slot, generation), _| Fake { slot, generation, seat: id % seats, id, told_end: false, given: false };
        if first_bytes {
            self.net.lock().unwrap().unread[id] += 1;
            assert!(self.engine.admit(make, Some(id % seats)).is_none());
        } else {
            let conn = self.engine.admit(make, None).expect("held by the caller");
            assert!(matches!(self.engine.park(conn, false), Parking::Done), "nothing to read: it parks");
        }
    }

    /// The client sends a byte on `id`: with the connection registered,
    /// the kernel queues a readiness event for its seat.
    fn send(&self, id: usize) {
        self.arrive(id, false);
    }

    /// The client sends its last byte on `id` and closes its side: both
    /// arrive before the seat polls, so one event reports them, and only
    /// its read-closed flag tells of the end.
    fn send_last(&self, id: usize) {
        self.arrive(id, true);
    }

    fn arrive(&self, id: usize, fin: bool) {
        let mut net = self.net.lock().unwrap();
        net.unread[id] += 1;
        net.fin[id] |= fin;
        if let Some(token) = net.registered[id] {
            let seat = net.seat_of[id];
            let ended = net.fin[id];
            net.events[seat].push((token, ended));
        }
        self.changed.notify_all();
    }

    /// A worker polls `seat`: waits for events (or shutdown; with `wait`
    /// false, only looks), then hands them to the engine.
    fn poll(&self, seat: usize, wait: bool) {
        let mut net = self.net.lock().unwrap();
        while wait && net.events[seat].is_empty() && !net.stopped && !net.nudged[seat] {
            net = self.changed.wait(net).unwrap();
        }
        net.nudged[seat] = false;
        net.woken[seat] = false;
        let events = std::mem::take(&mut net.events[seat]);
        drop(net);
        self.engine.deliver(seat, events.iter().copied(), true);
        self.delivered(&events);
    }

    /// The monitor polls `seat` without waiting.
    fn poll_now(&self, seat: usize) {
        let events = std::mem::take(&mut self.net.lock().unwrap().events[seat]);
        self.engine.deliver(seat, events.iter().copied(), false);
        self.delivered(&events);
    }

    /// Wakes the thread polling `seat`, as a seat's waker does.
    fn nudge(&self, seat: usize) {
        self.net.lock().unwrap().nudged[seat] = true;
        self.changed.notify_all();
    }

    /// A sender queues an event on each stream of `ids` (as a broadcast
    /// does: the feeds first, then the wake-ups owed, in one call to the
    /// engine), and wakes the pollers of the seats that got work, each
    /// once until its poll returns (`Seat::wake_for_work`).
    fn push(&self, ids: &[usize]) {
        let mut tokens = Vec::new();
        {
            let mut net = self.net.lock().unwrap();
            for &id in ids {
                net.feed[id] += 1;
                if std::mem::take(&mut net.armed[id]) {
                    tokens.push(token_of(self, id));
                }
            }
        }
        let mut seats = SeatSet::default();
        self.engine.notify(tokens, &mut seats);
        let mut net = self.net.lock().unwrap();
        seats.for_each(|seat| {
            if !std::mem::replace(&mut net.woken[seat], true) {
                net.nudged[seat] = true;
            }
        });
        self.changed.notify_all();
    }

    /// A worker serves an event stream: takes what its feed holds.
    fn take(&self, conn: &Fake) {
        let mut net = self.net.lock().unwrap();
        let events = std::mem::take(&mut net.feed[conn.id]);
        net.taken[conn.id] += events;
        self.changed.notify_all();
    }

    /// Before it parks, a stream arms its feed, unless events came since
    /// it took (`Feed::arm`): then it is served again.
    fn arm(&self, conn: &Fake) -> bool {
        let mut net = self.net.lock().unwrap();
        if net.feed[conn.id] > 0 {
            return false;
        }
        net.armed[conn.id] = true;
        true
    }

    /// Waits until every stream of `ids` has had `events` taken.
    fn wait_taken(&self, ids: std::ops::Range<usize>, events: u32) {
        let mut net = self.net.lock().unwrap();
        while net.taken[ids.clone()].iter().any(|&t| t < events) {
            net = self.changed.wait(net).unwrap();
        }
    }

    /// Waits until a readiness event of connection `id` was polled and
    /// handed to the engine.
    fn wait_delivered(&self, id: usize) {
        let token = token_of(self, id);
        let mut net = self.net.lock().unwrap();
        while !net.delivered.contains(&token) {
            net = self.changed.wait(net).unwrap();
        }
    }

    /// Notes events handed to the engine.
    fn delivered(&self, events: &[(Token, bool)]) {
        if !events.is_empty() {
            self.net.lock().unwrap().delivered.extend(events.iter().map(|&(token, _)| token));
            self.changed.notify_all();
        }
    }

    /// A worker serves `conn`: reads all there is (its handler waits while
    /// the gate holds it), and the end of stream when it was told of one.
    /// True when it read the end: the connection closes.
    fn serve(&self, conn: &Fake) -> bool {
        let mut net = self.net.lock().unwrap();
        let blocking = net.blocking.contains(&conn.id);
        if blocking {
            net.inside += 1;
            net.most_inside = net.most_inside.max(net.inside);
        }
        while net.gated.contains(&conn.id) {
            net = self.changed.wait(net).unwrap();
        }
        net.inside -= usize::from(blocking);
        let bytes = std::mem::take(&mut net.unread[conn.id]);
        net.served[conn.id] += bytes;
        let ends = conn.told_end && net.fin[conn.id];
        net.closed[conn.id] |= ends;
        self.changed.notify_all();
        ends
    }

    /// A park registers the connection with its seat the first time; the
    /// kernel reports bytes already there at once (epoll does at
    /// `EPOLL_CTL_ADD`). Bytes that arrived between the read and this are
    /// therefore not lost either.
    fn register(&self, conn: &Fake) {
        let mut net = self.net.lock().unwrap();
        if net.registered[conn.id].is_some() {
            return;
        }
        let token = token(conn.slot, conn.generation);
        net.registered[conn.id] = Some(token);
        if net.unread[conn.id] > 0 || net.fin[conn.id] {
            let seat = net.seat_of[conn.id];
            let ended = net.fin[conn.id];
            net.events[seat].push((token, ended));
            self.changed.notify_all();
        }
    }

    /// Connection `conn` has bytes to read (a request to answer).
    fn has_request(&self, conn: &Fake) -> bool {
        self.net.lock().unwrap().unread[conn.id] > 0
    }

    /// Waits until connection `id` has had a byte read.
    fn wait_served_one(&self, id: usize) {
        let mut net = self.net.lock().unwrap();
        while net.served[id] < 1 {
            net = self.changed.wait(net).unwrap();
        }
    }

    /// Waits until every connection has been closed at its end of stream.
    fn wait_closed(&self) {
        let mut net = self.net.lock().unwrap();
        while !net.closed.iter().all(|&c| c) {
            net = self.changed.wait(net).unwrap();
        }
    }

    /// Waits until every connection has had `bytes` read.
    fn wait_served(&self, bytes: u32) {
        let mut net = self.net.lock().unwrap();
        while net.served.iter().any(|&s| s < bytes) {
            net = self.changed.wait(net).unwrap();
        }
    }

    /// Shutdown as the server runs it: stop, let the pollers go, sweep (no
    /// request is in flight), wait for every worker to leave.
    fn shut_down(&self) {
        self.engine.stop();
        let mut net = self.net.lock().unwrap();
        net.stopped = true;
        self.changed.notify_all();
        drop(net);
        let seats = self.engine.claim_all_seats();
        for seat in 0..seats {
            self.engine.deliver(seat, [], false);
        }
        for fake in self.engine.sweep_parked(|_| false) {
            self.engine.free(fake.slot);
        }
        assert!(self.engine.wait_for_workers(None));
        assert_eq!(self.engine.load().threads.live, 0);
    }
}

/// A worker's loop, as `pool.rs` runs it: connections below `STREAMS`
/// are event streams (what their senders queued is taken, and they park
/// armed), the others read what their clients sent.
fn worker(world: Arc<World>, mut seat: usize) {
    world.engine.arrive(seat);
    while let Work::Serve(mut conn) = world.engine.next(&mut seat, |s, wait| world.poll(s, wait)) {
        loop {
            let stream = conn.id < world.streams;
            // A call expected to block takes a place first, as the loop
            // does, or waits for one.
            let blocks = world.net.lock().unwrap().blocking.contains(&conn.id) && world.has_request(&conn);
            let placed = blocks && (std::mem::take(&mut conn.given) || world.engine.admit_blocking());
            if blocks && !placed {
                world.engine.wait_for_place(conn);
                break;
            }
            if stream {
                world.take(&conn);
            } else if world.serve(&conn) {
                if placed {
                    world.engine.blocking_done();
                }
                world.engine.free(conn.slot);
                break;
            }
            if placed {
                world.engine.blocking_done();
            }
            world.register(&conn);
            if stream && !world.arm(&conn) {
                continue;
            }
            match world.engine.park(conn, false) {
                Parking::Done => break,
                Parking::Again(again) => conn = again,
                Parking::Close(closed) => {
                    world.engine.free(closed.slot);
                    break;
                }
            }
        }
    }
}

/// Starts `n` core workers, spread over the seats.
fn start_workers(world: &Arc<World>, n: usize, seats: usize) -> Vec<thread::JoinHandle<()>> {
    (0..n)
        .map(|i| {
            assert!(world.engine.reserve(i % seats));
            let world = world.clone();
            thread::spawn(move || worker(world, i % seats))
        })
        .collect()
}

/// Three connections on two seats, each admitted with its first request
/// (queued, as the deferred accept does), served by two workers while
/// `client` sends from a thread of its own; then `done` waits for what the
/// check asks, and the server shuts down.
fn serve_three(client: impl FnOnce(&World) + Send + 'static, done: impl FnOnce(&World)) {
    const SEATS: usize = 2;
    let world = World::new(SEATS, CONNS, 2, 2);
    for id in 0..CONNS {
        world.admit(id, true);
    }
    let workers = start_workers(&world, 2, SEATS);
    let sender = {
        let world = world.clone();
        thread::spawn(move || client(&world))
    };
    sender.join().unwrap();
    done(&world);
    world.shut_down();
    workers.into_iter().for_each(|w| w.join().unwrap());
}

/// The connections [`serve_three`] admits.
const CONNS: usize = 3;

/// Bytes sent at any moment — between a worker's read and its park, while
/// another polls, while the connection waits in a ready list — are all read:
/// no readiness edge is lost.
fn no_byte_is_left_unread() {
    const BYTES: u32 = 2;
    serve_three(
        |world| {
            for _ in 1..BYTES {
                for id in 0..CONNS {
                    world.send(id);
                }
            }
        },
        |world| world.wait_served(BYTES),
    );
}

/// A client's last bytes and its end of stream reported by one event, and
/// no later one, wherever the event finds the connection (parked, in a
/// ready list, held by a worker): the end reaches the connection, which
/// reads it and closes. Lost on any path, the connection stays parked with
/// the end unread, and the check deadlocks.
fn the_end_of_stream_reaches_the_connection() {
    serve_three(
        |world| {
            for id in 0..CONNS {
                world.send(id);
            }
            for id in 0..CONNS {
                world.send_last(id);
            }
        },
        World::wait_closed,
    );
}

/// The token of connection `id` (admitted in order, each into a new slot).
fn token_of(world: &World, id: usize) -> Token {
    let _ = world;
    token(id as u32, 1)
}

/// A seat whose worker is held by a handler that blocks is taken over —
/// by a thread started for it within the bound — again when that thread
/// takes ready work that blocks in turn. With a bound of three threads, a
/// request on a third connection of the seat is served while both handlers
/// still block; with two, the monitor polls the seat in their place, and
/// the request is served once a handler returns.
///
/// `grow`: whether the monitor may start threads (`None`: it chooses at
/// random each time). Never (a worker found computing): below the bound
/// too, the monitor polls the seat in its workers' place.
fn a_seat_whose_worker_blocks_is_taken_over(max: usize, grow: Option<bool>) {
    let world = World::new(1, 3, 1, max);
    // Connections 0 and 1 have requests whose handlers block until the
    // gate opens; both wait in the seat's ready list.
    world.net.lock().unwrap().gated.extend([0, 1]);
    world.admit(0, true);
    world.admit(1, true);
    // Connection 2 is parked and registered, as after an earlier request.
    world.admit(2, false);
    world.net.lock().unwrap().registered[2] = Some(token_of(&world, 2));
    let workers = Arc::new(Mutex::new(start_workers(&world, 1, 1)));
    let stop = Arc::new(Mutex::new(false));
    let monitor = {
        let (world, stop, workers) = (world.clone(), stop.clone(), workers.clone());
        thread::spawn(move || monitor(&world, &stop, &workers, max, grow))
    };
    world.send(2);
    if max >= 3 && grow != Some(false) {
        world.wait_served_one(2);
        let net = world.net.lock().unwrap();
        assert_eq!((net.served[0], net.served[1]), (0, 0), "the blocked handlers have not finished");
    } else {
        // Both threads block: the monitor polls the seat in their place.
        world.wait_delivered(2);
    }
    {
        let mut net = world.net.lock().unwrap();
        net.gated.clear();
        world.changed.notify_all();
    }
    world.wait_served(1);
    *stop.lock().unwrap() = true;
    monitor.join().unwrap();
    world.shut_down();
    let workers = std::mem::take(&mut *workers.lock().unwrap());
    workers.into_iter().for_each(|w| w.join().unwrap());
}

/// The monitor's loop, as `monitor.rs` runs it, through the same engine
/// calls: a look; each stuck seat handed over (a thread started when the
/// engine asks for one, and the pool may grow: the model chooses at
/// random, as a worker found computing says it may not), or at the bound,
/// or without growing, polled by the monitor without waiting; pollers of
/// seats with queued work woken. The bound is checked
/// at every step.
fn monitor(
    world: &Arc<World>,
    stop: &Mutex<bool>,
    workers: &Mutex<Vec<thread::JoinHandle<()>>>,
    max: usize,
    grow: Option<bool>,
) {
    let seats = world.net.lock().unwrap().events.len();
    // As `Monitor::new` sets it: every seat counts as moved at the first look.
    let mut seen = vec![u64::MAX; seats];
    let (mut timers, mut stuck, mut orphans, mut nudge) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut tick = 0;
    while !*stop.lock().unwrap() {
        tick += 1;
        world.engine.look(&mut seen, &mut timers, &mut stuck, &mut nudge);
        for seat in stuck.drain(..) {
            // The monitor may find the seat's worker computing (or waiting
            // for a CPU): then the pool does not grow, and an idle thread
            // adopts the seat or the monitor polls it below the bound.
            let grow = grow.unwrap_or_else(|| shuttle::rand::Rng::gen_bool(&mut shuttle::rand::thread_rng(), 0.5));
            match world.engine.hand_over(seat, tick, grow) {
                Some(HandOver::Spawn) => {
                    let w = world.clone();
                    workers.lock().unwrap().push(thread::spawn(move || worker(w, seat)));
                }
                Some(HandOver::AtBound) => world.engine.poll_for_busy_workers(seat, &mut orphans, &mut nudge),
                Some(HandOver::Adopt) | None => {}
            }
        }
        for seat in nudge.drain(..) {
            world.nudge(seat);
        }
        for seat in orphans.drain(..) {
            world.poll_now(seat);
        }
        assert!(world.engine.load().threads.live <= max, "more threads than the bound");
        thread::yield_now();
    }
}

/// Three requests whose calls are expected to block, with one place among
/// such calls: one runs, the two others wait for a place, holding no
/// thread, while the monitor hands the seat over and threads beyond the
/// limit retire; the place passes from call to call as each ends, and all
/// three are answered (`stop_early`: shutdown begins while they wait, and
/// admits them all).
fn calls_past_the_limit_wait_for_a_place(stop_early: bool) {
    let world = World::new(1, 3, 1, 3);
    world.engine.limit_blocking(1);
    {
        let mut net = world.net.lock().unwrap();
        net.gated.extend([0, 1, 2]);
        net.blocking.extend([0, 1, 2]);
    }
    for id in 0..3 {
        world.admit(id, true);
    }
    let workers = Arc::new(Mutex::new(start_workers(&world, 1, 1)));
    let stop = Arc::new(Mutex::new(false));
    let monitor = {
        let (world, stop, workers) = (world.clone(), stop.clone(), workers.clone());
        thread::spawn(move || monitor(&world, &stop, &workers, 3, Some(true)))
    };
    if stop_early {
        world.engine.stop();
        let mut net = world.net.lock().unwrap();
        net.stopped = true;
        world.changed.notify_all();
        drop(net);
        let seats = world.engine.claim_all_seats();
        for seat in 0..seats {
            world.engine.deliver(seat, [], false);
        }
        for fake in world.engine.sweep_parked(|_| true) {
            world.engine.free(fake.slot);
        }
    }
    {
        let mut net = world.net.lock().unwrap();
        net.gated.clear();
        world.changed.notify_all();
    }
    world.wait_served(1);
    if !stop_early {
        assert_eq!(world.net.lock().unwrap().most_inside, 1, "more calls than places at once");
    }
    *stop.lock().unwrap() = true;
    monitor.join().unwrap();
    if stop_early {
        assert!(world.engine.wait_for_workers(None));
    } else {
        world.shut_down();
    }
    let workers = std::mem::take(&mut *workers.lock().unwrap());
    workers.into_iter().for_each(|w| w.join().unwrap());
}

/// An extra idle worker whose wait times out while a seat is handed to it
/// does not retire with the adoption pending: the seat's ready work is
/// served.
fn an_adoption_is_not_lost_to_a_retiring_worker() {
    let world = World::new(2, 2, 1, 3);
    world.admit(0, false);
    // The core worker and an extra one both start at seat 0: one polls it,
    // the other waits idle (and may time out). Seat 1 has no worker.
    let mut workers = start_workers(&world, 1, 2);
    assert!(world.engine.reserve(0));
    let extra = world.clone();
    workers.push(thread::spawn(move || worker(extra, 0)));
    // Timeouts fire now and then.
    let ticker = {
        let w = world.clone();
        thread::spawn(move || {
            for _ in 0..3 {
                w.engine.poke_idle();
                thread::yield_now();
            }
        })
    };
    // Seat 1's connection has a request (as if just accepted there), and
    // the seat is handed over: to the idle worker, or one started for it.
    world.admit(1, true);
    if let Some(HandOver::Spawn) = world.engine.hand_over(1, 0, true) {
        let w = world.clone();
        workers.push(thread::spawn(move || worker(w, 1)));
    }
    world.wait_served_one(1);
    ticker.join().unwrap();
    world.shut_down();
    workers.into_iter().for_each(|w| w.join().unwrap());
}

/// Event streams parked on two seats, and a client's connection: a sender
/// queues events in rounds while workers take them, park the streams armed
/// and serve the client; a monitor looks meanwhile. Every event queued is
/// taken (a wake-up lost between a take, an arm, a park and a notify
/// leaves a stream parked with its event, and the check deadlocks), and
/// the client's bytes are read while streams drain (the later list's
/// looks and its rule). With `stop_early`, shutdown comes while the
/// sender still queues: it must finish, whatever the lists hold.
fn every_event_queued_is_taken(stop_early: bool) {
    const SEATS: usize = 2;
    const STREAMS: usize = 4;
    const ROUNDS: u32 = 2;
    let mut world = World::new(SEATS, STREAMS + 1, 2, 3);
    Arc::get_mut(&mut world).expect("not shared yet").streams = STREAMS;
    // The streams parked armed, as after their handlers answered.
    for id in 0..STREAMS {
        world.admit(id, false);
        let mut net = world.net.lock().unwrap();
        net.registered[id] = Some(token_of(&world, id));
        net.armed[id] = true;
    }
    world.admit(STREAMS, false);
    world.net.lock().unwrap().registered[STREAMS] = Some(token_of(&world, STREAMS));
    let workers = Arc::new(Mutex::new(start_workers(&world, 2, SEATS)));
    let stop = Arc::new(Mutex::new(false));
    let monitor = {
        let (world, stop, workers) = (world.clone(), stop.clone(), workers.clone());
        thread::spawn(move || monitor(&world, &stop, &workers, 3, Some(false)))
    };
    let sender = {
        let world = world.clone();
        thread::spawn(move || {
            for _ in 0..ROUNDS {
                world.push(&(0..STREAMS).collect::<Vec<_>>());
            }
        })
    };
    world.send(STREAMS);
    if !stop_early {
        world.wait_served_one(STREAMS);
        world.wait_taken(0..STREAMS, ROUNDS);
    }
    *stop.lock().unwrap() = true;
    monitor.join().unwrap();
    world.shut_down();
    sender.join().unwrap();
    let workers = std::mem::take(&mut *workers.lock().unwrap());
    workers.into_iter().for_each(|w| w.join().unwrap());
}

#[test]
fn model_every_event_queued_is_taken() {
    shuttle::check_random(|| every_event_queued_is_taken(false), 2000);
    shuttle::check_pct(|| every_event_queued_is_taken(false), 2000, 3);
}

#[test]
fn model_shutdown_while_events_are_queued_finishes() {
    shuttle::check_random(|| every_event_queued_is_taken(true), 2000);
    shuttle::check_pct(|| every_event_queued_is_taken(true), 2000, 3);
}

#[test]
fn model_no_byte_is_left_unread() {
    shuttle::check_random(no_byte_is_left_unread, 3000);
    shuttle::check_pct(no_byte_is_left_unread, 3000, 3);
}

#[test]
fn model_the_end_of_stream_reaches_the_connection() {
    shuttle::check_random(the_end_of_stream_reaches_the_connection, 3000);
    shuttle::check_pct(the_end_of_stream_reaches_the_connection, 3000, 3);
}

#[test]
fn model_a_seat_whose_worker_blocks_is_taken_over() {
    shuttle::check_random(|| a_seat_whose_worker_blocks_is_taken_over(3, None), 2000);
    shuttle::check_pct(|| a_seat_whose_worker_blocks_is_taken_over(3, None), 2000, 3);
}

#[test]
fn model_at_the_bound_the_monitor_polls_a_stuck_seat() {
    shuttle::check_random(|| a_seat_whose_worker_blocks_is_taken_over(2, None), 2000);
    shuttle::check_pct(|| a_seat_whose_worker_blocks_is_taken_over(2, None), 2000, 3);
}

#[test]
fn model_below_the_bound_a_seat_whose_worker_computes_is_polled() {
    shuttle::check_random(|| a_seat_whose_worker_blocks_is_taken_over(3, Some(false)), 2000);
    shuttle::check_pct(|| a_seat_whose_worker_blocks_is_taken_over(3, Some(false)), 2000, 3);
}

#[test]
fn model_calls_past_the_limit_wait_for_a_place() {
    shuttle::check_random(|| calls_past_the_limit_wait_for_a_place(false), 2000);
    shuttle::check_pct(|| calls_past_the_limit_wait_for_a_place(false), 2000, 3);
}

#[test]
fn model_requests_waiting_for_a_place_are_served_at_shutdown() {
    shuttle::check_random(|| calls_past_the_limit_wait_for_a_place(true), 2000);
    shuttle::check_pct(|| calls_past_the_limit_wait_for_a_place(true), 2000, 3);
}

#[test]
fn model_an_adoption_is_not_lost_to_a_retiring_worker() {
    shuttle::check_random(an_adoption_is_not_lost_to_a_retiring_worker, 3000);
    shuttle::check_pct(an_adoption_is_not_lost_to_a_retiring_worker, 3000, 3);
}
