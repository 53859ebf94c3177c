//! The headers that decide a request's framing and routing, gathered as
//! they are parsed: `Content-Length` and `Transfer-Encoding` (RFC 9112 §6),
//! `Host` (RFC 9110 §7.2), `Connection` (RFC 9110 §7.6.1), `Upgrade` and
//! `Expect` (RFC 9110 §10.1.1).

use super::{ConnectionOption, Limits, ParseError};
use crate::proto::{BodyKind, DIGIT, HOST_TEXT, Version, is_name, is_of, is_token, parse_decimal, skip, tokens};

/// The framing-relevant headers seen so far.
#[derive(Default)]
pub(super) struct FramingHeaders {
    content_length: Option<u64>,
    transfer_encoding: Option<Codings>,
    pub(super) hosts: u32,
    pub(super) connection: ConnectionOption,
    pub(super) upgrade: bool,
    pub(super) expect_continue: bool,
}

/// The transfer codings listed so far, in order (RFC 9112 §6.1).
#[derive(Default, Clone, Copy)]
struct Codings {
    /// The last coding listed is `chunked`.
    final_chunked: bool,
    /// `chunked` was listed more than once.
    chunked_twice: bool,
    chunked_seen: bool,
    /// A coding that is not registered (RFC 9110 §18.6) was listed.
    unknown: bool,
}

impl FramingHeaders {
    /// Takes a field line into account. Inlined into the parsers' loops,
    /// and most names are told apart by their length alone: as a call, the
    /// count of `Host` fields was read back from memory just written (2%
    /// of the server's CPU on pipelined requests with one field each).
    #[inline(always)]
    pub(super) fn add(&mut self, name: &[u8], value: &[u8], version: Version) -> Result<(), ParseError> {
        match name.len() {
            // More than one `Host` line is a 400 in any version (RFC 9110
            // §7.2), as is an invalid value.
            4 if is_name(name, b"host") => {
                self.count_host()?;
                check_host(value)
            }
            6 if is_name(name, b"expect") => self.add_expect(value),
            10 if is_name(name, b"connection") => {
                self.add_connection(value);
                Ok(())
            }
            14 if is_name(name, b"content-length") => self.add_content_length(value),
            // RFC 9112 §6.1: TE in a 1.0 message means the framing is faulty.
            17 if is_name(name, b"transfer-encoding") => match version {
                Version::Http10 => Err(ParseError::Malformed("Transfer-Encoding in HTTP/1.0")),
                Version::Http11 => self.add_transfer_encoding(value),
            },
            _ => Ok(()),
        }
    }

    /// A `Host` line whose value is checked (by [`check_host`], or as the
    /// fast path reads it).
    #[inline(always)]
    pub(super) fn count_host(&mut self) -> Result<(), ParseError> {
        self.hosts += 1;
        if self.hosts > 1 {
            return Err(ParseError::Malformed("more than one Host"));
        }
        Ok(())
    }

    /// RFC 9110 §8.6: `Content-Length = 1*DIGIT`; several fields must agree.
    #[inline(never)]
    fn add_content_length(&mut self, value: &[u8]) -> Result<(), ParseError> {
        let n = parse_decimal(value).ok_or(ParseError::Malformed("invalid Content-Length"))?;
        match self.content_length {
            Some(prev) if prev != n => Err(ParseError::Malformed("conflicting Content-Length")),
            _ => {
                self.content_length = Some(n);
                Ok(())
            }
        }
    }

    /// RFC 9112 §6.1: a list of codings, possibly over several fields.
    #[inline(never)]
    fn add_transfer_encoding(&mut self, value: &[u8]) -> Result<(), ParseError> {
        let codings = self.transfer_encoding.get_or_insert_with(Codings::default);
        let mut listed = false;
        for coding in tokens(value) {
            let chunked = coding.eq_ignore_ascii_case(b"chunked");
            if !chunked && !is_token(coding) {
                return Err(ParseError::Malformed("invalid transfer coding"));
            }
            codings.chunked_twice |= chunked && codings.chunked_seen;
            codings.chunked_seen |= chunked;
            codings.final_chunked = chunked;
            codings.unknown |= !chunked && !is_known_coding(coding);
            listed = true;
        }
        if !listed {
            return Err(ParseError::Malformed("empty Transfer-Encoding"));
        }
        Ok(())
    }

    /// The usual value, a single `keep-alive` or `close`, is told by a word
    /// compare; a list is split.
    #[inline(always)]
    fn add_connection(&mut self, value: &[u8]) {
        if !self.add_connection_option(value) {
            self.add_connection_list(value);
        }
    }

    #[inline(never)]
    fn add_connection_list(&mut self, value: &[u8]) {
        for option in tokens(value) {
            self.add_connection_option(option);
        }
    }

    /// Takes in `option` when it is one that matters here; whether it was.
    #[inline(always)]
    fn add_connection_option(&mut self, option: &[u8]) -> bool {
        if is_name(option, b"close") {
            self.connection = ConnectionOption::Close;
        } else if is_name(option, b"keep-alive") {
            if self.connection == ConnectionOption::Default {
                self.connection = ConnectionOption::KeepAlive;
            }
        } else if is_name(option, b"upgrade") {
            self.upgrade = true;
        } else {
            return false;
        }
        true
    }

    /// RFC 9110 §10.1.1: `100-continue` is the only expectation defined; a
    /// server that does not support an expectation answers 417.
    #[inline(never)]
    fn add_expect(&mut self, value: &[u8]) -> Result<(), ParseError> {
        for expectation in tokens(value) {
            if expectation.eq_ignore_ascii_case(b"100-continue") {
                self.expect_continue = true;
            } else {
                return Err(ParseError::Expectation);
            }
        }
        Ok(())
    }

