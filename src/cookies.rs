//! Cookies: reading the request's `Cookie` headers (RFC 6265 §5.4), and
//! with feature `cookies`, `Set-Cookie` from the `cookie` crate's builder.
//!
//! Reading needs no crate: a `Cookie` header is `name=value` pairs split by
//! `; `, and parsing it here borrows the request head and allocates
//! nothing. Writing takes the `cookie` crate's `Cookie`, whose attributes
//! (`Expires` dates, `SameSite`, `Max-Age`) it formats; what the crate does
//! not check, a name that is not a token or a value or attribute that could
//! end the cookie early, makes the response invalid here (`500`).

use crate::request::Request;

impl Request<'_> {
    /// The value of the first cookie named `name`, as sent: not
    /// percent-decoded, and surrounding double quotes kept.
    ///
    /// ```
    /// # fn handler(req: &mut httpool::Request) -> httpool::Response {
    /// match req.cookie("session") {
    ///     Some(id) => httpool::Response::text(format!("session {id}\n")),
    ///     None => httpool::Response::status(401),
    /// }
    /// # }
    /// ```
    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.cookies().find(|&(n, _)| n == name).map(|(_, value)| value)
    }

    /// Every cookie the request carries, as `(name, value)` in the order
    /// sent, over all its `Cookie` headers. A pair without `=` is a value
    /// with an empty name (RFC 6265bis §5.7.4); a header that is not UTF-8
    /// is skipped.
    pub fn cookies(&self) -> impl Iterator<Item = (&str, &str)> {
        self.header_all("cookie").filter_map(|value| std::str::from_utf8(value).ok()).flat_map(split_cookies)
    }
}

/// The `(name, value)` pairs of one `Cookie` header value.
fn split_cookies(header: &str) -> impl Iterator<Item = (&str, &str)> {
    header.split(';').map(|pair| pair.trim_matches([' ', '\t'])).filter(|pair| !pair.is_empty()).map(|pair| match pair
        .split_once('=')
    {
        Some((name, value)) => (name.trim_end_matches([' ', '\t']), value.trim_start_matches([' ', '\t'])),
        None => ("", pair),
    })
}

#[cfg(feature = "cookies")]
mod set_cookie {
    use cookie::Cookie;

    use crate::proto::is_token;
    use crate::response::Response;

