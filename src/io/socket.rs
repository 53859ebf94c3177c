//! The server's own socket as a [`Transport`]: a connection's stream, the
//! worker's private readiness queue to wait on it, the seat it leaves and
//! comes back to, and the pacing that bounds a worker's waits for a client
//! to take an answer.

use std::fs::File;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use mio::event::Source;
use mio::{Events, Interest, Poll, Token};

use super::{Ready, Transport, copy_file_now};
use crate::deadline::earliest;
use crate::net::Stream;
use crate::stats::{Counters, Held};
use crate::sys;

/// A worker's private readiness queue, used only on the slow path when one
/// socket must be waited on.
pub(crate) struct Waiter {
    poll: Poll,
    events: Events,
}

impl Waiter {
    pub(crate) fn new() -> io::Result<Waiter> {
        Ok(Waiter { poll: Poll::new()?, events: Events::with_capacity(4) })
    }

    /// Waits for `source`, which no seat watches meanwhile (a source is in
    /// one readiness set at a time on Windows).
    fn wait(&mut self, source: &mut impl Source, ready: Ready, timeout: Duration) -> io::Result<()> {
        let interest = match ready {
            Ready::Readable => Interest::READABLE,
            Ready::Writable => Interest::WRITABLE,
        };
        self.poll.registry().register(source, Token(0), interest)?;
        // A timeout too large to add (e.g. `Duration::MAX`) waits forever.
        let result = self.poll_until(Instant::now().checked_add(timeout));
        self.poll.registry().deregister(source)?;
        result
    }

    fn poll_until(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                return Err(io::ErrorKind::TimedOut.into());
            }
            match self.poll.poll(&mut self.events, left) {
                Ok(()) if !self.events.is_empty() => return Ok(()),
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// A socket together with the waiter of the worker serving it.
pub(crate) struct Socket<'a> {
    pub(crate) stream: &'a mut Stream,
    pub(crate) waiter: &'a mut Waiter,
    /// The registry of the seat whose readiness set watches the socket, if
    /// it is registered; `None` after [`Transport::leave_seat`].
    pub(crate) watched_by: Option<&'a mio::Registry>,
    /// The waits for room of this turn, and what the client took.
    pub(crate) pace: Pace,
    /// The server's count of workers waiting on request bodies, and its
    /// bound.
    pub(crate) body_waits: (&'a Counters, usize),
    /// The most workers writing bodies that hold them, or running
    /// upgrades, at once (counted by the counters above), and the place this
    /// connection holds among them ([`Transport::begin_streaming`]).
    pub(crate) streaming: (usize, Option<Held>),
    /// An event said the client's sending side closed: a short read may
    /// leave the end of stream behind it, unannounced by any later event.
    pub(crate) input_ended: bool,
    /// The server's stop flag and shutdown grace, by which waits on the
    /// client end at shutdown, begun before it or after: waits for room at
    /// `Stop::room_end`, so that a client slow to take an answer cannot
    /// hold the worker past the grace, and waits for a request body the
    /// handler reads at `Stop::drain_end`. `None` for a stream whose waits
    /// are not paced.
    pub(crate) shutdown: Option<(&'a crate::stop::Stop, Duration)>,
    /// Between [`Transport::begin_body_wait`] and its end: a wait for input
    /// is one for a request body.
    pub(crate) in_body_wait: bool,
}

/// How long a worker may go on waiting for one client to take bytes
/// (`Server::write_min_rate`): its waits add up, and may total the write
/// timeout plus a second for every `min_rate` bytes the client has taken.
/// Time the worker spends on anything else (a stream producing its body)
/// does not count.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pace {
    /// Bytes per second; 0: no least rate.
    min_rate: u64,
    sent: u64,
    waited: Duration,
}

impl Pace {
    pub(crate) fn new(min_rate: u64) -> Pace {
        Pace { min_rate, sent: 0, waited: Duration::ZERO }
    }

    fn sent(&mut self, n: u64) {
        self.sent = self.sent.saturating_add(n);
    }

    fn waited(&mut self, d: Duration) {
        self.waited = self.waited.saturating_add(d);
    }

    /// How long the next wait for room may last: `timeout`, or less once
    /// the client is near the end of its allowance; zero past it.
    fn next_wait(&self, timeout: Duration) -> Duration {
        if self.min_rate == 0 {
            return timeout;
        }
        timeout.saturating_add(earned(self.sent, self.min_rate)).saturating_sub(self.waited).min(timeout)
    }
}

/// The time `sent` bytes earn at a least rate of `min_rate` bytes per
/// second (not 0): a second for every `min_rate` bytes.
pub(crate) fn earned(sent: u64, min_rate: u64) -> Duration {
    let nanos = u128::from(sent) * 1_000_000_000 / u128::from(min_rate);
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// How often a wait on a client that a shutdown would cut short looks at
/// the stop flag, while the server is not stopping.
const STOP_CHECK: Duration = Duration::from_millis(250);

impl Socket<'_> {
    /// Waits for `ready` until `deadline` (`None`: no limit) or, at
    /// shutdown, the end [`Socket::shutdown`] sets for this kind of wait,
    /// whichever comes first (then `TimedOut`). A wait begun before the stop
    /// is cut short by it all the same: it looks at the flag every
    /// [`STOP_CHECK`].
    fn wait_until(&mut self, ready: Ready, deadline: Option<Instant>) -> io::Result<()> {
        let watched = self.shutdown.filter(|_| ready == Ready::Writable || self.in_body_wait);
        loop {
            let now = Instant::now();
            let stopping = watched.is_some_and(|(stop, _)| stop.is_set());
            let end = match watched {
                Some((stop, grace)) if stopping => {
                    let cut = match ready {
                        Ready::Writable => stop.room_end(grace),
                        Ready::Readable => stop.drain_end(grace),
                    };
                    earliest(deadline, cut)
                }
                _ => deadline,
            };
            if end.is_some_and(|end| end <= now) {
                return Err(io::ErrorKind::TimedOut.into());
            }
            let until = match watched.is_some() && !stopping {
                true => earliest(end, Some(now + STOP_CHECK)),
                false => end,
            };
            let left = until.map_or(Duration::MAX, |until| until.saturating_duration_since(now));
            match self.waiter.wait(&mut *self.stream, ready, left) {
                Err(e) if e.kind() == io::ErrorKind::TimedOut && until != end => {}
                waited => return waited,
            }
        }
    }
}

impl Read for Socket<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.read(buf)
    }
}

