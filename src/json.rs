//! JSON request and response bodies (feature `json`, serde_json).

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, ErrorKind, naming};
use crate::handler::IntoResponse;
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
    ///   does not fit `T`: the message names the field (`` `items[2].qty`:
    ///   invalid type: string "x", expected u32 at line 1 column 30``); and
    ///   for one nested past 127 arrays and objects, whatever `T` is (a
    ///   recursive `T` is read to that depth at any worker stack size: see
    ///   the [guide](crate::guide)'s Security);
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
        from_slice(&body)
    }
}

/// Stack that must be left when a nested value starts: more than one level
/// of a derived type takes (a level of a type with 128 string fields takes
/// about 22 KiB in a release build, more in a debug one; one of 512 fits
/// in a debug build, one of 1,024 does not), so that a level never reaches
/// the end of the stack between two looks.
const RED_ZONE: usize = 256 * 1024;
/// The size of each stack segment added when less than [`RED_ZONE`] is
/// left: about 100 such levels.
const STACK_SEGMENT: usize = 2 * 1024 * 1024;

/// `body` as a `T`. Nesting is bounded in levels by serde_json (127 arrays
/// and objects, whatever `T` is: past it, `400`), and in stack by
/// continuing on a new segment where the worker's runs low: a recursive
/// `T` takes stack per level in proportion to its fields, and an overflow
/// would abort the process, not panic one worker.
fn from_slice<T: DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    let mut json = serde_json::Deserializer::from_slice(body);
    let mut growing = serde_stacker::Deserializer::new(&mut json);
    (growing.red_zone, growing.stack_size) = (RED_ZONE, STACK_SEGMENT);
    let value = serde_path_to_error::deserialize(growing)
        .map_err(|e| Error::new(ErrorKind::BadRequest, "invalid JSON body").with_source(naming(&e)))?;
    json.end().map_err(|e| Error::new(ErrorKind::BadRequest, "invalid JSON body").with_source(e))?;
    Ok(value)
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
            Ok(body) => Response::status(200).with_own_type("application/json").with_body(body),
            Err(e) => {
                error!("Response::json could not serialise the value: {e}; answering 500");
                let mut resp = Response::status(500);
                resp.invalid = Some("JSON serialisation failed");
                resp
            }
        }
    }
}

/// The error value of a JSON API's handlers, answered `{"error": message}`
/// with its status: `?` on a request helper's [`Error`] gives that error's
/// status and message, and [`JsonError::new`] or [`JsonError::internal`]
/// make the others, so most handlers need no error type of their own.
///
/// ```
/// # #[cfg(feature = "router")] {
/// use httpool::{JsonError, Response, Router};
///
/// #[derive(serde::Deserialize)]
/// struct NewNote {
///     text: String,
/// }
///
/// let app = Router::new().post("/notes", |req| {
///     let note: NewNote = req.json()?; // 415, 413 or 400, as JSON
///     if note.text.is_empty() {
///         return Err(JsonError::new(422, "a note needs some text"));
///     }
///     Ok(Response::json(&serde_json::json!({ "text": note.text })).with_status(201))
/// });
/// # use httpool::test::TestRequest;
/// let resp = TestRequest::post("/notes").header("Content-Type", "application/json").body(r#"{"text":""}"#).send(&app);
/// assert_eq!((resp.status(), resp.text()), (422, r#"{"error":"a note needs some text"}"#));
/// # }
/// ```
#[derive(Debug)]
pub struct JsonError {
    status: u16,
    message: String,
}

impl JsonError {
    /// An error answered with `status` and `message`. A status that is
    /// not an error's (outside `400..=599`) is a mistake in the program:
    /// logged, and answered `500`.
    pub fn new(status: u16, message: impl fmt::Display) -> JsonError {
        if !(400..=599).contains(&status) {
            error!("JsonError::new({status}, ..): not an error status; answering 500");
            return JsonError { status: 500, message: crate::status::reason(500).to_owned() };
        }
        JsonError { status, message: message.to_string() }
    }

    /// A failure of the server's own (a database, a file): logged at
    /// `error`, answered `500` with the reason phrase only, so nothing of
    /// the server's internals reaches the client.
    pub fn internal(error: impl fmt::Display) -> JsonError {
        error!("handler failed: {error}; answering 500");
        JsonError::new(500, "Internal Server Error")
    }

