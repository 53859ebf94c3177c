//! The multipart grammar (RFC 2046 §5.1.1, as RFC 7578 uses it), pure: the
//! caller puts body bytes into the scanner's buffer and asks for the next
//! part's head or content; the scanner says what it found, or that it needs
//! more input. No I/O, so every way the bytes can arrive is testable.
//!
//! ```text
//! multipart-body := [preamble CRLF] dash-boundary transport-padding CRLF
//!                   body-part *encapsulation close-delimiter [CRLF epilogue]
//! encapsulation  := delimiter transport-padding CRLF body-part
//! delimiter      := CRLF dash-boundary          dash-boundary := "--" boundary
//! close-delimiter := delimiter "--"
//! ```
//!
//! The buffer starts with a CRLF of the scanner's own, so the first
//! dash-boundary is a delimiter like the others and the preamble is the
//! content of a part before the first one, discarded.
//!
//! Each verdict depends on the bytes alone, never on how they were cut into
//! reads: content is given out only once it cannot be the start of a
//! delimiter, a head is parsed within its limit's bytes, and the total
//! limit fails only when the scanner needs a byte past it.

use memchr::memmem::Finder;

use super::Limits;
use crate::error::{Error, ErrorKind};
use crate::parse::HeaderSpan;
use crate::proto::{is_tchar, trim};

/// Most header fields a part may have (real clients send two or three).
const MAX_PART_HEADERS: usize = 16;

/// The least buffer: content moves through it, so a larger one means fewer
/// reads, not more memory per part.
const MIN_BUFFER_BYTES: usize = 16 * 1024;

/// Longest boundary taken. RFC 2046 allows 70 characters; some generators
/// are longer, and the buffer holds far more.
const MAX_BOUNDARY_BYTES: usize = 200;

/// How a multipart body is malformed or over a limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The body ended before the close delimiter: `400`.
    Unterminated,
    /// A boundary followed by neither `--` nor (padding and) CRLF: `400`.
    BadDelimiter,
    /// A part's header section past `max_part_header_bytes`: `400`.
    HeadTooLarge,
    /// A part's header section that does not parse, or a
    /// `Content-Disposition` whose parameters do not: `400`.
    BadHead,
    /// More parts than `max_parts`: `413`.
    TooManyParts,
    /// A field (a part without a file name) read past `max_field_bytes`:
    /// `413`.
    FieldTooLarge,
    /// More than `max_total_bytes` of body: `413`.
    TooLarge,
}

impl Failure {
    pub(crate) fn error(self) -> Error {
        let (kind, context) = match self {
            Failure::Unterminated => (ErrorKind::BadRequest, "multipart body ended before its closing boundary"),
            Failure::BadDelimiter => (ErrorKind::BadRequest, "multipart boundary not followed by CRLF or `--`"),
            Failure::HeadTooLarge => (ErrorKind::BadRequest, "multipart part header section over the limit"),
            Failure::BadHead => (ErrorKind::BadRequest, "malformed multipart part header section"),
            Failure::TooManyParts => (ErrorKind::BodyTooLarge, "more multipart parts than the limit"),
            Failure::FieldTooLarge => (ErrorKind::BodyTooLarge, "multipart field over the limit"),
            Failure::TooLarge => (ErrorKind::BodyTooLarge, "multipart body over the limit"),
        };
        Error::new(kind, context)
    }
}

/// What the scanner can say: an answer, or that it needs more input first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scan<T> {
    Ready(T),
    NeedInput,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the first boundary: content that is discarded.
    Preamble,
    /// Right after a boundary.
    AfterBoundary {
        padding: usize,
    },
    /// At a part's header section.
    Head,
    /// In a part's content; `field_left`: what a field may still give.
    Content {
        field_left: Option<u64>,
    },
    /// After the close delimiter: the epilogue is not read.
    Done,
    Failed(Failure),
}

/// A part's header section, kept for as long as the part is read (one
/// allocation, reused for every part).
#[derive(Debug, Default)]
pub(crate) struct PartHead {
    pub(crate) block: Vec<u8>,
    pub(crate) spans: Vec<HeaderSpan>,
    /// Where `Content-Disposition`'s `name` and `filename` values sit in
    /// `block` (UTF-8, checked).
    pub(crate) name: Option<(u32, u32)>,
    pub(crate) filename: Option<(u32, u32)>,
}

/// The scanner: a buffer of body bytes and the position in the grammar.
pub(crate) struct Scanner {
    buf: Vec<u8>,
    /// `buf[start..end]` is input not yet taken.
    start: usize,
    end: usize,
    /// Bytes from `start` known to be content (no delimiter can begin
    /// among them).
    known: usize,
    /// CRLF, `--` and the boundary.
    delimiter: Vec<u8>,
    finder: Finder<'static>,
    state: State,
    limits: Limits,
    parts: usize,
    /// Body bytes taken in, and whether the body had more than the limit
    /// lets in, or ended.
    taken: u64,
    over_limit: bool,
    ended: bool,
}