    /// RFC 9112 §6.3, in order: Transfer-Encoding with Content-Length is an
    /// error here (a server MAY reject it, and must close after it anyway);
    /// a Transfer-Encoding whose final coding is not `chunked` MUST get 400;
    /// a coding nobody registered gets 501 (§6.1); a registered one before
    /// `chunked` (`gzip`, `deflate`, `compress`) is left for the handler
    /// to decode: the body reader removes only `chunked`. Then
    /// Content-Length; else no body.
    pub(super) fn body_kind(&self, limits: &Limits) -> Result<BodyKind, ParseError> {
        match (self.transfer_encoding, self.content_length) {
            (None, None) => Ok(BodyKind::Empty),
            (None, Some(n)) if n > limits.max_body_bytes => Err(ParseError::BodyTooLarge),
            (None, Some(0)) => Ok(BodyKind::Empty),
            (None, Some(n)) => Ok(BodyKind::Length(n)),
            (Some(_), Some(_)) => Err(ParseError::Malformed("both Transfer-Encoding and Content-Length")),
            (Some(c), None) if !c.final_chunked || c.chunked_twice => {
                Err(ParseError::Malformed("chunked is not the final transfer coding"))
            }
            (Some(c), None) if c.unknown => Err(ParseError::UnsupportedCoding),
            (Some(_), None) => Ok(BodyKind::Chunked),
        }
    }
}

/// The registered transfer codings other than `chunked` (RFC 9110 §18.6,
/// RFC 9112 §7.2), which the handler sees in `Transfer-Encoding` and decodes.
fn is_known_coding(coding: &[u8]) -> bool {
    ["gzip", "x-gzip", "deflate", "compress", "x-compress"].iter().any(|k| coding.eq_ignore_ascii_case(k.as_bytes()))
}

/// `Host = uri-host [ ":" port ]` (RFC 9110 §7.2, RFC 3986 §3.2.2): a
/// registered name or IPv4 address, or an IP literal in brackets, then
/// digits after a colon. An invalid value is a 400, as the RFC requires: a
/// name that means one host here and another to a proxy or a cache is how
/// requests reach the wrong virtual host. Stricter than the grammar in one
/// way: a comma (two values folded into one line) is refused.
#[inline(always)]
pub(super) fn check_host(value: &[u8]) -> Result<(), ParseError> {
    match skip(value, 0, HOST_TEXT) {
        None => Ok(()),
        // `name:port`, the usual other form.
        Some(i) if value[i] == b':' && skip(value, i + 1, DIGIT).is_none() => Ok(()),
        Some(_) if host_rare_forms(value) => Ok(()),
        Some(_) => Err(ParseError::Malformed("invalid Host")),
    }
}

/// Percent-encoded names and IP literals: `check_host` for what its fast
/// cases leave.
#[cold]
fn host_rare_forms(value: &[u8]) -> bool {
    let (host, port) = if let Some(literal) = value.strip_prefix(b"[") {
        let Some(close) = literal.iter().position(|&b| b == b']') else {
            return false;
        };
        if !is_ip_literal(&literal[..close]) {
            return false;
        }
        match &literal[close + 1..] {
            [] => return true,
            [b':', port @ ..] => (&[][..], port),
            _ => return false,
        }
    } else {
        match value.iter().rposition(|&b| b == b':') {
            Some(colon) => (&value[..colon], &value[colon + 1..]),
            None => (value, &[][..]),
        }
    };
    is_reg_name(host, false) && port.iter().all(u8::is_ascii_digit)
}

/// What goes between the brackets of an IP literal (RFC 3986 §3.2.2):
/// IPvFuture (`v`, hex digits, `.`, then unreserved, sub-delims and
/// colons), or IPv6 (hex digits, colons, dots: not a name), which may end in
/// a zone id after `%` (RFC 6874: `%25eth0`, or as some clients send it,
/// `%eth0`).
fn is_ip_literal(inside: &[u8]) -> bool {
    match inside {
        [b'v' | b'V', rest @ ..] => {
            let Some(dot) = rest.iter().position(|&b| b == b'.') else {
                return false;
            };
            let (version, after) = (&rest[..dot], &rest[dot + 1..]);
            !version.is_empty()
                && version.iter().all(u8::is_ascii_hexdigit)
                && !after.is_empty()
                && is_reg_name(after, true)
        }
        _ => {
            let (address, zone) = match inside.iter().position(|&b| b == b'%') {
                Some(at) => (&inside[..at], Some(&inside[at + 1..])),
                None => (inside, None),
            };
            address.contains(&b':')
                && address.iter().all(|&b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
                && zone.is_none_or(|zone| !zone.is_empty() && zone.iter().all(|&b| is_host_byte(b) || b == b'%'))
        }
    }
}

/// `userinfo = *( unreserved / pct-encoded / sub-delims / ":" )` (RFC
/// 3986 §3.2.1), the part of an absolute-form target's authority before
/// its `@`; empty when there is none.
pub(super) fn is_userinfo(userinfo: &[u8]) -> bool {
    // A comma is a sub-delim too: refused in a name only for `Host`'s sake.
    userinfo.split(|&b| b == b',').all(|part| is_reg_name(part, true))
}

/// `*( unreserved / pct-encoded / sub-delims )` (a comma aside), and
/// colons when `colons`.
fn is_reg_name(mut name: &[u8], colons: bool) -> bool {
    while let [b, rest @ ..] = name {
        name = match (b, rest) {
            (b'%', [h, l, rest @ ..]) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => rest,
            (b':', _) if colons => rest,
            (&b, _) if b != b'%' && is_host_byte(b) => rest,
            _ => return false,
        };
    }
    true
}

fn is_host_byte(b: u8) -> bool {
    is_of(b, HOST_TEXT)
}
