//! A query string or a form body into a type of the application's
//! (feature `forms`): serde over the same `application/x-www-form-urlencoded`
//! decoding as [`Request::query_pairs`], as HTML forms send them
//! (`serde_html_form`: a name repeated, as by a multiple select or
//! same-named checkboxes, fills a `Vec`; an empty value is `None` for an
//! `Option`), and a `400` that names the field when a value does not fit.
//! Bytes that do not decode to UTF-8 read as U+FFFD, as in
//! [`Request::query_pairs`] (where [`Request::form`] refuses them).

use serde::de::DeserializeOwned;

use crate::error::{Error, ErrorKind, naming};
use crate::request::Request;
use crate::urlencoded::FORM_TYPE;

impl Request<'_> {
    /// The query string (empty when there is none) as a `T`: each field
    /// from the pair of its name, parsed as its type; `Option` fields may
    /// be missing or empty, a `Vec` takes every pair of its name, and
    /// `#[serde(default)]` works as usual.
    ///
    /// ```
    /// # #[cfg(feature = "router")] {
    /// use httpool::{Request, Response, Router};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Search {
    ///     q: String,
    ///     page: Option<u32>,
    /// }
    ///
    /// let app = Router::new().get("/search", |req| {
    ///     let search: Search = req.query_as()?;
    ///     Ok::<_, httpool::Error>(format!("{} page {}\n", search.q, search.page.unwrap_or(1)))
    /// });
    /// # use httpool::test::TestRequest;
    /// assert_eq!(TestRequest::get("/search?q=rust+http").send(&app).text(), "rust http page 1\n");
    /// let bad = TestRequest::get("/search?q=x&page=two").send(&app);
    /// assert_eq!(bad.status(), 400);
    /// assert!(bad.text().contains("page"));
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ErrorKind::BadRequest`] (`400`) when a field is missing or its
    /// value does not parse; the message names the field.
    pub fn query_as<T: DeserializeOwned>(&self) -> Result<T, Error> {
        decode(self.query().unwrap_or("").as_bytes(), "bad query string")
    }

    /// The form body (`application/x-www-form-urlencoded`, an HTML form's
    /// default) as a `T`, within the server's `max_body_bytes`; fields as
    /// in [`Request::query_as`].
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::UnsupportedMediaType`] (`415`) when `Content-Type`
    ///   is missing or another type (checked before the body is read);
    /// - [`ErrorKind::BodyTooLarge`] (`413`) past the limit;
    /// - [`ErrorKind::BadRequest`] (`400`) when a field is missing or its
    ///   value does not parse, naming the field;
    /// - the other errors of [`Request::read_body`].
    pub fn form_as<T: DeserializeOwned>(&mut self) -> Result<T, Error> {
        self.form_as_within(usize::MAX)
    }

    /// [`Request::form_as`] with a body limit of its own (the server's
    /// `max_body_bytes` applies too).
    ///
    /// # Errors
    ///
    /// As [`Request::form_as`].
    pub fn form_as_within<T: DeserializeOwned>(&mut self, limit: usize) -> Result<T, Error> {
        if !self.media_type().is_some_and(|t| t.eq_ignore_ascii_case(FORM_TYPE)) {
            return Err(Error::new(
                ErrorKind::UnsupportedMediaType,
                "expected Content-Type: application/x-www-form-urlencoded",
            ));
        }
        let body = self.read_body(limit)?;
        // serde_html_form gathers every pair before `T` sees one.
        crate::urlencoded::count_form_fields(&body)?;
        decode(&body, "bad form")
    }
}

/// `bytes` (`name=value&...`) as a `T`; an error says which field.
fn decode<T: DeserializeOwned>(bytes: &[u8], context: &'static str) -> Result<T, Error> {
    let pairs = serde_html_form::Deserializer::from_bytes(bytes);
    serde_path_to_error::deserialize(pairs)
        .map_err(|e| Error::new(ErrorKind::BadRequest, context).with_source(naming(&e)))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use crate::test::TestRequest;
    use crate::{Request, Response};

    #[derive(Debug, Deserialize, PartialEq)]
    struct Page {
        q: String,
        page: Option<u32>,
        #[serde(default)]
        exact: bool,
        #[serde(default)]
        tag: Vec<String>,
    }

    fn answer(result: Result<Page, crate::Error>) -> Response {
        match result {
            Ok(page) => Response::text(format!("{page:?}")),
            Err(e) => Response::text(format!("{} {e}", e.status())).with_status(e.status()),
        }
    }

    fn query(req: &mut Request) -> Response {
        answer(req.query_as())
    }

    fn form(req: &mut Request) -> Response {
        answer(req.form_as_within(64))
    }

    #[test]
    fn a_query_into_a_type_with_optional_and_default_fields() {
        let text = |target| TestRequest::get(target).send(&query).text().to_owned();
        assert_eq!(
            text("/?q=rust+http&page=2&exact=true"),
            r#"Page { q: "rust http", page: Some(2), exact: true, tag: [] }"#
        );
        assert_eq!(text("/?q=caf%C3%A9"), r#"Page { q: "café", page: None, exact: false, tag: [] }"#);
        // As HTML forms send them: a repeated name, an empty field.
        assert_eq!(text("/?q=x&tag=a&tag=b&page="), r#"Page { q: "x", page: None, exact: false, tag: ["a", "b"] }"#);
        assert_eq!(text("/?q=x&tag=a"), r#"Page { q: "x", page: None, exact: false, tag: ["a"] }"#);
    }

    #[test]
    fn a_query_value_that_does_not_fit_is_400_naming_the_field() {
        let resp = TestRequest::get("/?q=x&page=two").send(&query);
        assert_eq!(resp.status(), 400);
        assert_eq!(resp.text(), "400 bad query string: `page`: invalid digit found in string");
        let missing = TestRequest::get("/?page=1").send(&query);
        assert_eq!((missing.status(), missing.text()), (400, "400 bad query string: missing field `q`"));
        assert_eq!(TestRequest::get("/").send(&query).status(), 400, "no query: q is missing");
    }

    #[test]
    fn a_form_into_a_type() {
        let post =
            |body: &str| TestRequest::post("/").header("Content-Type", "application/x-www-form-urlencoded").body(body);
        assert_eq!(
            post("q=a+b&page=3").send(&form).text(),
            r#"Page { q: "a b", page: Some(3), exact: false, tag: [] }"#
        );
        let bad = post("q=a&exact=maybe").send(&form);
        assert_eq!(
            (bad.status(), bad.text()),
            (400, r#"400 bad form: `exact`: invalid value: string "maybe", expected "true", "on" or "false""#)
        );
        assert_eq!(post(&"q=x".repeat(30)).send(&form).status(), 413, "past the limit");
        let json = TestRequest::post("/").header("Content-Type", "application/json").body("{}").send(&form);
        assert_eq!(json.status(), 415);
    }
}
