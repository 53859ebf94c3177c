//! Responses on the wire: the framing a response gets (RFC 9112 §6.3), its
//! status line and headers, and the answers the server writes on its own
//! behalf — every `4xx`/`5xx` no handler chose (a refused request, a
//! timeout, an overload `503`, a handler's invalid response) — in one place.

use std::borrow::Cow;
use std::time::Duration;

use crate::date::DATE_LEN;
use crate::proto::{ResponseFraming, Version};
pub(crate) use crate::response::error_response;
use crate::response::{Payload, Response};
use crate::status::{forbids_body, reason};

/// Appends the whole answer with `status` and `Connection: close`: its
/// reason phrase as a short text body, none for a `HEAD` request.
pub(crate) fn encode_error(status: u16, is_head: bool, date: &[u8; DATE_LEN], out: &mut Vec<u8>) {
    encode_closing(&error_response(status), is_head, date, out);
}

/// Appends `503 Service Unavailable` with `Retry-After` in whole seconds (at
/// least one) and `Connection: close`: the answer to a client accepted while
/// the server is saturated.
pub(crate) fn encode_overloaded(retry_after: Duration, date: &[u8; DATE_LEN], out: &mut Vec<u8>) {
    encode_closing(&overloaded_response(retry_after), false, date, out);
}

/// `503 Service Unavailable` with `Retry-After` in whole seconds (at least
/// one) and `Connection: close`: the answer when the server has no room
/// for what was asked now.
pub(crate) fn overloaded_response(retry_after: Duration) -> Response {
    let mut resp = error_response(503);
    resp.set_header("Retry-After", retry_after.as_secs().max(1).to_string());
    resp
}

/// Chooses the framing of `resp` for a request of `version` (RFC 9112 §6.3).
/// `Err` when the handler's headers contradict the body.
///
/// The most common answer, a `200` with its body in memory and no length
/// of the handler's, to a request other than `HEAD`, is framed here by its
/// length: through every rule of [`plan_any`], as a call, it cost some 50
/// instructions more per request.
#[inline(always)]
pub(crate) fn plan(resp: &Response, version: Version, is_head: bool) -> Result<ResponseFraming, &'static str> {
    if resp.status == 200
        && !is_head
        && resp.invalid.is_none()
        && resp.declared_length.is_none()
        && resp.upgrade.is_none()
    {
        if let Some(body) = resp.body.in_memory() {
            return Ok(ResponseFraming::Length(body.len() as u64));
        }
    }
    plan_any(resp, version, is_head)
}

/// [`plan`] for any response.
#[inline(never)]
fn plan_any(resp: &Response, version: Version, is_head: bool) -> Result<ResponseFraming, &'static str> {
    if let Some(why) = resp.invalid {
        return Err(why);
    }
    if (resp.status == 101) != resp.switches() {
        return Err("101 needs Response::upgrade, and an upgrade needs 101");
    }
    if resp.status < 200 && resp.status != 101 {
        // An interim answer is not an answer: the client would take the
        // next final response for this request's.
        return Err("a 1xx status other than 101 is not a final response");
    }
    let known = match &resp.body {
        Payload::Static(_) | Payload::Inline(_) | Payload::Owned(_) | Payload::Shared(_) => {
            resp.body.in_memory().map(|b| b.len() as u64)
        }
        Payload::Reader { len, .. } => *len,
        Payload::Events(..) if resp.declared_length.is_some() && !is_head => {
            return Err("an event stream has no length to declare");
        }
        Payload::Writer(_) | Payload::Events(..) => None,
        Payload::File { len, .. } => Some(*len),
    };
    let len = match (known, resp.declared_length) {
        // A HEAD answer or a `304` may announce the length of the `200`
        // it stands for, with no body of its own (RFC 9110 §8.6).
        (Some(k), Some(d)) if k != d && !((is_head || resp.status == 304) && k == 0) => {
            return Err("Content-Length contradicts the body");
        }
        (k, d) => d.or(k),
    };
    Ok(match (resp.status, len) {
        (code, _) if code < 200 || code == 204 => ResponseFraming::None { announce: None },
        (304, len) => ResponseFraming::None { announce: resp.declared_length.or(len.filter(|&n| n > 0)) },
        // No content in a 205, and its zero length said (RFC 9110 §15.3.6).
        (205, _) => ResponseFraming::None { announce: Some(0) },
        (_, len) if is_head => ResponseFraming::None { announce: len },
        (_, Some(n)) => ResponseFraming::Length(n),
        (_, None) if version == Version::Http11 => ResponseFraming::Chunked,
        (_, None) => ResponseFraming::CloseDelimited,
    })
}

