//! Request-head parsing and framing decisions. Pure: bytes in, a [`Head`] of
//! offsets out, no I/O and no clock.
//!
//! httparse does the tokenising (it rejects bad tokens, CTLs in values,
//! obs-fold and whitespace before the colon); this module adds what RFC 9112
//! asks of a server on top: message framing (§6), `Host` (RFC 9110 §7.2),
//! `Connection` (RFC 9110 §7.6.1) and `Expect` (RFC 9110 §10.1.1).

use std::mem::MaybeUninit;

use framing::{FramingHeaders, check_host, is_userinfo};

use crate::proto::{BodyKind, VCHAR, Version, is_scheme, is_token, skip, trim};

/// Work done on this thread, for tests that bound it.
#[cfg(test)]
pub(crate) mod work {
    use std::cell::Cell;

    thread_local! {
        /// Bytes handed to the head parser.
        pub(crate) static PARSED: Cell<usize> = const { Cell::new(0) };
        /// Bytes of unparsed input copied from one buffer to another.
        pub(crate) static COPIED: Cell<usize> = const { Cell::new(0) };
    }

    pub(crate) fn copied(n: usize) {
        COPIED.with(|c| c.set(c.get() + n));
    }
}

/// Upper bound on the header count a server may be configured with: the size
/// of the on-stack array httparse fills.
pub(crate) const MAX_HEADERS_CAP: usize = 256;

/// The limits that apply while parsing one head.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) max_head_bytes: usize,
    pub(crate) max_headers: usize,
    pub(crate) max_uri_bytes: usize,
    pub(crate) max_body_bytes: u64,
    /// Accept any method token, not only the known ones.
    pub(crate) any_method: bool,
    /// Read Icecast and RTSP request lines as HTTP/1.0 ones.
    pub(crate) legacy_protocols: bool,
}

/// Where a header's name and value sit in the head buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HeaderSpan {
    pub(crate) name: (u32, u32),
    pub(crate) value: (u32, u32),
}

/// What the request's `Connection` header asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ConnectionOption {
    /// No `close` or `keep-alive` token: the version's default applies.
    #[default]
    Default,
    Close,
    KeepAlive,
}

/// A parsed request head: offsets into the buffer it was parsed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    /// Bytes of the head including the blank line.
    pub(crate) len: usize,
    pub(crate) method: (u32, u32),
    pub(crate) target: (u32, u32),
    pub(crate) version: Version,
    pub(crate) body: BodyKind,
    pub(crate) connection: ConnectionOption,
    pub(crate) upgrade: bool,
    pub(crate) expect_continue: bool,
}

/// Why a head was refused; each maps to exactly one status code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// Syntax or framing the RFC says to reject: 400.
    Malformed(&'static str),
    /// Head larger than `max_head_bytes` or more than `max_headers`: 431.
    HeadTooLarge,
    /// Request target longer than `max_uri_bytes`: 414.
    UriTooLong,
    /// An HTTP version other than 1.0 or 1.1: 505.
    Version,
    /// A transfer coding other than `chunked`: 501.
    UnsupportedCoding,
    /// An `Expect` other than `100-continue`: 417.
    Expectation,
    /// A `Content-Length` above `max_body_bytes`: 413.
    BodyTooLarge,
    /// A method the server does not know (RFC 9110 §9.1): 501.
    UnknownMethod,
}

impl ParseError {
    /// The status code the client is answered with (then the server closes).
    pub(crate) fn status(self) -> u16 {
        match self {
            ParseError::Malformed(_) => 400,
            ParseError::HeadTooLarge => 431,
            ParseError::UriTooLong => 414,
            ParseError::Version => 505,
            ParseError::UnsupportedCoding => 501,
            ParseError::Expectation => 417,
            ParseError::BodyTooLarge => 413,
            ParseError::UnknownMethod => 501,
        }
    }
}

