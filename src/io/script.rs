//! The in-memory transport the connection loop is tested and fuzzed over.

use std::io::{self, Read, Write};
use std::time::Duration;

use super::{Ready, Transport};

/// An in-memory transport for tests and fuzzing that behaves like a
/// non-blocking socket under edge-triggered readiness: input arrives in
/// scripted chunks (each one an edge), a read returns what has arrived (at
/// most what was asked: a short read empties it) and `WouldBlock` when
/// nothing has; the end of stream arrives after the last chunk as an edge
/// of its own, or with the last chunk ([`Script::fin_with_last`]); writes
/// take at most `room` bytes. A connection parked with bytes or the end of
/// stream still unread is served again only if another arrival comes, as
/// with epoll or kqueue, so a lost wake-up leaves a request unanswered.
/// With [`Script::completion`], readiness is as mio gives it on Windows.
#[derive(Default)]
pub(crate) struct Script {
    /// Arrivals still to come.
    pub(crate) chunks: std::collections::VecDeque<Vec<u8>>,
    /// Bytes that have arrived and are not read yet (the socket's receive
    /// queue).
    pub(crate) current: Vec<u8>,
    /// The client closes its side after the last chunk.
    pub(crate) eof: bool,
    /// The end of stream has arrived: reads return 0 once `current` is read.
    pub(crate) fin: bool,
    /// The end of stream arrives with the last chunk, in one edge (a
    /// client that sends its last request and closes before the server
    /// looks): only the event's read-closed flag tells of it.
    pub(crate) fin_with_last: bool,
    /// A read returned the end of stream.
    pub(crate) fin_read: bool,
    /// The worker waited on the socket, which left its seat: it is
    /// registered afresh when the connection parks, and registering
    /// reports what has arrived (bytes, or the end of stream).
    pub(crate) left_seat: bool,
    pub(crate) written: Vec<u8>,
    /// Every place the server has for a streaming worker (a body that holds
    /// its worker, an upgrade) is taken (`Server::max_streaming_workers`).
    pub(crate) streaming_full: bool,
    /// The connection holds a place for a streaming worker.
    pub(crate) streaming_held: bool,
    /// The next this many looks for a free place for a worker waiting on a
    /// body ([`Transport::body_wait_free`]) find every one taken
    /// (`Server::max_body_waits`); later ones find one.
    pub(crate) body_waits_full: std::cell::Cell<u32>,
    /// When set, `wait` for input succeeds and releases the next arrival
    /// (the peer sends more while the worker waits); otherwise it times out.
    pub(crate) patient: bool,
    /// The server shut its sending side.
    pub(crate) shut_write: bool,
    /// How the server ended its session, as TLS would tell the client:
    /// `Some(true)` whole (close_notify reached the socket, by a shutdown
    /// or before the close), `Some(false)` torn (a shutdown without it).
    pub(crate) ended_whole: Option<bool>,
    /// The session is TLS as far as its end goes: close_notify is a record
    /// that needs room like any other write. It waits in the session while
    /// the socket is full (a flush sends it, or fails `WouldBlock`), and a
    /// shutdown or close before it went loses it. Otherwise it always goes.
    pub(crate) tls: bool,
    /// TLS: the session has read part of a record from the socket, which a
    /// read does not show until the rest arrives (input has begun).
    pub(crate) record_begun: bool,
    /// Under `tls`: bytes of close_notify waiting in the session for room.
    pub(crate) alert_left: usize,
    /// Under `tls`, writes as rustls takes them: whole, into records the
    /// session holds while the socket has no room for them (a write with
    /// records held and no room, or a flush that cannot send them all, is
    /// `WouldBlock`), so a write that took every byte may still leave some
    /// unsent.
    pub(crate) records: bool,
    /// Under `records`: bytes the session holds for room.
    pub(crate) held: Vec<u8>,
    /// Bytes the client takes before the socket is full (`None`: no
    /// limit); a wait for room lifts the limit, as a client reading on
    /// would.
    pub(crate) room: Option<usize>,
    /// Waits for room that time out before the client reads on (it
    /// stopped reading for a while): each takes one, then waits lift the
    /// limit again.
    pub(crate) stalls: u32,
    /// Readiness as mio emulates it on Windows: once an arrival has woken
    /// the connection, the next one wakes it only if a read or write since
    /// returned `WouldBlock` (or it waited on the socket, after which it
    /// registers afresh); a short read says nothing.
    pub(crate) completion: bool,
    /// Under `completion`: no wake-up since the last `WouldBlock`.
    pub(crate) disarmed: bool,
    /// Waits for input that return with nothing to read, before the script
    /// answers them as usual: readiness may wake a waiter for nothing (mio
    /// says so; Wine's emulation of Windows does it after a registration).
    pub(crate) spurious: u32,
    /// How long each wait for input was allowed to take.
    pub(crate) waits: Vec<Duration>,
    /// At the next read that would block, once it has found nothing: the
    /// next chunk arrives and then this shutdown begins, both before the
    /// worker looks at the stop flag (a read that takes long, as under Wine).
    pub(crate) stop_after_dry_read: Option<std::sync::Arc<crate::stop::Stop>>,
}

impl Script {
    pub(crate) fn new(chunks: &[&[u8]]) -> Script {
        Script { chunks: chunks.iter().map(|c| c.to_vec()).collect(), ..Script::default() }
    }