/// Appends a whole answer the crate makes itself ([`error_response`], with
/// any extra headers): head, `Connection: close` and its short body (none
/// for a HEAD request).
pub(crate) fn encode_closing(resp: &Response, is_head: bool, date: &[u8; DATE_LEN], out: &mut Vec<u8>) {
    let framing = plan(resp, Version::Http11, is_head).unwrap_or(ResponseFraming::None { announce: None });
    encode_in_memory(resp, framing, false, date, out);
}

/// Appends the head of `resp` as the answer to an HTTP/1.1 request and, when
/// `framing` sends one, its body if that is in memory (a reader, stream or
/// file body is the caller's to send).
pub(crate) fn encode_in_memory(
    resp: &Response,
    framing: ResponseFraming,
    keep_alive: bool,
    date: &[u8; DATE_LEN],
    out: &mut Vec<u8>,
) {
    encode_head(resp, framing, keep_alive, Version::Http11, date, None, out);
    if let ResponseFraming::Length(_) = framing {
        match &resp.body {
            Payload::Static(_) | Payload::Inline(_) | Payload::Owned(_) | Payload::Shared(_) => {
                out.extend_from_slice(resp.body.in_memory().unwrap_or_default());
            }
            _ => {}
        }
    }
}

/// Appends the status line and headers of `resp` to `out`. With `kept`, a
/// start of the common kind is appended from there ([`HeadStart`]).
#[inline(always)]
pub(crate) fn encode_head(
    resp: &Response,
    framing: ResponseFraming,
    keep_alive: bool,
    version: Version,
    date: &[u8; DATE_LEN],
    kept: Option<&mut HeadStart>,
    out: &mut Vec<u8>,
) {
    // Copies of a length known here are a few moves, a copy of unknown
    // length is a call to memcpy; each `extend_from_slice` checks the room
    // and stores the length. So the common lines are put together on the
    // stack and appended whole.
    let mut typed = false;
    if resp.status == 200 && !resp.has_date {
        typed = match (kept, &resp.content_type) {
            (Some(kept), Some(Cow::Borrowed(ct))) => kept.push(ct, date, out),
            _ => false,
        };
        if !typed {
            out.extend_from_slice(&ok_and_date(date));
        }
    } else {
        if resp.status == 200 {
            out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        } else {
            out.extend_from_slice(b"HTTP/1.1 ");
            push_u64(out, u64::from(resp.status));
            out.push(b' ');
            out.extend_from_slice(reason(resp.status).as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if !resp.has_date {
            out.extend_from_slice(b"Date: ");
            out.extend_from_slice(date);
            out.extend_from_slice(b"\r\n");
        }
    }
    if let Some(ct) = resp.content_type.as_ref().filter(|_| !typed) {
        if !forbids_body(resp.status) {
            out.extend_from_slice(b"Content-Type: ");
            out.extend_from_slice(ct.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    for (name, value) in &resp.headers {
        push_header(out, name.as_bytes(), value.as_bytes());
    }
    // A keep-alive HTTP/1.1 answer has no `Connection` line: the blank
    // line that ends the head then comes with the length.
    let no_connection_line = keep_alive && version == Version::Http11 && !resp.switches();
    match framing {
        ResponseFraming::Length(n) | ResponseFraming::None { announce: Some(n) } => {
            push_content_length(out, n, no_connection_line);
            if no_connection_line {
                return;
            }
        }
        ResponseFraming::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        ResponseFraming::None { announce: None } | ResponseFraming::CloseDelimited => {}
    }
    match (keep_alive, version) {
        _ if resp.switches() => out.extend_from_slice(b"Connection: upgrade\r\n"),
        (false, _) => out.extend_from_slice(b"Connection: close\r\n"),
        (true, Version::Http10) => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        (true, Version::Http11) => {}
    }
    out.extend_from_slice(b"\r\n");
}

/// The start of a worker's last answer of the common kind: `200 OK`, the
/// `Date` line and a `Content-Type` line of a `&'static str` type, kept
/// together to be appended again as one block of known size while the
/// second and the type stay the same. Most answers of a server start so;
/// put together each time, the three lines cost four appends and a call
/// to memcpy for the type (about 40 instructions per answer more, under
/// callgrind).
#[derive(Debug)]
pub(crate) struct HeadStart {
    /// The address and length of the type the block was made with (a
    /// `&'static str` never changes, so the same address and length is the
    /// same type), and the date in it.
    ct: (usize, usize),
    date: [u8; DATE_LEN],
    len: usize,
    block: [u8; HEAD_START_BYTES],
}

/// Room for the three lines with a type of up to 26 bytes (`text/plain;
/// charset=utf-8` and `application/json` fit).
const HEAD_START_BYTES: usize = 96;

impl HeadStart {
    pub(crate) fn new() -> HeadStart {
        HeadStart { ct: (0, 0), date: [0; DATE_LEN], len: 0, block: [0; HEAD_START_BYTES] }
    }

    /// Appends the three lines for `ct` and `date`; false, with nothing
    /// appended, when they do not fit in the block.
    #[inline(always)]
    fn push(&mut self, ct: &'static str, date: &[u8; DATE_LEN], out: &mut Vec<u8>) -> bool {
        let same = (ct.as_ptr() as usize, ct.len()) == self.ct && *date == self.date;
        if !same && !self.make(ct, date) {
            return false;
        }
        // The whole block (a few moves), then cut to the lines.
        let start = out.len();
        out.extend_from_slice(&self.block);
        out.truncate(start + self.len);
        true
    }

    #[cold]
    #[inline(never)]
    fn make(&mut self, ct: &'static str, date: &[u8; DATE_LEN]) -> bool {
        const NAME: &[u8] = b"Content-Type: ";
        let len = OK_AND_DATE.len() + NAME.len() + ct.len() + 2;
        if len > HEAD_START_BYTES {
            return false;
        }
        let mut at = OK_AND_DATE.len();
        self.block[..at].copy_from_slice(&ok_and_date(date));
        for part in [NAME, ct.as_bytes(), b"\r\n"] {
            self.block[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        (self.ct, self.date, self.len) = ((ct.as_ptr() as usize, ct.len()), *date, len);
        true
    }
}

/// Inlined: the name and the separators are then copies of known length.
#[inline(always)]
fn push_header(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// `HTTP/1.1 200 OK` and the `Date` line, the start of most answers.
#[inline(always)]
fn ok_and_date(date: &[u8; DATE_LEN]) -> [u8; OK_AND_DATE.len()] {
    let mut lines = *OK_AND_DATE;
    lines[DATE_AT..DATE_AT + DATE_LEN].copy_from_slice(date);
    lines
}

const OK_AND_DATE: &[u8; 54] = b"HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n";
const DATE_AT: usize = 23;

/// Decimal digits of a `u64`, at most.
const MAX_DIGITS: usize = 20;

/// Writes `n` in decimal at the start of `to`; returns how many digits.
/// (Counted by comparisons: `ilog10` took some 20 instructions.)
#[inline(always)]
fn decimal(mut n: u64, to: &mut [u8; MAX_DIGITS]) -> usize {
    let mut len = 1;
    let mut rest = n / 10;
    while rest > 0 {
        len += 1;
        rest /= 10;
    }
    for at in (0..len).rev() {
        to[at] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    len
}

/// Appends `Content-Length: n` and its CRLF, and the CRLF that ends the
/// head when `last`: put together in place, appended as a block of known
/// size and cut to what was written.
#[inline(always)]
fn push_content_length(out: &mut Vec<u8>, n: u64, last: bool) {
    const NAME: &[u8] = b"Content-Length: ";
    let mut line = [0u8; NAME.len() + MAX_DIGITS + 4];
    line[..NAME.len()].copy_from_slice(NAME);
    let digits: &mut [u8; MAX_DIGITS] = (&mut line[NAME.len()..NAME.len() + MAX_DIGITS]).try_into().unwrap();
    let end = NAME.len() + decimal(n, digits);
    line[end..end + 4].copy_from_slice(b"\r\n\r\n");
    let start = out.len();
    out.extend_from_slice(&line);
    out.truncate(start + end + if last { 4 } else { 2 });
}

/// Appends `n` in decimal.
pub(crate) fn push_u64(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; MAX_DIGITS];
    let len = decimal(n, &mut digits);
    let start = out.len();
    out.extend_from_slice(&digits);
    out.truncate(start + len);
}

#[cfg(test)]
mod tests;
