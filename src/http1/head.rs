//! What the bytes received so far make: a head to answer, a body to collect
//! behind it before its handler runs, or a refusal.

use super::state::{ChunkScan, ConnState};
use super::worker::Ctx;
use crate::parse::{Downgrade, Head, ParseError, downgrade_minor_version, parse_head};
use crate::proto::BodyKind;

/// What the bytes received so far make.
pub(super) enum Parsed {
    Head(Head),
    /// An unfinished head, or a small body still arriving: read more.
    More,
    Refused(ParseError),
}

/// Parses the unparsed bytes, when that can tell more than last time.
/// Inlined for the look at an empty buffer, which begins every turn of a
/// client that waits for each answer: as a call it cost some 20
/// instructions per keep-alive request.
#[inline(always)]
pub(super) fn parse_buffered<H: ?Sized>(conn: &mut ConnState, cx: &mut Ctx<'_, H>) -> Parsed {
    if !conn.has_unparsed() {
        conn.scan_awaited();
        return Parsed::More;
    }
    parse_unparsed(conn, cx)
}

#[inline(never)]
fn parse_unparsed<H: ?Sized>(conn: &mut ConnState, cx: &mut Ctx<'_, H>) -> Parsed {
    let limits = &cx.config.limits;
    conn.scan_awaited();
    loop {
        if !conn.has_unparsed() || !conn.worth_parsing(limits) {
            return Parsed::More;
        }
        match parse_head(conn.unparsed(), limits, &mut cx.scratch.spans) {
            // Behind empty lines (its method not first): parsed again
            // without them (see `ConnState::skip_empty_lines`).
            Ok(Some(head)) if head.method.0 > 0 => {
                conn.skip_empty_lines();
                conn.reparse_now();
            }
            Ok(Some(head)) => match awaited_body(conn, &head, cx) {
                Some(Await::Length(len)) => {
                    conn.await_body(head.len, len);
                    return Parsed::More;
                }
                Some(Await::Chunked(scan)) => {
                    conn.await_chunked(scan);
                    return Parsed::More;
                }
                Some(Await::Refused(e)) => return Parsed::Refused(e),
                None => return Parsed::Head(head),
            },
            Ok(None) => {
                conn.parsed_partial();
                return Parsed::More;
            }
            Err(ParseError::Version) => match downgrade_minor_version(conn.unparsed_mut()) {
                Downgrade::Rewritten => conn.reparse_now(),
                Downgrade::Unfinished => {
                    conn.parsed_partial();
                    return Parsed::More;
                }
                Downgrade::Refused => return Parsed::Refused(ParseError::Version),
                Downgrade::Malformed => return Parsed::Refused(ParseError::Malformed("invalid HTTP version")),
            },
            Err(e) => return Parsed::Refused(e),
        }
    }
}

/// How many bytes of the request to collect before the handler runs, when
/// more than are here: its body, or the first `body_buffer_bytes` of it
/// (and at least what fits in the read buffer behind the head); with
/// `body_buffer_bytes` 0, only a body with a length that fits in the read
/// buffer behind its head. A body is
/// collected like the rest of a head (parked, under the head deadline plus
/// what its bytes earn at `body_min_rate`) rather than read by the handler
/// on a worker, so a client trickling it holds no thread; at shutdown, when
/// nothing parks, the worker waits for it under the same deadline (see
/// [`finishing_head`](super::finishing_head)). Not when the client waits for `100 Continue`: the
/// handler asks for the body then; but a chunked body sent with the head
/// anyway and already known to be refused is refused here all the same.
/// Collecting past the read buffer's size takes a share
/// of the server-wide budget (`max_buffered_body_bytes`) when the buffer is
/// about to grow (see [`read_more`](super::read_more)), held until the buffer shrinks back
/// (`ConnState::detach`); with none left, it stops at the read buffer's
/// size.
pub(super) fn awaited_body<H: ?Sized>(conn: &ConnState, head: &Head, cx: &Ctx<'_, H>) -> Option<Await> {
    if head.body == BodyKind::Empty {
        return None;
    }
    let buffer = cx.config.read_buffer_size();
    let limit =
        if conn.budget_spent() { buffer } else { buffer.max(head.len.saturating_add(cx.config.body_buffer_bytes)) };
    let here = conn.unparsed().len();
    let want = match head.body {
        BodyKind::Length(_) if head.expect_continue => return None,
        BodyKind::Length(n) => {
            let whole = u64::try_from(head.len).ok()?.checked_add(n)?;
            // Collecting off: only a request that fits in the read buffer.
            if cx.config.body_buffer_bytes == 0 && whole > buffer as u64 {
                return None;
            }
            let want = usize::try_from(whole).unwrap_or(usize::MAX).min(limit);
            if here >= want {
                return None;
            }
            Await::Length(want)
        }
        BodyKind::Chunked if cx.config.body_buffer_bytes == 0 => return None,
        BodyKind::Chunked => {
            let mut scan = ChunkScan::new(head.len, limit, cx.config.limits.max_body_bytes);
            if scan.advance(conn.unparsed()) {
                // A body already known to be refused is refused as a head
                // is, before its handler runs: the handler's answer would
                // be replaced by the error, and what it did would stand.
                return scan.refusal().map(Await::Refused);
            }
            if head.expect_continue {
                return None;
            }
            Await::Chunked(scan)
        }
        BodyKind::Empty => return None,
    };
    Some(want)
}

/// What [`awaited_body`] collects.
pub(super) enum Await {
    /// Until this many bytes, head included, are here.
    Length(usize),
    /// Until the chunked body ends or its limit is here.
    Chunked(ChunkScan),
    /// Not at all: what is here of the chunked body is refused.
    Refused(ParseError),
}
