//! Writing a response body that comes from a `Read` (RFC 9112 §6.3, §7.1).

use std::io::{self, Read};
use std::time::Duration;

use crate::io::{Transport, write_all_wait};
use crate::response::Framing;

/// Bytes queued before they are written out.
const FLUSH_AT: usize = 64 * 1024;

/// Size of one read from the body reader, and so of one chunk.
const CHUNK: usize = 16 * 1024;

/// Writes `reader` to `io` behind the head already in `out`, framed as
/// `framing` says. For `Length(n)` exactly `n` bytes are sent: a reader that
/// ends early is an error (the connection must close), extra bytes are not
/// read.
pub(crate) fn copy_body(
    io: &mut dyn Transport,
    out: &mut Vec<u8>,
    mut reader: Box<dyn Read + Send>,
    framing: Framing,
    timeout: Duration,
) -> io::Result<()> {
    let mut left = match framing {
        Framing::Length(n) => n,
        _ => u64::MAX,
    };
    let chunked = framing == Framing::Chunked;
    let mut chunk = [0u8; CHUNK];
    while left > 0 {
        let want = CHUNK.min(usize::try_from(left).unwrap_or(CHUNK));
        let n = match reader.read(&mut chunk[..want]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            if left != u64::MAX {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "body reader ended before its length",
                ));
            }
            break;
        }
        if chunked {
            out.extend_from_slice(format_hex(n).as_slice());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(&chunk[..n]);
        if chunked {
            out.extend_from_slice(b"\r\n");
        }
        if left != u64::MAX {
            left -= n as u64;
        }
        if out.len() >= FLUSH_AT {
            write_all_wait(io, out, timeout)?;
            out.clear();
        }
    }
    if chunked {
        out.extend_from_slice(b"0\r\n\r\n");
    }
    Ok(())
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

    fn copy(body: &'static [u8], framing: Framing) -> io::Result<Vec<u8>> {
        let mut io = Script::default();
        let mut out = Vec::new();
        copy_body(
            &mut io,
            &mut out,
            Box::new(body),
            framing,
            Duration::from_secs(1),
        )?;
        io.written.extend_from_slice(&out);
        Ok(io.written)
    }

    #[test]
    fn chunked_frames_each_read_and_ends_with_a_zero_chunk() {
        assert_eq!(
            copy(b"hello", Framing::Chunked).unwrap(),
            b"5\r\nhello\r\n0\r\n\r\n"
        );
        assert_eq!(copy(b"", Framing::Chunked).unwrap(), b"0\r\n\r\n");
    }

    #[test]
    fn long_chunks_use_hex_sizes() {
        static BIG: [u8; 20_000] = [b'x'; 20_000];
        let wire = copy(&BIG, Framing::Chunked).unwrap();
        assert!(wire.starts_with(b"4000\r\n"));
        assert!(wire.ends_with(b"\r\n0\r\n\r\n"));
        assert_eq!(wire.len(), 6 + 16384 + 2 + 5 + 3616 + 2 + 5);
        assert!(wire.windows(7).any(|w| w == b"\r\ne20\r\n"));
    }

    #[test]
    fn length_framing_sends_exactly_the_length() {
        assert_eq!(copy(b"hello world", Framing::Length(5)).unwrap(), b"hello");
        let short = copy(b"hi", Framing::Length(5)).unwrap_err();
        assert_eq!(short.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn close_delimited_sends_everything_raw() {
        assert_eq!(copy(b"stream", Framing::CloseDelimited).unwrap(), b"stream");
    }
}
