//! Accepting new connections: one thread at a time, backing off after
//! errors such as `EMFILE`, stopping (or answering `503`) while the server
//! is saturated, wrapping TLS, and closing the listener at shutdown.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::engine::Vacancy;
use super::{CloseWhy, Connection, IdleClose, Shared};
use crate::config::Overload;
use crate::date::DateCache;
use crate::encode::encode_overloaded;
use crate::http1::ConnState;
use crate::net::{Listener, Peer, Stream};

/// Pause after an accept error such as `EMFILE`, so a full descriptor table
/// does not turn into a busy loop.
pub(crate) const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Most clients the last accept pass takes at shutdown: a flood of new
/// connections must not keep the shutdown from going on.
const LAST_ACCEPTS: usize = 4096;

/// Most idle connections one accept pass sets out to close to make room at
/// `max_connections` when the first turn out to have a request after all
/// (they are served instead).
const ROOM_TRIES: usize = 4;

/// The listener and what accepting needs to remember.
pub(crate) struct Accepting {
    /// Locked by accept passes (one at a time, so never contended) and by
    /// the close.
    door: Mutex<Door>,
    /// Accept passes run on one thread at a time.
    one: OnePass,
    /// An accept was held back (saturated or paused): the next thread to
    /// free room accepts.
    waiting: AtomicBool,
    /// Accepting is paused after an error such as `EMFILE`.
    paused_until: Mutex<Option<Instant>>,
    /// Runs once, just after the next look at the load: a test's stand-in
    /// for another thread acting then.
    #[cfg(test)]
    after_look: Mutex<Option<AfterLook>>,
}

/// What a test runs just after an accept pass's look at the load.
#[cfg(test)]
type AfterLook = Box<dyn FnOnce(&Shared) + Send>;

/// What accept passes hold under one lock.
struct Door {
    /// `None` once closed at shutdown.
    listener: Option<Listener>,
    /// A client taken from the backlog at `max_connections` to make room
    /// for, still waiting for it (the idle connection closed for it
    /// lingers): the next pass admits it before any other.
    next: Option<(Stream, Peer)>,
    /// The idle connection closed for `next` lingers: its slot frees up
    /// when the linger ends, and meanwhile no other is closed for it (each
    /// pass would close one more).
    room_coming: bool,
}

/// Whether an accept pass may admit a client now, from one look at the
/// load (see [`Shared::pressure`]).
#[derive(Clone, Copy, Debug)]
struct Pressure {
    /// No more connections should be admitted (`Overload`): the ready
    /// lists are full or `max_connections` are open.
    saturated: bool,
    /// `max_connections` are open, some of them idle kept-alive
    /// connections [`Shared::make_room`] may close, and the ready lists
    /// have room for one more: room for a client would let it in.
    room_to_make: bool,
    /// `max_connections` are open.
    full: bool,
}

/// What [`Shared::make_room`] did for a client at `max_connections`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Room {
    /// A slot is free.
    Made,
    /// The connection closed for it lingers: a slot frees up when the
    /// linger ends.
    Coming,
    /// No idle connection could be closed.
    Lacking,
}

impl Accepting {
    pub(crate) fn new(listener: Listener) -> Accepting {
        Accepting {
            door: Mutex::new(Door { listener: Some(listener), next: None, room_coming: false }),
            one: OnePass::default(),
            waiting: AtomicBool::new(false),
            paused_until: Mutex::new(None),
            #[cfg(test)]
            after_look: Mutex::new(None),
        }
    }

    /// When an accept that waits for the end of a pause should run.
    pub(crate) fn pause_ends(&self) -> Option<Instant> {
        if !self.waiting.load(Ordering::Relaxed) {
            return None;
        }
        *self.paused_until.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// True (once) when an accept was held back (saturated or paused): the
    /// caller, having freed room or waited, should accept.
    pub(crate) fn take_waiting(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) && self.waiting.swap(false, Ordering::AcqRel)
    }
}

impl Shared {
    /// Accepts until the listener is empty or the server saturated; each new
    /// connection is admitted as [`Shared::admit`] says, `seat` being the
    /// one whose ready list takes it when it has bytes to read.
    /// `by_worker`: the caller is a worker that goes back for its next
    /// connection once the pass is over: one ready connection is its own.
    pub(crate) fn accept(&self, seat: usize, by_worker: bool) {
        self.accepting.one.run(|| self.accept_until_empty(seat, false, usize::from(by_worker)));
    }

