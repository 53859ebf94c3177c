//! What the workers, the monitor and the server handle share: the engine's
//! core (the hub lock and its decisions, in [`engine`]), the seats'
//! readiness sets, the listener, the counters.
//!
//! # Locks and handshakes, and the order locks are taken in
//!
//! - The **hub** (in [`Engine`]) guards the slot table ([`slots`]), the
//!   seats' ready and later lists and ownership ([`board`]), the thread counts
//!   ([`crew`]) and the shutdown stage. Only `engine.rs` can reach it: every
//!   change is an `Engine` method, which says the rule it keeps. It is held
//!   briefly, never across a system call that waits or a handler, and no
//!   other lock is taken while it is held. Its condition variables: idle
//!   workers wait on `work`, the server handle on `exited`.
//! - A seat's **poll** mutex is taken only by the thread that set the seat's
//!   `polled` flag, to wait for readiness, then the hub (to queue what
//!   became readable): order *poll → hub*.
//! - A seat's **listener watch** mutex is taken alone, after the poll is
//!   let go (`listener_reported`) or by an accept pass (`rearm_listener`).
//! - The **listener** mutex (`Door`: the listener, and a client waiting
//!   for room at `max_connections`) is taken by accept passes (one at a
//!   time) and by the close at shutdown; an accept pass takes the hub to
//!   admit a connection, or to take an idle one and close or park it to
//!   make room, a seat's listener watch to re-arm it, and pauses after
//!   `EMFILE` under a mutex of its own: order *listener → hub*,
//!   *listener → listener watch*, *listener → pause*.
//! - The pool's **handle list** (`pool.rs`) is taken alone: by the monitor
//!   starting a thread, by a retiring thread letting go of its own handle,
//!   and by the server handle joining the lot.
//! - The signal watchers' list (`signals.rs`) is taken alone, by a server
//!   starting or stopping its watch.
//! - The monitor's **dozing handshake** (no lock): before a long sleep the
//!   monitor sets `monitor_dozing`, then looks at the seats once more, and
//!   sleeps only if nothing is busy; a worker that has just polled events
//!   (the hub let go) swaps the flag back and unparks the monitor. A worker
//!   that starts serving before the second look is seen by it; one after
//!   it finds the flag set, and the unpark makes the monitor's sleep
//!   return (a thread's park token is kept until its next park).
//!
//! The invariants those locks keep are written at the top of [`engine`],
//! [`seats`] and [`board`].

mod accept;
pub(crate) mod board;
pub(crate) mod crew;
pub(crate) mod engine;
pub(crate) mod growth;
#[cfg(all(test, httpool_shuttle))]
mod model_tests;
pub(crate) mod seats;
pub(crate) mod slots;

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::Thread;
use std::time::{Duration, Instant};

use mio::{Interest, Token};

pub(crate) use accept::Accepting;
pub(crate) use board::SeatSet;
pub(crate) use crew::HandOver;
pub(crate) use engine::{Engine, Parking, Work};
pub(crate) use seats::Seat;
pub(crate) use slots::Connection;

use crate::config::Config;
use crate::feed::Notify;
use crate::http1::Routes;
use crate::net::Listener;
use crate::stats::Counters;
use crate::stop::{LINGER, Stop};
use crate::sys::ThreadRef;

/// Token of the listening socket.
pub(crate) const LISTENER: Token = Token(usize::MAX);
/// Token of a seat's waker.
pub(crate) const WAKER: Token = Token(usize::MAX - 1);

/// Connections closed to make room at `max_connections` that may linger at
/// once, server-wide, without counting against it (see
/// [`Shared::close_idle`]): each holds a socket and a slot for at most
/// [`LINGER`]. Past it, such a close lingers only when it must (a Unix
/// socket, input found), and the new client waits for its slot.
pub(crate) const ROOM_LINGERS: usize = 64;

/// Pause after a failed readiness wait, so a broken readiness set does not
/// turn into a busy loop.
const POLL_BACKOFF: Duration = Duration::from_millis(100);