/// Parses the head at the start of `buf`.
///
/// Returns `Ok(None)` while the head is incomplete and still within limits,
/// `Ok(Some(head))` once it is complete and valid; header positions are
/// pushed to `spans` (cleared first; what it holds after any other
/// outcome means nothing).
///
/// The verdict on a head does not depend on how its bytes arrived: a head
/// is judged line by line in the order the lines come, each line once it
/// is whole (the request line's length once it passes the limit), the head
/// limit once it is crossed, and what can only be judged of a whole head
/// last. An unfinished head is judged so ([`partial`]); a whole or refused
/// one is answered with the first problem an unfinished prefix of it
/// would have been refused for, if any ([`earlier_problem`],
/// [`refused_by_httparse`]). So whether the head came whole, in pieces or a
/// byte at a time, the status is the same.
///
/// The common head is read in one pass ([`fast::head`]); any other goes
/// through httparse and the checks after it ([`full_head`]), which decide
/// the same of a common one.
#[inline(always)]
pub(crate) fn parse_head(buf: &[u8], limits: &Limits, spans: &mut Vec<HeaderSpan>) -> Result<Option<Head>, ParseError> {
    #[cfg(test)]
    work::PARSED.with(|n| n.set(n.get() + buf.len()));
    match fast::head(buf, limits, spans) {
        Some(head) => Ok(Some(head)),
        None => full_head(buf, limits, spans),
    }
}

/// Whether the fast path took `buf`; when it did, asserts that the full
/// parser accepts it too, with the same head and spans (the tests and the
/// fuzz target hold the two to that).
pub(crate) fn fast_path_agrees(buf: &[u8], limits: &Limits) -> bool {
    let mut fast_spans = Vec::new();
    let Some(head) = fast::head(buf, limits, &mut fast_spans) else {
        return false;
    };
    let mut spans = Vec::new();
    let shown = String::from_utf8_lossy(buf);
    assert_eq!(full_head(buf, limits, &mut spans), Ok(Some(head)), "the fast path took {shown:?} ({limits:?})");
    assert_eq!(fast_spans, spans, "the fast path's spans of {shown:?}");
    true
}

/// [`parse_head`] by httparse and the checks after it, for every head.
///
/// Never inlined: inside [`parse_head`] its 256 headers on the stack cost
/// every call a stack probe, and its registers crowded the fast path's
/// into memory.
#[inline(never)]
fn full_head(buf: &[u8], limits: &Limits, spans: &mut Vec<HeaderSpan>) -> Result<Option<Head>, ParseError> {
    let mut raw = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS_CAP];
    let raw = &mut raw[..limits.max_headers.clamp(1, MAX_HEADERS_CAP)];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(buf, raw) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return partial(buf, limits).map(|()| None),
        Err(e) => {
            if e == httparse::Error::Version && limits.legacy_protocols {
                if let Some(line) = legacy_request_line(buf) {
                    return parse_legacy_head(buf, line, limits, spans);
                }
            }
            return Err(refused_by_httparse(buf, e, limits, |prefix| request_refused(prefix, limits)));
        }
    };
    // httparse guarantees these are set on Complete.
    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(ParseError::Malformed("incomplete request line"));
    };
    let version = if minor == 1 { Version::Http11 } else { Version::Http10 };
    let line = RequestLine { method, target, version };
    complete_head(buf, len, line, req.headers, limits, spans)
        .map_err(|e| earlier_problem(buf, len, limits).unwrap_or(e))
}