    /// True (once) when an accept was held back: see [`Accepting::take_waiting`].
    pub(crate) fn take_accept_waiting(&self) -> bool {
        self.accepting.take_waiting()
    }

    /// Accept passes; `last`: the one at shutdown, which takes every
    /// client the kernel holds (on Linux each has sent its request), however
    /// many wait for a worker, but at most [`LAST_ACCEPTS`], and no more
    /// than `max_connections` open.
    fn accept_until_empty(&self, seat: usize, last: bool, taken_next: usize) {
        let mut door = self.accepting.door.lock().unwrap_or_else(PoisonError::into_inner);
        let Door { listener: Some(listener), next, room_coming } = &mut *door else { return };
        let mut date = None;
        for accepted in 0.. {
            if last && accepted == LAST_ACCEPTS {
                return;
            }
            if !last && self.is_stopping() {
                return;
            }
            if self.accept_paused() {
                return;
            }
            let wait = last || self.config.overload == Overload::Wait;
            // At `max_connections` with idle connections to close, the
            // client is taken from the backlog first, then room made for
            // it: none is closed when no client waits.
            let held_back = |p: Pressure| p.saturated && wait && !p.room_to_make;
            let mut pressure = self.pressure(last, taken_next);
            if next.is_none() && held_back(pressure) {
                // Clients wait in the kernel backlog until room frees up.
                // The flag goes up before a second look (a close raised
                // after the only one could miss it, and the client wait
                // for the monitor): a connection closed after that look
                // (its slot is freed under the hub lock) finds the flag and
                // accepts; one closed before shows in the look.
                self.accepting.waiting.store(true, Ordering::Release);
                pressure = self.pressure(last, taken_next);
                if held_back(pressure) {
                    return;
                }
            }
            let Pressure { saturated, room_to_make, full } = pressure;
            let (stream, peer) = match next.take() {
                Some(client) => client,
                None => match listener.accept() {
                    Ok(client) => client,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        // Only now may the seats that reported the listener
                        // be told of the next connection (Windows; see
                        // `ListenerWatch`): a pass held back above leaves
                        // them quiet, so that a full backlog does not wake
                        // them again and again.
                        for seat in &self.seats {
                            seat.rearm_listener();
                        }
                        return;
                    }
                    Err(e) if is_transient(&e) => continue,
                    Err(e) => {
                        // EMFILE, ENFILE, ENOBUFS, ENOMEM: back off, keep serving.
                        warn!("accept failed: {e}; pausing accepts for {ACCEPT_BACKOFF:?}");
                        self.counters.io_error();
                        *self.accepting.paused_until.lock().unwrap_or_else(PoisonError::into_inner) =
                            Some(Instant::now() + ACCEPT_BACKOFF);
                        self.accepting.waiting.store(true, Ordering::Release);
                        return;
                    }
                },
            };
            // Room is coming while the close made for the client lingers:
            // once it has ended (no longer `full`), the client waits for
            // the ready lists as any other would.
            let coming = std::mem::take(room_coming);
            let room = if !saturated {
                Room::Made
            } else if coming && full {
                Room::Coming
            } else if room_to_make {
                self.make_room()
            } else {
                Room::Lacking
            };
            if room != Room::Made {
                // A client for whom a close lingers waits for it under
                // `Overload::Reject` too: refused, it would have cost an
                // idle connection for nothing.
                if !wait && room != Room::Coming {
                    self.reject(stream, peer, &mut date);
                    continue;
                }
                // Its room comes when the close made for it ends its
                // linger, or when a connection closes or parks idle. The
                // flag goes up before a last look, as above: what changed
                // since the look this pass went by (or since `make_room`
                // found no idle connection) shows in it, and what changes
                // after finds the flag.
                self.accepting.waiting.store(true, Ordering::Release);
                let again = self.pressure(last, taken_next);
                if again.saturated {
                    *next = Some((stream, peer));
                    if room == Room::Lacking && again.room_to_make {
                        continue;
                    }
                    *room_coming = room == Room::Coming;
                    return;
                }
            }
            #[cfg(feature = "tls")]
            let Some(stream) = self.secure(stream, peer) else { continue };
            self.admit(stream, peer, seat, listener.delivers_data());
        }
    }

    /// One look at the load (one hub lock) for an accept pass: `ignore_queue`
    /// at the last pass; `taken_next`: ready connections the caller itself
    /// takes next (a worker's pass), which wait for no other worker.
    fn pressure(&self, ignore_queue: bool, taken_next: usize) -> Pressure {
        let load = self.engine.load();
        #[cfg(test)]
        if let Some(then) = self.accepting.after_look.lock().unwrap_or_else(PoisonError::into_inner).take() {
            then(self);
        }
        let queue_full = !ignore_queue && load.queued.saturating_sub(taken_next) >= self.config.queue_depth;
        let full = load.open >= self.config.max_connections;
        Pressure { saturated: queue_full || full, room_to_make: full && !queue_full && load.idle > 0, full }
    }

    /// At `max_connections`, closes a connection waiting idle, kept alive
    /// (one idle for a while: see [`super::slots::Slots::take_idle`]), to make room for
    /// a client taken from the backlog, as nginx does when it runs out of connections: a server may
    /// close an idle connection at any time (RFC 9112 §9.5), and a pooled
    /// client opens another when it needs one. Else clients that keep idle
    /// connections open would keep new ones out until the idle timeout, and
    /// one that sends a request on each just before it, for ever. One found
    /// to have a request after all is served instead, and the next tried, a
    /// few at most. The connection closed lingers, spared, so that a
    /// request racing the close meets the end of stream, not a reset, and
    /// room is made at once ([`super::ROOM_LINGERS`] at a time). Past that
    /// bound, a close that must linger (a Unix socket, or bytes that came
    /// as it closed) frees its slot when the linger ends ([`Room::Coming`]),
    /// and whoever closes it then takes up the accept held back meanwhile.
    /// Called when the pass's [`Pressure`] found room to make.
    fn make_room(&self) -> Room {
        for _ in 0..ROOM_TRIES {
            // A slot freed since the pass looked at the load makes room
            // by itself: no idle connection is closed for nothing.
            let conn = match self.engine.take_idle(self.config.max_connections) {
                Vacancy::Free => return Room::Made,
                Vacancy::Idle(conn) => conn,
                Vacancy::Lacking => return Room::Lacking,
            };
            match self.close_idle(conn, Instant::now(), CloseWhy::Room) {
                IdleClose::Closed | IdleClose::Spared => return Room::Made,
                IdleClose::Lingering => return Room::Coming,
                IdleClose::Serve(conn) => {
                    let seat = conn.seat;
                    self.requeue(conn);
                    self.nudge(seat);
                }
            }
        }
        Room::Lacking
    }

    /// True while accepts are paused after an error (an accept then waits
    /// for the pause to end).
    fn accept_paused(&self) -> bool {
        let mut paused = self.accepting.paused_until.lock().unwrap_or_else(PoisonError::into_inner);
        match *paused {
            Some(until) if Instant::now() < until => {
                self.accepting.waiting.store(true, Ordering::Release);
                true
            }
            Some(_) => {
                *paused = None;
                false
            }
            None => false,
        }
    }

    /// Gives a newly accepted connection a slot and a seat. Where the
    /// listener defers accepts until the first bytes arrive (Linux), the
    /// connection joins the accepting seat's ready list and is read at
    /// once; it registers with its seat when it first parks. Elsewhere it
    /// parks now: the seat reports its first bytes (at once if they are
    /// here), which costs less than a read that would most often find
    /// nothing.
    fn admit(&self, stream: Stream, peer: Peer, accepted_at: usize, delivers_data: bool) {
        self.counters.accepted();
        let state = ConnState::new(Some(Instant::now()));
        let make = |place, seat| Connection::new(stream, peer, state, place, seat);
        let to_park = self.engine.admit(make, delivers_data.then_some(accepted_at));
        if let Some(conn) = to_park.and_then(|conn| self.park(conn)) {
            self.engine.requeue_at(accepted_at, conn);
        }
    }

    /// Wraps a new connection in TLS when the server is configured for it.
    #[cfg(feature = "tls")]
    fn secure(&self, stream: Stream, peer: Peer) -> Option<Stream> {
        match (&self.config.tls, stream) {
            (Some(config), Stream::Tcp(tcp)) => match crate::tls::TlsStream::new(
                tcp.into_mio(),
                config.clone(),
                self.counters.pending_heads(self.config.max_pending_head_bytes),
            ) {
                Ok(tls) => Some(Stream::Tls(Box::new(tls))),
                Err(e) => {
                    warn!("{peer}: starting TLS failed: {e}");
                    None
                }
            },
            (_, stream) => Some(stream),
        }
    }

    /// `503` + `Retry-After` + close for a connection accepted while
    /// saturated. What the client already sent is read first so that the
    /// close does not reset the connection under the response. A TLS
    /// client is closed without one: there is no session to send it in
    /// (a plaintext answer would only corrupt its handshake).
    fn reject(&self, mut stream: Stream, peer: Peer, date: &mut Option<DateCache>) {
        let Overload::Reject { retry_after } = self.config.overload else {
            return;
        };
        self.counters.rejected();
        if self.serves_tls() {
            debug!("{peer}: saturated; closed a TLS client without an answer");
            return;
        }
        // At most 16 reads: a client that keeps sending cannot hold the
        // accepting thread here.
        let mut sink = [0u8; 4096];
        for _ in 0..16 {
            if !matches!(stream.read(&mut sink), Ok(n) if n > 0) {
                break;
            }
        }
        let mut out = Vec::with_capacity(192);
        encode_overloaded(retry_after, date.get_or_insert_with(DateCache::new).now(), &mut out);
        let _ = stream.write(&out);
        stream.shutdown_write();
        debug!("{peer}: saturated; answered 503");
    }

    /// True when connections are wrapped in TLS.
    fn serves_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.config.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// Shutdown: accepts what the kernel already holds (on Linux those
    /// clients have sent their request), then closes the listener, so new
    /// clients are refused instead of waiting in a backlog nobody reads.
    pub(crate) fn close_listener(&self) {
        // Waits for any accept pass still running; later ones find no
        // listener.
        self.accept_until_empty(0, true, 0);
        let mut door = self.accepting.door.lock().unwrap_or_else(PoisonError::into_inner);
        for seat in &self.seats {
            seat.forget_listener();
        }
        door.listener = None;
        // A client still waiting for room goes the way of those left in
        // the backlog.
        door.next = None;
        door.room_coming = false;
    }

    /// When an accept waiting for the end of a pause should run.
    pub(crate) fn accept_pause_ends(&self) -> Option<Instant> {
        self.accepting.pause_ends()
    }
}