impl Scanner {
    pub(crate) fn new(boundary: &[u8], limits: Limits) -> Scanner {
        let mut delimiter = b"\r\n--".to_vec();
        delimiter.extend_from_slice(boundary);
        Scanner {
            buf: Vec::new(),
            start: 0,
            end: 0,
            known: 0,
            finder: Finder::new(&delimiter).into_owned(),
            delimiter,
            state: State::Preamble,
            limits,
            parts: 0,
            taken: 0,
            over_limit: false,
            ended: false,
        }
    }

    /// The size of the buffer the body goes through.
    #[cfg(test)]
    pub(crate) fn buffer_bytes(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn limits_mut(&mut self) -> &mut Limits {
        &mut self.limits
    }

    /// Where to read more input: at most what the total limit lets in, and
    /// one byte past it, to tell a body that ends there from one that goes
    /// on.
    pub(crate) fn room(&mut self) -> &mut [u8] {
        if self.buf.is_empty() {
            // Allocated at the first read, once the limits are set: a head
            // must fit whole, with a byte to tell it is too long.
            let size = MIN_BUFFER_BYTES.max(self.limits.max_part_header_bytes.saturating_add(1));
            self.buf = vec![0; size];
            self.buf[..2].copy_from_slice(b"\r\n");
            self.end = 2;
        } else if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let allowed = self.limits.max_total_bytes.saturating_sub(self.taken).saturating_add(1);
        let room = (self.buf.len() - self.end).min(usize::try_from(allowed).unwrap_or(usize::MAX));
        &mut self.buf[self.end..self.end + room]
    }

    /// Takes `n` bytes read into [`Scanner::room`]; 0: the body ended.
    pub(crate) fn filled(&mut self, n: usize) {
        if n == 0 {
            self.ended = true;
            return;
        }
        let allowed = self.limits.max_total_bytes.saturating_sub(self.taken);
        let kept = usize::try_from(allowed).map_or(n, |allowed| n.min(allowed));
        self.over_limit = kept < n;
        self.taken += kept as u64;
        self.end += kept;
    }

    /// Either more input, or the failure of a body that has no more to give.
    fn need_input<T>(&self) -> Result<Scan<T>, Failure> {
        match (self.over_limit, self.ended) {
            (true, _) => Err(Failure::TooLarge),
            (false, true) => Err(Failure::Unterminated),
            (false, false) => Ok(Scan::NeedInput),
        }
    }

    fn failed<T>(&mut self, result: Result<T, Failure>) -> Result<T, Failure> {
        if let Err(f) = result {
            self.state = State::Failed(f);
        }
        result
    }

    /// Moves to the next part's head, skipping what is left of the part
    /// before it (or the preamble), and fills `head` in: `Ready(true)`, or
    /// `Ready(false)` after the close delimiter.
    pub(crate) fn next_head(&mut self, head: &mut PartHead) -> Result<Scan<bool>, Failure> {
        let result = self.seek_head(head);
        self.failed(result)
    }

    fn seek_head(&mut self, head: &mut PartHead) -> Result<Scan<bool>, Failure> {
        loop {
            let step = match self.state {
                State::Failed(f) => return Err(f),
                State::Done => return Ok(Scan::Ready(false)),
                State::Preamble | State::Content { .. } => self.skip_content()?,
                State::AfterBoundary { padding } => self.after_boundary(padding)?,
                State::Head => match self.head(head)? {
                    Scan::Ready(()) => return Ok(Scan::Ready(true)),
                    Scan::NeedInput => Scan::NeedInput,
                },
            };
            if step == Scan::NeedInput {
                return Ok(Scan::NeedInput);
            }
        }
    }

    fn skip_content(&mut self) -> Result<Scan<()>, Failure> {
        let n = self.content_len(false)?;
        if let Scan::Ready(n) = n {
            self.consume(n);
        }
        Ok(n.map(|_| ()))
    }

    /// The bytes of the current part's content that are known now (at
    /// least one unless the part has ended), after failing a field past its
    /// limit; `Ready(0)`: the part has ended.
    pub(crate) fn content(&mut self) -> Result<Scan<usize>, Failure> {
        if !matches!(self.state, State::Content { .. } | State::Failed(_)) {
            return Ok(Scan::Ready(0));
        }
        let result = self.content_len(true);
        self.failed(result)
    }

    /// The content [`Scanner::content`] found, at the front of the buffer.
    pub(crate) fn content_bytes(&self, n: usize) -> &[u8] {
        &self.buf[self.start..self.start + n]
    }

    fn content_len(&mut self, limited: bool) -> Result<Scan<usize>, Failure> {
        let field_left = match self.state {
            State::Failed(f) => return Err(f),
            State::Content { field_left } => field_left.filter(|_| limited),
            State::Preamble => None,
            _ => return Ok(Scan::Ready(0)),
        };
        if self.known == 0 {
            let input = &self.buf[self.start..self.end];
            match self.finder.find(input) {
                Some(0) => {
                    self.start += self.delimiter.len();
                    self.state = State::AfterBoundary { padding: 0 };
                    return Ok(Scan::Ready(0));
                }
                Some(at) => self.known = at,
                // Any delimiter that begins before the last `len - 1`
                // bytes would have been found whole.
                None => self.known = input.len().saturating_sub(self.delimiter.len() - 1),
            }
            if self.known == 0 {
                return self.need_input();
            }
        }
        match field_left {
            Some(0) => Err(Failure::FieldTooLarge),
            Some(left) => Ok(Scan::Ready(self.known.min(usize::try_from(left).unwrap_or(usize::MAX)))),
            None => Ok(Scan::Ready(self.known)),
        }
    }

    /// Takes `n` bytes of content, `n` no more than [`Scanner::content`]
    /// said.
    pub(crate) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.known);
        self.start += n;
        self.known -= n;
        if let State::Content { field_left: Some(left) } = &mut self.state {
            *left = left.saturating_sub(n as u64);
        }
    }

    /// After a boundary: `--` ends the body; else transport padding (spaces
    /// and tabs, bounded like a head) and CRLF start a part.
    fn after_boundary(&mut self, mut padding: usize) -> Result<Scan<()>, Failure> {
        let input = &self.buf[self.start..self.end];
        if padding == 0 {
            match input {
                [b'-', b'-', ..] => {
                    self.start += 2;
                    self.state = State::Done;
                    return Ok(Scan::Ready(()));
                }
                [b'-'] | [] => return self.need_input(),
                _ => {}
            }
        }
        let blanks = input.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
        padding += blanks;
        self.start += blanks;
        if padding > self.limits.max_part_header_bytes {
            return Err(Failure::BadDelimiter);
        }
        self.state = State::AfterBoundary { padding };
        match &input[blanks..] {
            [b'\r', b'\n', ..] => {
                self.start += 2;
                self.parts += 1;
                if self.parts > self.limits.max_parts {
                    return Err(Failure::TooManyParts);
                }
                self.state = State::Head;
                Ok(Scan::Ready(()))
            }
            [] | [b'\r'] => self.need_input(),
            _ => Err(Failure::BadDelimiter),
        }
    }

    /// A part's header section, parsed into `head` once it is whole.
    fn head(&mut self, head: &mut PartHead) -> Result<Scan<()>, Failure> {
        let input = &self.buf[self.start..self.end];
        let bound = self.limits.max_part_header_bytes;
        let mut fields = [httparse::EMPTY_HEADER; MAX_PART_HEADERS];
        let within = &input[..input.len().min(bound)];
        let len = match httparse::parse_headers(within, &mut fields) {
            Ok(httparse::Status::Complete((len, _))) => len,
            Ok(httparse::Status::Partial) if input.len() >= bound => return Err(Failure::HeadTooLarge),
            Ok(httparse::Status::Partial) => return self.need_input(),
            Err(_) => return Err(Failure::BadHead),
        };
        fill_head(head, &within[..len])?;
        self.start += len;
        let field_left = head.filename.is_none().then_some(self.limits.max_field_bytes);
        self.state = State::Content { field_left };
        Ok(Scan::Ready(()))
    }
}

