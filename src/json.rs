//! JSON request and response bodies (feature `json`, serde_json).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, ErrorKind};
use crate::request::Request;
use crate::response::Response;

impl Request<'_> {
    /// Reads the body as JSON into a `T`, within the server's
    /// `max_body_bytes`.
    ///
    /// ```
    /// # fn handler(req: &mut httpool::Request) -> httpool::Response {
    /// #[derive(serde::Deserialize)]
    /// struct NewTodo {
    ///     title: String,
    /// }
    ///
    /// match req.json::<NewTodo>() {
    ///     Ok(todo) => httpool::Response::json(&serde_json::json!({ "created": todo.title })).with_status(201),
    ///     Err(e) => httpool::Response::status(400).with_body(e.to_string()),
    /// }
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::UnsupportedMediaType`] (`415`) unless `Content-Type`
    ///   is `application/json` or an `application/…+json` type (checked
    ///   before the body is read);
    /// - [`ErrorKind::BodyTooLarge`] (`413`) past the limit;
    /// - [`ErrorKind::BadRequest`] (`400`) for a body that is not JSON or
    ///   does not fit `T` (the source is the `serde_json::Error`, with line
    ///   and column);
    /// - the other errors of [`Request::read_body`].
    pub fn json<T: DeserializeOwned>(&mut self) -> Result<T, Error> {
        self.json_within(usize::MAX)
    }

    /// [`Request::json`] with a body limit of its own (the server's
    /// `max_body_bytes` applies too).
    ///
    /// # Errors
    ///
    /// As [`Request::json`].
    pub fn json_within<T: DeserializeOwned>(&mut self, limit: usize) -> Result<T, Error> {
        if !self.media_type().is_some_and(is_json) {
            return Err(Error::new(ErrorKind::UnsupportedMediaType, "expected Content-Type: application/json"));
        }
        let body = self.read_body(limit)?;
        serde_json::from_slice(&body).map_err(|e| Error::new(ErrorKind::BadRequest, "invalid JSON body").with_source(e))
    }
}

impl Response {
    /// `200 OK` with `value` as an `application/json` body.
    ///
    /// If `value` cannot be serialised (a map with non-string keys, a
    /// `Serialize` impl that fails), the error is logged and the response is
    /// invalid: the client gets a `500`, whatever is chained after.
    ///
    /// ```
    /// let resp = httpool::Response::json(&serde_json::json!({ "id": 7 })).with_status(201);
    /// assert_eq!(resp.header("content-type"), Some("application/json"));
    /// ```
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Response {
        match serde_json::to_vec(value) {
            Ok(body) => Response::status(200).with_content_type("application/json").with_body(body),
            Err(e) => {
                error!("Response::json could not serialise the value: {e}; answering 500");
                let mut resp = Response::status(500);
                resp.invalid = Some("JSON serialisation failed");
                resp
            }
        }
    }
}

/// `application/json`, or a structured `+json` type such as
/// `application/problem+json` (RFC 6839 §3.1).
fn is_json(media_type: &str) -> bool {
    let Some((kind, subtype)) = media_type.split_once('/') else {
        return false;
    };
    let suffix_json = subtype.len() > 5 && subtype[subtype.len() - 5..].eq_ignore_ascii_case("+json");
    kind.eq_ignore_ascii_case("application") && (subtype.eq_ignore_ascii_case("json") || suffix_json)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::request_fixture::with_request;
    use crate::response::Payload;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Todo {
        title: String,
        done: bool,
    }

    fn post(content_type: &str, body: &str) -> String {
        format!("POST /t HTTP/1.1\r\nHost: x\r\n{content_type}Content-Length: {}\r\n\r\n{body}", body.len())
    }

    #[test]
    fn json_bodies_become_values() {
        for content_type in ["application/json", "application/json; charset=utf-8", "application/merge-patch+json"] {
            let raw = post(&format!("Content-Type: {content_type}\r\n"), r#"{"title":"docs","done":true}"#);
            let todo: Todo = with_request(raw.as_bytes(), |req| req.json()).unwrap();
            assert_eq!(todo, Todo { title: "docs".into(), done: true }, "{content_type}");
        }
    }

    #[test]
    fn json_errors_by_kind() {
        let json = "Content-Type: application/json\r\n";
        let kind = |raw: String, limit: usize| {
            with_request(raw.as_bytes(), |req| req.json_within::<Todo>(limit).unwrap_err().kind())
        };
        assert_eq!(kind(post("Content-Type: text/plain\r\n", "{}"), 100), ErrorKind::UnsupportedMediaType);
        assert_eq!(kind(post("", "{}"), 100), ErrorKind::UnsupportedMediaType);
        assert_eq!(kind(post(json, r#"{"title":"x","#), 100), ErrorKind::BadRequest);
        assert_eq!(kind(post(json, r#"{"title":7,"done":true}"#), 100), ErrorKind::BadRequest);
        assert_eq!(kind(post(json, r#"{"title":"long enough","done":true}"#), 10), ErrorKind::BodyTooLarge);
        let e = with_request(post(json, "{").as_bytes(), |req| req.json::<Todo>().unwrap_err());
        assert_eq!(e.to_string(), "invalid JSON body: EOF while parsing an object at line 1 column 1");
    }

    #[test]
    fn json_media_types() {
        for yes in ["application/json", "Application/JSON", "application/problem+json", "application/vnd.api+JSON"] {
            assert!(is_json(yes), "{yes}");
        }
        for no in ["text/json", "application/jsonx", "application/+json", "json", "", "application/x-json5"] {
            assert!(!is_json(no), "{no}");
        }
    }

    #[test]
    fn response_json_serialises_with_its_content_type() {
        let resp = Response::json(&serde_json::json!({ "a": [1, 2] }));
        assert_eq!((resp.status_code(), resp.header("content-type")), (200, Some("application/json")));
        assert!(matches!(&resp.body, Payload::Owned(b) if b == br#"{"a":[1,2]}"#));
    }

    #[test]
    fn a_value_serde_cannot_write_is_a_500_that_stays_one() {
        let keys_not_strings: HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let resp = Response::json(&keys_not_strings).with_status(201);
        assert_eq!(resp.invalid, Some("JSON serialisation failed"));
    }
}
