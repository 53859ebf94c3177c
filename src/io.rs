//! The byte stream a connection is served over.
//!
//! Sockets are non-blocking so that the worker can tell "nothing more to
//! read" (park the connection) from "more is coming" (serve it). Where the
//! worker must wait — a request body the handler reads, a response the peer
//! is slow to take — it waits on the one socket with a timeout.

use std::fs::File;
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

mod script;
mod socket;
pub(crate) use script::Script;
pub(crate) use socket::{Pace, Socket, Waiter, earned};

/// What a blocked operation waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ready {
    Readable,
    Writable,
}

/// A non-blocking byte stream that can wait for readiness.
pub(crate) trait Transport: Read + Write {
    /// Blocks until the stream is ready or `timeout` passes; a timeout is an
    /// `ErrorKind::TimedOut` error.
    fn wait(&mut self, ready: Ready, timeout: Duration) -> io::Result<()>;

    /// True when the stream may hold input the socket's readiness does not
    /// show (TLS: records already decrypted), so it must be read before the
    /// connection parks.
    fn holds_input(&self) -> bool {
        false
    }

    /// True when the client has sent bytes below what a read returns (TLS:
    /// part of a record), although a read would block: input has begun.
    fn input_begun(&self) -> bool {
        false
    }

    /// True for a TLS connection (`Request::is_tls`).
    fn is_tls(&self) -> bool {
        false
    }

    /// True when a read that returns fewer bytes than asked for has emptied
    /// the socket (plain TCP and Unix sockets), so the connection may park:
    /// the next bytes bring a new readiness edge. A TLS stream may hand out
    /// decrypted bytes while records wait in the socket, so only
    /// `WouldBlock` tells it is empty.
    fn short_read_drains(&self) -> bool {
        !self.holds_input()
    }

    /// Stops the connection's seat from watching it while the worker reads
    /// or writes it directly (an upgrade's closure, a body, a slow write):
    /// the seat's events would only wake a worker for nothing.
    fn leave_seat(&mut self) {}

    /// Ends the stream's sending side (TCP FIN, TLS close_notify); reading
    /// goes on.
    fn shutdown_write(&mut self) {}

    /// Ends the sending side after an answer cut short: over TLS without
    /// close_notify, so that the client cannot take a close-delimited
    /// answer for whole (RFC 9112 §9.8); reading goes on.
    fn shutdown_write_torn(&mut self) {
        self.shutdown_write();
    }

    /// The last answer went out whole and the stream is about to be
    /// dropped: over TLS, close_notify goes first (RFC 8446 §6.1; by it a
    /// close-delimited answer is known whole, RFC 9112 §9.8). Nothing on
    /// other streams, whose close says as much.
    fn close_notify(&mut self) {}

    /// The stream's waits for room are no longer held to a least rate
    /// ([`Pace`]), nor cut at the end of a shutdown's drain: an upgrade's
    /// closure sets its own timeouts.
    fn stop_pacing(&mut self) {}

    /// A body read is about to wait for the client: takes one of the
    /// server's places for workers waiting on bodies, false when none is
    /// left. Each true is followed by [`Transport::end_body_wait`].
    fn begin_body_wait(&mut self) -> bool {
        true
    }

    /// The wait [`Transport::begin_body_wait`] allowed is over.
    fn end_body_wait(&mut self) {}

    /// True when a place for a worker waiting on a body is free now (a
    /// look, nothing taken): asked before `100 Continue` invites a body.
    fn body_wait_free(&self) -> bool {
        true
    }

    /// The handler answered with a body that holds the worker while it is
    /// written (a stream, a reader) or with an upgrade: takes one of the
    /// server's places for streaming workers
    /// (`Server::max_streaming_workers`), false when every one is taken.
    /// The place is held until [`Transport::end_streaming`], or until the
    /// transport is dropped (the worker's turn on the connection over). A
    /// transport that keeps no count always has one.
    fn begin_streaming(&mut self) -> bool {
        true
    }

    /// Gives back the place [`Transport::begin_streaming`] took.
    fn end_streaming(&mut self) {}

    /// Sends what the socket takes now of the `*left` bytes of `file` from
    /// its position: `Ok(true)` when all went, `Ok(false)` when the socket
    /// is full, with the file positioned at the first byte not sent and
    /// `*left` counting down. Plain TCP hands the file to the kernel
    /// (`sendfile` on Linux); other transports copy through a buffer.
    fn send_file_now(&mut self, file: &mut File, left: &mut u64) -> io::Result<bool> {
        copy_file_now(self, file, left)
    }

    /// Sends `len` bytes of `file` from its current position, after what
    /// was already written, waiting up to `timeout` each time the peer
    /// stops taking bytes.
    fn send_file(&mut self, file: &mut File, len: u64, timeout: Duration) -> io::Result<()> {
        let mut left = len;
        while !self.send_file_now(file, &mut left)? {
            self.wait(Ready::Writable, timeout)?;
        }
        // A TLS stream may still hold records.
        write_all_wait(self, &[], timeout)
    }
}