/// Runs a task on one thread at a time without making any thread wait: a
/// thread that asks while another runs it leaves its request with the
/// running one, which runs the task again before it stops. Every request is
/// followed by a whole run that began after it, so none is lost (the
/// listener reports readiness once per change: a lost accept leaves clients
/// in the backlog until another one connects).
#[derive(Default)]
pub(crate) struct OnePass {
    /// Requests not yet covered by a run; the thread that raised it from
    /// zero runs the task until it is zero again.
    requests: AtomicUsize,
}

impl OnePass {
    pub(crate) fn run(&self, mut task: impl FnMut()) {
        if self.requests.fetch_add(1, Ordering::AcqRel) > 0 {
            return;
        }
        let mut covered = 1;
        loop {
            task();
            // One read-modify-write on one counter: a request either lands
            // before it (and is counted in `left`) or finds the count zero
            // and runs the task itself.
            let left = self.requests.fetch_sub(covered, Ordering::AcqRel) - covered;
            if left == 0 {
                return;
            }
            covered = left;
        }
    }
}

/// Accept errors about one connection that went away; the next accept may
/// well succeed.
fn is_transient(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::Interrupted)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use super::{OnePass, Pressure, Room};
    use crate::config::Config;
    use crate::http1::ConnState;
    use crate::net::Listener;
    use crate::shared::tests::conn_pair;
    use crate::shared::{Connection, Shared};

    /// A connection that closes between an accept pass's look at the load
    /// (`max_connections` open, one idle) and the room it makes for the
    /// client it then accepted: a slot is free, and no idle connection is
    /// closed for that client (review of 1087707: the look was taken before
    /// the accept and not again, and the idle connection was closed for
    /// nothing; before it, `make_room` looked again).
    #[test]
    fn room_is_not_made_by_closing_an_idle_connection_when_a_slot_freed_since_the_look() {
        let listener = Listener::tcp(std::net::TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
        let config = Config { max_connections: 2, ..Config::default() };
        let shared = Shared::new(config, listener, 1).unwrap();
        // One connection held by a worker, one parked idle, kept alive.
        let (stream, peer) = conn_pair();
        let make = |place, _| Connection::new(stream, peer, ConnState::default(), place, 0);
        let busy = shared.engine.admit(make, None).expect("held by the caller");
        let (stream, peer) = conn_pair();
        let mut state = ConnState::default();
        state.phase.idle();
        let make = |place, _| Connection::new(stream, peer, state, place, 0);
        let idle = shared.engine.admit(make, None).expect("held by the caller");
        assert!(shared.park(idle).is_none());
        // The pass looks: at the bound, with room to make.
        let Pressure { saturated, room_to_make, .. } = shared.pressure(false, 0);
        assert!(saturated && room_to_make);
        // The busy connection closes while the pass accepts its client.
        shared.close(busy);
        assert_eq!(shared.make_room(), Room::Made);
        let stats = shared.snapshot();
        assert_eq!((stats.reclaimed, shared.engine.load().idle), (0, 1), "an idle connection was closed for nothing");
    }

    /// An idle TCP connection closed to make room lingers, spared: room is
    /// made at once (it no longer counts against `max_connections`), and a
    /// request its client sends after the look meets the end of stream and
    /// no reset (the socket is open, reading; closed, it reset the
    /// connection, and the client's next write failed). Past
    /// `ROOM_LINGERS` spared at once, a close for room does not linger.
    #[test]
    fn an_idle_connection_closed_for_room_lingers_without_counting() {
        use std::io::{Read, Write};

        use crate::net::socket_pair;
        use crate::shared::{CloseWhy, IdleClose};
        let listener = Listener::tcp(std::net::TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
        let config = Config { max_connections: 1, ..Config::default() };
        let shared = Shared::new(config, listener, 1).unwrap();
        let (stream, mut client) = socket_pair();
        let mut state = ConnState::default();
        state.phase.idle();
        let peer = super::Peer::Ip(client.local_addr().unwrap());
        let make = |place, _| Connection::new(stream, peer, state, place, 0);
        let idle = shared.engine.admit(make, None).expect("held by the caller");
        assert!(shared.park(idle).is_none());
        assert!(shared.pressure(false, 0).room_to_make);
        assert_eq!(shared.make_room(), Room::Made);
        let load = shared.engine.load();
        assert_eq!((load.open, load.parked), (0, 1), "the connection closed for room lingers, not counted");
        // Its client's request, sent after the close began, meets the end
        // of stream, and the connection is not reset under it.
        client.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        client.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        assert_eq!(client.read(&mut [0u8; 64]).unwrap(), 0, "the end of stream");
        client.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").expect("no reset");
        // Past the bound, a close for room closes at once.
        spare_to_the_bound(&shared);
        let (stream, peer) = crate::shared::tests::conn_pair();
        let mut state = ConnState::default();
        state.phase.idle();
        let make = |place, _| Connection::new(stream, peer, state, place, 0);
        let idle = shared.engine.admit(make, None).expect("held by the caller");
        assert!(matches!(shared.close_idle(idle, std::time::Instant::now(), CloseWhy::Room), IdleClose::Closed));
    }

    /// Admits connections and spares them until `ROOM_LINGERS` are: the
    /// next close for room finds the bound reached. (Their sockets are
    /// dropped; their slots, never freed, stay spared.)
    fn spare_to_the_bound(shared: &Shared) {
        loop {
            let (stream, peer) = crate::shared::tests::conn_pair();
            let make = |place, _| Connection::new(stream, peer, ConnState::default(), place, 0);
            let conn = shared.engine.admit(make, None).expect("held by the caller");
            if !shared.engine.spare(conn.slot(), crate::shared::ROOM_LINGERS) {
                shared.close(conn);
                return;
            }
        }
    }

    /// An idle connection on a Unix socket closed to make room, past
    /// `ROOM_LINGERS` spared ones, lingers as it must, counted; its
    /// client closing its end at once (on reading the end of stream, before
    /// the close parks it) is no request: its slot frees when a worker ends
    /// the linger, so room is coming and the client waits for it. The
    /// client's end of stream made the linger's park hand the connection
    /// back as one with input, `make_room` took it for a request found after
    /// all and found no other idle connection: under `Overload::Reject` the
    /// new client got `503` although a connection had been closed for it
    /// (`transports.rs`'s `under_reject_…` failed so under CPU load).
    #[cfg(unix)]
    #[test]
    fn a_unix_client_closing_as_its_idle_connection_is_closed_for_room_leaves_room_coming() {
        use std::os::unix::net::UnixStream;

        use crate::net::Stream;
        use crate::shared::{CloseWhy, IdleClose};
        let listener = Listener::tcp(std::net::TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
        let config = Config { max_connections: 1, ..Config::default() };
        let shared = Shared::new(config, listener, 1).unwrap();
        let (ours, theirs) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let stream = Stream::Unix(mio::net::UnixStream::from_std(ours));
        let mut state = ConnState::default();
        state.phase.idle();
        let peer = crate::net::Peer::Local;
        let make = |place, _| Connection::new(stream, peer, state, place, 0);
        let idle = shared.engine.admit(make, None).expect("held by the caller");
        assert!(shared.park(idle).is_none());
        // The accept pass takes it to close it; meanwhile the client's end
        // of stream arrives and a poll reports it.
        let crate::shared::engine::Vacancy::Idle(conn) = shared.engine.take_idle(1) else {
            panic!("no idle connection")
        };
        spare_to_the_bound(&shared);
        drop(theirs);
        shared.poll_seat(0, Some(std::time::Duration::ZERO), false);
        let closed = shared.close_idle(conn, std::time::Instant::now(), CloseWhy::Room);
        assert!(matches!(closed, IdleClose::Lingering), "the lingering close was handed back as a request to serve");
        // A worker ends the linger (it reads the end of stream).
        assert_eq!(shared.engine.load().queued, 1);
    }

    /// Under `Overload::Reject`, a client held for the lingering close made
    /// for it waits for that close only while it lingers: once it has ended
    /// (fewer than `max_connections` open) with the ready lists full, the
    /// client is refused as any other would be, not held with the backlog
    /// behind it until the lists drain (engine review: it stayed "room
    /// coming" at every pass).
    #[test]
    fn a_client_whose_room_came_meets_the_queue_as_others_do() {
        use std::io::Read;

        use crate::config::Overload;
        use crate::net::socket_pair;
        let listener = Listener::tcp(std::net::TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
        let overload = Overload::Reject { retry_after: std::time::Duration::from_secs(1) };
        let config = Config { max_connections: 2, queue_depth: 1, overload, ..Config::default() };
        let shared = Shared::new(config, listener, 1).unwrap();
        // One connection waits in the ready list: the lists are full.
        let (stream, peer) = conn_pair();
        let make = |place, _| Connection::new(stream, peer, ConnState::default(), place, 0);
        shared.requeue(shared.engine.admit(make, None).expect("held by the caller"));
        // A client held since an idle connection was closed for it, whose
        // linger has ended since: its slot is free.
        let (held, mut client) = socket_pair();
        {
            let mut door = shared.accepting.door.lock().unwrap();
            door.next = Some((held, super::Peer::Ip(client.local_addr().unwrap())));
            door.room_coming = true;
        }
        let load = shared.engine.load();
        assert_eq!((load.open, load.queued), (1, 1));
        shared.accept(0, false);
        assert_eq!(shared.snapshot().rejected, 1, "the client was held again");
        let mut answer = String::new();
        client.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        client.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{answer}");
    }

    /// What [`held_client`] leaves: the hub, the connection a worker holds,
    /// and the client ends that must stay open.
    #[cfg(unix)]
    struct Held {
        shared: Shared,
        busy: Box<Connection>,
        _ends: (std::os::unix::net::UnixStream, std::os::unix::net::UnixStream),
    }

    /// A hub at `max_connections` (2): one connection held by a worker (in
    /// `busy_state`), one parked idle, kept alive, whose client has just
    /// sent its next request; and a new client the accept pass took and
    /// holds (the idle connection it would have closed for it had a
    /// request, queued to be served, and there is no other). Then a thread
    /// has taken the waiting flag to run the next pass.
    #[cfg(unix)]
    fn held_client(name: &str, busy_state: ConnState) -> Held {
        use std::io::Write;
        use std::os::unix::net::{UnixListener, UnixStream};

        use crate::net::{Peer, Stream};
        let path = std::env::temp_dir().join(format!("httpool-{name}-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = Listener::unix(UnixListener::bind(&path).unwrap(), None).unwrap();
        let config = Config { max_connections: 2, ..Config::default() };
        let shared = Shared::new(config, listener, 1).unwrap();
        let (stream, peer) = conn_pair();
        let make = |place, _| Connection::new(stream, peer, busy_state, place, 0);
        let busy = shared.engine.admit(make, None).expect("held by the caller");
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let mut state = ConnState::default();
        state.phase.idle();
        let make = |place, _| {
            Connection::new(Stream::Unix(mio::net::UnixStream::from_std(ours)), Peer::Local, state, place, 0)
        };
        let idle = shared.engine.admit(make, None).expect("held by the caller");
        assert!(shared.park(idle).is_none());
        theirs.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        let client = UnixStream::connect(&path).unwrap();
        shared.accept(0, false);
        let _ = std::fs::remove_file(&path);
        assert_eq!((shared.snapshot().accepted, shared.engine.load().queued), (0, 1), "the client is held");
        assert!(shared.take_accept_waiting());
        Held { shared, busy, _ends: (theirs, client) }
    }

    /// A client held at `max_connections` for want of room (the idle
    /// connection closed for it had a request after all) waits for the
    /// next pass; a connection closes just after that pass looks at the
    /// load, and its closer finds no accept waiting (the pass took the flag
    /// down to run). The pass must not hold the client again with a slot
    /// free: nobody would accept it until the monitor's next look (up to
    /// 250 ms). The flag went up only after the look.
    #[cfg(unix)]
    #[test]
    fn a_held_client_is_admitted_when_a_connection_closes_just_after_the_look() {
        let Held { shared, busy, _ends } = held_client("held", ConnState::default());
        // The busy connection closes just after the pass's look, and its
        // worker checks the flag, down.
        *shared.accepting.after_look.lock().unwrap() = Some(Box::new(move |shared: &Shared| {
            shared.close(busy);
            if shared.take_accept_waiting() {
                shared.accept(0, true);
            }
        }));
        shared.accept(0, false);
        let load = shared.engine.load();
        assert_eq!(
            (shared.snapshot().accepted, load.open),
            (1, 2),
            "the client was held with a slot free, and nobody to accept it"
        );
    }

    /// As above, but the connection that changes just after the look parks
    /// idle, kept alive, instead of closing: its worker finds no accept
    /// waiting, and the pass must close it for the held client rather than
    /// hold the client again.
    #[cfg(unix)]
    #[test]
    fn a_held_client_gets_room_when_a_connection_parks_idle_just_after_the_look() {
        let mut kept_alive = ConnState::default();
        kept_alive.phase.idle();
        let Held { shared, busy, _ends } = held_client("held-idle", kept_alive);
        *shared.accepting.after_look.lock().unwrap() = Some(Box::new(move |shared: &Shared| {
            assert!(shared.park(busy).is_none());
            if shared.take_accept_waiting() {
                shared.accept(0, true);
            }
        }));
        shared.accept(0, false);
        let stats = shared.snapshot();
        assert_eq!(
            (stats.accepted, stats.reclaimed),
            (1, 1),
            "the client was held with an idle connection to close, and nobody to accept it"
        );
    }

    /// In each round, threads at once add work and ask for a pass that
    /// takes it all: once every thread's request has returned, nothing is
    /// left, and no two passes overlapped. (A try-lock with a "missed" flag
    /// loses a request whose flag is set just after the running thread last
    /// looked at it.)
    #[test]
    fn one_pass_loses_no_request_and_never_overlaps() {
        use std::sync::Barrier;
        const THREADS: usize = 4;
        const ROUNDS: usize = 20_000;
        let one = Arc::new(OnePass::default());
        let pending = Arc::new(AtomicUsize::new(0));
        let inside = Arc::new(AtomicBool::new(false));
        let overlaps = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (one, pending, inside, barrier) = (one.clone(), pending.clone(), inside.clone(), barrier.clone());
                let overlaps = overlaps.clone();
                std::thread::spawn(move || {
                    for round in 0..ROUNDS {
                        barrier.wait();
                        pending.fetch_add(1, Ordering::SeqCst);
                        one.run(|| {
                            if inside.swap(true, Ordering::SeqCst) {
                                overlaps.fetch_add(1, Ordering::SeqCst);
                            }
                            pending.store(0, Ordering::SeqCst);
                            inside.store(false, Ordering::SeqCst);
                        });
                        barrier.wait();
                        assert_eq!(pending.load(Ordering::SeqCst), 0, "work left behind in round {round}");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two passes at once");
    }
}
