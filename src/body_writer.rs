//! Writing a response body that is produced while it is sent: from a
//! `Read`, or by a closure writing to a [`BodyWriter`] (RFC 9112 §6.3, §7.1).

use std::fmt;
use std::io::{self, Read, Write};
use std::time::Duration;

use crate::io::{Transport, write_all_wait};
use crate::proto::ResponseFraming;

/// Bytes queued before they are written out.
const FLUSH_AT: usize = 64 * 1024;

/// Size of one read from a body reader.
const CHUNK: usize = 16 * 1024;

/// Where a streamed response body goes: `write` frames the bytes (as
/// `chunked` chunks for HTTP/1.1 clients, raw for a known length or an
/// HTTP/1.0 client) and queues them; `flush` sends what is queued — call it
/// whenever the client should see what was written so far (e.g. after each
/// server-sent event).
///
/// Errors: the client went away or stopped reading (the connection is then
/// closed), or more bytes were written than a declared `Content-Length`.
/// Once a write to the client failed, every later call fails too: what was
/// queued is lost, and the answer is cut short even if the handler goes on
/// or returns `Ok`.
pub struct BodyWriter<'a> {
    io: &'a mut dyn Transport,
    out: &'a mut Vec<u8>,
    chunked: bool,
    /// Bytes still owed for a `Content-Length` body; `None` otherwise.
    left: Option<u64>,
    timeout: Duration,
    /// A write to the client failed: the body on the wire is torn.
    failed: bool,
}

impl<'a> BodyWriter<'a> {
    pub(crate) fn new(
        io: &'a mut dyn Transport,
        out: &'a mut Vec<u8>,
        framing: ResponseFraming,
        timeout: Duration,
    ) -> Self {
        let left = match framing {
            ResponseFraming::Length(n) => Some(n),
            _ => None,
        };
        BodyWriter { io, out, chunked: framing == ResponseFraming::Chunked, left, timeout, failed: false }
    }

    /// Ends the body: the last chunk for `chunked`; for a declared length,
    /// an error if fewer bytes were written.
    pub(crate) fn finish(self) -> io::Result<()> {
        self.check()?;
        if self.chunked {
            self.out.extend_from_slice(b"0\r\n\r\n");
        }
        match self.left {
            Some(left) if left > 0 => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "body shorter than its length")),
            _ => Ok(()),
        }
    }

    fn is_streaming(&self) -> bool {
        self.left.is_none()
    }

    /// Fails once a write to the client has: nothing may follow a torn body.
    fn check(&self) -> io::Result<()> {
        match self.failed {
            true => Err(io::Error::new(io::ErrorKind::BrokenPipe, "an earlier write of this body failed")),
            false => Ok(()),
        }
    }
}

impl Write for BodyWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.check()?;
        let n = match self.left {
            Some(0) if !buf.is_empty() => {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "body longer than its length"));
            }
            Some(left) => buf.len().min(usize::try_from(left).unwrap_or(usize::MAX)),
            None => buf.len(),
        };
        // At most a flush's worth per call (`write_all` loops): a single
        // large write must not be copied whole into the worker's buffer,
        // which keeps its capacity for as long as the worker lives.
        let n = n.min(FLUSH_AT);
        if n == 0 {
            return Ok(0);
        }
        if self.chunked {
            self.out.extend_from_slice(format_hex(n).as_slice());
            self.out.extend_from_slice(b"\r\n");
        }
        self.out.extend_from_slice(&buf[..n]);
        if self.chunked {
            self.out.extend_from_slice(b"\r\n");
        }
        if let Some(left) = &mut self.left {
            *left -= n as u64;
        }
        if self.out.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.check()?;
        let sent = write_all_wait(self.io, self.out, self.timeout);
        self.out.clear();
        self.failed = sent.is_err();
        sent
    }
}

impl fmt::Debug for BodyWriter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BodyWriter").field("chunked", &self.chunked).field("left", &self.left).finish()
    }
}