/// Runs `op` (one read, write or flush of a non-blocking stream) again
/// while it is interrupted: `Ok(None)` when the stream would block.
#[inline]
pub(crate) fn now<R>(mut op: impl FnMut() -> io::Result<R>) -> io::Result<Option<R>> {
    loop {
        match op() {
            Ok(r) => return Ok(Some(r)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// How long [`waiting`] waits for the stream.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Patience {
    /// Up to this long in all, from the first wait: for reads, where a TLS
    /// record sent in pieces makes the socket readable again and again
    /// with nothing to read, and each of those wakes must count against
    /// the same deadline.
    InAll(Duration),
    /// Up to this long each time: for writes, where a wake-up after which
    /// the stream still takes nothing most often means the client took
    /// some of what was sent (TLS records held below), and the stream's
    /// own pace (`Socket`'s least rate) bounds the waits together.
    EachWait(Duration),
}

/// Runs `op` on `io` until it does not block, waiting for `ready` in
/// between as `patience` allows (then `TimedOut`).
#[inline]
pub(crate) fn waiting<T: Transport + ?Sized, R>(
    io: &mut T,
    ready: Ready,
    patience: Patience,
    mut op: impl FnMut(&mut T) -> io::Result<R>,
) -> io::Result<R> {
    // Set at the first wait; `None` inside when the time is unbounded.
    let mut deadline = None;
    loop {
        if let Some(r) = now(|| op(io))? {
            return Ok(r);
        }
        let wait = match patience {
            Patience::EachWait(timeout) => timeout,
            Patience::InAll(timeout) => {
                let deadline = *deadline.get_or_insert_with(|| Instant::now().checked_add(timeout));
                let left = deadline.map_or(timeout, |at| at.saturating_duration_since(Instant::now()));
                if left.is_zero() {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                left
            }
        };
        io.wait(ready, wait)?;
    }
}

/// [`Transport::send_file_now`] through a buffer: what the socket does not
/// take of a chunk read is given back by moving the file position back.
fn copy_file_now<T: Transport + ?Sized>(io: &mut T, file: &mut File, left: &mut u64) -> io::Result<bool> {
    use std::io::{Seek, SeekFrom};
    let mut chunk = [0u8; 16 * 1024];
    while *left > 0 {
        let want = chunk.len().min(usize::try_from(*left).unwrap_or(usize::MAX));
        let n = file.read(&mut chunk[..want])?;
        if n == 0 {
            return Err(file_too_short());
        }
        let mut at = 0;
        while at < n {
            match now(|| io.write(&chunk[at..n]))? {
                Some(0) => return Err(io::ErrorKind::WriteZero.into()),
                Some(k) => at += k,
                None => break,
            }
        }
        *left -= at as u64;
        if at < n {
            file.seek(SeekFrom::Current(-((n - at) as i64)))?;
            return Ok(false);
        }
    }
    Ok(true)
}

fn file_too_short() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "file shorter than the response length")
}

/// Reads at least one byte (or end of stream), waiting up to `timeout` for
/// it in all ([`Patience::InAll`]).
pub(crate) fn read_wait(io: &mut dyn Transport, buf: &mut [u8], timeout: Duration) -> io::Result<usize> {
    waiting(io, Ready::Readable, Patience::InAll(timeout), |io| io.read(buf))
}

/// Writes all of `buf`, waiting up to `timeout` each time the peer stops
/// taking bytes.
pub(crate) fn write_all_wait<T: Transport + ?Sized>(io: &mut T, mut buf: &[u8], timeout: Duration) -> io::Result<()> {
    let patience = Patience::EachWait(timeout);
    while !buf.is_empty() {
        match waiting(io, Ready::Writable, patience, |io| io.write(buf))? {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n => buf = &buf[n..],
        }
    }
    // A TLS stream may still hold records; plain sockets hold nothing.
    waiting(io, Ready::Writable, patience, |io| io.flush())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes one TLS record per wake-up, 40 ms apart; the socket has room
    /// again only once all are out.
    struct SteadyReader {
        records: usize,
    }

    impl Read for SteadyReader {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::ErrorKind::WouldBlock.into())
        }
    }

    impl Write for SteadyReader {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.records > 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Transport for SteadyReader {
        fn wait(&mut self, _: Ready, timeout: Duration) -> io::Result<()> {
            let step = Duration::from_millis(40);
            if timeout < step {
                return Err(io::ErrorKind::TimedOut.into());
            }
            // The client's pace, not a synchronisation: the time the waits
            // take is what is tested.
            std::thread::sleep(step);
            self.records -= 1;
            Ok(())
        }
    }

    /// A write waits up to its timeout each time the client stops taking
    /// bytes, not in all: a client that keeps taking records is not cut.
    #[test]
    fn a_client_that_keeps_taking_records_is_not_timed_out() {
        let mut io = SteadyReader { records: 5 };
        let result = write_all_wait(&mut io, b"answer", Duration::from_millis(100));
        assert!(result.is_ok(), "{result:?} with {} records left", io.records);
    }

    /// Always reported ready, never a byte to read: a TLS stream while a
    /// record arrives a byte at a time.
    struct ReadyButEmpty {
        waits: usize,
    }

    impl Read for ReadyButEmpty {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::ErrorKind::WouldBlock.into())
        }
    }

    impl Write for ReadyButEmpty {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Transport for ReadyButEmpty {
        fn wait(&mut self, _: Ready, _: Duration) -> io::Result<()> {
            self.waits += 1;
            Ok(())
        }
    }

    #[test]
    fn read_wait_gives_up_at_one_deadline_however_often_readiness_brings_nothing() {
        let mut io = ReadyButEmpty { waits: 0 };
        let err = read_wait(&mut io, &mut [0; 16], Duration::from_millis(20)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(io.waits > 1, "woke {} times", io.waits);
    }
}
