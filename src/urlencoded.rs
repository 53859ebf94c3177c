//! Query strings, percent-decoded paths and form bodies
//! (`application/x-www-form-urlencoded`, as the WHATWG URL standard and
//! browsers write it: `&`-separated `name=value` pairs, `+` for a space,
//! `%XX` for a byte).

use std::borrow::Cow;

use percent_encoding::percent_decode;

use crate::error::{Error, ErrorKind};
use crate::request::Request;

/// The media type of a form body.
pub(crate) const FORM_TYPE: &str = "application/x-www-form-urlencoded";

/// Most fields a form body may have (Go's `net/url` and Django bound them
/// too): each costs a pair of `String`s, some 80 bytes for the two bytes
/// `a&` takes on the wire, so a 1 MiB body of them would be 40 MiB of heap
/// per handler call.
const MAX_FORM_FIELDS: usize = 10_000;

/// The fields of a form body: its non-empty `&`-separated pieces.
fn form_pieces(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.split(|&b| b == b'&').filter(|piece| !piece.is_empty())
}

/// The number of fields of a form body, checked before any is decoded:
/// past [`MAX_FORM_FIELDS`], `413`.
pub(crate) fn count_form_fields(body: &[u8]) -> Result<usize, Error> {
    match form_pieces(body).count() {
        n if n > MAX_FORM_FIELDS => Err(Error::new(ErrorKind::BodyTooLarge, "more than 10000 form fields")),
        n => Ok(n),
    }
}