    impl Response {
        /// Adds a `Set-Cookie` header for `cookie`, built with the
        /// [`cookie`](crate::cookie) crate (re-exported as
        /// `httpool::cookie`).
        ///
        /// The name must be a token and the value cookie-octets (RFC 6265
        /// §4.1.1: visible ASCII but `"` `,` `;` `\`, optionally in double
        /// quotes), so encode anything else (percent-encoding, base64)
        /// yourself; `Path` and `Domain` may not hold a `;` or a control.
        /// Otherwise the response is invalid and the client gets a `500`
        /// (the cookie would end early, or carry attributes nobody set).
        ///
        /// ```
        /// use httpool::Response;
        /// use httpool::cookie::{Cookie, SameSite};
        ///
        /// let resp = Response::text("signed in\n").with_cookie(
        ///     Cookie::build(("session", "d1f3a9"))
        ///         .path("/")
        ///         .http_only(true)
        ///         .secure(true)
        ///         .same_site(SameSite::Lax),
        /// );
        /// assert_eq!(resp.header("set-cookie"), Some("session=d1f3a9; HttpOnly; SameSite=Lax; Secure; Path=/"));
        ///
        /// // Signing out: an empty value that has already expired.
        /// let out = Response::text("bye\n").with_cookie(Cookie::build("session").path("/").removal());
        /// # let _ = out;
        /// ```
        pub fn with_cookie<'c>(mut self, cookie: impl Into<Cookie<'c>>) -> Response {
            let cookie = cookie.into();
            match check(&cookie) {
                Ok(()) => self.set_header("Set-Cookie", cookie.to_string()),
                Err(why) => {
                    // The value may be a secret: name the cookie only.
                    error!("handler set cookie {:?} with {why}; answering 500", cookie.name());
                    self.invalid = Some("invalid cookie");
                }
            }
            self
        }
    }

    /// Why `cookie` cannot be written as a `Set-Cookie` header as it is.
    fn check(cookie: &Cookie<'_>) -> Result<(), &'static str> {
        if !is_token(cookie.name().as_bytes()) {
            return Err("a name that is not a token");
        }
        let value = cookie.value();
        let unquoted = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value);
        if !unquoted.bytes().all(is_cookie_octet) {
            return Err("a value outside cookie-octets");
        }
        let attribute_ok = |v: Option<&str>| v.is_none_or(|v| v.bytes().all(|b| b >= 0x20 && b != 0x7f && b != b';'));
        if !attribute_ok(cookie.path()) || !attribute_ok(cookie.domain()) {
            return Err("a Path or Domain holding ';' or a control");
        }
        Ok(())
    }

    /// `cookie-octet` (RFC 6265 §4.1.1): visible ASCII but DQUOTE, comma,
    /// semicolon and backslash.
    fn is_cookie_octet(b: u8) -> bool {
        matches!(b, 0x21 | 0x23..=0x2b | 0x2d..=0x3a | 0x3c..=0x5b | 0x5d..=0x7e)
    }

    #[cfg(test)]
    mod tests {
        use cookie::{Cookie, SameSite};

        use crate::response::Response;

        #[test]
        fn set_cookie_carries_the_attributes() {
            let resp = Response::status(204).with_cookie(
                Cookie::build(("id", "a3fWa"))
                    .path("/docs")
                    .domain("example.com")
                    .max_age(cookie::time::Duration::hours(1))
                    .same_site(SameSite::Strict)
                    .http_only(true),
            );
            assert_eq!(
                resp.header("set-cookie"),
                Some("id=a3fWa; HttpOnly; SameSite=Strict; Path=/docs; Domain=example.com; Max-Age=3600")
            );
            assert!(resp.invalid.is_none());
        }

        #[test]
        fn each_cookie_is_its_own_header_and_debug_redacts_them() {
            let resp = Response::status(204).with_cookie(("a", "secret1")).with_cookie(("b", "\"quoted\""));
            let all: Vec<_> = resp.headers.iter().filter(|(n, _)| n == "Set-Cookie").map(|(_, v)| &**v).collect();
            assert_eq!(all, ["a=secret1", "b=\"quoted\""]);
            let shown = format!("{resp:?}");
            assert!(!shown.contains("secret1"), "{shown}");
        }

        #[test]
        fn cookies_that_would_break_out_make_the_response_invalid() {
            let bad = [
                Cookie::new("a", "x; Domain=evil.example"),
                Cookie::new("a", "two words"),
                Cookie::new("a", "x\r\nSet-Cookie: b=1"),
                Cookie::new("a", "back\\slash"),
                Cookie::new("a b", "1"),
                Cookie::new("", "1"),
                Cookie::build(("a", "1")).path("/; Domain=evil.example").build(),
                Cookie::build(("a", "1")).domain("x\0y").build(),
            ];
            for cookie in bad {
                let shown = cookie.to_string();
                let resp = Response::status(204).with_cookie(cookie);
                assert_eq!(resp.invalid, Some("invalid cookie"), "{shown}");
                assert_eq!(resp.header("set-cookie"), None, "{shown}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_cookies;
    use crate::request_fixture::with_request;

    #[test]
    fn cookies_of_a_request_over_every_cookie_header() {
        let raw = b"GET / HTTP/1.1\r\nHost: x\r\nCookie: sid=abc; theme=dark\r\nCookie: lang=en; sid=second\r\nCookie: bad=\xff\r\n\r\n";
        with_request(raw, |req| {
            assert_eq!(
                req.cookies().collect::<Vec<_>>(),
                [("sid", "abc"), ("theme", "dark"), ("lang", "en"), ("sid", "second")]
            );
            assert_eq!(req.cookie("sid"), Some("abc"));
            assert_eq!(req.cookie("lang"), Some("en"));
            assert_eq!(req.cookie("bad"), None);
            assert_eq!(req.cookie("Sid"), None, "names are case-sensitive");
        });
        with_request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", |req| assert_eq!(req.cookies().count(), 0));
    }

    #[test]
    fn cookie_pairs_split_on_semicolons_and_trim_whitespace() {
        let pairs: Vec<_> = split_cookies("sid=abc123; theme=dark ;lang = en;;empty=; flag; q=\"x y\"").collect();
        assert_eq!(
            pairs,
            [("sid", "abc123"), ("theme", "dark"), ("lang", "en"), ("empty", ""), ("", "flag"), ("q", "\"x y\"")]
        );
        assert_eq!(split_cookies("").count(), 0);
        assert_eq!(split_cookies("a=b=c").collect::<Vec<_>>(), [("a", "b=c")]);
    }
}

#[cfg(feature = "sessions")]
mod secure;