/// Why the server closes a connection waiting for a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CloseWhy {
    /// Its deadline passed (idle, or for its first head).
    TimedOut,
    /// Kept alive and idle, it makes room for a new client at
    /// `max_connections`.
    Room,
}

/// What became of a connection waiting for a request that the server set
/// out to close (see [`Shared::close_idle`]).
pub(crate) enum IdleClose {
    /// Closed; its slot is free.
    Closed,
    /// Its write side is shut, and it is parked to read and discard what
    /// still comes (its slot is freed when that ends).
    Lingering,
    /// Closed for room, it lingers as above, spared: it no longer counts
    /// against `max_connections`, so the room is made now.
    Spared,
    /// A request had come after all: for a worker to serve.
    Serve(Box<Connection>),
}

/// State shared by the workers, the monitor and the server handle.
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) seats: Vec<Seat>,
    accepting: Accepting,
    pub(crate) engine: Engine<Box<Connection>>,
    /// The monitor sleeps for long (no seat busy); a worker that starts
    /// serving wakes it.
    pub(crate) monitor_dozing: AtomicBool,
    pub(crate) monitor: OnceLock<Thread>,
    /// Looks the monitor has taken: a handler call across two of them
    /// blocked.
    ticks: AtomicU64,
    /// The last extra thread retired: the monitor empties glibc's cache of
    /// their stacks once they are gone.
    pub(crate) stacks_to_give_back: AtomicBool,
    pub(crate) counters: Counters,
    /// Routes whose handlers were seen asleep lately.
    pub(crate) routes: Routes,
    /// This, as the event streams' senders reach it to wake their parked
    /// connections ([`Notify`]); set once it is shared.
    me: OnceLock<Weak<Shared>>,
}

impl Shared {
    pub(crate) fn new(config: Config, listener: Listener, seats: usize) -> io::Result<Shared> {
        let seats = (0..seats.max(1)).map(|_| Seat::new(listener.watch()?)).collect::<io::Result<Vec<_>>>()?;
        let accepting = Accepting::new(listener);
        let engine = Engine::new(seats.len(), config.workers, config.max_workers, config.worker_idle_timeout);
        Ok(Shared {
            config,
            seats,
            accepting,
            engine,
            monitor_dozing: AtomicBool::new(false),
            monitor: OnceLock::new(),
            ticks: AtomicU64::new(0),
            stacks_to_give_back: AtomicBool::new(false),
            routes: Routes::new(),
            counters: Counters::default(),
            me: OnceLock::new(),
        })
    }

    /// Shares the state: event streams may wake their connections through it.
    pub(crate) fn into_shared(self) -> Arc<Shared> {
        let shared = self;
        let shared = Arc::new(shared);
        let _ = shared.me.set(Arc::downgrade(&shared));
        shared
    }

    pub(crate) fn is_stopping(&self) -> bool {
        self.engine.is_stopping()
    }

    pub(crate) fn stopping_flag(&self) -> &Stop {
        self.engine.stopping_flag()
    }

