//! The whole connection loop over an in-memory transport, with the input
//! split into separately arriving chunks.
//!
//! Input layout:
//!
//! ```text
//! byte 0      mode: bit 4 clear -> low 4 bits = number of cut points K,
//!                   followed by K little-endian u16 cut positions
//!                   (taken modulo the payload length + 1); bits 5..7,
//!                   when not 0, also run a client that takes only
//!                   16 << bits bytes of the answers at a time, which must
//!                   get the same bytes;
//!                   bit 4 set   -> no cut bytes; the payload is split into
//!                   pieces of (mode >> 5) + 1 bytes (1..=8: a trickle).
//! rest        the bytes the client sends.
//! ```
//!
//! A seed that starts with `\x00` is therefore the plain request bytes in one
//! chunk.
//!
//! Invariants checked on what the server wrote (all guaranteed by the
//! design, whatever the client sent):
//! - it is empty or starts with `HTTP/1.1 `;
//! - it parses, from start to end, as a sequence of well-formed responses:
//!   status line `HTTP/1.1 DDD reason\r\n` (DDD in 100..=599, reason of
//!   visible ASCII, SP and HTAB), header lines `token: value\r\n`, a blank
//!   line, then the body as framed by `Content-Length` or chunked; 1xx, 204
//!   and 304 have none. A response to `HEAD` announces a length but sends no
//!   body, and the output alone cannot say which requests were `HEAD`, so
//!   each response may also be taken as body-less: the output must be
//!   parseable along at least one such path;
//! - a response with `Connection: close` is the last one written;
//! - the same bytes sent in one piece get the same answers (a `100
//!   Continue` aside: it is sent only when the body has not come with the
//!   head), and so do they for a client that takes the answers slowly: how
//!   the bytes arrive and leave changes no verdict.
//!
//! Panics anywhere in the crate (the handler's `catch_unwind` included)
//! abort under libFuzzer, and a hang is caught by `-timeout`.
#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (chunks, payload) = split(mode, rest);
    let out = httpool::fuzz_entry::serve_chunks(&chunks);
    if chunks.len() > 1 {
        let whole = httpool::fuzz_entry::serve_chunks(&[payload]);
        assert!(
            without_continue(&whole) == without_continue(&out),
            "in one piece, other answers than in {} pieces",
            chunks.len()
        );
    }
    // Bits 5..7 of a cut-mode byte: a client that takes only 32..2048
    // bytes of the answers at a time. What it gets in the end is the same.
    if mode & 0x10 == 0 && mode >> 5 != 0 {
        let room = 16usize << (mode >> 5);
        let slow = httpool::fuzz_entry::serve_chunks_with_room(&chunks, Some(room));
        // `Date` may tick between the two runs.
        let (slow, whole) = (httpool::fuzz_entry::redact_dates(&slow), httpool::fuzz_entry::redact_dates(&out));
        assert!(slow == whole, "a client taking {room} bytes at a time got other bytes");
    }
    if let Err(why) = check_output(&out) {
        panic!(
            "invalid server output: {why}\n--- output ({} bytes) ---\n{}",
            out.len(),
            String::from_utf8_lossy(&out[..out.len().min(4096)])
        );
    }
});

/// `out` with dates redacted and `100 Continue` answers left out.
fn without_continue(out: &[u8]) -> Vec<u8> {
    const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";
    let out = httpool::fuzz_entry::redact_dates(out);
    let mut kept = Vec::with_capacity(out.len());
    let mut rest = &out[..];
    while let Some(at) = rest.windows(CONTINUE.len()).position(|w| w == CONTINUE) {
        kept.extend_from_slice(&rest[..at]);
        rest = &rest[at + CONTINUE.len()..];
    }
    kept.extend_from_slice(rest);
    kept
}

/// The pieces the client sends, and all of them in one.
fn split(mode: u8, rest: &[u8]) -> (Vec<&[u8]>, &[u8]) {
    if mode & 0x10 != 0 {
        let size = usize::from(mode >> 5) + 1;
        return (rest.chunks(size).collect(), rest);
    }
    let cuts = usize::from(mode & 0x0f);
    let (cut_bytes, payload) = rest.split_at((cuts * 2).min(rest.len()));
    let mut points: Vec<usize> = cut_bytes
        .chunks_exact(2)
        .map(|c| usize::from(u16::from_le_bytes([c[0], c[1]])) % (payload.len() + 1))
        .collect();
    points.sort_unstable();
    let mut chunks = Vec::with_capacity(points.len() + 1);
    let mut prev = 0;
    for p in points {
        chunks.push(&payload[prev..p]);
        prev = p;
    }
    chunks.push(&payload[prev..]);
    (chunks, payload)
}

/// One parsed response head.
struct Head {
    /// Bytes of the head including the blank line.
    len: usize,
    status: u16,
    content_length: Option<u64>,
    chunked: bool,
    close: bool,
}