/// Writes `reader` behind the head already in `out`. With a known length
/// exactly that many bytes are sent (a reader that ends early is an error:
/// the connection must close). Without one, each read is sent as soon as it
/// is read, so a slow producer (events, a pipe) reaches the client at once.
pub(crate) fn copy_body(mut reader: Box<dyn Read + Send>, mut writer: BodyWriter<'_>) -> io::Result<()> {
    let mut chunk = [0u8; CHUNK];
    loop {
        let want = writer.left.map_or(CHUNK, |left| CHUNK.min(usize::try_from(left).unwrap_or(CHUNK)));
        if want == 0 {
            break;
        }
        let n = match reader.read(&mut chunk[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        writer.write_all(&chunk[..n])?;
        if writer.is_streaming() {
            writer.flush()?;
        }
    }
    writer.finish()
}

/// `n` in lower-case hex without leading zeros.
fn format_hex(mut n: usize) -> HexDigits {
    let mut digits = [0u8; 16];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b"0123456789abcdef"[n & 0xf];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    HexDigits { digits, start: i }
}

struct HexDigits {
    digits: [u8; 16],
    start: usize,
}

impl HexDigits {
    fn as_slice(&self) -> &[u8] {
        &self.digits[self.start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Script;

    fn copy(body: &'static [u8], framing: ResponseFraming) -> io::Result<Vec<u8>> {
        let mut io = Script::default();
        let mut out = Vec::new();
        let writer = BodyWriter::new(&mut io, &mut out, framing, Duration::from_secs(1));
        copy_body(Box::new(body), writer)?;
        io.written.extend_from_slice(&out);
        Ok(io.written)
    }

    /// A flush that timed out after the client took part of a chunk (it
    /// stopped reading) lost the rest; a closure that then went on, or
    /// returned `Ok` taking the error for "the client left", had its torn
    /// body ended with the last chunk, and the connection kept alive.
    #[test]
    fn after_a_failed_flush_every_call_fails_and_the_body_never_ends_whole() {
        let mut io = Script { room: Some(8), stalls: 1, ..Script::default() };
        let mut out = Vec::new();
        let mut writer = BodyWriter::new(&mut io, &mut out, ResponseFraming::Chunked, Duration::from_secs(1));
        writer.write_all(b"data: one\n\n").unwrap();
        assert_eq!(writer.flush().unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert_eq!(writer.write(b"data: two\n\n").unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(writer.flush().unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(writer.finish().unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        assert_eq!((io.written, out), (b"b\r\ndata:".to_vec(), Vec::new()));
    }

    #[test]
    fn chunked_frames_each_read_and_ends_with_a_zero_chunk() {
        assert_eq!(copy(b"hello", ResponseFraming::Chunked).unwrap(), b"5\r\nhello\r\n0\r\n\r\n");
        assert_eq!(copy(b"", ResponseFraming::Chunked).unwrap(), b"0\r\n\r\n");
    }

    #[test]
    fn long_chunks_use_hex_sizes() {
        static BIG: [u8; 20_000] = [b'x'; 20_000];
        let wire = copy(&BIG, ResponseFraming::Chunked).unwrap();
        assert!(wire.starts_with(b"4000\r\n"));
        assert!(wire.ends_with(b"\r\n0\r\n\r\n"));
        assert_eq!(wire.len(), 6 + 16384 + 2 + 5 + 3616 + 2 + 5);
        assert!(wire.windows(7).any(|w| w == b"\r\ne20\r\n"));
    }

    #[test]
    fn length_framing_sends_exactly_the_length() {
        assert_eq!(copy(b"hello world", ResponseFraming::Length(5)).unwrap(), b"hello");
        let short = copy(b"hi", ResponseFraming::Length(5)).unwrap_err();
        assert_eq!(short.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn streams_are_sent_read_by_read() {
        // A reader yielding 3 then 2 bytes: each read reaches the socket on
        // its own (the test transport records every write).
        let reader = io::Read::chain(&b"abc"[..], &b"de"[..]);
        let mut io = Script::default();
        let mut out = Vec::new();
        let writer = BodyWriter::new(&mut io, &mut out, ResponseFraming::Chunked, Duration::from_secs(1));
        copy_body(Box::new(reader), writer).unwrap();
        assert_eq!(io.written, b"3\r\nabc\r\n2\r\nde\r\n");
        assert_eq!(out, b"0\r\n\r\n");
    }

    #[test]
    fn a_writer_cannot_exceed_a_declared_length() {
        let mut io = Script::default();
        let mut out = Vec::new();
        let mut writer = BodyWriter::new(&mut io, &mut out, ResponseFraming::Length(3), Duration::from_secs(1));
        assert!(writer.write_all(b"abcd").is_err());
        let mut writer = BodyWriter::new(&mut io, &mut out, ResponseFraming::Length(3), Duration::from_secs(1));
        writer.write_all(b"ab").unwrap();
        assert!(writer.finish().is_err());
    }

    #[test]
    fn close_delimited_sends_everything_raw() {
        assert_eq!(copy(b"stream", ResponseFraming::CloseDelimited).unwrap(), b"stream");
    }
}
