//! The common head read in one pass, without httparse: a request line of
//! `GET`, `HEAD`, `POST` or `PUT`, a target of visible ASCII, `HTTP/1.1`
//! or `HTTP/1.0`, and field lines of a token, a colon and a value of
//! visible ASCII, spaces and tabs, every line ended by CRLF.
//!
//! It takes only heads the full parser ([`super::full_head`]) accepts, and
//! yields exactly what that parser would (the same [`Head`], the same
//! spans); anything else (an unfinished head, other bytes, a limit
//! reached, a framing header refused) it leaves to the full parser, which
//! answers it. The tests and the fuzz target hold the two to that.
//!
//! Why: httparse, then the checks it does not make (bare LFs, the target's
//! bytes, the method, the limits), went over each head several times; on
//! 16 pipelined requests (`DEPTH=16 bash benches/scripts/callgrind.sh 2000`)
//! this path saved about 490 of the server's instructions per request.

use super::framing::FramingHeaders;
use super::{Head, HeaderSpan, Limits, MAX_HEADERS_CAP, line_limit};
use crate::proto::{FIELD_TEXT, VCHAR, Version, skip, skip_host, skip_name, skip_port};

/// The head at the start of `buf`, when it is complete and of the common
/// kind; `None` leaves it to the full parser. `spans` is cleared and
/// filled as the full parser fills it (left in any state on `None`).
#[inline(always)]
pub(super) fn head(buf: &[u8], limits: &Limits, spans: &mut Vec<HeaderSpan>) -> Option<Head> {
    let (method_len, target) = match buf.split_first_chunk::<4>()? {
        (b"GET " | b"PUT ", rest) => (3, rest),
        (b"POST" | b"HEAD", [b' ', rest @ ..]) => (4, rest),
        _ => return None,
    };
    // Origin-form only (`/…`): the others are the full parser's to judge.
    if target.first() != Some(&b'/') {
        return None;
    }
    // The rest of the line is read from `target`, the bytes after the
    // method and its space, which spares a bounds check or two.
    let target_len = skip(target, 1, VCHAR)?;
    let line_end = target.get(target_len..)?.first_chunk::<11>()?;
    if line_end[..8] != *b" HTTP/1." || line_end[9..] != *b"\r\n" {
        return None;
    }
    let version = match line_end[8] {
        b'1' => Version::Http11,
        b'0' => Version::Http10,
        _ => return None,
    };
    let target_start = method_len + 1;
    // The request line without its LF; no empty lines before it.
    let line_len = target_start + target_len + 10;
    // Within the line's limit then too: that is the target's and 64 bytes,
    // and the rest of this line is 15 at most.
    if target_len > limits.max_uri_bytes {
        return None;
    }
    debug_assert!(line_len <= line_limit(limits));
    let mut at = line_len + 1;
    let mut framing = FramingHeaders::default();
    spans.clear();
    let mut host_lines = 0;
    loop {
        if *buf.get(at)? == b'\r' {
            if *buf.get(at + 1)? != b'\n' {
                return None;
            }
            at += 2;
            break;
        }
        // The configured count is checked at the end; this bound, a
        // constant, keeps `spans` from growing past what any server takes.
        if spans.len() == MAX_HEADERS_CAP {
            return None;
        }
        // `Host: ` and a value of the usual form, the field line nearly
        // every request has, is read by itself: its name told by one word,
        // its value checked as it is read (in one pass over it, not two).
        // Any other line, `Host` with other spacing or value among them,
        // goes the general way.
        if let Some(end) = host_line(buf, at) {
            // Counted apart from `framing`, in a register: more than one
            // `Host` in all is refused at the end.
            host_lines += 1;
            spans.push(HeaderSpan { name: (at as u32, 4), value: ((at + 6) as u32, (end - at - 6) as u32) });
            at = end + 2;
            continue;
        }
        let name_start = at;
        at = skip_name(buf, at)?;
        if at == name_start || buf[at] != b':' {
            return None;
        }
        let name = &buf[name_start..at];
        at += 1;
        // Most often one space: taken before the loop, which kept five
        // counters when it took them all.
        if *buf.get(at)? == b' ' {
            at += 1;
        }
        while matches!(*buf.get(at)?, b' ' | b'\t') {
            at += 1;
        }
        // The value ends at its last visible byte; an empty one sits
        // where the line's CR is.
        let value_start = at;
        at = skip(buf, at, FIELD_TEXT)?;
        let mut value = &buf[value_start..at];
        // Its leading whitespace skipped above, so it starts where it did.
        while let [rest @ .., b' ' | b'\t'] = value {
            value = rest;
        }
        framing.add(name, value, version).ok()?;
        if buf[at] != b'\r' || *buf.get(at + 1)? != b'\n' {
            return None;
        }
        at += 2;
        spans.push(HeaderSpan {
            name: (name_start as u32, name.len() as u32),
            value: (value_start as u32, value.len() as u32),
        });
    }
    let len = at;
    let hosts = framing.hosts + host_lines;
    if len > limits.max_head_bytes
        || spans.len() > limits.max_headers.max(1)
        || hosts > 1
        || (version == Version::Http11 && hosts == 0)
    {
        return None;
    }
    let body = framing.body_kind(limits).ok()?;
    Some(Head {
        len,
        method: (0, method_len as u32),
        target: (target_start as u32, target_len as u32),
        version,
        body,
        connection: framing.connection,
        upgrade: framing.upgrade,
        expect_continue: framing.expect_continue && version == Version::Http11,
    })
}

