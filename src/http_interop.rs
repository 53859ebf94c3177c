//! Conversions to and from the `http` crate's types (feature `http`), so
//! httpool handlers can use routers and middleware written against them.

use crate::proto::Version;
use crate::request::Request;
use crate::response::{Content, Response};

impl Request<'_> {
    /// The request head as an `http::Request<()>` (the body stays on this
    /// request: read it from here).
    ///
    /// # Errors
    ///
    /// The `http` crate's error when it refuses the target, a header name or
    /// a value (it is stricter than HTTP/1.1 in places, e.g. about
    /// non-ASCII in targets).
    pub fn to_http(&self) -> Result<http::Request<()>, http::Error> {
        let version = match self.version() {
            Version::Http10 => http::Version::HTTP_10,
            Version::Http11 => http::Version::HTTP_11,
        };
        let mut builder = http::Request::builder().method(self.method()).uri(self.target()).version(version);
        for (name, value) in self.headers() {
            builder = builder.header(name, value);
        }
        builder.body(())
    }
}

impl<B: Into<Content>> From<http::Response<B>> for Response {
    /// Status, headers and body. A header value that is not UTF-8 makes the
    /// response invalid (the client gets a `500`), as any invalid header does.
    fn from(resp: http::Response<B>) -> Response {
        let (parts, body) = resp.into_parts();
        let mut out = Response::status(parts.status.as_u16()).with_body(body);
        for (name, value) in &parts.headers {
            let value = String::from_utf8(value.as_bytes().to_vec()).unwrap_or_else(|_| "\u{0}".into());
            out.set_header(name.as_str().to_owned(), value);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::encode::plan;

    use super::*;

    #[test]
    fn http_responses_convert_with_their_headers() {
        let resp = http::Response::builder()
            .status(201)
            .header("Location", "/x")
            .header("Content-Type", "application/json")
            .body("{}")
            .unwrap();
        let resp = Response::from(resp);
        assert_eq!(resp.status_code(), 201);
        assert_eq!(resp.header("location"), Some("/x"));
        assert_eq!(resp.header("content-type"), Some("application/json"));
        assert!(plan(&resp, Version::Http11, false).is_ok());
    }

    /// The path and query a handler reads are those of the `http` crate's
    /// URI, a fragment (which some clients send) in neither: middleware
    /// on `to_http` and the router see the same path.
    #[test]
    fn path_and_query_agree_with_the_http_uri() {
        for target in
            ["/a?x=1", "/a#b", "/a?x=1#b", "/a#b?x=1", "http://example.com#/admin", "http://example.com/a?x#y"]
        {
            let raw = format!("GET {target} HTTP/1.1\r\nHost: example.com\r\n\r\n");
            crate::request_fixture::with_request(raw.as_bytes(), |req| {
                let uri = req.to_http().unwrap().uri().clone();
                assert_eq!((req.path(), req.query()), (uri.path(), uri.query()), "{target}");
            });
        }
    }

    #[test]
    fn non_utf8_header_values_make_the_response_invalid() {
        let value = http::HeaderValue::from_bytes(b"\xff").unwrap();
        let resp = http::Response::builder().header("X", value).body("").unwrap();
        assert!(plan(&Response::from(resp), Version::Http11, false).is_err());
    }
}