/// The checks on a complete head, and the [`Head`] they yield.
fn complete_head(
    buf: &[u8],
    len: usize,
    line: RequestLine<'_>,
    headers: &[httparse::Header<'_>],
    limits: &Limits,
    spans: &mut Vec<HeaderSpan>,
) -> Result<Option<Head>, ParseError> {
    // httparse takes one space before the version, which is 8 bytes, and
    // then a CR or not.
    let version_end = span(buf, line.target.as_bytes()).0 as usize + line.target.len() + 9;
    let line_end = version_end + usize::from(buf.get(version_end) == Some(&b'\r'));
    check_sizes(buf, len, line_end, &line, limits)?;
    // RFC 9113 §3.4: `PRI` starts the HTTP/2 preface; it is never a request.
    check_method(line.method.as_bytes(), limits)?;
    finish_head(buf, len, line, headers, limits, spans)
}

/// The problem an unfinished prefix of the complete head `buf[..len]` would
/// have been refused for (the head without its last byte: any earlier
/// prefix refused is refused for the same problem).
#[cold]
#[inline(never)]
fn earlier_problem(buf: &[u8], len: usize, limits: &Limits) -> Option<ParseError> {
    partial(&buf[..len - 1], limits).err()
}

/// What a head httparse refused with `e` is answered with: the problem the
/// part of it before the refused byte has, if any, else `e`'s. `refuses`
/// tells whether httparse refuses a prefix (once it has refused a byte, it
/// refuses every longer prefix, so the byte is found by bisection).
#[cold]
#[inline(never)]
fn refused_by_httparse(buf: &[u8], e: httparse::Error, limits: &Limits, refuses: impl Fn(&[u8]) -> bool) -> ParseError {
    let (mut fine, mut refused) = (0, buf.len());
    while refused - fine > 1 {
        let mid = fine + (refused - fine) / 2;
        if refuses(&buf[..mid]) {
            refused = mid;
        } else {
            fine = mid;
        }
    }
    match partial(&buf[..fine], limits) {
        Err(earlier) => earlier,
        Ok(()) => map_httparse(e, buf),
    }
}

/// True when httparse refuses `prefix` as the start of a request head, and
/// it is not an unfinished line that may still become an Icecast or RTSP
/// one (read on, then, as [`parse_head`] does). Once a line can no longer
/// become one, no longer prefix can: refusal stays monotone.
fn request_refused(prefix: &[u8], limits: &Limits) -> bool {
    if limits.legacy_protocols && legacy_request_line(prefix).is_some() {
        return false;
    }
    let mut raw = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS_CAP];
    let raw = &mut raw[..limits.max_headers.clamp(1, MAX_HEADERS_CAP)];
    httparse::Request::new(&mut []).parse_with_uninit_headers(prefix, raw).is_err()
}

/// The parts of a request line that the rest of the head is checked with.
struct RequestLine<'b> {
    method: &'b str,
    target: &'b str,
    version: Version,
}

/// A complete head (empty lines before it not counted) over
/// `max_head_bytes` is a 431; a request line over the line limit
/// ([`partial`]), or a target over `max_uri_bytes`, a 414. `line_end`: the
/// offset of the request line's LF in `buf`.
fn check_sizes(
    buf: &[u8],
    len: usize,
    line_end: usize,
    line: &RequestLine<'_>,
    limits: &Limits,
) -> Result<(), ParseError> {
    // The request line starts with its method, after any empty lines.
    let lead = span(buf, line.method.as_bytes()).0 as usize;
    if len - lead > limits.max_head_bytes {
        return Err(ParseError::HeadTooLarge);
    }
    if line_end - lead > line_limit(limits) || line.target.len() > limits.max_uri_bytes {
        return Err(ParseError::UriTooLong);
    }
    Ok(())
}

/// The longest request line (without its LF) that is not a 414 for its
/// length alone: a target of `max_uri_bytes` and room for the rest.
fn line_limit(limits: &Limits) -> usize {
    limits.max_uri_bytes.saturating_add(64)
}

