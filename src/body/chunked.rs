//! The chunked transfer coding (RFC 9112 §7.1), decoded: a pure state
//! machine over bytes, with its bounds on what carries no body (chunk
//! extensions, leading zeros, trailers).

use super::BodyError;
use crate::proto::is_tchar;

/// Bound on the chunk-line bytes of one body that carry nothing we use:
/// chunk extensions, and the leading zeros of a chunk-size past its first
/// digit. A body may spend this much on them and no more.
pub(crate) const MAX_CHUNK_FILLER_BYTES: usize = 4096;

/// Bound on a trailer section (RFC 9112 §7.1.2); trailers are read and
/// discarded.
pub(crate) const MAX_TRAILER_BYTES: usize = 8192;

/// The chunked decoder's position in the grammar of RFC 9112 §7.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunked {
    /// Before the first hex digit of a chunk-size.
    SizeStart,
    /// Reading hex digits; `digits` counts the significant ones, from the
    /// first that is not a zero.
    Size {
        size: u64,
        digits: u8,
    },
    /// After the size: whitespace, which only a `;` may follow.
    SizeWhitespace {
        size: u64,
    },
    /// Inside the chunk extensions.
    Extension {
        size: u64,
        at: Ext,
    },
    /// Saw CR ending the size line.
    SizeLf {
        size: u64,
    },
    Data {
        left: u64,
    },
    DataCr,
    DataLf,
    /// Start of a trailer line, or the blank line ending the body.
    TrailerStart,
    /// Inside a trailer field's name.
    TrailerName,
    /// After the trailer field's colon: its value, whitespace around it
    /// included.
    TrailerValue,
    TrailerLf,
    EndLf,
    Done,
}

/// Where the decoder is in `chunk-ext = *( BWS ";" BWS chunk-ext-name
/// [ BWS "=" BWS chunk-ext-val ] )` (RFC 9112 §7.1.1), after a `;`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ext {
    NameStart,
    Name,
    AfterName,
    ValueStart,
    Token,
    Quoted,
    /// After a backslash inside a quoted string.
    Escape,
    AfterValue,
}

/// The position after byte `b`: `Ok(None)` for the CR that ends the line.
fn ext_next(at: Ext, b: u8) -> Result<Option<Ext>, BodyError> {
    use Ext::*;
    let ws = b == b' ' || b == b'\t';
    let next = match at {
        NameStart if ws => NameStart,
        NameStart | Name if is_tchar(b) => Name,
        Name | AfterName if ws => AfterName,
        Name | AfterName if b == b'=' => ValueStart,
        Name | AfterName | Token | AfterValue if b == b';' => NameStart,
        Name | AfterName | Token | AfterValue if b == b'\r' => return Ok(None),
        ValueStart if ws => ValueStart,
        ValueStart if b == b'"' => Quoted,
        ValueStart | Token if is_tchar(b) => Token,
        Token | AfterValue if ws => AfterValue,
        Quoted if b == b'"' => AfterValue,
        Quoted if b == b'\\' => Escape,
        // qdtext, or the escaped character: HTAB, SP, VCHAR, obs-text.
        Quoted | Escape if ws || (b > 0x20 && b != 0x7f) => Quoted,
        _ => return Err(BodyError::Malformed),
    };
    Ok(Some(next))
}

/// A pure decoder for the chunked coding: bytes in, body bytes out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChunkedDecoder {
    state: Chunked,
    filler_bytes: usize,
    trailer_bytes: usize,
    /// Body bytes decoded so far, and the most the body may have.
    decoded: u64,
    max: u64,
}

impl ChunkedDecoder {
    /// A decoder for a body of at most `max` bytes.
    pub(crate) fn new(max: u64) -> ChunkedDecoder {
        ChunkedDecoder { state: Chunked::SizeStart, filler_bytes: 0, trailer_bytes: 0, decoded: 0, max }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.state == Chunked::Done
    }

    /// Decodes from `input` into `out`; returns `(consumed, produced)`. Stops
    /// after producing data, at the end of the body, or when input runs out.
    pub(crate) fn decode(&mut self, input: &[u8], out: &mut [u8]) -> Result<(usize, usize), BodyError> {
        let mut used = 0;
        while used < input.len() && self.state != Chunked::Done {
            if let Chunked::Data { left } = self.state {
                let n = (input.len() - used).min(out.len()).min(usize::try_from(left).unwrap_or(usize::MAX));
                if n == 0 {
                    break;
                }
                out[..n].copy_from_slice(&input[used..used + n]);
                self.decoded += n as u64;
                let left = left - n as u64;
                self.state = if left == 0 { Chunked::DataCr } else { Chunked::Data { left } };
                return Ok((used + n, n));
            }
            self.state = self.step(input[used])?;
            used += 1;
        }
        Ok((used, 0))
    }