    /// The status answered.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The message answered.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// The request error's status and message ([`Error::status`]); a `5xx` is
/// answered with its reason phrase only. Logged as the plain error path
/// does: a client's doing or the load at `debug`, the server's own I/O
/// failure at `error`.
impl From<Error> for JsonError {
    fn from(e: Error) -> JsonError {
        e.log_answered();
        match e.status() {
            status @ 500.. => JsonError::new(status, crate::status::reason(status)),
            status => JsonError::new(status, e),
        }
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.status, self.message)
    }
}

impl std::error::Error for JsonError {}

impl IntoResponse for JsonError {
    fn into_response(self) -> Response {
        Response::json(&serde_json::json!({ "error": self.message })).with_status(self.status)
    }
}

/// `application/json`, or a structured `+json` type such as
/// `application/problem+json` (RFC 6839 §3.1).
fn is_json(media_type: &str) -> bool {
    let Some((kind, subtype)) = media_type.split_once('/') else {
        return false;
    };
    // By bytes: a subtype may hold any UTF-8, and a `str` cut inside a
    // character panics.
    let subtype = subtype.as_bytes();
    let suffix_json = subtype.len() > 5 && subtype[subtype.len() - 5..].eq_ignore_ascii_case(b"+json");
    kind.eq_ignore_ascii_case("application") && (subtype.eq_ignore_ascii_case(b"json") || suffix_json)
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
        // A value that does not fit names its field.
        let e =
            with_request(post(json, r#"{"title":7,"done":true}"#).as_bytes(), |req| req.json::<Todo>().unwrap_err());
        assert_eq!(
            e.to_string(),
            "invalid JSON body: `title`: invalid type: integer `7`, expected a string at line 1 column 10"
        );
        let e = with_request(post(json, r#"{"title":"x","done":true} 7"#).as_bytes(), |req| {
            req.json::<Todo>().unwrap_err()
        });
        assert_eq!(e.to_string(), "invalid JSON body: trailing characters at line 1 column 27");
        // An unknown field inside a nested value keeps its place; a quoted
        // value that happens to be the field's name does not hide it.
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Line {
            qty: u32,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Order {
            items: Vec<Line>,
            sort: Sort,
        }
        #[derive(Debug, serde::Deserialize)]
        #[serde(rename_all = "lowercase")]
        enum Sort {
            Sort,
            Date,
        }
        let order =
            |body: &str| with_request(post(json, body).as_bytes(), |req| req.json::<Order>().unwrap_err().to_string());
        assert_eq!(
            order(r#"{"items":[{"qty":1},{"qty":2,"bogus":3}],"sort":"date"}"#),
            "invalid JSON body: `items[1]`: unknown field `bogus`, expected `qty` at line 1 column 36"
        );
        assert_eq!(
            order(r#"{"items":[],"sort":"size"}"#),
            "invalid JSON body: `sort`: unknown variant `size`, expected `sort` or `date` at line 1 column 25"
        );
        assert_eq!(
            order(r#"{"items":[{}],"sort":"date"}"#),
            "invalid JSON body: `items[0]`: missing field `qty` at line 1 column 12"
        );
    }

    #[test]
    fn json_errors_answer_as_json_with_their_status() {
        let answer = |e: JsonError| {
            let resp = e.into_response();
            let body = match resp.body {
                Payload::Owned(b) => String::from_utf8(b).unwrap(),
                _ => panic!("not owned"),
            };
            (resp.status, body)
        };
        assert_eq!(answer(JsonError::new(404, "no note 7")), (404, r#"{"error":"no note 7"}"#.to_owned()));
        assert_eq!(answer(JsonError::new(200, "fine")), (500, r#"{"error":"Internal Server Error"}"#.to_owned()));
        assert_eq!(answer(JsonError::internal("disk full")), (500, r#"{"error":"Internal Server Error"}"#.to_owned()));
        let unsupported = Error::new(ErrorKind::UnsupportedMediaType, "expected Content-Type: application/json");
        assert_eq!(
            answer(JsonError::from(unsupported)),
            (415, r#"{"error":"expected Content-Type: application/json"}"#.to_owned())
        );
        let io = Error::from_body(std::io::Error::other("secret path /srv/db"));
        assert_eq!(answer(JsonError::from(io)), (500, r#"{"error":"Internal Server Error"}"#.to_owned()));
    }

    #[test]
    fn json_media_types() {
        for yes in ["application/json", "Application/JSON", "application/problem+json", "application/vnd.api+JSON"] {
            assert!(is_json(yes), "{yes}");
        }
        // A subtype whose last five bytes start inside a character (its
        // `str` slice panicked, for any client sending one).
        for no in [
            "text/json",
            "application/jsonx",
            "application/+json",
            "json",
            "",
            "application/x-json5",
            "application/\u{e9}1234",
            "application/\u{1F600}json",
        ] {
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