/// The checks on a complete head that httparse does not make, and the
/// [`Head`] they yield.
fn finish_head(
    buf: &[u8],
    len: usize,
    line: RequestLine<'_>,
    headers: &[httparse::Header<'_>],
    limits: &Limits,
    spans: &mut Vec<HeaderSpan>,
) -> Result<Option<Head>, ParseError> {
    let RequestLine { method, target, version } = line;
    // RFC 9112 §2.2 lets a recipient accept a bare LF as a line end; one
    // inside a CRLF head is how front and back ends are made to disagree
    // about where fields end, so none is accepted. Empty lines before the
    // request line are no part of the head: a bare LF there is skipped, as
    // it is while the head is unfinished. (The method starts the head.)
    let lead = span(buf, method.as_bytes()).0 as usize;
    if has_bare_lf(&buf[lead..len]) {
        return Err(ParseError::Malformed("bare LF in the head"));
    }
    // RFC 9112 §3.2: the target is URI syntax, visible ASCII only, in the
    // form its method takes.
    if skip(target.as_bytes(), 0, VCHAR).is_some() || !is_target_form_of(method, target.as_bytes()) {
        return Err(ParseError::Malformed("invalid request target"));
    }
    spans.clear();
    let mut framing = FramingHeaders::default();
    for h in headers {
        framing.add(h.name.as_bytes(), h.value, version)?;
        spans.push(HeaderSpan { name: span(buf, h.name.as_bytes()), value: span(buf, h.value) });
    }
    let body = framing.body_kind(limits)?;
    if version == Version::Http11 && framing.hosts == 0 {
        return Err(ParseError::Malformed("HTTP/1.1 request needs a Host"));
    }
    Ok(Some(Head {
        len,
        method: span(buf, method.as_bytes()),
        target: span(buf, target.as_bytes()),
        version,
        body,
        connection: framing.connection,
        upgrade: framing.upgrade,
        expect_continue: framing.expect_continue && version == Version::Http11,
    }))
}

/// The request line at the start of `buf` (after any empty lines) when it
/// names a protocol llhttp, and so Node, reads besides HTTP: Icecast's
/// `SOURCE <target> ICE/1.0`, or an RTSP/1.0 method (RFC 2326 §6.1, and
/// `GET`/`POST`, which AirPlay sends over RTSP) with `RTSP/1.0`. A line not
/// yet complete qualifies while it can still become one: then the method
/// and target are returned with an empty protocol.
fn legacy_request_line(buf: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let rest = trim_empty_lines(buf);
    let (line, complete) = match rest.iter().position(|&b| b == b'\n') {
        Some(end) => (rest[..end].strip_suffix(b"\r")?, true),
        None => (rest, false),
    };
    let mut parts = line.splitn(3, |&b| b == b' ');
    let (method, target, protocol) = (parts.next()?, parts.next()?, parts.next()?);
    if !is_token(method) || target.is_empty() || !target.iter().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    let wanted: &[u8] = match method {
        b"SOURCE" => b"ICE/1.0",
        b"OPTIONS" | b"DESCRIBE" | b"ANNOUNCE" | b"SETUP" | b"PLAY" | b"PAUSE" | b"TEARDOWN" | b"GET_PARAMETER"
        | b"SET_PARAMETER" | b"REDIRECT" | b"RECORD" | b"FLUSH" | b"GET" | b"POST" => b"RTSP/1.0",
        _ => return None,
    };
    match complete {
        true if protocol == wanted => Some((method, target, protocol)),
        false if wanted.starts_with(protocol) || protocol.strip_suffix(b"\r") == Some(wanted) => {
            Some((method, target, &[]))
        }
        _ => None,
    }
}

/// A head whose request line `legacy_request_line` found to be an
/// Icecast or RTSP one: its fields are parsed and checked as an
/// HTTP/1.0 request's, which is how it is then served.
#[cold]
fn parse_legacy_head(
    buf: &[u8],
    (method, target, protocol): (&[u8], &[u8], &[u8]),
    limits: &Limits,
    spans: &mut Vec<HeaderSpan>,
) -> Result<Option<Head>, ParseError> {
    if protocol.is_empty() {
        return partial(buf, limits).map(|()| None);
    }
    // The line ends with CRLF (checked above), right after the protocol.
    let fields_start = span(buf, protocol).0 as usize + protocol.len() + 2;
    let mut raw = [httparse::EMPTY_HEADER; MAX_HEADERS_CAP];
    let raw = &mut raw[..limits.max_headers.clamp(1, MAX_HEADERS_CAP)];
    let (fields_len, headers) = match httparse::parse_headers(&buf[fields_start..], raw) {
        Ok(httparse::Status::Complete(done)) => done,
        Ok(httparse::Status::Partial) => return partial(buf, limits).map(|()| None),
        Err(e) => {
            let refuses =
                |prefix: &[u8]| prefix.len() > fields_start && fields_refused(&prefix[fields_start..], limits);
            return Err(refused_by_httparse(buf, e, limits, refuses));
        }
    };
    // Both are ASCII: is_token and is_ascii_graphic held.
    let (Ok(method), Ok(target)) = (std::str::from_utf8(method), std::str::from_utf8(target)) else {
        return Err(ParseError::Malformed("invalid request line"));
    };
    let len = fields_start + fields_len;
    let line = RequestLine { method, target, version: Version::Http10 };
    // The line ends with CRLF (checked above).
    (check_sizes(buf, len, fields_start - 1, &line, limits)
        .and_then(|()| finish_head(buf, len, line, headers, limits, spans)))
    .map_err(|e| earlier_problem(buf, len, limits).unwrap_or(e))
}

/// True when httparse refuses `prefix` as the start of a field section.
fn fields_refused(prefix: &[u8], limits: &Limits) -> bool {
    let mut raw = [httparse::EMPTY_HEADER; MAX_HEADERS_CAP];
    httparse::parse_headers(prefix, &mut raw[..limits.max_headers.clamp(1, MAX_HEADERS_CAP)]).is_err()
}

fn has_bare_lf(head: &[u8]) -> bool {
    // Each byte with the one before it, 16 pairs at a time and without
    // stopping early, so that each chunk is a few vector compares (it runs
    // over every head). The last pairs are a chunk that overlaps the one
    // before: a fold over the whole head left a 40-byte head to scalar code
    // (103 instructions against 63 under callgrind).
    let after = head.get(1..).unwrap_or_default();
    let mut found = 0;
    let mut at = 0;
    while at + 16 <= after.len() {
        found |= bare_lfs(&head[at..at + 16], &after[at..at + 16]);
        at += 16;
    }
    if at < after.len() {
        found |= match after.len().checked_sub(16) {
            Some(last) => bare_lfs(&head[last..last + 16], &after[last..last + 16]),
            None => head.iter().zip(after).fold(0, |found, (&before, &b)| found | bare_lf(before, b)),
        };
    }
    head.first() == Some(&b'\n') || found != 0
}

/// 1 when `b` is an LF that `before` (the byte before it) is no CR for.
fn bare_lf(before: u8, b: u8) -> u8 {
    u8::from(b == b'\n') & u8::from(before != b'\r')
}

/// Nonzero when a byte of `after` is a bare LF, each byte of `before` being
/// the one before it; both are 16 bytes long.
#[inline(always)]
fn bare_lfs(before: &[u8], after: &[u8]) -> u8 {
    let (before, after): (&[u8; 16], &[u8; 16]) = (before.try_into().unwrap(), after.try_into().unwrap());
    let mut lanes = [0; 16];
    for k in 0..16 {
        lanes[k] = bare_lf(before[k], after[k]);
    }
    lanes.iter().fold(0, |found, &lane| found | lane)
}

/// `bytes` after the empty lines a client may send before a request line
/// (RFC 9112 §2.2): CRLF, or a bare LF, as the head parser takes them.
pub(crate) fn trim_empty_lines(mut bytes: &[u8]) -> &[u8] {
    loop {
        match bytes {
            [b'\r', b'\n', rest @ ..] | [b'\n', rest @ ..] => bytes = rest,
            _ => return bytes,
        }
    }
}

/// What [`downgrade_minor_version`] made of a request line httparse refused
/// for its version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Downgrade {
    /// `HTTP/1.2`..`HTTP/1.9` rewritten to `HTTP/1.1`: parse again.
    Rewritten,
    /// The line is not finished and may still end in such a version: read on.
    Unfinished,
    /// Not a version we serve.
    Refused,
    /// Major version 1 in a shape no version has (`HTTP/1.2 `, `HTTP/1.x`):
    /// a malformed request line, refused as an `HTTP/1.1` one is (400),
    /// not as a version not served (505 says the major version is not,
    /// RFC 9110 §15.6.6).
    Malformed,
}