impl<T> Scan<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Scan<U> {
        match self {
            Scan::Ready(t) => Scan::Ready(f(t)),
            Scan::NeedInput => Scan::NeedInput,
        }
    }
}

/// Copies a whole header section (its blank line included) into `head`
/// and finds the name and file name in `Content-Disposition`.
fn fill_head(head: &mut PartHead, section: &[u8]) -> Result<(), Failure> {
    head.block.clear();
    head.block.extend_from_slice(section);
    head.spans.clear();
    (head.name, head.filename) = (None, None);
    let mut fields = [httparse::EMPTY_HEADER; MAX_PART_HEADERS];
    // Parsed again over the copy, so that the spans are offsets into it.
    let Ok(httparse::Status::Complete((_, fields))) = httparse::parse_headers(&head.block, &mut fields) else {
        return Err(Failure::BadHead);
    };
    let span = |part: &[u8]| {
        // Offsets into the block, which is shorter than the head limit.
        let start = (part.as_ptr() as usize).wrapping_sub(head.block.as_ptr() as usize);
        (start as u32, part.len() as u32)
    };
    let mut disposition = None;
    for field in fields.iter() {
        let value = span(field.value);
        head.spans.push(HeaderSpan { name: span(field.name.as_bytes()), value });
        if field.name.eq_ignore_ascii_case("content-disposition") {
            if disposition.is_some() {
                return Err(Failure::BadHead);
            }
            disposition = Some(field.value);
        }
    }
    if let Some(value) = disposition {
        let (name, filename) = disposition_names(value)?;
        (head.name, head.filename) = (name.map(span), filename.map(span));
    }
    Ok(())
}