impl Request<'_> {
    /// The query's `name=value` pairs in order, percent-decoded, `+` read
    /// as a space. A pair without `=` has an empty value; empty pairs
    /// (`a=1&&b=2`) are skipped. Bytes that do not decode to UTF-8 become
    /// U+FFFD, as browsers do: a query is not worth refusing for it.
    ///
    /// ```
    /// # fn handler(req: &mut httpool::Request) -> httpool::Response {
    /// // GET /search?q=rust+http&page=2
    /// let q = req.query_param("q").unwrap_or_default(); // "rust http"
    /// let page: u32 = req.query_param("page").and_then(|p| p.parse().ok()).unwrap_or(1);
    /// for (name, value) in req.query_pairs() {
    ///     // ("q", "rust http"), ("page", "2")
    /// #   let _ = (name, value);
    /// }
    /// # let _ = (q, page);
    /// # httpool::Response::status(204)
    /// # }
    /// ```
    pub fn query_pairs(&self) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
        form_urlencoded::parse(self.query().unwrap_or("").as_bytes())
    }

    /// The value of the first query pair named `name` (after decoding),
    /// decoded as by [`Request::query_pairs`].
    pub fn query_param(&self, name: &str) -> Option<Cow<'_, str>> {
        self.query_pairs().find(|(n, _)| n == name).map(|(_, value)| value)
    }

    /// The path, percent-decoded (`/caf%C3%A9` → `/café`). Borrowed when
    /// there is nothing to decode. `+` stays a `+` (it means a space only
    /// in queries and forms).
    ///
    /// An encoded `/` (`%2F`) decodes to `/` like any other byte, so it can
    /// no longer be told from a separator: to route on segments that may
    /// contain one, split [`Request::path`] on `/` first and decode each
    /// segment.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::BadRequest`] when a `%` is not followed by two hex
    /// digits, or the decoded bytes are not UTF-8: answer `400`.
    pub fn path_decoded(&self) -> Result<Cow<'_, str>, Error> {
        decode_component(self.path())
    }

    /// Reads an `application/x-www-form-urlencoded` body (an HTML form
    /// posted with its default encoding) within the server's
    /// `max_body_bytes`.
    ///
    /// ```
    /// # fn handler(req: &mut httpool::Request) -> httpool::Response {
    /// let form = match req.form() {
    ///     Ok(form) => form,
    ///     Err(e) => return httpool::Response::status(400).with_body(e.to_string()),
    /// };
    /// let name = form.get("name").unwrap_or("stranger");
    /// httpool::Response::text(format!("Hello, {name}!\n"))
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::UnsupportedMediaType`] (`415`) when `Content-Type` is
    ///   missing or another type (checked before the body is read);
    /// - [`ErrorKind::BodyTooLarge`] (`413`) past the limit, or past
    ///   10,000 fields;
    /// - [`ErrorKind::BadRequest`] (`400`) when a name or value does not
    ///   decode to UTF-8 (a `%` without two hex digits is kept as written,
    ///   as browsers do);
    /// - the other errors of [`Request::read_body`].
    pub fn form(&mut self) -> Result<Form, Error> {
        self.form_within(usize::MAX)
    }

    /// [`Request::form`] with a body limit of its own (the server's
    /// `max_body_bytes` applies too).
    ///
    /// # Errors
    ///
    /// As [`Request::form`].
    pub fn form_within(&mut self, limit: usize) -> Result<Form, Error> {
        if !self.media_type().is_some_and(|t| t.eq_ignore_ascii_case(FORM_TYPE)) {
            return Err(Error::new(
                ErrorKind::UnsupportedMediaType,
                "expected Content-Type: application/x-www-form-urlencoded",
            ));
        }
        Form::parse(&self.read_body(limit)?)
    }
}

/// Decodes `%XX` escapes strictly: a bad escape or bytes that are not UTF-8
/// are an error.
pub(crate) fn decode_component(s: &str) -> Result<Cow<'_, str>, Error> {
    let bytes = s.as_bytes();
    let bad_escape = bytes
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'%' && !(bytes.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))));
    if bad_escape {
        return Err(Error::new(ErrorKind::BadRequest, "a % not followed by two hex digits"));
    }
    percent_decode(bytes)
        .decode_utf8()
        .map_err(|e| Error::new(ErrorKind::BadRequest, "percent-decoded bytes are not UTF-8").with_source(e))
}

/// The fields of a form body, in the order sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Form {
    pairs: Vec<(String, String)>,
}

impl Form {
    /// Parses `application/x-www-form-urlencoded` bytes; an error when a
    /// name or value does not decode to UTF-8.
    pub(crate) fn parse(body: &[u8]) -> Result<Form, Error> {
        let mut pairs = Vec::with_capacity(count_form_fields(body)?);
        for piece in form_pieces(body) {
            let at = piece.iter().position(|&b| b == b'=');
            let (name, value) = at.map_or((piece, &b""[..]), |i| (&piece[..i], &piece[i + 1..]));
            pairs.push((decode_form_part(name)?, decode_form_part(value)?));
        }
        Ok(Form { pairs })
    }

    /// The value of the first field named `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Every value of the fields named `name` (a multiple select, repeated
    /// checkboxes), in order.
    pub fn get_all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s str> + 's {
        self.pairs.iter().filter(move |(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Every `(name, value)` in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// True when the form has no fields.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The fields as `(name, value)` pairs, in order.
    pub fn into_pairs(self) -> Vec<(String, String)> {
        self.pairs
    }
}

/// One name or value of a form: `+` is a space, then `%XX` escapes; a `%`
/// without two hex digits stays as it is (WHATWG URL, §5.1).
fn decode_form_part(raw: &[u8]) -> Result<String, Error> {
    let spaced: Cow<'_, [u8]> = match raw.contains(&b'+') {
        true => raw.iter().map(|&b| if b == b'+' { b' ' } else { b }).collect::<Vec<u8>>().into(),
        false => raw.into(),
    };
    // Exactly as long as the field may decode to (decoding only shrinks),
    // not the 8 bytes or more a collect starts with.
    let mut bytes = Vec::with_capacity(spaced.len());
    bytes.extend(percent_decode(&spaced));
    String::from_utf8(bytes).map_err(|e| Error::new(ErrorKind::BadRequest, "form field is not UTF-8").with_source(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request_fixture::{with_request, with_request_limited};

    fn pairs(form: &Form) -> Vec<(&str, &str)> {
        form.iter().collect()
    }

    #[test]
    fn a_form_of_too_many_fields_is_refused_before_it_is_decoded() {
        let most = "a&".repeat(MAX_FORM_FIELDS);
        assert_eq!(Form::parse(most.as_bytes()).unwrap().len(), MAX_FORM_FIELDS);
        let over = "a&".repeat(MAX_FORM_FIELDS + 1);
        assert_eq!(Form::parse(over.as_bytes()).unwrap_err().kind(), ErrorKind::BodyTooLarge);
        // Empty pieces are no fields.
        let empty = "&".repeat(4 * MAX_FORM_FIELDS) + "a=1";
        assert_eq!(Form::parse(empty.as_bytes()).unwrap().len(), 1);
    }

    #[test]
    fn form_fields_decode_plus_and_escapes_in_order() {
        let form = Form::parse(b"name=Ada+Lovelace&lang=en&lang=fr&note=50%25+off%21&empty=&flag").unwrap();
        assert_eq!(
            pairs(&form),
            [
                ("name", "Ada Lovelace"),
                ("lang", "en"),
                ("lang", "fr"),
                ("note", "50% off!"),
                ("empty", ""),
                ("flag", "")
            ]
        );
        assert_eq!(form.get("lang"), Some("en"));
        assert_eq!(form.get_all("lang").collect::<Vec<_>>(), ["en", "fr"]);
        assert_eq!(form.get("missing"), None);
        assert_eq!(form.len(), 6);
    }

    #[test]
    fn form_skips_empty_pairs_and_keeps_bad_escapes() {
        let form = Form::parse(b"&&a=1&&b=%zz%4&c=%E2%82%AC&=x").unwrap();
        assert_eq!(pairs(&form), [("a", "1"), ("b", "%zz%4"), ("c", "€"), ("", "x")]);
        assert!(Form::parse(b"").unwrap().is_empty());
    }

    #[test]
    fn form_bytes_that_are_not_utf8_are_a_bad_request() {
        for body in [&b"a=%FF"[..], b"%C3=1", b"a=\xff"] {
            let e = Form::parse(body).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::BadRequest, "{body:?}");
        }
    }

    #[test]
    fn components_decode_strictly() {
        assert!(matches!(decode_component("/a/b.txt"), Ok(Cow::Borrowed("/a/b.txt"))));
        assert_eq!(decode_component("/caf%C3%A9/a+b%20c").unwrap(), "/café/a+b c");
        assert_eq!(decode_component("/%2e%2E/%2F").unwrap(), "/..//");
        for bad in ["/%", "/%4", "/%zz", "/%4g/", "/%FF", "/%C3"] {
            assert_eq!(decode_component(bad).unwrap_err().kind(), ErrorKind::BadRequest, "{bad}");
        }
    }

    #[test]
    fn query_pairs_of_a_request() {
        let raw = b"GET /search?q=rust+http&page=2&&flag&sym=%E2%82%AC%21&bad=%FF&q=again HTTP/1.1\r\nHost: x\r\n\r\n";
        with_request(raw, |req| {
            let pairs: Vec<(String, String)> = req.query_pairs().map(|(n, v)| (n.into(), v.into())).collect();
            let want =
                [("q", "rust http"), ("page", "2"), ("flag", ""), ("sym", "€!"), ("bad", "\u{fffd}"), ("q", "again")];
            assert_eq!(pairs, want.map(|(n, v)| (n.to_owned(), v.to_owned())));
            assert_eq!(req.query_param("q").as_deref(), Some("rust http"));
            assert_eq!(req.query_param("flag").as_deref(), Some(""));
            assert_eq!(req.query_param("missing"), None);
        });
        with_request(b"GET /plain HTTP/1.1\r\nHost: x\r\n\r\n", |req| assert_eq!(req.query_pairs().count(), 0));
    }

    #[test]
    fn path_decoded_of_a_request() {
        with_request(b"GET /caf%C3%A9/a+b?x=%20 HTTP/1.1\r\nHost: x\r\n\r\n", |req| {
            assert_eq!(req.path(), "/caf%C3%A9/a+b");
            assert_eq!(req.path_decoded().unwrap(), "/café/a+b");
        });
        with_request(b"GET /%C3 HTTP/1.1\r\nHost: x\r\n\r\n", |req| {
            assert_eq!(req.path_decoded().unwrap_err().kind(), ErrorKind::BadRequest);
        });
    }

    fn post(content_type: &str, body: &str) -> String {
        format!("POST /f HTTP/1.1\r\nHost: x\r\n{content_type}Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[test]
    fn form_reads_a_urlencoded_body() {
        let raw = post("Content-Type: Application/X-WWW-Form-Urlencoded; charset=UTF-8\r\n", "name=Ada+L&lang=en");
        let form = with_request(raw.as_bytes(), |req| req.form()).unwrap();
        assert_eq!(pairs(&form), [("name", "Ada L"), ("lang", "en")]);
        assert_eq!(form.into_pairs()[0], ("name".to_owned(), "Ada L".to_owned()));
    }

    #[test]
    fn form_refuses_other_types_before_reading() {
        for content_type in ["", "Content-Type: text/plain\r\n", "Content-Type: multipart/form-data; boundary=x\r\n"] {
            let raw = post(content_type, "a=1");
            let (kind, read) =
                with_request(raw.as_bytes(), |req| (req.form().unwrap_err().kind(), req.body().bytes_read()));
            assert_eq!((kind, read), (ErrorKind::UnsupportedMediaType, 0), "{content_type:?}");
        }
    }

    #[test]
    fn form_limits_and_malformed_bodies() {
        let form_type = "Content-Type: application/x-www-form-urlencoded\r\n";
        let raw = post(form_type, "a=0123456789");
        let (kind, read) =
            with_request(raw.as_bytes(), |req| (req.form_within(5).unwrap_err().kind(), req.body().bytes_read()));
        assert_eq!((kind, read), (ErrorKind::BodyTooLarge, 0), "refused on Content-Length alone");
        let chunked = format!(
            "POST /f HTTP/1.1\r\nHost: x\r\n{form_type}Transfer-Encoding: chunked\r\n\r\nc\r\na=0123456789\r\n0\r\n\r\n"
        );
        let kind = with_request_limited(chunked.as_bytes(), 8, |req| req.form().unwrap_err().kind());
        assert_eq!(kind, ErrorKind::BodyTooLarge, "the server's max_body_bytes");
        let raw = post(form_type, "a=%FF");
        assert_eq!(with_request(raw.as_bytes(), |req| req.form().unwrap_err().kind()), ErrorKind::BadRequest);
        let bad_chunks = format!("POST /f HTTP/1.1\r\nHost: x\r\n{form_type}Transfer-Encoding: chunked\r\n\r\nzz\r\n");
        assert_eq!(with_request(bad_chunks.as_bytes(), |req| req.form().unwrap_err().kind()), ErrorKind::BadRequest);
    }

    #[test]
    fn a_plain_connection_is_not_tls() {
        with_request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", |req| assert!(!req.is_tls()));
    }
}