impl Write for Socket<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.stream.write(buf)?;
        self.pace.sent(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

impl Transport for Socket<'_> {
    fn wait(&mut self, ready: Ready, timeout: Duration) -> io::Result<()> {
        // While the worker waits on the socket itself (a body the handler
        // reads, a peer slow to take a response), its seat must not be woken
        // by the same bytes; the connection registers again when it parks.
        self.leave_seat();
        let start = Instant::now();
        let waited = match ready {
            Ready::Readable => self.wait_until(ready, start.checked_add(timeout)),
            Ready::Writable => {
                let waited = self.wait_until(ready, start.checked_add(self.pace.next_wait(timeout)));
                self.pace.waited(start.elapsed());
                waited
            }
        };
        waited.map_err(|e| match (e.kind(), ready) {
            (io::ErrorKind::TimedOut, Ready::Writable) => {
                io::Error::new(io::ErrorKind::TimedOut, "the client takes the response too slowly")
            }
            _ => e,
        })
    }

    fn stop_pacing(&mut self) {
        self.pace = Pace::new(0);
        self.shutdown = None;
    }

    fn begin_body_wait(&mut self) -> bool {
        let (counters, most) = self.body_waits;
        self.in_body_wait = counters.begin_body_wait(most);
        self.in_body_wait
    }

    fn end_body_wait(&mut self) {
        self.in_body_wait = false;
        self.body_waits.0.end_body_wait();
    }

    fn body_wait_free(&self) -> bool {
        let (counters, most) = self.body_waits;
        counters.body_wait_free(most)
    }

    fn begin_streaming(&mut self) -> bool {
        self.streaming.1 = self.body_waits.0.streaming_slot(self.streaming.0);
        self.streaming.1.is_some()
    }

    fn end_streaming(&mut self) {
        self.streaming.1 = None;
    }

    fn holds_input(&self) -> bool {
        self.stream.holds_input()
    }

    fn short_read_drains(&self) -> bool {
        sys::SHORT_READ_EMPTIES && !self.holds_input() && !self.input_ended
    }

    fn is_tls(&self) -> bool {
        self.stream.is_tls()
    }

    fn input_begun(&self) -> bool {
        self.stream.input_begun()
    }

    fn shutdown_write(&mut self) {
        self.stream.shutdown_write();
    }

    fn shutdown_write_torn(&mut self) {
        self.stream.shutdown_write_torn();
    }

    fn close_notify(&mut self) {
        self.stream.close_notify();
    }

    fn leave_seat(&mut self) {
        if let Some(registry) = self.watched_by.take() {
            let _ = mio::event::Source::deregister(self.stream, registry);
        }
    }

    fn send_file_now(&mut self, file: &mut File, left: &mut u64) -> io::Result<bool> {
        // The only kind of stream on Windows without TLS.
        #[allow(irrefutable_let_patterns)]
        if let Stream::Tcp(sock) = &*self.stream {
            let before = *left;
            if let Some(sent) = sys::send_file(sock, file, left) {
                self.pace.sent(before - *left);
                return sent;
            }
        }
        copy_file_now(self, file, left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{Ready, Transport, write_all_wait};

    /// A socket whose writes block once more after each wake-up: TLS
    /// records the socket took only some of (found by review: the waits
    /// were counted twice against the least rate, and a write gave up at
    /// 0.6 s of a 1 s timeout).
    struct RecordsHeld<'a> {
        sock: Socket<'a>,
        block_after_wake: usize,
        blocking: usize,
    }

    impl Read for RecordsHeld<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.sock.read(buf)
        }
    }

    impl Write for RecordsHeld<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.blocking > 0 {
                self.blocking -= 1;
                return Err(io::ErrorKind::WouldBlock.into());
            }
            self.sock.write(buf)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Transport for RecordsHeld<'_> {
        fn wait(&mut self, ready: Ready, timeout: Duration) -> io::Result<()> {
            let r = self.sock.wait(ready, timeout);
            self.blocking = std::mem::take(&mut self.block_after_wake);
            r
        }
    }

    #[test]
    fn a_wake_up_without_room_does_not_cut_the_write_timeout_short() {
        let (mut stream, mut theirs) = crate::net::socket_pair();
        let chunk = vec![b'x'; 64 * 1024];
        while !matches!(stream.write(&chunk), Err(e) if e.kind() == io::ErrorKind::WouldBlock) {}
        let (took_tx, took_rx) = std::sync::mpsc::channel::<()>();
        let reader = std::thread::spawn(move || {
            // The client takes nothing for 0.6 s (of a 1 s timeout).
            let _ = took_rx.recv_timeout(Duration::from_millis(600));
            let mut buf = vec![0; 1 << 16];
            while let Ok(n) = Read::read(&mut theirs, &mut buf) {
                if n == 0 {
                    break;
                }
            }
        });
        let mut waiter = Waiter::new().unwrap();
        let counters = Counters::default();
        let sock = Socket {
            stream: &mut stream,
            waiter: &mut waiter,
            watched_by: None,
            pace: Pace::new(u64::MAX),
            body_waits: (&counters, 1),
            streaming: (1, None),
            input_ended: false,
            shutdown: None,
            in_body_wait: false,
        };
        let mut io = RecordsHeld { sock, block_after_wake: 1, blocking: 0 };
        let result = write_all_wait(&mut io, b"the rest", Duration::from_secs(1));
        let _ = io;
        drop(stream);
        drop(took_tx);
        reader.join().unwrap();
        assert!(result.is_ok(), "{result:?}");
    }

    #[test]
    fn pace_allows_the_write_timeout_plus_a_second_per_min_rate_bytes() {
        let timeout = Duration::from_secs(10);
        let mut pace = Pace::new(1000);
        assert_eq!(pace.next_wait(timeout), timeout);
        pace.waited(Duration::from_secs(4));
        assert_eq!(pace.next_wait(timeout), Duration::from_secs(6));
        // 500 bytes taken: half a second more.
        pace.sent(500);
        assert_eq!(pace.next_wait(timeout), Duration::from_millis(6500));
        // Never more than `timeout` at once, however much was earned.
        pace.sent(1_000_000);
        assert_eq!(pace.next_wait(timeout), timeout);
        pace.waited(Duration::from_secs(1_100));
        assert_eq!(pace.next_wait(timeout), Duration::ZERO);
    }

    #[test]
    fn pace_at_its_extremes() {
        // Off: each wait is the timeout, whatever was waited.
        let mut off = Pace::new(0);
        off.waited(Duration::MAX);
        assert_eq!(off.next_wait(Duration::from_secs(1)), Duration::from_secs(1));
        // The fastest rate earns nothing: the timeout bounds all waits.
        let mut strict = Pace::new(u64::MAX);
        strict.sent(1 << 30);
        strict.waited(Duration::from_millis(999));
        assert_eq!(strict.next_wait(Duration::from_secs(1)), Duration::from_millis(1));
        // The slowest, with everything sent and unbounded timeouts: no
        // overflow anywhere.
        let mut lax = Pace::new(1);
        lax.sent(u64::MAX);
        lax.sent(u64::MAX);
        assert_eq!(lax.next_wait(Duration::MAX), Duration::MAX);
        assert_eq!(lax.next_wait(Duration::from_secs(3)), Duration::from_secs(3));
        lax.waited(Duration::MAX);
        lax.waited(Duration::MAX);
        assert_eq!(lax.next_wait(Duration::from_secs(3)), Duration::ZERO);
    }
}