/// A part's `name` and `filename`, each if it has one.
type Names<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// The `name` and `filename` of a `Content-Disposition` value (RFC 7578
/// §4.2), as written between their quotes. Each must be UTF-8; a parameter
/// given twice, or parameters that do not parse, are refused. `filename*`
/// (RFC 5987) is not read: RFC 7578 forbids senders it.
fn disposition_names(value: &[u8]) -> Result<Names<'_>, Failure> {
    let at = value.iter().position(|&b| b == b';').unwrap_or(value.len());
    if !trim(&value[..at]).iter().all(|&b| is_tchar(b)) || trim(&value[..at]).is_empty() {
        return Err(Failure::BadHead);
    }
    let (mut name, mut filename) = (None, None);
    for param in Params(&value[at..]) {
        let (key, value) = param.ok_or(Failure::BadHead)?;
        let slot = match key {
            _ if key.eq_ignore_ascii_case(b"name") => &mut name,
            _ if key.eq_ignore_ascii_case(b"filename") => &mut filename,
            _ => continue,
        };
        if slot.is_some() || std::str::from_utf8(value).is_err() {
            return Err(Failure::BadHead);
        }
        *slot = Some(value);
    }
    Ok((name, filename))
}

/// The boundary of a `multipart/form-data` `Content-Type` value: `None`
/// when it has none, or one that is empty, too long, or has bytes RFC 2046
/// §5.1.1 does not allow (a space, but not at its end, and visible ASCII
/// but `"` and `\`).
pub(crate) fn boundary_of(content_type: &[u8]) -> Option<&[u8]> {
    let at = content_type.iter().position(|&b| b == b';')?;
    let mut boundary = None;
    for param in Params(&content_type[at..]) {
        let (key, value) = param?;
        if key.eq_ignore_ascii_case(b"boundary") {
            if boundary.is_some() {
                return None;
            }
            boundary = Some(value);
        }
    }
    let boundary = boundary?;
    let allowed = |&b: &u8| b == b' ' || (b.is_ascii_graphic() && b != b'"' && b != b'\\');
    let fits = (1..=MAX_BOUNDARY_BYTES).contains(&boundary.len()) && !boundary.ends_with(b" ");
    (fits && boundary.iter().all(allowed)).then_some(boundary)
}

/// The `; key=value` parameters after a media or disposition type; a value
/// is a token, or what lies between a pair of quotes as it is (browsers,
/// curl and Python's requests write `"`, CR and LF in a name as `%22`,
/// `%0D`, `%0A`, and a backslash as itself: it escapes nothing). `None`
/// for parameters that do not parse; the iteration ends there.
struct Params<'a>(&'a [u8]);

impl<'a> Iterator for Params<'a> {
    type Item = Option<Param<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = trim(self.0);
        // The end, or a `;` with nothing after it (tolerated).
        if rest.strip_prefix(b";").map_or(rest, trim).is_empty() {
            return None;
        }
        let parsed = param(rest);
        self.0 = parsed.map_or(&[], |(_, rest)| rest);
        Some(parsed.map(|(param, _)| param))
    }
}

/// A parameter's key and value.
type Param<'a> = (&'a [u8], &'a [u8]);

/// One `; key=value` at the front of `s`, and what follows it.
fn param(s: &[u8]) -> Option<(Param<'_>, &[u8])> {
    let s = trim(s.strip_prefix(b";")?);
    let key_len = s.iter().take_while(|&&b| is_tchar(b)).count();
    let (key, s) = s.split_at(key_len);
    let s = trim(s).strip_prefix(b"=")?;
    let s = trim_start(s);
    let (value, rest) = match s.strip_prefix(b"\"") {
        Some(quoted) => {
            let close = quoted.iter().position(|&b| b == b'"')?;
            (&quoted[..close], &quoted[close + 1..])
        }
        None => s.split_at(s.iter().take_while(|&&b| is_tchar(b)).count()),
    };
    let ends = matches!(trim_start(rest).first(), None | Some(b';'));
    (!key.is_empty() && ends && (!value.is_empty() || s.starts_with(b"\""))).then_some(((key, value), rest))
}

fn trim_start(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    s
}