    /// The state after one framing byte.
    fn step(&mut self, b: u8) -> Result<Chunked, BodyError> {
        use Chunked::*;
        let next = match (self.state, b) {
            (SizeStart, _) if b.is_ascii_hexdigit() => self.size_digit(0, 0, b)?,
            (Size { size: 0, .. }, b'0') => {
                // `chunk-size = 1*HEXDIG` (RFC 9112 §7.1): leading zeros are
                // allowed and do not count toward the 16 digits a u64 holds,
                // but they carry nothing, so a body's run of them is bounded.
                self.filler_byte()?;
                Size { size: 0, digits: 0 }
            }
            (Size { size, digits }, _) if b.is_ascii_hexdigit() => self.size_digit(size, digits, b)?,
            (SizeStart, _) => return Err(BodyError::Malformed),
            // Whitespace before an extension carries nothing either.
            (Size { size, .. } | SizeWhitespace { size }, b' ' | b'\t') => {
                self.filler_byte()?;
                SizeWhitespace { size }
            }
            (Size { size, .. } | SizeWhitespace { size }, b';') => Extension { size, at: Ext::NameStart },
            (Size { size, .. }, b'\r') => SizeLf { size },
            (Extension { size, at }, _) => {
                self.filler_byte()?;
                match ext_next(at, b)? {
                    Some(at) => Extension { size, at },
                    None => SizeLf { size },
                }
            }
            (SizeLf { size: 0 }, b'\n') => TrailerStart,
            (SizeLf { size }, b'\n') => Data { left: size },
            (DataCr, b'\r') => DataLf,
            (DataLf, b'\n') => SizeStart,
            (TrailerStart, b'\r') => EndLf,
            (EndLf, b'\n') => Done,
            // The trailer section is field lines (RFC 9112 §7.1.2): `name ":"
            // OWS value OWS`, the name a token. A server must refuse obs-fold,
            // a line starting with SP or HTAB (§5.2), and whitespace before
            // the colon (§5.1). Trailers are discarded, but a line the head
            // parser would refuse is refused here too, not passed by.
            (TrailerStart | TrailerName, _) if is_tchar(b) => self.trailer_byte(TrailerName)?,
            (TrailerName, b':') => self.trailer_byte(TrailerValue)?,
            (TrailerValue, b'\r') => TrailerLf,
            // field-vchar (VCHAR or obs-text), SP and HTAB.
            (TrailerValue, _) if b == b'\t' || (b >= 0x20 && b != 0x7f) => self.trailer_byte(TrailerValue)?,
            (TrailerLf, b'\n') => TrailerStart,
            _ => return Err(BodyError::Malformed),
        };
        Ok(next)
    }

    /// The state after hex digit `b` of a chunk-size read as `size` so far,
    /// with `digits` significant digits.
    fn size_digit(&self, size: u64, digits: u8, b: u8) -> Result<Chunked, BodyError> {
        // 16 significant hex digits fill a u64; a 17th would overflow.
        if digits >= 16 {
            return Err(BodyError::Malformed);
        }
        let digit = (b as char).to_digit(16).unwrap_or(0);
        let size = size << 4 | u64::from(digit);
        // A chunk whose size alone runs past the limit is refused at the
        // digit that takes it there: not once the client has sent (or
        // trickled) that much, nor after the rest of its line, so that the
        // verdict is the same however the bytes arrive.
        if self.decoded.saturating_add(size) > self.max {
            return Err(BodyError::TooLarge);
        }
        // Zeros before the first significant digit are not counted.
        Ok(Chunked::Size { size, digits: if size == 0 { 0 } else { digits + 1 } })
    }

    /// Counts a byte against [`MAX_CHUNK_FILLER_BYTES`].
    fn filler_byte(&mut self) -> Result<(), BodyError> {
        self.filler_bytes += 1;
        if self.filler_bytes > MAX_CHUNK_FILLER_BYTES {
            return Err(BodyError::Malformed);
        }
        Ok(())
    }

    /// `next`, after counting a trailer byte against [`MAX_TRAILER_BYTES`].
    fn trailer_byte(&mut self, next: Chunked) -> Result<Chunked, BodyError> {
        self.trailer_bytes += 1;
        if self.trailer_bytes > MAX_TRAILER_BYTES {
            return Err(BodyError::Malformed);
        }
        Ok(next)
    }
}

#[cfg(test)]
mod tests;