/// Where the CR ending a field line at `from` is, when it is `Host: `
/// (the name in either case) and a value of the form
/// [`super::framing::check_host`] takes at once (a registered name or IPv4
/// address, then perhaps a colon and digits), then CRLF. `None` leaves the
/// line to be read and checked the general way (so does a port of eight
/// digits or more, or one too near the end of the buffer for a word to be
/// read from it).
#[inline(always)]
fn host_line(buf: &[u8], from: usize) -> Option<usize> {
    // Read from the line on, as the request line is: fewer bounds checks.
    let line = buf.get(from..)?;
    if !is_host_colon_space(*line.first_chunk::<8>()?) {
        return None;
    }
    let mut end = skip_host(line, 6)?;
    if line[end] == b':' {
        end = skip_port(line, end + 1)?;
    }
    (line[end] == b'\r' && *line.get(end + 1)? == b'\n').then_some(from + end)
}

/// Whether `word` starts with `Host: `, its letters in either case. Exact:
/// with bit 5 set, only `h` and `H` become `h` (and so on), and the colon
/// and the space are compared as they are.
#[inline(always)]
fn is_host_colon_space(word: [u8; 8]) -> bool {
    const CASE: u64 = u64::from_le_bytes([0x20, 0x20, 0x20, 0x20, 0, 0, 0, 0]);
    const MASK: u64 = u64::from_le_bytes([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0]);
    const HOST: u64 = u64::from_le_bytes(*b"host: \0\0");
    (u64::from_le_bytes(word) | CASE) & MASK == HOST
}

#[cfg(test)]
mod tests {
    use super::is_host_colon_space;

    /// Exact in every lane: each byte value at each place of words that
    /// are `Host: ` in either case, and words that are not.
    #[test]
    fn is_host_colon_space_is_eq_ignore_ascii_case() {
        for base in [b"Host: ab", b"hOsT: \r\n", b"HOST:  x", b"host:\r\n\r"] {
            for at in 0..8 {
                for byte in 0..=255 {
                    let mut word = *base;
                    word[at] = byte;
                    let expected = word[..6].eq_ignore_ascii_case(b"host: ");
                    assert_eq!(is_host_colon_space(word), expected, "{word:02x?}");
                }
            }
        }
    }
}
