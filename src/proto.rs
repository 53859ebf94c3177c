//! The vocabulary the other modules share: the protocol version, the token
//! grammar of RFC 9110 §5.6, and how a message body is delimited on the
//! wire in each direction. A leaf: it depends on no other module of the
//! crate, so none of them depend on each other through it. The byte
//! classes and the word-at-a-time scans over a head are in `proto/scan.rs`.

mod scan;
pub(crate) use scan::{
    DIGIT, FIELD_TEXT, HOST_TEXT, TCHAR, VCHAR, is_name, is_of, skip, skip_host, skip_name, skip_port,
};

/// The protocol version of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    /// `HTTP/1.0`: the connection closes after the response unless the
    /// request says `Connection: keep-alive`.
    Http10,
    /// `HTTP/1.1`: persistent unless either side says `Connection: close`.
    Http11,
}

impl Version {
    /// The version as it appears on the wire, e.g. `"HTTP/1.1"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}

/// How the request body is delimited (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyKind {
    Empty,
    Length(u64),
    Chunked,
}

/// How the body of a response is delimited on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResponseFraming {
    /// No body bytes follow (HEAD, 1xx, 204, 304); `Content-Length` may still
    /// be announced.
    None {
        announce: Option<u64>,
    },
    Length(u64),
    Chunked,
    /// The end of the body is the end of the connection (HTTP/1.0 streams).
    CloseDelimited,
}

/// `1*DIGIT` without sign, whitespace or overflow.
pub(crate) fn parse_decimal(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |acc, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d <= 9)?;
        acc.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// The elements of a comma-separated list (RFC 9110 §5.6.1), trimmed of
/// optional whitespace, empty elements skipped.
pub(crate) fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(trim).filter(|t| !t.is_empty())
}

/// `s` without leading and trailing spaces and tabs (OWS).
pub(crate) fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// Whether any byte of `bytes` is `wanted`. Every byte is looked at (no
/// early exit), so that the loop is vectorized: these checks run over each
/// head and each header value, and what they look for is rarely there.
#[inline]
pub(crate) fn any_byte(bytes: &[u8], wanted: impl Fn(u8) -> bool) -> bool {
    bytes.iter().fold(false, |found, &b| found | wanted(b))
}

/// RFC 9110 §5.6.2 `tchar`: a table lookup, as it runs over every field
/// name the head parser reads.
#[inline]
pub(crate) fn is_tchar(b: u8) -> bool {
    is_of(b, TCHAR)
}

/// RFC 3986 §3.1 `scheme`: a letter, then letters, digits, `+`, `-`, `.`.
pub(crate) fn is_scheme(scheme: &[u8]) -> bool {
    scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme.iter().all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

pub(crate) fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}