    /// The next arrival: a chunk, or once they are all in, the end of
    /// stream (when the script has one). False when nothing is left to
    /// arrive, or (under `completion`) when the arrival wakes nobody: a
    /// parked connection is not woken again.
    pub(crate) fn release(&mut self) -> bool {
        if !self.arrive() {
            return false;
        }
        let wakes = !(self.completion && self.disarmed);
        self.disarmed = self.completion;
        wakes
    }

    /// The next arrival, whether or not it wakes the connection.
    fn arrive(&mut self) -> bool {
        match self.chunks.pop_front() {
            Some(chunk) => {
                self.current.extend_from_slice(&chunk);
                self.fin |= self.eof && self.fin_with_last && self.chunks.is_empty();
                true
            }
            None if self.eof && !self.fin => {
                self.fin = true;
                true
            }
            None => false,
        }
    }

    /// True when every byte that arrived was read, and the end of stream
    /// if it came: what a parked connection must have done (else its
    /// wake-up was lost).
    pub(crate) fn is_drained(&self) -> bool {
        self.current.is_empty() && (!self.fin || self.fin_read)
    }

    /// The connection parks: true when that registers the socket afresh
    /// (it left its seat) with something to read, which wakes it at once.
    pub(crate) fn park_wakes(&mut self) -> bool {
        std::mem::take(&mut self.left_seat) && !self.is_drained()
    }
}

impl Read for Script {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.current.is_empty() {
            if self.fin {
                self.fin_read = true;
                return Ok(0);
            }
            self.disarmed = false;
            if let Some(stop) = self.stop_after_dry_read.take() {
                self.arrive();
                stop.set();
            }
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current.drain(..n);
        Ok(n)
    }
}

impl Write for Script {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        assert!(
            !(self.tls && (self.alert_left > 0 || self.ended_whole == Some(true))),
            "an answer written after close_notify"
        );
        if self.shut_write {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        if self.tls && self.records {
            if !self.send_held() {
                self.disarmed = false;
                return Err(io::ErrorKind::WouldBlock.into());
            }
            self.held.extend_from_slice(buf);
            self.send_held();
            return Ok(buf.len());
        }
        let n = match &mut self.room {
            Some(0) => {
                self.disarmed = false;
                return Err(io::ErrorKind::WouldBlock.into());
            }
            Some(room) => {
                let n = buf.len().min(*room);
                *room -= n;
                n
            }
            None => buf.len(),
        };
        self.written.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.send_held() {
            self.disarmed = false;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.send_alert()
    }
}

/// Bytes of a TLS close_notify record on the wire.
const ALERT_LEN: usize = 24;

impl Script {
    /// Under `records`, sends what the socket takes now of the records held:
    /// true once none is left.
    fn send_held(&mut self) -> bool {
        let n = self.room.map_or(self.held.len(), |room| room.min(self.held.len()));
        if let Some(room) = &mut self.room {
            *room -= n;
        }
        self.written.extend(self.held.drain(..n));
        self.held.is_empty()
    }

    /// Under `tls`, sends what the socket takes now of the close_notify
    /// waiting in the session (a record goes in pieces, as any write).
    fn send_alert(&mut self) -> io::Result<()> {
        if self.alert_left == 0 || self.shut_write {
            return Ok(());
        }
        let n = match &mut self.room {
            Some(room) => {
                let n = self.alert_left.min(*room);
                *room -= n;
                n
            }
            None => self.alert_left,
        };
        self.alert_left -= n;
        if self.alert_left > 0 {
            self.disarmed = false;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.ended_whole.get_or_insert(true);
        Ok(())
    }
}

impl Transport for Script {
    /// close_notify, then the end of stream: over a full TLS socket the
    /// alert is lost and the session ends torn.
    fn shutdown_write(&mut self) {
        self.close_notify();
        self.shutdown_write_torn();
    }

    fn shutdown_write_torn(&mut self) {
        self.shut_write = true;
        self.ended_whole.get_or_insert(false);
    }

    fn close_notify(&mut self) {
        if !self.tls {
            self.ended_whole.get_or_insert(true);
            return;
        }
        if self.ended_whole.is_none() && self.alert_left == 0 {
            self.alert_left = ALERT_LEN;
        }
        let _ = self.send_alert();
    }

    fn input_begun(&self) -> bool {
        self.record_begun
    }

    /// A short read empties the socket of bytes, but not of an end of
    /// stream that came in the same edge: the engine passes on the event's
    /// read-closed flag, and a connection told of it reads until the end.
    fn short_read_drains(&self) -> bool {
        !self.completion && !self.fin
    }

    fn body_wait_free(&self) -> bool {
        let full = self.body_waits_full.get();
        self.body_waits_full.set(full.saturating_sub(1));
        full == 0
    }

    fn begin_streaming(&mut self) -> bool {
        self.streaming_held = !self.streaming_full;
        self.streaming_held
    }

    fn end_streaming(&mut self) {
        self.streaming_held = false;
    }

    fn wait(&mut self, ready: Ready, timeout: Duration) -> io::Result<()> {
        // The socket leaves its seat while the worker waits, and is
        // registered afresh when it parks.
        self.disarmed = false;
        self.left_seat = true;
        if ready == Ready::Writable {
            if self.stalls > 0 {
                self.stalls -= 1;
                return Err(io::ErrorKind::TimedOut.into());
            }
            self.room = None;
            return Ok(());
        }
        self.waits.push(timeout);
        if self.spurious > 0 {
            self.spurious -= 1;
            return Ok(());
        }
        if !self.current.is_empty() || self.fin || (self.patient && self.arrive()) {
            return Ok(());
        }
        Err(io::ErrorKind::TimedOut.into())
    }
}