fn check_output(out: &[u8]) -> Result<(), String> {
    if out.is_empty() {
        return Ok(());
    }
    if !out.starts_with(b"HTTP/1.1 ") {
        return Err("output does not start with `HTTP/1.1 `".into());
    }
    // Positions where a response may start, explored in order; the output is
    // valid when some path ends exactly at out.len().
    let mut todo = BTreeSet::from([0usize]);
    let mut seen = BTreeSet::new();
    let mut last_err = String::new();
    while let Some(pos) = todo.pop_first() {
        if pos == out.len() {
            return Ok(());
        }
        if !seen.insert(pos) {
            continue;
        }
        let head = match parse_head(&out[pos..]) {
            Ok(h) => h,
            Err(e) => {
                last_err = format!("at byte {pos}: {e}");
                continue;
            }
        };
        let body_start = pos + head.len;
        let mut next = Vec::new();
        if head.status < 200 || head.status == 204 || head.status == 304 {
            next.push(body_start);
        } else if head.chunked {
            match chunked_len(&out[body_start..]) {
                Ok(n) => next.push(body_start + n),
                Err(e) => last_err = format!("at byte {body_start}: chunked body: {e}"),
            }
            // A HEAD response: announced, not sent.
            next.push(body_start);
        } else {
            let n = head.content_length.unwrap_or(0);
            if let Some(end) = usize::try_from(n).ok().and_then(|n| body_start.checked_add(n)) {
                if end <= out.len() {
                    next.push(end);
                } else {
                    last_err = format!("at byte {pos}: Content-Length {n} runs past the output");
                }
            }
            next.push(body_start);
        }
        for end in next {
            if head.close && end != out.len() {
                last_err = format!("at byte {pos}: bytes follow a `Connection: close` response");
                continue;
            }
            todo.insert(end);
        }
    }
    Err(last_err)
}

fn parse_head(buf: &[u8]) -> Result<Head, String> {
    let line_end = find_crlf(buf).ok_or("status line without CRLF")?;
    let line = &buf[..line_end];
    let rest = line
        .strip_prefix(b"HTTP/1.1 ")
        .ok_or_else(|| format!("bad status line {:?}", String::from_utf8_lossy(line)))?;
    if rest.len() < 4
        || !rest[..3].iter().all(u8::is_ascii_digit)
        || !(b'1'..=b'5').contains(&rest[0])
        || rest[3] != b' '
        || !rest[4..].iter().all(|&b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        return Err(format!("bad status line {:?}", String::from_utf8_lossy(line)));
    }
    let status = u16::from(rest[0] - b'0') * 100 + u16::from(rest[1] - b'0') * 10 + u16::from(rest[2] - b'0');
    let mut head = Head { len: 0, status, content_length: None, chunked: false, close: false };
    let mut pos = line_end + 2;
    loop {
        let end = pos + find_crlf(&buf[pos..]).ok_or("header section without end")?;
        let line = &buf[pos..end];
        pos = end + 2;
        if line.is_empty() {
            head.len = pos;
            return Ok(head);
        }
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or_else(|| format!("header line without colon {:?}", String::from_utf8_lossy(line)))?;
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
            return Err(format!("bad header name {:?}", String::from_utf8_lossy(name)));
        }
        let value = value.strip_prefix(b" ").ok_or("header value not after `: `")?;
        if !value.iter().all(|&b| b == b'\t' || (0x20..0x7f).contains(&b) || b >= 0x80) {
            return Err(format!("bad header value {:?}", String::from_utf8_lossy(value)));
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            let n = std::str::from_utf8(value)
                .ok()
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| format!("bad Content-Length {:?}", String::from_utf8_lossy(value)))?;
            if head.content_length.replace(n).is_some() {
                return Err("two Content-Length headers".into());
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            head.chunked = value.eq_ignore_ascii_case(b"chunked");
        } else if name.eq_ignore_ascii_case(b"connection") {
            head.close |= value.split(|&b| b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
        }
    }
}

/// Length of a chunked body at the start of `buf`, trailers included.
fn chunked_len(buf: &[u8]) -> Result<usize, String> {
    let mut pos = 0;
    loop {
        let end = pos + find_crlf(&buf[pos..]).ok_or("chunk size line without CRLF")?;
        let line = &buf[pos..end];
        let digits = line.split(|&b| b == b';').next().unwrap_or(b"");
        let size = std::str::from_utf8(digits)
            .ok()
            .and_then(|d| usize::from_str_radix(d.trim(), 16).ok())
            .ok_or("bad chunk size")?;
        pos = end + 2;
        if size == 0 {
            break;
        }
        pos = pos.checked_add(size).filter(|&p| p + 2 <= buf.len()).ok_or("chunk past the output")?;
        if &buf[pos..pos + 2] != b"\r\n" {
            return Err("chunk data not followed by CRLF".into());
        }
        pos += 2;
    }
    loop {
        let end = pos + find_crlf(&buf[pos..]).ok_or("trailer line without CRLF")?;
        let blank = end == pos;
        pos = end + 2;
        if blank {
            return Ok(pos);
        }
    }
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}