    pub(crate) fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed)
    }

    pub(crate) fn tick_counter(&self) -> &AtomicU64 {
        &self.ticks
    }

    /// True when some connection waits in a ready or later list: at shutdown, a
    /// worker lingering over a close serves it first (see
    /// [`Seating::others_ready`](crate::http1::Seating::others_ready)).
    pub(crate) fn any_queued(&self) -> bool {
        self.engine.any_queued()
    }

    /// The monitor took a look.
    pub(crate) fn tick(&self) {
        self.ticks.fetch_add(1, Ordering::Relaxed);
    }

    /// The next connection for the worker at `seat` (`me`, the calling
    /// thread): see [`Engine::next`].
    /// `sit(seat)` is called before the worker polls a seat (the one it
    /// sits at, which adopting another changes).
    pub(crate) fn next(
        &self,
        seat: &mut usize,
        me: Option<ThreadRef>,
        mut sit: impl FnMut(usize),
    ) -> Work<Box<Connection>> {
        let work = self.engine.next(seat, |seat, wait| {
            sit(seat);
            self.seats[seat].served_by(me);
            self.poll_seat(seat, if wait { None } else { Some(Duration::ZERO) }, true);
        });
        // The worker's own seat, the one it leaves unwatched (a stolen
        // connection's seat has a worker of its own).
        if let Work::Serve(_) = &work {
            self.seats[*seat].served_by(me);
        }
        work
    }

    /// Polls `seat` (whose `polled` flag the caller set) and moves what
    /// became readable to its ready list; accepts new connections. The
    /// monitor polls (with a zero timeout) a seat that needs a thread when
    /// none can be had. Returns true when the poll was full: more events
    /// may be waiting.
    pub(crate) fn poll_seat(&self, seat: usize, timeout: Option<Duration>, by_worker: bool) -> bool {
        let polled = self.seats[seat].poll(timeout);
        let full = polled.as_ref().is_ok_and(|events| events.is_full());
        if let Err(e) = &polled {
            error!("waiting for readiness failed: {e}");
            std::thread::sleep(POLL_BACKOFF);
        }
        let mut listener_ready = false;
        let tokens = polled.iter().flat_map(|events| events.tokens()).filter(|&(token, _)| {
            listener_ready |= token == LISTENER;
            token != LISTENER
        });
        self.engine.deliver(seat, tokens, by_worker);
        drop(polled);
        if by_worker && self.monitor_dozing.load(Ordering::Relaxed) && self.monitor_dozing.swap(false, Ordering::AcqRel)
        {
            if let Some(monitor) = self.monitor.get() {
                monitor.unpark();
            }
        }
        if listener_ready {
            self.seats[seat].listener_reported();
        }
        if listener_ready || self.take_accept_waiting() {
            self.accept(seat, by_worker);
        }
        full
    }

    /// Finds a thread to take over `seat`: see [`Engine::hand_over`].
    pub(crate) fn hand_over(&self, seat: usize, grow: bool) -> Option<HandOver> {
        self.engine.hand_over(seat, self.ticks(), grow)
    }

    /// A thread counted for `seat` could not be started.
    pub(crate) fn spawn_failed(&self, seat: usize) {
        self.engine.spawn_failed(seat, self.ticks());
    }

    /// Hands a connection with nothing to read back to its seat. Returns it
    /// when bytes arrived while the worker held it (serve it again), or once
    /// shutdown has swept (finish its request, waiting, or close it).
    pub(crate) fn park(&self, mut conn: Box<Connection>) -> Option<Box<Connection>> {
        conn.deadline = conn.state.deadline(&self.config);
        // Only room to write matters while an answer is unsent: what the
        // client sends meanwhile waits until it is out.
        let interest = if conn.state.waits_for_room() { Interest::WRITABLE } else { Interest::READABLE };
        if conn.watching != Some(interest) {
            let registry = self.seats[conn.seat].registry();
            let token = conn.token();
            let watched = match conn.watching {
                None => registry.register(&mut conn.stream, token, interest),
                Some(_) => registry.reregister(&mut conn.stream, token, interest),
            };
            if let Err(e) = watched {
                debug!("{}: watching for readiness failed: {e}", conn.peer);
                self.close(conn);
                return None;
            }
            conn.watching = Some(interest);
        }
        // A stream parks armed: its next event wakes it (`notify`). One
        // that came since the worker looked is written first.
        if let Some(feed) = conn.state.feed() {
            if let Some(me) = self.me.get() {
                let me: Weak<dyn Notify> = me.clone();
                feed.attach(me, conn.token().0);
            }
            if !conn.state.waits_for_room() && !feed.arm() {
                return Some(conn);
            }
        }
        let must_finish = conn.state.must_finish();
        match self.engine.park(conn, must_finish) {
            Parking::Done => None,
            Parking::Again(conn) => Some(conn),
            // Shutdown swept while the worker held it: an idle connection is
            // not dropped here (a request may have come since its last
            // read) but served once more, which closes it as the sweep's
            // idle ones are: read, write side shut, closed.
            Parking::Close(conn) => Some(conn),
        }
    }

    /// Puts a connection that yielded its turn at the back of its seat's
    /// ready list: see [`Engine::requeue`].
    pub(crate) fn requeue(&self, conn: Box<Connection>) {
        self.engine.requeue(conn);
    }

    /// A thread about to start at `seat`: see [`Engine::reserve`].
    pub(crate) fn reserve_thread(&self, seat: usize) -> bool {
        self.engine.reserve(seat)
    }

    /// A thread started for `seat` begins its work there.
    pub(crate) fn arrive(&self, seat: usize) {
        self.engine.arrive(seat);
    }

    /// The readiness set watching `conn`, once it has been registered.
    pub(crate) fn registry_of(&self, conn: &Connection) -> Option<&mio::Registry> {
        conn.watching.map(|_| self.seats[conn.seat].registry())
    }

    /// Closes a connection and frees its slot.
    pub(crate) fn close(&self, conn: Box<Connection>) {
        let slot = conn.slot();
        drop(conn);
        self.engine.free(slot);
        self.counters.closed();
    }

    /// Closes a connection waiting for a request, for `why`. Its client
    /// may have sent one all the same, just now, before a worker read it:
    /// closing a socket with input unread makes the kernel reset the
    /// connection, and the client's request fails with a reset rather than
    /// meeting the end of stream a pooled client retries on (RFC 9112
    /// §9.3.1). So a request already in the socket is served: the
    /// connection is returned, for a worker. Else the write side shuts
    /// (over TLS after close_notify, best effort), so that the end of
    /// stream reaches the client before any reset, and one that arrived
    /// meanwhile is lingered over. A Unix domain socket always lingers:
    /// closed with input unread, it fails the peer's next read with a
    /// reset even after the end of stream, so a request sent between the
    /// look and the close would still meet one. Closed for room, any
    /// connection lingers, spared (one of at most [`ROOM_LINGERS`]): a
    /// request that reaches it between the look and the close is read and
    /// discarded, not met with a reset, and its client, which has seen the
    /// end of stream, sends it again elsewhere.
    pub(crate) fn close_idle(&self, mut conn: Box<Connection>, now: Instant, why: CloseWhy) -> IdleClose {
        if conn.stream.has_pending_input() {
            return IdleClose::Serve(conn);
        }
        match why {
            CloseWhy::TimedOut => {
                debug!("{}: closing after timeout", conn.peer);
                self.counters.timeout();
            }
            CloseWhy::Room => {
                debug!("{}: closing an idle connection to make room for a new client", conn.peer);
                self.counters.reclaimed();
            }
        }
        conn.stream.shutdown_write();
        let spared = why == CloseWhy::Room && self.engine.spare(conn.slot(), ROOM_LINGERS);
        if spared || conn.stream.is_unix() || conn.stream.has_pending_input() {
            conn.state.linger_after_answer(now + LINGER);
            // Bytes (or the end of stream) that came meanwhile are for the
            // linger to read, not a request: a worker ends it, and the
            // slot frees then, as when they come after the park.
            if let Some(conn) = self.park(conn) {
                let seat = conn.seat;
                self.requeue(conn);
                self.nudge(seat);
            }
            return if spared { IdleClose::Spared } else { IdleClose::Lingering };
        }
        self.close(conn);
        IdleClose::Closed
    }

    /// Wakes the worker waiting for readiness at `seat`.
    /// Queues a stream whose keep-alive is due (see
    /// [`Engine::requeue_later`]) and wakes its seat's poller, unless a
    /// wake is on its way there already.
    pub(crate) fn requeue_due_stream(&self, conn: Box<Connection>) {
        let seat = conn.seat;
        self.engine.requeue_later(conn);
        self.seats[seat].wake_for_work();
    }

    pub(crate) fn nudge(&self, seat: usize) {
        self.seats[seat].wake();
    }

    /// Starts shutdown and wakes every thread that may be waiting.
    pub(crate) fn stop(&self) {
        self.engine.stop();
        for seat in &self.seats {
            seat.wake();
        }
        if let Some(monitor) = self.monitor.get() {
            monitor.unpark();
        }
    }

    /// Shutdown, run by the monitor once its loop is over: the listener
    /// closes (after what the kernel holds is accepted); once no worker
    /// polls, what already arrived moves to the ready lists (the workers
    /// answer it with `Connection: close`), and so does every parked
    /// connection: those with a request in flight are finished, idle ones
    /// read once more and closed; then the workers may leave.
    pub(crate) fn sweep(&self) {
        self.close_listener();
        let seats = self.engine.claim_all_seats();
        for seat in 0..seats {
            // One poll returns at most as many events as its buffer holds:
            // poll until the seat has no more.
            while self.poll_seat(seat, Some(Duration::ZERO), false) {
                self.engine.repoll(seat);
            }
        }
        // Every parked connection goes back to a worker: one with a request
        // in flight to finish it, an idle one to be read once more (a
        // request that arrived since the poll is served) and closed, its
        // write side first (`http1::close_idle`).
        let idle = self.engine.sweep_parked(|_| true);
        debug_assert!(idle.is_empty());
    }

    /// Waits until every worker has left: see [`Engine::wait_for_workers`].
    pub(crate) fn wait_for_workers(&self, deadline: Option<Instant>) -> bool {
        self.engine.wait_for_workers(deadline)
    }

    /// Worker threads alive now.
    pub(crate) fn live_threads(&self) -> usize {
        self.engine.load().threads.live
    }

    /// The counts behind [`Stats`](crate::Stats).
    pub(crate) fn snapshot(&self) -> crate::Stats {
        let load = self.engine.load();
        self.counters.snapshot(load.parked, load.idle, load.queued, load.threads, self.ticks())
    }
}