/// RFC 9110 §2.5: a message with a higher minor version of HTTP/1 is
/// processed as the highest minor version we implement. httparse refuses
/// `HTTP/1.2`..`HTTP/1.9`, so such a request line (after any empty lines,
/// RFC 9112 §2.2) is rewritten in place to `HTTP/1.1` before parsing again.
#[cold]
#[inline(never)]
pub(crate) fn downgrade_minor_version(buf: &mut [u8]) -> Downgrade {
    let start = buf.len() - trim_empty_lines(buf).len();
    let buf = &mut buf[start..];
    let (line, complete) = match buf.iter().position(|&b| b == b'\n') {
        Some(end) => (&mut buf[..end], true),
        None => (buf, false),
    };
    // The version is the third field, all of it: `HTTP/1.x` with a CR
    // after it once the line is whole, and at most that CR when not.
    let Some(second_space) = line.iter().enumerate().filter(|&(_, &b)| b == b' ').nth(1).map(|(i, _)| i) else {
        return Downgrade::Refused;
    };
    match (&mut line[second_space + 1..], complete) {
        // A line ended by a bare LF too: parsed again, it is refused for
        // that (400), as an `HTTP/1.1` one is, not for a version served.
        (
            [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor @ b'2'..=b'9', b'\r']
            | [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor @ b'2'..=b'9'],
            true,
        ) => {
            *minor = b'1';
            Downgrade::Rewritten
        }
        // httparse refuses `HTTP/1.2` as soon as the minor digit is in.
        (
            [b'H', b'T', b'T', b'P', b'/', b'1', b'.', b'2'..=b'9']
            | [b'H', b'T', b'T', b'P', b'/', b'1', b'.', b'2'..=b'9', b'\r'],
            false,
        ) => Downgrade::Unfinished,
        ([b'H', b'T', b'T', b'P', b'/', b'1', rest @ ..], _) if !rest.first().is_some_and(u8::is_ascii_digit) => {
            Downgrade::Malformed
        }
        _ => Downgrade::Refused,
    }
}

