//! Responses on the wire: the framing a response gets (RFC 9112 §6.3), its
//! status line and headers, and the answers the server writes on its own
//! behalf — every `4xx`/`5xx` no handler chose (a refused request, a
//! timeout, an overload `503`, a handler's invalid response) — in one place.

use std::time::Duration;

use crate::date::DATE_LEN;
use crate::proto::{ResponseFraming, Version};
use crate::response::{Payload, Response};
use crate::status::{forbids_body, reason};

/// The answer to a request the server refuses or could not hand to its
/// handler: the status, its reason phrase as a short text body, and
/// `Connection: close`.
pub(crate) fn error_response(code: u16) -> Response {
    Response::status(code).with_own_type("text/plain; charset=utf-8").with_body(reason(code)).with_close()
}

/// Appends the whole answer with `status` and `Connection: close`: its
/// reason phrase as a short text body, none for a `HEAD` request.
pub(crate) fn encode_error(status: u16, is_head: bool, date: &[u8; DATE_LEN], out: &mut Vec<u8>) {
    encode_closing(&error_response(status), is_head, date, out);
}

/// Appends `503 Service Unavailable` with `Retry-After` in whole seconds (at
/// least one) and `Connection: close`: the answer to a client accepted while
/// the server is saturated.
pub(crate) fn encode_overloaded(retry_after: Duration, date: &[u8; DATE_LEN], out: &mut Vec<u8>) {
    let mut resp = error_response(503);
    resp.set_header("Retry-After", retry_after.as_secs().max(1).to_string());
    encode_closing(&resp, false, date, out);
}

/// Chooses the framing of `resp` for a request of `version` (RFC 9112 §6.3).
/// `Err` when the handler's headers contradict the body.
#[inline]
pub(crate) fn plan(resp: &Response, version: Version, is_head: bool) -> Result<ResponseFraming, &'static str> {
    if let Some(why) = resp.invalid {
        return Err(why);
    }
    if (resp.status == 101) != resp.upgrade.is_some() {
        return Err("101 needs Response::upgrade, and an upgrade needs 101");
    }
    if resp.status < 200 && resp.status != 101 {
        // An interim answer is not an answer: the client would take the
        // next final response for this request's.
        return Err("a 1xx status other than 101 is not a final response");
    }
    let known = match &resp.body {
        Payload::Static(_) | Payload::Inline(_) | Payload::Owned(_) => resp.body.in_memory().map(|b| b.len() as u64),
        Payload::Reader { len, .. } => *len,
        Payload::Writer(_) => None,
        Payload::File { len, .. } => Some(*len),
    };
    let len = match (known, resp.declared_length) {
        (Some(k), Some(d)) if k != d && !(is_head && k == 0) => {
            return Err("Content-Length contradicts the body");
        }
        (k, d) => d.or(k),
    };
    Ok(match (resp.status, len) {
        (code, _) if code < 200 || code == 204 => ResponseFraming::None { announce: None },
        (304, len) => ResponseFraming::None { announce: resp.declared_length.or(len.filter(|&n| n > 0)) },
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
    encode_head(resp, framing, keep_alive, Version::Http11, date, out);
    if let ResponseFraming::Length(_) = framing {
        match &resp.body {
            Payload::Static(_) | Payload::Inline(_) | Payload::Owned(_) => {
                out.extend_from_slice(resp.body.in_memory().unwrap_or_default());
            }
            _ => {}
        }
    }
}

/// Appends the status line and headers of `resp` to `out`.
pub(crate) fn encode_head(
    resp: &Response,
    framing: ResponseFraming,
    keep_alive: bool,
    version: Version,
    date: &[u8; DATE_LEN],
    out: &mut Vec<u8>,
) {
    // Copies of a length known here are a few moves; `push_u64` and a
    // copy of unknown length (a call to memcpy) cost some 80 instructions.
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
    if let Some(ct) = &resp.content_type {
        if !forbids_body(resp.status) {
            push_header(out, b"Content-Type", ct.as_bytes());
        }
    }
    for (name, value) in &resp.headers {
        push_header(out, name.as_bytes(), value.as_bytes());
    }
    match framing {
        ResponseFraming::Length(n) | ResponseFraming::None { announce: Some(n) } => {
            out.extend_from_slice(b"Content-Length: ");
            push_u64(out, n);
            out.extend_from_slice(b"\r\n");
        }
        ResponseFraming::Chunked => push_header(out, b"Transfer-Encoding", b"chunked"),
        ResponseFraming::None { announce: None } | ResponseFraming::CloseDelimited => {}
    }
    match (keep_alive, version) {
        _ if resp.upgrade.is_some() => push_header(out, b"Connection", b"upgrade"),
        (false, _) => push_header(out, b"Connection", b"close"),
        (true, Version::Http10) => push_header(out, b"Connection", b"keep-alive"),
        (true, Version::Http11) => {}
    }
    out.extend_from_slice(b"\r\n");
}

/// Inlined: the name and the separators are then copies of known length.
#[inline(always)]
fn push_header(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal.
pub(crate) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests;