impl Notify for Shared {
    fn notify(&self, token: usize) {
        self.notify_all(&[token]);
    }

    fn notify_all(&self, tokens: &[usize]) {
        let mut seats = SeatSet::default();
        self.engine.notify(tokens.iter().map(|&t| Token(t)), &mut seats);
        seats.for_each(|seat| self.seats[seat].wake_for_work());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::io::Write;
    use std::net::TcpStream;

    use super::{Connection, HandOver, Shared, Work};
    use crate::config::Config;
    use crate::http1::ConnState;
    use crate::net::{Listener, Peer, Stream, socket_pair};

    /// Who the test connections come from.
    const PEER: Peer =
        Peer::Ip(std::net::SocketAddr::V4(std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 1)));

    /// A connected socket, for tests that need a `Connection` to move around.
    pub(crate) fn conn_pair() -> (Stream, Peer) {
        (socket_pair().0, PEER)
    }

    /// A hub over a listener nobody connects to, with `seats` seats.
    fn hub(seats: usize) -> Shared {
        let listener = Listener::tcp(std::net::TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
        Shared::new(Config::default(), listener, seats).unwrap()
    }

    /// Admits a connection at `seat` and parks it idle (registered with the
    /// seat, as after its first request); returns the client's end.
    fn park_idle(shared: &Shared, seat: usize) -> TcpStream {
        let (stream, theirs) = socket_pair();
        let make = |place, _| Connection::new(stream, PEER, ConnState::default(), place, seat);
        let conn = shared.engine.admit(make, None).expect("held by the caller");
        assert!(shared.park(conn).is_none(), "nothing to read yet: it parks");
        theirs
    }

    /// The shutdown sweep moves every parked connection whose request already
    /// arrived to a ready list, however many there are: one poll returns at
    /// most the capacity of the seat's event buffer (256), so it polls until a
    /// poll is not full. (It used to poll once: 256 of 300 were moved, the rest
    /// closed as idle, their requests reset.)
    #[test]
    fn the_shutdown_sweep_moves_every_connection_with_a_request_to_a_ready_list() {
        const CONNS: usize = 300;
        let shared = hub(1);
        let clients: Vec<TcpStream> = (0..CONNS).map(|_| park_idle(&shared, 0)).collect();
        assert_eq!(shared.engine.load().parked, CONNS);
        // Every client sends a request before shutdown begins.
        for mut client in &clients {
            client.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        }
        shared.stop();
        shared.sweep();
        let load = shared.engine.load();
        assert_eq!(
            (load.queued, load.open),
            (CONNS, CONNS),
            "every connection with a request waits for a worker; none was closed as idle"
        );
    }

    /// One poll reports both a parked connection's request and a new client
    /// (where accepts are not deferred: Windows, macOS, a Unix socket; on
    /// Linux a keep-alive connection does the same): `deliver` queues the
    /// first, then the same worker's accept pass counts it as waiting for a
    /// worker and refuses the second with 503, though that worker is about
    /// to serve it (the intermittent failure of `tests/pool.rs` under Wine,
    /// stats `rejected: 1, accepted: 1`).
    #[cfg(unix)]
    #[test]
    fn a_connection_the_polling_worker_is_about_to_serve_does_not_refuse_the_next_client() {
        use std::io::Read;
        use std::os::unix::net::{UnixListener, UnixStream};
        let path = std::env::temp_dir().join(format!("httpool-r3-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = Listener::unix(UnixListener::bind(&path).unwrap(), None).unwrap();
        assert!(!listener.delivers_data());
        let mut config = Config::default();
        config.queue_depth = 1;
        config.overload = crate::config::Overload::Reject { retry_after: std::time::Duration::from_secs(3) };
        let shared = Shared::new(config, listener, 1).unwrap();
        // The first client connects; an accept pass parks it (nothing to read yet).
        let mut first = UnixStream::connect(&path).unwrap();
        shared.accept(0, false);
        assert_eq!(shared.engine.load().parked, 1);
        // Its request and a second client come before the worker polls again.
        first.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        let mut second = UnixStream::connect(&path).unwrap();
        second.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        // The only worker, idle, polls its seat: one poll reports both.
        let mut seat = 0;
        let Work::Serve(conn) = shared.next(&mut seat, None, |_| {}) else { panic!("the request was ready") };
        let stats = shared.snapshot();
        let _ = std::fs::remove_file(&path);
        if (stats.rejected, stats.accepted) != (0, 2) {
            let mut got = Vec::new();
            let _ = second.read_to_end(&mut got);
            panic!("refused while the worker was free: {stats:?}, {:?}", String::from_utf8_lossy(&got));
        }
        shared.close(conn);
    }

    /// An adoption is meant for an idle thread (`Crew::hand_over` counts one
    /// per idle thread, and notifies one): a busy worker at seat 1 coming back
    /// for its next connection does not take it (it would leave seat 1 with
    /// nobody, and the idle thread it was meant for would find none).
    #[test]
    fn an_adoption_is_taken_by_an_idle_thread_not_by_a_busy_worker_passing_by() {
        let shared = hub(2);
        let (stream, _theirs) = socket_pair();
        let make = |place, _| Connection::new(stream, PEER, ConnState::default(), place, 1);
        assert!(shared.engine.admit(make, Some(1)).is_none(), "queued at seat 1");
        // A thread asleep on the condvar (counted, as `next` counts it).
        shared.engine.count_idle_thread();
        // Seat 0's worker is stuck in a handler: the monitor hands its seat
        // to the idle thread.
        assert_eq!(shared.hand_over(0, true), Some(HandOver::Adopt));
        // The worker sitting at seat 1 finishes a connection and asks for the
        // next one.
        let mut seat = 1;
        let Work::Serve(conn) = shared.next(&mut seat, None, |_| {}) else { panic!("work was ready") };
        shared.close(conn);
        assert_eq!(seat, 1, "the busy worker left its seat for the idle thread's adoption");
    }
}
