//! From a request path to a path under the root, refusing every way out.

use std::borrow::Cow;

use crate::urlencoded::decode_component;

/// A request path made safe to look up under the root.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Target<'a> {
    /// The decoded path below the root: segments joined by `/`, without
    /// empty or `.` segments, no leading or trailing `/`. Borrowed from the
    /// request when nothing needed decoding or dropping.
    pub(crate) rel: Cow<'a, str>,
    /// The request path ended with `/`: it names a directory.
    pub(crate) dir: bool,
}

/// Checks and decodes `raw` (the request path, `/` first). The error is the
/// status to answer: `400` for a bad percent-escape or a path that is not
/// UTF-8; `403` for a `..` segment or a segment that decodes to hold `/`,
/// `\` or NUL (ways out of the root or around these checks); `404` for a
/// hidden name (a segment starting with `.`) unless `hidden` is set.
pub(crate) fn target(raw: &str, hidden: bool) -> Result<Target<'_>, u16> {
    let rest = raw.strip_prefix('/').ok_or(400u16)?;
    let dir = rest.is_empty() || rest.ends_with('/');
    if is_plain(rest) && !rest.split('/').any(crate::sys::names_another_file) {
        return Ok(Target { rel: Cow::Borrowed(rest.strip_suffix('/').unwrap_or(rest)), dir });
    }
    let mut rel = String::with_capacity(rest.len());
    let mut last_is_dot = false;
    for raw_segment in rest.split('/').filter(|s| !s.is_empty()) {
        let segment = decode_component(raw_segment).map_err(|_| 400u16)?;
        last_is_dot = segment == ".";
        match &*segment {
            "." => continue,
            ".." => return Err(403),
            s if s.contains(['/', '\\', '\0']) => return Err(403),
            s if s.starts_with('.') && !hidden => return Err(404),
            s if crate::sys::names_another_file(s) => return Err(404),
            s => {
                if !rel.is_empty() {
                    rel.push('/');
                }
                rel.push_str(s);
            }
        }
    }
    // A path ending in `.` names the directory before it, as one ending
    // in `/` does (RFC 3986 §5.2.4: `/a/.` is `/a/`).
    Ok(Target { rel: Cow::Owned(rel), dir: dir || last_is_dot })
}

/// The plain spelling of `raw` (the request path below the prefix, `/`
/// first) when it is spelled otherwise: empty and `.` segments dropped,
/// escapes decoded, and each segment percent-encoded again only where a
/// segment needs it (RFC 3986 §3.3: every byte but a `pchar`'s), in
/// uppercase hex; `/` last for a directory. `None` when `raw` is plain
/// already, or refused (the lookup answers it).
///
/// A router in front matches paths as they are spelled; the file is found
/// by the decoded path. Without this, `/%70rivate/key` or `//private/key`
/// would miss a route guarding `/private/…` and still reach the file.
pub(crate) fn respelled(raw: &str, hidden: bool) -> Option<String> {
    let rest = raw.strip_prefix('/')?;
    if is_plain(rest) {
        return None;
    }
    let target = target(raw, hidden).ok()?;
    let mut plain = String::with_capacity(raw.len());
    for segment in target.rel.split('/').filter(|s| !s.is_empty()) {
        plain.push('/');
        for &b in segment.as_bytes() {
            match is_pchar(b) {
                true => plain.push(char::from(b)),
                false => plain.push_str(&format!("%{b:02X}")),
            }
        }
    }
    if target.dir || plain.is_empty() {
        plain.push('/');
    }
    (plain != raw).then_some(plain)
}

/// RFC 3986 §3.3 `pchar` less `pct-encoded`: unreserved, sub-delims, `:`
/// and `@`.
fn is_pchar(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(b, b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',')
        || matches!(b, b';' | b'=' | b':' | b'@')
}