/// Judges an unfinished head (one httparse has not refused): its lines
/// that are whole and within `max_head_bytes` ([`judge_lines`]), then the
/// head limit. Empty lines before it are no part of it and count for no
/// limit. Each problem found here is found again, the same, in any longer
/// prefix of the head: so the verdict does not depend on when it is asked.
fn partial(buf: &[u8], limits: &Limits) -> Result<(), ParseError> {
    let head = trim_empty_lines(buf);
    judge_lines(&head[..head.len().min(limits.max_head_bytes)], limits)?;
    if head.len() >= limits.max_head_bytes {
        return Err(ParseError::HeadTooLarge);
    }
    Ok(())
}

/// The lines of an unfinished head, in order: the request line's length
/// (a 414 once it passes [`line_limit`], whole or not), then, once it is
/// whole, its method and its line end, then each whole field line's line end
/// and framing (an early `Content-Length` conflict, say, is refused at once).
fn judge_lines(head: &[u8], limits: &Limits) -> Result<(), ParseError> {
    let Some(end) = head.iter().position(|&b| b == b'\n') else {
        return if head.len() > line_limit(limits) { Err(ParseError::UriTooLong) } else { Ok(()) };
    };
    if end > line_limit(limits) {
        return Err(ParseError::UriTooLong);
    }
    // An Icecast or RTSP line is judged as such once the head is whole.
    if !(limits.legacy_protocols && legacy_request_line(head).is_some()) {
        check_method(&head[..end], limits)?;
    }
    check_complete_fields(&head[end + 1..], &head[..end])
}

/// The checks a complete head's method gets: `PRI` (the HTTP/2 preface)
/// and, unless any method is accepted, one outside the registry.
fn check_method(request_line: &[u8], limits: &Limits) -> Result<(), ParseError> {
    let method = request_line.split(|&b| b == b' ').next().unwrap_or_default();
    if method == b"PRI" {
        return Err(ParseError::Malformed("HTTP/2 connection preface"));
    }
    // A method that is not text is left for httparse to refuse.
    if !limits.any_method && !is_known_method(method) && std::str::from_utf8(method).is_ok() {
        return Err(ParseError::UnknownMethod);
    }
    Ok(())
}

