//! Header lookups over a request head, and validation of the header names
//! and values a handler sets on a response.

use crate::parse::HeaderSpan;
use crate::proto::{any_byte, is_token};

/// The headers of a request: spans into the head bytes.
#[derive(Clone, Copy)]
pub(crate) struct Headers<'a> {
    head: &'a [u8],
    spans: &'a [HeaderSpan],
}

impl<'a> Headers<'a> {
    pub(crate) fn new(head: &'a [u8], spans: &'a [HeaderSpan]) -> Headers<'a> {
        Headers { head, spans }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&'a str> {
        self.all_bytes(name).next().and_then(|v| std::str::from_utf8(v).ok())
    }

    pub(crate) fn all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'a [u8]> + 's {
        self.all_bytes(name)
    }

    fn all_bytes<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'a [u8]> + 's {
        let head = self.head;
        self.spans
            .iter()
            .filter(move |s| slice(head, s.name).eq_ignore_ascii_case(name.as_bytes()))
            .map(move |s| slice(head, s.value))
    }

    pub(crate) fn iter(&self) -> HeaderIter<'a> {
        HeaderIter { head: self.head, spans: self.spans.iter() }
    }
}

fn slice(head: &[u8], (start, len): (u32, u32)) -> &[u8] {
    &head[start as usize..(start + len) as usize]
}

/// The headers of a request in the order received, as `(name, value)`.
#[derive(Clone, Debug)]
pub struct HeaderIter<'a> {
    head: &'a [u8],
    spans: std::slice::Iter<'a, HeaderSpan>,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a str, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let span = self.spans.next()?;
        // httparse accepts only token characters (ASCII) in names.
        let name = std::str::from_utf8(slice(self.head, span.name)).unwrap_or("");
        Some((name, slice(self.head, span.value)))
    }
}

/// Header names whose values must not reach a log.
const SENSITIVE: [&str; 4] = ["authorization", "proxy-authorization", "cookie", "set-cookie"];

/// True for headers whose values `Debug` output redacts.
pub(crate) fn is_sensitive(name: &str) -> bool {
    SENSITIVE.iter().any(|s| s.eq_ignore_ascii_case(name))
}

impl std::fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut map = f.debug_map();
        for (name, value) in self.iter() {
            if is_sensitive(name) {
                map.entry(&name, &"<redacted>");
            } else {
                map.entry(&name, &String::from_utf8_lossy(value));
            }
        }
        map.finish()
    }
}

/// A response header name must be a token (RFC 9110 §5.1).
pub(crate) fn is_valid_name(name: &str) -> bool {
    is_token(name.as_bytes())
}

/// A response header value may hold visible characters, spaces and tabs,
/// never CR, LF, NUL or another control (RFC 9110 §5.5), and no leading or
/// trailing whitespace.
pub(crate) fn is_valid_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    let bad = any_byte(bytes, |b| ((b < 0x20) & (b != b'\t')) | (b == 0x7f));
    let edge_ws = |b: Option<&u8>| matches!(b, Some(b' ' | b'\t'));
    !bad && !edge_ws(bytes.first()) && !edge_ws(bytes.last())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_tokens() {
        assert!(is_valid_name("X-Request-Id"));
        for bad in ["", "X Y", "X:Y", "X\r\nY", "é", "X\0"] {
            assert!(!is_valid_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn values_refuse_controls_and_line_breaks() {
        assert!(is_valid_value("text/plain; charset=utf-8"));
        assert!(is_valid_value(""));
        assert!(is_valid_value("a\tb"));
        for bad in ["a\r\nSet-Cookie: x", "a\nb", "a\rb", "a\0b", "a\x7fb", " a", "a "] {
            assert!(!is_valid_value(bad), "{bad:?}");
        }
    }

    /// The check is folded so that it is vectorized: a control at any
    /// place in values of any length is refused.
    #[test]
    fn a_control_is_refused_wherever_it_is() {
        for len in [1, 15, 16, 17, 31, 32, 33, 64, 65, 200] {
            let clean = "a".repeat(len);
            assert!(is_valid_value(&clean), "{len}");
            for at in 0..len {
                let inner = at != 0 && at != len - 1;
                let cases = [
                    (b'\t', inner),
                    (b' ', inner),
                    (b'\n', false),
                    (0, false),
                    (0x1f, false),
                    (0x7f, false),
                    (b'~', true),
                ];
                for (byte, ok) in cases {
                    let mut value = clean.clone().into_bytes();
                    value[at] = byte;
                    let value = String::from_utf8(value).unwrap();
                    assert_eq!(is_valid_value(&value), ok, "{len} {at} {byte}");
                }
                // Bytes past ASCII (obs-text) are accepted anywhere.
                let mut value = clean.clone();
                value.replace_range(at..=at, "é");
                assert!(is_valid_value(&value), "{len} {at} é");
            }
        }
    }

    #[test]
    fn lookups_are_case_insensitive_and_see_every_value() {
        let head = b"Host: a\r\nX-A: 1\r\nx-a: 2\r\n";
        let spans = [
            HeaderSpan { name: (0, 4), value: (6, 1) },
            HeaderSpan { name: (9, 3), value: (14, 1) },
            HeaderSpan { name: (17, 3), value: (22, 1) },
        ];
        let headers = Headers::new(head, &spans);
        assert_eq!(headers.get("HOST"), Some("a"));
        assert_eq!(headers.all("x-A").collect::<Vec<_>>(), [b"1", b"2"]);
        assert_eq!(headers.get("missing"), None);
        assert_eq!(headers.iter().count(), 3);
    }

    #[test]
    fn debug_redacts_credentials() {
        let head = b"Cookie: secret";
        let spans = [HeaderSpan { name: (0, 6), value: (8, 6) }];
        let shown = format!("{:?}", Headers::new(head, &spans));
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("redacted"));
    }
}
