//! Validators and ranges (RFC 9110 §8.8, §13, §14): pure functions over
//! header values.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a `Range` header asks of a representation of `len` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Range {
    /// No usable range: send it all (`200`). Also for several ranges, which
    /// a server may answer whole (RFC 9110 §14.2).
    Full,
    /// Bytes `first..=last` (`206`).
    Part { first: u64, last: u64 },
    /// A range that starts past the end (`416`, RFC 9110 §14.1.1).
    Unsatisfiable,
}

/// Reads `bytes=first-last`, `bytes=first-` or `bytes=-suffix` (RFC 9110
/// §14.1.2). A header that is malformed or in another unit is ignored.
pub(crate) fn byte_range(header: Option<&str>, len: u64) -> Range {
    let Some(value) = header else { return Range::Full };
    let value = value.trim();
    let unit_ok = value.get(..6).is_some_and(|unit| unit.eq_ignore_ascii_case("bytes="));
    if !unit_ok {
        return Range::Full;
    }
    let spec = value[6..].trim();
    let Some((first, last)) = spec.split_once('-') else { return Range::Full };
    if spec.contains(',') {
        return Range::Full;
    }
    let (first, last) = (first.trim(), last.trim());
    match (digits(first), digits(last)) {
        (Some(a), Some(b)) if a <= b && a < len => Range::Part { first: a, last: b.min(len - 1) },
        (Some(a), Some(b)) if a <= b => Range::Unsatisfiable,
        (Some(a), None) if last.is_empty() && a < len => Range::Part { first: a, last: len - 1 },
        (Some(_), None) if last.is_empty() => Range::Unsatisfiable,
        (None, Some(n)) if first.is_empty() && n > 0 && len > 0 => {
            Range::Part { first: len.saturating_sub(n), last: len - 1 }
        }
        // Satisfiable (RFC 9110 §14.1.1), but no `Content-Range` can name
        // a part of nothing: the whole, empty file is the answer.
        (None, Some(n)) if first.is_empty() && n > 0 => Range::Full,
        (None, Some(_)) if first.is_empty() => Range::Unsatisfiable,
        _ => Range::Full,
    }
}

/// A decimal number of digits only (`u64::from_str` would take a `+`).
fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The entity-tags of an `If-None-Match` or `If-Range` value, each as
/// `(weak, opaque-tag with its quotes)`; `*` as `(false, "*")`. Stops at
/// the first malformed member.
fn entity_tags(value: &str) -> impl Iterator<Item = (bool, &str)> {
    let mut rest = value;
    std::iter::from_fn(move || {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return None;
        }
        if let Some(after) = rest.strip_prefix('*') {
            rest = after;
            return Some((false, "*"));
        }
        let (weak, tag) = match rest.strip_prefix("W/") {
            Some(tag) => (true, tag),
            None => (false, rest),
        };
        // An opaque tag is a quoted string without DQUOTE inside; it may
        // hold commas.
        let end = tag.strip_prefix('"')?.find('"')? + 2;
        rest = &tag[end..];
        Some((weak, &tag[..end]))
    })
}

/// `If-None-Match` (its lines) names `etag` (weak comparison, RFC 9110
/// §13.1.2), or is `*` (the file exists).
pub(crate) fn none_match_fails<'a>(if_none_match: impl IntoIterator<Item = &'a str>, etag: &str) -> bool {
    if_none_match.into_iter().flat_map(entity_tags).any(|(_, tag)| tag == "*" || tag == etag)
}

/// `If-Match` (its lines) holds (RFC 9110 §13.1.1): it is `*` (the file
/// exists), or names `etag` by the strong comparison: a weak tag, sent or
/// current (`strong` false), matches nothing.
pub(crate) fn match_holds<'a>(if_match: impl IntoIterator<Item = &'a str>, etag: &str, strong: bool) -> bool {
    if_match.into_iter().flat_map(entity_tags).any(|(weak, tag)| tag == "*" || (strong && !weak && tag == etag))
}