/// Checks the line ends of the request line and of the field lines of
/// `fields` that are complete, and runs the framing checks over those
/// field lines (httparse has already accepted their syntax), in order.
fn check_complete_fields(fields: &[u8], request_line: &[u8]) -> Result<(), ParseError> {
    const BARE_LF: ParseError = ParseError::Malformed("bare LF in the head");
    // `HTTP/1.0`, or an `RTSP/1.0` or `ICE/1.0` line read as one.
    let version = if request_line.ends_with(b"/1.0\r") { Version::Http10 } else { Version::Http11 };
    if !request_line.ends_with(b"\r") {
        return Err(BARE_LF);
    }
    let mut framing = FramingHeaders::default();
    let mut lines = fields.split(|&b| b == b'\n');
    let _unfinished = lines.next_back();
    for line in lines {
        let Some(line) = line.strip_suffix(b"\r") else { return Err(BARE_LF) };
        let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
        let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
        framing.add(name, value, version)?;
    }
    Ok(())
}

fn map_httparse(e: httparse::Error, buf: &[u8]) -> ParseError {
    match e {
        httparse::Error::TooManyHeaders => ParseError::HeadTooLarge,
        // RFC 9112 §2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT, the name
        // case-sensitive. 505 is for an HTTP version we do not speak (RFC
        // 9110 §15.6.6); `http/1.1`, `RTSP/1.0` or `dogg` are malformed.
        httparse::Error::Version if !names_an_http_version(buf) => ParseError::Malformed("invalid HTTP version"),
        httparse::Error::Version => ParseError::Version,
        httparse::Error::HeaderName => ParseError::Malformed("invalid header name"),
        httparse::Error::HeaderValue => ParseError::Malformed("invalid header value"),
        httparse::Error::NewLine => ParseError::Malformed("invalid line ending"),
        httparse::Error::Token => ParseError::Malformed("invalid token in request line"),
        _ => ParseError::Malformed("invalid request head"),
    }
}

/// True when the third field of the request line starts `HTTP/<digit>`.
fn names_an_http_version(buf: &[u8]) -> bool {
    let start = buf.iter().position(|&b| b != b'\r' && b != b'\n').unwrap_or(buf.len());
    let line = buf[start..].split(|&b| b == b'\r' || b == b'\n').next().unwrap_or_default();
    matches!(line.splitn(3, |&b| b == b' ').nth(2), Some([b'H', b'T', b'T', b'P', b'/', d, ..]) if d.is_ascii_digit())
}

/// Offset and length of `part` inside `buf`; `part` must be a sub-slice.
fn span(buf: &[u8], part: &[u8]) -> (u32, u32) {
    let start = (part.as_ptr() as usize).wrapping_sub(buf.as_ptr() as usize);
    debug_assert!(start + part.len() <= buf.len());
    // Heads are bounded by max_head_bytes, far below u32::MAX.
    (start as u32, part.len() as u32)
}

