//! A body read back from bytes cut into reads wherever a test or the fuzzer
//! says, and what a handler would see of it: for the unit tests and the
//! `multipart` fuzz target, which check that the cuts change nothing.

use std::io::{self, Read};

use super::scan::Scanner;
use super::{Limits, Multipart, Source};

/// Bytes given out in reads that end at each cut (and at the reader's
/// room), then the end of the body.
pub(crate) struct Cuts<'a> {
    data: &'a [u8],
    cuts: Vec<usize>,
    at: usize,
}

impl<'a> Cuts<'a> {
    /// `data` in reads ending at `cuts` (offsets into it, in any order).
    pub(crate) fn new(data: &'a [u8], mut cuts: Vec<usize>) -> Cuts<'a> {
        cuts.sort_unstable();
        Cuts { data, cuts, at: 0 }
    }

    /// `data` one byte a read.
    pub(crate) fn bytewise(data: &'a [u8]) -> Cuts<'a> {
        Cuts::new(data, (1..data.len()).collect())
    }
}

impl Read for Cuts<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let next_cut = self.cuts.iter().copied().find(|&c| c > self.at).unwrap_or(self.data.len());
        let n = (next_cut.min(self.data.len()) - self.at).min(out.len());
        out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Source for Cuts<'_> {}

/// One part as a handler saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) name: Option<String>,
    pub(crate) filename: Option<String>,
    pub(crate) headers: Vec<(String, Vec<u8>)>,
    /// `None`: skipped unread.
    pub(crate) content: Option<Vec<u8>>,
}

/// The parts read, and how the body ended: `Ok` after the last part, or
/// the error's status and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) parts: Vec<Seen>,
    pub(crate) end: Result<(), (u16, String)>,
}

/// Limits for a replay; `None` keeps a default.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Bounds {
    pub(crate) total: Option<u64>,
    pub(crate) parts: Option<usize>,
    pub(crate) head: Option<usize>,
    pub(crate) field: Option<u64>,
}

/// Reads every part of `source` (boundary `boundary`) under `bounds`,
/// reading content `read_size` bytes a call, skipping the parts whose
/// index `skip` picks.
pub(crate) fn replay(
    source: &mut dyn Source,
    boundary: &[u8],
    bounds: Bounds,
    read_size: usize,
    skip: impl Fn(usize) -> bool,
) -> Outcome {
    let defaults = Limits::default();
    let limits = Limits {
        max_total_bytes: bounds.total.unwrap_or(defaults.max_total_bytes),
        max_parts: bounds.parts.unwrap_or(defaults.max_parts),
        max_part_header_bytes: bounds.head.unwrap_or(defaults.max_part_header_bytes),
        max_field_bytes: bounds.field.unwrap_or(defaults.max_field_bytes),
    };
    let mut multipart = Multipart::over(source, Scanner::new(boundary, limits));
    let mut parts = Vec::new();
    let end = loop {
        let mut part = match multipart.next_part() {
            Ok(Some(part)) => part,
            Ok(None) => break Ok(()),
            Err(e) => break Err((e.status(), e.to_string())),
        };
        let mut seen = Seen {
            name: part.name().map(str::to_owned),
            filename: part.filename().map(str::to_owned),
            headers: part.headers().map(|(n, v)| (n.to_owned(), v.to_owned())).collect(),
            content: None,
        };
        if !skip(parts.len()) {
            let mut content = Vec::new();
            let mut chunk = vec![0; read_size.max(1)];
            let read = loop {
                match part.read(&mut chunk) {
                    Ok(0) => break Ok(()),
                    Ok(n) => content.extend_from_slice(&chunk[..n]),
                    Err(e) => break Err(e),
                }
            };
            seen.content = Some(content);
            if let Err(e) = read {
                parts.push(seen);
                let status = e.get_ref().and_then(|e| e.downcast_ref::<crate::Error>()).map_or(0, crate::Error::status);
                break Err((status, e.to_string()));
            }
        }
        parts.push(seen);
    };
    Outcome { parts, end }
}

/// The fuzz target's check: `data` read as a body, whole, in three pieces
/// and a byte at a time, must come out the same, under limits and with a
/// boundary its first bytes choose:
///
/// - `data[0]`: bit 0, at most 3 parts; bit 1, heads of 64 bytes; bit 2,
///   fields of 16 bytes; bit 3, a total of `data[1] * 4` bytes; bit 4, the
///   boundary `-` (its delimiter, `CRLF---`, overlaps itself), else
///   `b0undary`;
/// - `data[2]`: the size of each content read (0 taken as 1);
/// - `data[3]`: bit `i % 8` set skips part `i` unread;
/// - `data[4..8]`: two cut offsets (little-endian `u16`s, modulo the
///   body's length);
/// - the rest: the body.
pub(crate) fn check_cuts(data: &[u8]) {
    let Some((head, body)) = data.split_first_chunk::<8>() else { return };
    let flag = |bit: u8| head[0] & (1 << bit) != 0;
    let bounds = Bounds {
        parts: flag(0).then_some(3),
        head: flag(1).then_some(64),
        field: flag(2).then_some(16),
        total: flag(3).then_some(u64::from(head[1]) * 4),
    };
    let boundary: &[u8] = if flag(4) { b"-" } else { b"b0undary" };
    let read_size = usize::from(head[2]);
    let skip = |i: usize| head[3] & (1 << (i % 8)) != 0;
    let cut = |at: usize| usize::from(u16::from_le_bytes([head[at], head[at + 1]])) % (body.len() + 1);
    let whole = replay(&mut Cuts::new(body, vec![]), boundary, bounds, read_size, skip);
    let content: usize = whole.parts.iter().filter_map(|p| p.content.as_ref()).map(Vec::len).sum();
    assert!(content <= body.len(), "more content than body");
    let pieces = replay(&mut Cuts::new(body, vec![cut(4), cut(6)]), boundary, bounds, read_size, skip);
    assert_eq!(whole, pieces, "cut at {} and {}", cut(4), cut(6));
    let bytewise = replay(&mut Cuts::bytewise(body), boundary, bounds, read_size, skip);
    assert_eq!(whole, bytewise, "a byte a read");
}