/// Nothing to decode, drop or escape: segments of `pchar`s only (no
/// escape, no backslash, none of the visible bytes a URI may not hold as
/// they are, `[` or `|`, which [`respelled`] escapes), no empty segment
/// and no segment starting with `.`.
fn is_plain(rest: &str) -> bool {
    let bytes = rest.as_bytes();
    !bytes.first().is_some_and(|&b| b == b'.' || b == b'/')
        && bytes.iter().all(|&b| b == b'/' || is_pchar(b))
        && !bytes.windows(2).any(|w| w == b"/." || w == b"//")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(raw: &str) -> (String, bool, bool) {
        let t = target(raw, false).unwrap();
        (t.rel.to_string(), t.dir, matches!(t.rel, Cow::Borrowed(_)))
    }

    #[test]
    fn plain_paths_are_borrowed() {
        assert_eq!(ok("/"), ("".into(), true, true));
        assert_eq!(ok("/index.html"), ("index.html".into(), false, true));
        assert_eq!(ok("/docs/"), ("docs".into(), true, true));
        assert_eq!(ok("/a/b-c_d~e.f.txt"), ("a/b-c_d~e.f.txt".into(), false, true));
    }

    #[test]
    fn escapes_empty_and_dot_segments_are_decoded_and_dropped() {
        assert_eq!(ok("/caf%C3%A9/men%C3%BC.txt"), ("café/menü.txt".into(), false, false));
        assert_eq!(ok("//a///b"), ("a/b".into(), false, false));
        assert_eq!(ok("/./a/./b/."), ("a/b".into(), true, false));
        assert_eq!(ok("/a/%2e"), ("a".into(), true, false));
        assert_eq!(ok("/./a"), ("a".into(), false, false));
        assert_eq!(ok("/a%20b/"), ("a b".into(), true, false));
    }

    /// Another spelling of a path is sent to the plain one; a plain one,
    /// or one that needs its escapes, stays.
    #[test]
    fn other_spellings_are_sent_to_the_plain_one() {
        for (raw, plain) in [
            ("/%70rivate/key", "/private/key"),
            ("//private/key", "/private/key"),
            ("/./private/key", "/private/key"),
            ("/private/./key", "/private/key"),
            ("/private//key", "/private/key"),
            ("/a/.", "/a/"),
            ("//", "/"),
            ("/caf%c3%a9", "/caf%C3%A9"),
            ("/a%21b", "/a!b"),
            ("/a|b", "/a%7Cb"),
            ("/[x]/", "/%5Bx%5D/"),
            ("/a\"b", "/a%22b"),
        ] {
            assert_eq!(respelled(raw, false).as_deref(), Some(plain), "{raw}");
        }
        for raw in ["/", "/a/b.txt", "/dir/", "/caf%C3%A9/", "/a%20b", "/a%3Fb", "/a%25b", "/..", "/%zz", "/.env"] {
            assert_eq!(respelled(raw, false), None, "{raw}");
        }
    }

    #[test]
    fn ways_out_of_the_root_are_forbidden() {
        for raw in [
            "/..",
            "/../etc/passwd",
            "/a/../../b",
            "/%2e%2e/etc/passwd",
            "/.%2E/x",
            "/a%2f..%2f..%2fetc",
            "/..%2Fetc",
            "/a%5c..%5cb",
            "/a\\..\\b",
            "/a%00.txt",
        ] {
            assert_eq!(target(raw, false), Err(403), "{raw}");
            assert_eq!(target(raw, true), Err(403), "{raw} with hidden files served");
        }
    }

    #[test]
    fn malformed_paths_are_bad_requests() {
        for raw in ["", "a/b", "/%", "/%zz", "/a%C3", "/%FF"] {
            assert_eq!(target(raw, false), Err(400), "{raw:?}");
        }
    }

    #[test]
    fn hidden_names_are_not_found_unless_served() {
        for raw in ["/.git/config", "/a/.env", "/%2Ehtpasswd"] {
            assert_eq!(target(raw, false), Err(404), "{raw}");
        }
        assert_eq!(target("/.well-known/x", true).unwrap().rel, ".well-known/x");
    }
}
