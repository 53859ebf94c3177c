//! The one in-memory driver of the real connection loop ([`serve`]) outside
//! the worker pool: the test client ([`TestRequest`](crate::test::TestRequest),
//! [`TestServer`](crate::test::TestServer)), the fuzz entry points and the loop's
//! own unit tests all serve connections through it.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use super::{ConnState, Ctx, Next, NoSeat, Scratch, Seating, serve};
use crate::config::Config;
use crate::handler::Handler;
use crate::io::{Script, Transport};
use crate::net::Peer;
use crate::stats::Counters;
use crate::stop::Stop;

/// One connection, served turn after turn the way a worker serves it after
/// each readiness event, with what a worker brings (its buffers, the
/// server's configuration, counters and stop flag).
pub(crate) struct Driver<'h, H: ?Sized = dyn Handler> {
    pub(crate) config: Config,
    pub(crate) scratch: Scratch,
    /// Shared, so a test can start a shutdown from another thread.
    pub(crate) stopping: Arc<Stop>,
    pub(crate) counters: Counters,
    pub(crate) handler: &'h H,
    pub(crate) conn: ConnState,
    pub(crate) seat: Box<dyn Seating>,
    pub(crate) peer: Peer,
    /// What each turn of [`Driver::run`] ended with.
    pub(crate) outcomes: Vec<Next>,
}

/// How a connection served by [`Driver::run`] ended.
pub(crate) struct Ended {
    /// The server closed it, or shut its sending side to close.
    pub(crate) closed: bool,
    /// Part of a request is buffered, waiting for the rest.
    pub(crate) awaits_request: bool,
    /// An event stream is still open (its senders are still there).
    pub(crate) streaming: bool,
}

impl<'h, H: Handler + ?Sized> Driver<'h, H> {
    /// A new connection from `127.0.0.1:1` to `handler`, under `config`.
    pub(crate) fn with_config(handler: &'h H, config: Config) -> Driver<'h, H> {
        Driver {
            scratch: Scratch::new(&config),
            config,
            stopping: Arc::default(),
            counters: Counters::default(),
            handler,
            conn: ConnState::default(),
            seat: Box::new(NoSeat),
            peer: Peer::Ip(SocketAddr::from((Ipv4Addr::LOCALHOST, 1))),
            outcomes: Vec::new(),
        }
    }

    /// [`Driver::with_config`] with the default configuration.
    #[cfg(test)]
    pub(crate) fn new(handler: &'h H) -> Driver<'h, H> {
        Driver::with_config(handler, Config::default())
    }

    /// One turn of the connection loop over `io`.
    pub(crate) fn serve<T: Transport>(&mut self, io: &mut T) -> Next {
        // A test may change the configuration between turns.
        self.scratch.body_bounds = self.config.body_bounds();
        let mut cx = Ctx {
            handler: self.handler,
            config: &self.config,
            scratch: &mut self.scratch,
            stopping: &self.stopping,
            counters: &self.counters,
            peer: self.peer,
            seat: &mut *self.seat,
            routes_remembered: false,
        };
        serve(&mut self.conn, io, &mut cx)
    }

    /// True while an answer waits for the client to take it.
    #[cfg(test)]
    pub(crate) fn is_sending(&self) -> bool {
        self.conn.is_sending()
    }

    /// Serves the connection until it closes or waits for input the script
    /// does not hold, with readiness as the kernel gives it: served when
    /// bytes arrive, parked, served again only on a new arrival (or, while
    /// an answer waits, when the client takes some of it; or at once when
    /// its socket, having left its seat, is registered afresh with input
    /// already there); a turn it yields
    /// comes round again. `room` is how many bytes the client takes each
    /// time the connection is served (`None`: all). Each round consumes an
    /// arrival or lets the client take at least one byte, so this ends.
    ///
    /// # Panics
    ///
    /// When the connection parks for good with bytes unread: a wake-up was
    /// lost, and a request would go unanswered.
    pub(crate) fn run(&mut self, io: &mut Script, room: Option<usize>) -> Ended {
        io.release();
        // Turns in a row that neither read nor wrote: a connection served
        // again at once without progress would spin its worker.
        let (mut idle_turns, mut last) = (0, None);
        // The client takes bytes while the server waits for room: the
        // socket has room at first, and again after each park that watched
        // for it, not merely because the connection is served again (a
        // full socket stays full for a connection woken by something else).
        io.room = room.map(|r| r.max(1));
        loop {
            let state = Some((io.written.len(), io.current.len(), io.chunks.len(), io.fin));
            idle_turns = if state == last { idle_turns + 1 } else { 0 };
            last = state;
            assert!(
                idle_turns < 1000,
                "served {idle_turns} times in a row with nothing read, written or arrived: a spin"
            );
            let next = self.serve(io);
            self.outcomes.push(next);
            match next {
                Next::Close => {
                    // Closing a socket with input unread makes the kernel
                    // reset the connection, and a reset can destroy the
                    // answers the client has not read yet.
                    assert!(
                        io.current.is_empty() || io.written.is_empty(),
                        "closed with {} bytes unread: a reset under the answers",
                        io.current.len()
                    );
                    return Ended { closed: true, awaits_request: false, streaming: false };
                }
                // A seat of the driver's own that refused a place: served
                // again, as the place it gives next is taken.
                Next::Yield | Next::WaitForPlace => {}
                // An event stream with events queued since its last look
                // would be woken by their sender as it parks.
                Next::Park if self.conn.feed().is_some_and(|feed| !self.conn.waits_for_room() && !feed.arm()) => {}
                Next::Park if self.conn.waits_for_room() => {
                    // The client reads on; what it sends meanwhile waits in
                    // the socket without waking the connection (watched for
                    // room only, however it was registered).
                    io.room = room.map(|r| r.max(1));
                    io.left_seat = false;
                    io.release();
                }
                Next::Park if io.park_wakes() => {}
                Next::Park => {
                    if !io.release() {
                        break;
                    }
                }
            }
        }
        assert!(io.is_drained(), "a parked connection left {} bytes unread", io.current.len());
        Ended { closed: io.shut_write, awaits_request: self.conn.has_unparsed(), streaming: self.conn.is_streaming() }
    }
}