/// `If-Unmodified-Since` fails (RFC 9110 §13.1.4): a valid date, and the
/// file modified after it (whole seconds). An invalid date is ignored.
pub(crate) fn modified_after(if_unmodified_since: &str, modified: SystemTime) -> bool {
    httpdate::parse_http_date(if_unmodified_since).is_ok_and(|since| secs(modified) > secs(since))
}

/// `If-Modified-Since` is a valid date no earlier than `modified` (whole
/// seconds: HTTP dates have no fraction), so the client's copy is current.
pub(crate) fn unmodified_since(if_modified_since: &str, modified: SystemTime) -> bool {
    let Ok(since) = httpdate::parse_http_date(if_modified_since) else { return false };
    secs(modified) <= secs(since)
}

/// Whether a file's validators, as an answer made at `now` shows them, are
/// strong (RFC 9110 §8.8.1): modified a second or more before, so no later
/// write can land in the same second of `Last-Modified` (§8.8.2.2), nor,
/// on a file system whose clock ticks coarsely, give the same
/// modification time and so the same `ETag`. A file modified since has a
/// weak `ETag`, and its date does not hold an `If-Range`.
pub(crate) fn is_strong(mtime: SystemTime, now: SystemTime) -> bool {
    now.duration_since(mtime).is_ok_and(|age| age >= Duration::from_secs(1))
}

/// `If-Range` still holds (RFC 9110 §13.1.5): a strong tag equal to
/// `etag`, or a date equal to `modified`, and the file's validators strong
/// ([`is_strong`]): a weak tag or a weak date does not vouch that the bytes
/// a client holds are these. When it does not hold, the range is ignored
/// and the whole file sent.
pub(crate) fn if_range_holds(if_range: &str, etag: &str, modified: SystemTime, strong: bool) -> bool {
    let value = if_range.trim();
    if !strong {
        return false;
    }
    if value.starts_with('"') || value.starts_with("W/") {
        let mut tags = entity_tags(value);
        return matches!((tags.next(), tags.next()), (Some((false, tag)), None) if tag == etag);
    }
    httpdate::parse_http_date(value).is_ok_and(|date| secs(date) == secs(modified))
}

