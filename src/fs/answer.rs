//! The answer for a file found: validators, `304`, ranges, the body; and
//! the redirect of a directory asked for without its `/`.

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::time::SystemTime;

use super::cache::Entry;
use super::conditional::{
    Range, byte_range, if_range_holds, is_strong, match_holds, modified_after, none_match_fails, unmodified_since,
};
use crate::request::Request;
use crate::response::build::is_uri_char;
use crate::response::{Content, Response};

/// The answer for a file found: `412`, `304`, `416`, `206` or `200`.
pub(super) fn answer(req: &Request<'_>, entry: &Entry, file: Option<File>, is_head: bool) -> Response {
    // A list field sent over several lines is one list (RFC 9110 §5.3).
    let lines = |name: &'static str| req.header_all(name).filter_map(|v| std::str::from_utf8(v).ok());
    let strong = is_strong(entry.mtime, SystemTime::now());
    // RFC 9110 §13.2.2, in this order: If-Match, else If-Unmodified-Since
    // (`412` when it fails); If-None-Match, else If-Modified-Since (`304`);
    // then If-Range.
    let proceed = match req.header("if-match") {
        Some(_) => match_holds(lines("if-match"), &entry.etag, strong),
        None => !req.header("if-unmodified-since").is_some_and(|date| modified_after(date, entry.modified)),
    };
    if !proceed {
        return Response::status(412);
    }
    let fresh = match req.header("if-none-match") {
        Some(_) => none_match_fails(lines("if-none-match"), &entry.etag),
        None => req.header("if-modified-since").is_some_and(|date| unmodified_since(date, entry.modified)),
    };
    if fresh {
        return with_validators(Response::status(304), entry, strong);
    }
    let len = entry.id.len;
    // Ranges are defined for GET only (RFC 9110 §14.2). `Range` and
    // `If-Range` take one value: sent twice, the range is ignored.
    let one = |name: &'static str| {
        let mut values = lines(name);
        let first = values.next();
        values.next().is_none().then_some(first)
    };
    let range = match (one("if-range"), one("range")) {
        _ if is_head => Range::Full,
        (Some(if_range), Some(range))
            if if_range.is_none_or(|v| if_range_holds(v, &entry.etag, entry.modified, strong)) =>
        {
            byte_range(range, len)
        }
        _ => Range::Full,
    };
    let (status, first, n) = match range {
        Range::Full => (200, 0, len),
        Range::Part { first, last } => (206, first, last - first + 1),
        Range::Unsatisfiable => {
            return Response::status(416).with_header("Content-Range", format!("bytes */{len}"));
        }
    };
    let resp = match (&entry.bytes, file) {
        // A HEAD is answered as a GET, body and all (the server sends no
        // body to a HEAD), so a wrapper such as `compress` gives both the
        // same headers (RFC 9110 §9.3.2): a file on disk too, which
        // `compress` leaves as it is where it would gzip the length a
        // bodiless answer announced.
        // The whole file is sent from the cache, where `compress` finds
        // its gzipped copy; a part is copied out.
        (Some(body), _) if status == 200 => Response::status(200).with_body(Content::shared(body.clone())),
        (Some(body), _) => {
            Response::status(status).with_body(body.as_slice()[first as usize..(first + n) as usize].to_vec())
        }
        // A file is open at its start: only a range needs a seek.
        (None, Some(file)) if first == 0 => Response::file(file, n).with_status(status),
        (None, Some(mut file)) => match file.seek(SeekFrom::Start(first)) {
            Ok(_) => Response::file(file, n).with_status(status),
            Err(e) => {
                error!("ServeDir: seeking in {}: {e}; answering 500", entry.path.display());
                return Response::status(500);
            }
        },
        (None, None) => {
            error!("ServeDir: {} neither in memory nor open; answering 500", entry.path.display());
            return Response::status(500);
        }
    };
    let resp = match status {
        206 => resp.with_header("Content-Range", format!("bytes {first}-{}/{len}", first + n - 1)),
        _ => resp,
    };
    let resp = match entry.content_encoding {
        Some(coding) => resp.with_header("Content-Encoding", coding),
        None => resp,
    };
    with_validators(resp.with_content_type(entry.content_type.clone()), entry, strong)
        .with_header("Accept-Ranges", "bytes")
}

/// `ETag` (weak unless `strong`) and `Last-Modified`.
fn with_validators(resp: Response, entry: &Entry, strong: bool) -> Response {
    let etag = match strong {
        true => entry.etag.clone(),
        false => format!("W/{}", entry.etag),
    };
    resp.with_header("ETag", etag).with_header("Last-Modified", entry.last_modified.clone())
}

/// The request's path with a `/` added (and its query kept), for the
/// redirect of a directory asked for without one. Leading slashes collapse
/// to one, so the location cannot read as `//host/…`; characters that are
/// not allowed in a URI are percent-encoded.
pub(super) fn directory_location(req: &Request<'_>) -> String {
    let path = req.path().trim_start_matches('/');
    let mut location = String::with_capacity(path.len() + 2);
    location.push('/');
    push_uri_safe(&mut location, path);
    location.push('/');
    if let Some(query) = req.query() {
        location.push('?');
        push_uri_safe(&mut location, query);
    }
    location
}

/// Where a path spelled another way is sent: the prefix, the plain
/// spelling of the rest (`/` first), and the query kept.
pub(super) fn respelled_location(req: &Request<'_>, prefix: &str, path: &str) -> String {
    let mut location = String::with_capacity(prefix.len() + path.len() + req.query().map_or(0, |q| q.len() + 1));
    location.push_str(prefix);
    location.push_str(path);
    if let Some(query) = req.query() {
        location.push('?');
        push_uri_safe(&mut location, query);
    }
    location
}

fn push_uri_safe(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let escape_ok = b == b'%' && bytes.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
        if is_uri_char(b) || escape_ok {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}
