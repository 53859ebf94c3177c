//! Constructors for common answers: HTML, redirects (RFC 9110 §15.4)
//! with a `Location` checked to be a URI reference, and the plain answer
//! the server gives itself for a status.

use std::borrow::Cow;

use super::{Content, Response};
use crate::status::reason;

/// The answer to a request the server refuses or could not hand to its
/// handler: the status, its reason phrase as a short text body, and
/// `Connection: close`.
pub(crate) fn error_response(code: u16) -> Response {
    Response::status(code).with_own_type("text/plain; charset=utf-8").with_body(reason(code)).with_close()
}

impl Response {
    /// `200 OK` with a `text/html; charset=utf-8` body.
    ///
    /// ```
    /// let page = httpool::Response::html("<!doctype html><title>hi</title><p>hello</p>\n");
    /// assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    /// ```
    pub fn html(body: impl Into<Content>) -> Response {
        Response::status(200).with_own_type("text/html; charset=utf-8").with_body(body)
    }

    /// A redirect: `status` (`301`, `302`, `303`, `307` or `308`) with
    /// `Location: location` and no body.
    ///
    /// `location` is a URI reference (RFC 3986 §4.1): absolute
    /// (`https://example.com/a`) or relative (`/login?next=%2Fa`, `../b`),
    /// in ASCII with anything else percent-encoded. Another status, or a
    /// location with a space, a control, a non-ASCII character or a `%` not
    /// followed by two hex digits, makes the response invalid: the client
    /// gets a `500`, never a header it was not meant to see.
    ///
    /// Prefer the named ones: [`see_other`](Response::see_other) after a
    /// form post, [`temporary_redirect`](Response::temporary_redirect) and
    /// [`permanent_redirect`](Response::permanent_redirect), which keep
    /// the method. `301` and `302` let clients turn a `POST` into a `GET`.
    ///
    /// ```
    /// let moved = httpool::Response::redirect(301, "/new-home");
    /// assert_eq!((moved.status_code(), moved.header("location")), (301, Some("/new-home")));
    /// ```
    pub fn redirect(status: u16, location: impl Into<Cow<'static, str>>) -> Response {
        let location = location.into();
        let mut resp = Response::status(status);
        if !matches!(status, 301 | 302 | 303 | 307 | 308) {
            error!("Response::redirect with status {status}, not a redirect; answering 500");
            resp.invalid = Some("redirect status is not 301, 302, 303, 307 or 308");
        } else if !is_uri_reference(&location) {
            error!("redirect to {location:?}, not a URI reference; answering 500");
            resp.invalid = Some("Location is not a URI reference");
        } else {
            resp.set_header("Location", location);
        }
        resp
    }

    /// `303 See Other` to `location`: the client fetches it with `GET`
    /// (the answer to a form post). See [`Response::redirect`].
    pub fn see_other(location: impl Into<Cow<'static, str>>) -> Response {
        Response::redirect(303, location)
    }

    /// `307 Temporary Redirect` to `location`, same method and body. See
    /// [`Response::redirect`].
    pub fn temporary_redirect(location: impl Into<Cow<'static, str>>) -> Response {
        Response::redirect(307, location)
    }

    /// `308 Permanent Redirect` to `location`, same method and body;
    /// clients and caches may remember it. See [`Response::redirect`].
    pub fn permanent_redirect(location: impl Into<Cow<'static, str>>) -> Response {
        Response::redirect(308, location)
    }
}

/// Whether `s` is made only of the characters of a URI reference (RFC 3986
/// §2: unreserved, reserved, and `%` with two hex digits). The grammar's
/// structure is not checked: these characters cannot break the header.
pub(crate) fn is_uri_reference(s: &str) -> bool {
    let bytes = s.as_bytes();
    bytes.iter().enumerate().all(|(i, &b)| match b {
        b'%' => bytes.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)),
        _ => is_uri_char(b),
    })
}

/// Unreserved and reserved characters of RFC 3986 §2.2–2.3.
pub(crate) fn is_uri_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_carry_status_and_location() {
        for (resp, status) in [
            (Response::see_other("/todos/7"), 303),
            (Response::temporary_redirect("https://example.com/a?b=c#d"), 307),
            (Response::permanent_redirect("../up%20one"), 308),
            (Response::redirect(301, "/"), 301),
            (Response::redirect(302, "//cdn.example/x"), 302),
        ] {
            assert_eq!(resp.status_code(), status);
            assert!(resp.invalid.is_none(), "{resp:?}");
            assert!(resp.header("location").is_some());
        }
    }

    #[test]
    fn a_status_that_is_not_a_redirect_is_invalid() {
        for status in [200, 300, 304, 305, 306, 309, 404] {
            let resp = Response::redirect(status, "/");
            assert_eq!(resp.invalid, Some("redirect status is not 301, 302, 303, 307 or 308"), "{status}");
        }
    }

    #[test]
    fn a_location_that_is_not_a_uri_reference_is_invalid() {
        for bad in ["/a\r\nSet-Cookie: x=1", "/a b", "/café", "/a\0", "/50%", "/%zz", "/<script>", "/a\"b", "/a\\b"] {
            let resp = Response::see_other(bad);
            assert_eq!(resp.invalid, Some("Location is not a URI reference"), "{bad:?}");
            assert_eq!(resp.header("location"), None, "{bad:?}");
        }
        assert!(Response::see_other("").invalid.is_none(), "an empty reference is this resource");
    }

    #[test]
    fn html_is_text_html_in_utf8() {
        let resp = Response::html("<p>hi</p>");
        assert_eq!((resp.status_code(), resp.header("content-type")), (200, Some("text/html; charset=utf-8")));
    }
}