/// The methods of the IANA HTTP Method Registry, and the unregistered ones
/// in wide use: cache `PURGE`, SSDP/UPnP (`M-SEARCH`, `NOTIFY`,
/// `SUBSCRIBE`, `UNSUBSCRIBE`) and Icecast `SOURCE`. Case-sensitive (RFC
/// 9110 §9.1).
pub(crate) fn is_known_method(method: &[u8]) -> bool {
    matches!(
        method,
        b"GET"
            | b"HEAD"
            | b"POST"
            | b"PUT"
            | b"DELETE"
            | b"CONNECT"
            | b"OPTIONS"
            | b"TRACE"
            | b"PATCH"
            | b"QUERY"
            | b"ACL"
            | b"BASELINE-CONTROL"
            | b"BIND"
            | b"CHECKIN"
            | b"CHECKOUT"
            | b"COPY"
            | b"LABEL"
            | b"LINK"
            | b"LOCK"
            | b"MERGE"
            | b"MKACTIVITY"
            | b"MKCALENDAR"
            | b"MKCOL"
            | b"MKREDIRECTREF"
            | b"MKWORKSPACE"
            | b"MOVE"
            | b"ORDERPATCH"
            | b"PROPFIND"
            | b"PROPPATCH"
            | b"REBIND"
            | b"REPORT"
            | b"SEARCH"
            | b"UNBIND"
            | b"UNCHECKOUT"
            | b"UNLINK"
            | b"UNLOCK"
            | b"UPDATE"
            | b"UPDATEREDIRECTREF"
            | b"VERSION-CONTROL"
            | b"PURGE"
            | b"M-SEARCH"
            | b"NOTIFY"
            | b"SUBSCRIBE"
            | b"UNSUBSCRIBE"
            | b"SOURCE"
    )
}

/// Whether `target` has a form `method` may use (RFC 9112 §3.2): a path
/// (origin-form) for any method but `CONNECT`, which takes `host:port`
/// (authority-form) alone; `*` (asterisk-form) for `OPTIONS`, and for
/// methods this crate does not know (SSDP's `M-SEARCH *`), not for the
/// others of RFC 9110; `scheme://…` (absolute-form, as sent to a proxy)
/// for any method but `CONNECT`. Anything else (`GET foo`) is none.
fn is_target_form_of(method: &str, target: &[u8]) -> bool {
    match target {
        [b'/', ..] => method != "CONNECT",
        // `host ":" port`, the port not optional here (§3.2.3).
        _ if method == "CONNECT" => {
            let colon = match target {
                [b'[', ..] => target.iter().position(|&b| b == b']').map(|close| close + 1),
                _ => target.iter().rposition(|&b| b == b':'),
            };
            let has_port = colon.is_some_and(|c| c > 0 && target.get(c) == Some(&b':') && c + 1 < target.len());
            has_port && check_host(target).is_ok()
        }
        b"*" => !matches!(method, "GET" | "HEAD" | "POST" | "PUT" | "DELETE" | "PATCH" | "TRACE"),
        _ => is_absolute_form(target),
    }
}

/// `scheme "://" authority …`, the authority's host and port what a
/// `Host` value may be (it stands for one, RFC 9112 §3.2.2).
fn is_absolute_form(target: &[u8]) -> bool {
    let Some(colon) = target.iter().position(|&b| b == b':') else {
        return false;
    };
    let (scheme, rest) = target.split_at(colon);
    let Some(rest) = rest.strip_prefix(b"://") else {
        return false;
    };
    let authority = rest.split(|&b| matches!(b, b'/' | b'?' | b'#')).next().unwrap_or_default();
    let (userinfo, host) = match authority.iter().rposition(|&b| b == b'@') {
        Some(at) => (&authority[..at], &authority[at + 1..]),
        None => (&[][..], authority),
    };
    // The host is what follows the last `@`, to `Request::host` as here;
    // a parser that reads the authority another way must not find another
    // host in it. WHATWG's URL (browsers, Node, many proxies and filters)
    // takes `\` for `/`: to it `http://a\@b/` is host `a`, path `/@b/`,
    // where this one would serve host `b`. So the userinfo is held to its
    // grammar, which has no `\` and no `@` (RFC 3986 §3.2.1).
    if !is_userinfo(userinfo) {
        return false;
    }
    // An empty host is refused too (RFC 9110 §4.2.1 for `http`).
    let name = host.split(|&b| b == b':').next().unwrap_or_default();
    is_scheme(scheme) && !name.is_empty() && check_host(host).is_ok()
}

/// A `Host` value as the head parser takes it, and not empty: for hosts
/// that come in other headers (`X-Forwarded-Host`, `Forwarded`'s `host`).
pub(crate) fn is_valid_host(value: &[u8]) -> bool {
    !value.is_empty() && check_host(value).is_ok()
}

mod fast;
mod framing;
#[cfg(test)]
mod tests;