/// Whole seconds since the epoch; earlier times are 0.
pub(crate) fn secs(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(first: u64, last: u64) -> Range {
        Range::Part { first, last }
    }

    #[test]
    fn single_byte_ranges() {
        let cases = [
            ("bytes=0-99", part(0, 99)),
            ("bytes=100-", part(100, 999)),
            ("bytes=-100", part(900, 999)),
            ("bytes=-5000", part(0, 999)),
            ("bytes=990-5000", part(990, 999)),
            ("bytes=999-999", part(999, 999)),
            ("Bytes=1-2", part(1, 2)),
            (" bytes=1-2 ", part(1, 2)),
            ("bytes = 1-2", Range::Full),
            ("bytes=1000-", Range::Unsatisfiable),
            ("bytes=1000-1001", Range::Unsatisfiable),
            ("bytes=-0", Range::Unsatisfiable),
            ("bytes=5-3", Range::Full),
            ("bytes=0-1,5-6", Range::Full),
            ("bytes=+1-2", Range::Full),
            ("bytes=1-+2", Range::Full),
            ("bytes=-", Range::Full),
            ("bytes=a-b", Range::Full),
            ("bytes=99999999999999999999-", Range::Full),
            ("items=0-1", Range::Full),
            ("bytes 0-1", Range::Full),
        ];
        for (header, want) in cases {
            assert_eq!(byte_range(Some(header), 1000), want, "{header}");
        }
        assert_eq!(byte_range(None, 1000), Range::Full);
    }

    #[test]
    fn an_empty_file_has_no_byte_to_ask_for_and_a_suffix_gets_it_whole() {
        for header in ["bytes=0-", "bytes=0-0", "bytes=-0"] {
            assert_eq!(byte_range(Some(header), 0), Range::Unsatisfiable, "{header}");
        }
        assert_eq!(byte_range(Some("bytes=-1"), 0), Range::Full);
    }

    #[test]
    fn if_none_match_compares_weakly_and_keeps_commas_inside_tags() {
        let etag = "\"c00-5f\"";
        for yes in ["\"c00-5f\"", "W/\"c00-5f\"", "\"x\", \"c00-5f\"", "*", "\"a,b\" ,W/\"c00-5f\""] {
            assert!(none_match_fails([yes], etag), "{yes}");
        }
        for no in ["\"c00-5e\"", "c00-5f", "\"a,\"c00-5f\"", "", "W/", "\"unterminated"] {
            assert!(!none_match_fails([no], etag), "{no}");
        }
    }

    #[test]
    fn if_none_match_and_if_match_read_every_line() {
        let etag = "\"c00-5f\"";
        assert!(none_match_fails(["\"x\"", "W/\"c00-5f\""], etag));
        assert!(!none_match_fails(["\"x\"", "\"y\""], etag));
        assert!(match_holds(["\"x\"", "\"c00-5f\""], etag, true));
        assert!(match_holds(["*"], etag, true));
        assert!(!match_holds(["W/\"c00-5f\""], etag, true), "a weak tag never matches If-Match");
        assert!(!match_holds(["\"x\", \"y\""], etag, true));
        assert!(!match_holds([""], etag, true));
    }

    #[test]
    fn if_unmodified_since_fails_only_for_a_valid_earlier_date() {
        let modified = UNIX_EPOCH + Duration::from_millis(784_111_777_500);
        assert!(modified_after("Sun, 06 Nov 1994 08:49:36 GMT", modified));
        assert!(!modified_after("Sun, 06 Nov 1994 08:49:37 GMT", modified));
        assert!(!modified_after("Mon, 07 Nov 1994 00:00:00 GMT", modified));
        assert!(!modified_after("not a date", modified));
    }

    #[test]
    fn if_modified_since_reads_all_three_date_formats() {
        let modified = UNIX_EPOCH + Duration::from_millis(784_111_777_500);
        for same in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            assert!(unmodified_since(same, modified), "{same}");
        }
        assert!(unmodified_since("Mon, 07 Nov 1994 00:00:00 GMT", modified));
        assert!(!unmodified_since("Sun, 06 Nov 1994 08:49:36 GMT", modified));
        assert!(!unmodified_since("yesterday", modified));
    }

    #[test]
    fn if_range_needs_a_strong_match_or_the_exact_date() {
        let modified = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert!(if_range_holds("\"v1\"", "\"v1\"", modified, true));
        assert!(!if_range_holds("W/\"v1\"", "\"v1\"", modified, true));
        assert!(!if_range_holds("\"v2\"", "\"v1\"", modified, true));
        assert!(!if_range_holds("\"v1\", \"v2\"", "\"v1\"", modified, true));
        assert!(if_range_holds("Sun, 06 Nov 1994 08:49:37 GMT", "\"v1\"", modified, true));
        assert!(!if_range_holds("Sun, 06 Nov 1994 08:49:38 GMT", "\"v1\"", modified, true));
        assert!(!if_range_holds("soon", "\"v1\"", modified, true));
    }

    /// Validators of a file modified less than a second ago are weak: a
    /// second write in the same second keeps `Last-Modified`, and may keep
    /// the modification time the `ETag` is made of.
    #[test]
    fn validators_are_strong_a_second_after_the_last_write() {
        let mtime = UNIX_EPOCH + Duration::from_millis(784_111_777_500);
        for (after_ms, strong) in [(0, false), (499, false), (999, false), (1000, true), (3_600_000, true)] {
            assert_eq!(is_strong(mtime, mtime + Duration::from_millis(after_ms)), strong, "{after_ms} ms");
        }
        assert!(!is_strong(mtime, mtime - Duration::from_secs(60)), "modified in the future");
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        assert!(!if_range_holds(date, "\"v1\"", mtime, false), "a weak date");
        assert!(!if_range_holds("\"v1\"", "\"v1\"", mtime, false), "a weak current tag");
        assert!(!match_holds(["\"v1\""], "\"v1\"", false));
        assert!(match_holds(["*"], "\"v1\"", false));
    }
}
