//! What the user plugs in: a handler, and what it may return.

use std::io;
use std::sync::Arc;

use crate::error::{Error, FromBody};
use crate::request::Request;
use crate::response::Response;
use crate::status::reason;

/// Turns a request into a response, on the worker thread that owns the
/// connection. It may block: a blocked handler holds only its own worker.
///
/// Implemented for every `Fn(&mut Request) -> R + Send + Sync + 'static`
/// where `R` is [`IntoResponse`] (a `Response`, or a `Result` of one), and
/// for `Arc<H>` where `H: Handler`. Implement it for a type of your own
/// when the handler is an application object, and run it with
/// [`Server::serve_handler`](crate::Server::serve_handler).
///
/// A panic inside `handle` is caught: the client gets `500` with
/// `Connection: close`, the panic is logged, and the worker goes on.
///
/// # Closures and named handlers
///
/// [`Server::serve`](crate::Server::serve) and
/// [`Server::spawn`](crate::Server::spawn) take a closure or a function:
/// their generic parameter carries the bound `Fn(&mut Request<'_>) -> R`
/// itself, and that bound is what gives an unannotated closure `|req| …`
/// the signature it needs. The request is borrowed for one call only, so
/// the signature is higher-ranked (`for<'r, 'b> Fn(&'r mut Request<'b>)`),
/// and rustc deduces a closure's signature only from `Fn` bounds on the
/// parameter (or `Fn` supertraits of its bounds), never through a blanket
/// impl such as `impl<F: Fn(..)> Handler for F`: behind an `H: Handler`
/// bound, a closure gets a signature for one lifetime and is refused as
/// "not general enough". A named type cannot implement `Fn` on stable Rust, and neither can
/// `Arc<H>`, so one method cannot take both: types implementing `Handler`
/// (and `Arc`s of them, `Arc<dyn Handler>` included) go to
/// [`Server::serve_handler`](crate::Server::serve_handler) and
/// [`Server::spawn_handler`](crate::Server::spawn_handler).
///
/// ```no_run
/// use httpool::{Handler, Request, Response, Server};
///
/// struct Greeter {
///     greeting: String,
/// }
///
/// impl Handler for Greeter {
///     fn handle(&self, req: &mut Request) -> Response {
///         Response::text(format!("{}, {}\n", self.greeting, req.path()))
///     }
/// }
///
/// fn main() -> std::io::Result<()> {
///     let greeter = Greeter { greeting: "Hello".into() };
///     Server::bind("127.0.0.1:8080")?.serve_handler(greeter)
/// }
/// ```
pub trait Handler: Send + Sync + 'static {
    /// Answers one request.
    fn handle(&self, req: &mut Request<'_>) -> Response;
}

impl<F, R> Handler for F
where
    F: Fn(&mut Request<'_>) -> R + Send + Sync + 'static,
    R: IntoResponse,
{
    fn handle(&self, req: &mut Request<'_>) -> Response {
        self(req).into_response()
    }
}

impl<H: Handler + ?Sized> Handler for Arc<H> {
    fn handle(&self, req: &mut Request<'_>) -> Response {
        (**self).handle(req)
    }
}

/// What a handler may return: a [`Response`], or a `Result` whose value
/// and error both convert into one — so a handler can use `?`.
///
/// Implemented for [`Response`], [`httpool::Error`](crate::Error) (see
/// [`Error::status`] for the status each kind gets), [`std::io::Error`]
/// (`500`, unless it wraps an `httpool::Error`) and `Result<T, E>` where
/// both are `IntoResponse`. Implement it for your own error type to choose
/// the status and body its errors get.
///
/// A closure's error type cannot be inferred from `?` alone: name it in a
/// function's return type, or write `Ok::<_, httpool::Error>(…)`.
///
/// ```
/// use httpool::{IntoResponse, Request, Response};
///
/// /// A handler whose errors become `400`, `408`, `413` or `500`.
/// fn upper(req: &mut Request) -> Result<Response, httpool::Error> {
///     let text = req.read_body_string(1024)?;
///     Ok(Response::text(text.to_uppercase()))
/// }
///
/// /// An error of the application's own, answered as JSON.
/// enum ApiError {
///     NotFound,
///     Request(httpool::Error),
/// }
///
/// impl From<httpool::Error> for ApiError {
///     fn from(e: httpool::Error) -> ApiError {
///         ApiError::Request(e)
///     }
/// }
///
/// impl IntoResponse for ApiError {
///     fn into_response(self) -> Response {
///         let (status, message) = match self {
///             ApiError::NotFound => (404, "no such item".to_owned()),
///             ApiError::Request(e) => (e.status(), e.to_string()),
///         };
///         Response::text(format!("{{\"error\":{message:?}}}\n"))
///             .with_status(status)
///             .with_content_type("application/json")
///     }
/// }
///
/// fn item(req: &mut Request) -> Result<Response, ApiError> {
///     match req.path() {
///         "/item" => Ok(Response::text(req.read_body_string(1024)?)),
///         _ => Err(ApiError::NotFound),
///     }
/// }
/// # let _ = (upper, item);
/// ```
pub trait IntoResponse {
    /// The response to send.
    fn into_response(self) -> Response;
}

impl IntoResponse for Response {
    fn into_response(self) -> Response {
        self
    }
}

/// `200` with the text (`text/plain; charset=utf-8`), as [`Response::text`].
impl IntoResponse for &'static str {
    fn into_response(self) -> Response {
        Response::text(self)
    }
}

/// `200` with the text (`text/plain; charset=utf-8`), as [`Response::text`].
impl IntoResponse for String {
    fn into_response(self) -> Response {
        Response::text(self)
    }
}

impl<T: IntoResponse, E: IntoResponse> IntoResponse for Result<T, E> {
    fn into_response(self) -> Response {
        match self {
            Ok(value) => value.into_response(),
            Err(e) => e.into_response(),
        }
    }
}

/// [`Error::status`], with a short plain-text body: the error's message
/// for a `4xx`, the reason phrase for a `5xx`.
impl IntoResponse for Error {
    fn into_response(self) -> Response {
        response_for_error(&self)
    }
}

/// An `io::Error` that reading the request body returned (`?` on
/// [`Request::body`](crate::Request::body)'s reads) answers as the
/// [`Error`] it is: the client's doing (`400`, `408`) or the load's (`503`),
/// logged at `debug`; the server answers those itself, whatever the handler
/// returns. One made from an [`httpool::Error`](crate::Error) (`?` in a
/// handler returning `io::Result`) answers as that error does. Any other
/// is the handler's own failure (a file, a database, an outbound call):
/// `500`, logged at `error`.
impl IntoResponse for io::Error {
    fn into_response(self) -> Response {
        if let Some(e) = self.get_ref().and_then(|inner| inner.downcast_ref::<Error>()) {
            return response_for_error(e);
        }
        if FromBody::marks(&self) {
            return response_for_error(&Error::from_body(self));
        }
        error!("handler failed: {self}; answering 500");
        Response::text(reason(500)).with_status(500)
    }
}

/// [`Error::status`], logged as [`Error::log_answered`] says.
fn response_for_error(e: &Error) -> Response {
    let code = e.status();
    e.log_answered();
    if code < 500 {
        Response::text(format!("{e}\n")).with_status(code)
    } else {
        Response::text(reason(code)).with_status(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test::TestRequest;

    fn answer(e: impl IntoResponse) -> (u16, String) {
        let resp = e.into_response();
        let body = String::from_utf8(resp.body_bytes().unwrap_or_default().to_vec()).unwrap();
        (resp.status_code(), body)
    }

    fn body_io(kind: io::ErrorKind) -> Error {
        Error::from_body(io::Error::new(kind, "from the body"))
    }

    #[test]
    fn body_too_large_is_413() {
        assert_eq!(answer(Error::body_too_large(8)), (413, "request body over the limit\n".into()));
    }

    #[test]
    fn invalid_utf8_is_400() {
        assert_eq!(answer(Error::invalid_utf8()), (400, "request body is not UTF-8\n".into()));
    }

    #[test]
    fn a_body_read_that_timed_out_is_408() {
        let (status, body) = answer(body_io(io::ErrorKind::TimedOut));
        assert_eq!((status, &*body), (408, "reading the request body: from the body\n"));
    }

    #[test]
    fn a_malformed_or_cut_short_body_is_400() {
        assert_eq!(answer(body_io(io::ErrorKind::InvalidData)).0, 400);
        assert_eq!(answer(body_io(io::ErrorKind::UnexpectedEof)).0, 400);
    }

    #[test]
    fn other_io_errors_are_500_without_their_message() {
        assert_eq!(answer(body_io(io::ErrorKind::Other)), (500, "Internal Server Error".into()));
        assert_eq!(answer(io::Error::other("disk on fire")), (500, "Internal Server Error".into()));
        // A reset of the handler's own (a database's connection) is its
        // failure, not the client's.
        assert_eq!(answer(io::Error::from(io::ErrorKind::ConnectionReset)).0, 500);
    }

    #[test]
    fn a_client_going_away_mid_body_is_400_and_a_busy_server_503_on_every_path() {
        let from_body = |kind| FromBody::wrap(io::Error::new(kind, "from the socket"), kind);
        for (kind, status) in [
            (io::ErrorKind::ConnectionReset, 400),
            (io::ErrorKind::ConnectionAborted, 400),
            (io::ErrorKind::BrokenPipe, 400),
            (io::ErrorKind::ResourceBusy, 503),
        ] {
            // As an `Error` (`req.read_body(..)?`) and as the body's own
            // `io::Error` (`?` on `req.body()`'s reads).
            assert_eq!(answer(body_io(kind)).0, status, "{kind:?}");
            assert_eq!(answer(from_body(kind)).0, status, "{kind:?}");
        }
        assert_eq!(answer(from_body(io::ErrorKind::ResourceBusy)), (503, "Service Unavailable".into()));
    }

    #[test]
    fn an_io_error_made_from_an_httpool_error_answers_as_it() {
        assert_eq!(answer(io::Error::from(Error::body_too_large(1))).0, 413);
    }

    #[test]
    fn results_answer_with_their_value_or_their_error() {
        assert_eq!(answer(Ok::<_, Error>(Response::text("fine"))), (200, "fine".into()));
        assert_eq!(answer(Err::<Response, _>(Error::invalid_utf8())).0, 400);
        let nested: Result<Result<Response, io::Error>, Error> = Ok(Err(io::Error::other("x")));
        assert_eq!(answer(nested).0, 500);
    }

    #[test]
    fn handlers_use_question_mark_and_their_errors_reach_the_client() {
        fn shout(req: &mut Request<'_>) -> Result<Response, Error> {
            Ok(Response::text(req.read_body_string(8)?.to_uppercase()))
        }
        assert_eq!(TestRequest::post("/").body("hi").send(&shout).text(), "HI");
        let too_long = TestRequest::post("/").body("123456789").send(&shout);
        assert_eq!((too_long.status(), too_long.text()), (413, "request body over the limit\n"));
        let not_text = TestRequest::post("/").body(vec![0xff]).send(&shout);
        assert_eq!((not_text.status(), not_text.text()), (400, "request body is not UTF-8\n"));
    }

    #[test]
    fn an_unannotated_closure_is_a_handler() {
        let resp = TestRequest::get("/path").send(&|req: &mut Request| Response::text(req.path()));
        assert_eq!(resp.text(), "/path");
        let resp = TestRequest::get("/").send(&|req: &mut Request| {
            let body = req.read_body(4)?;
            Ok::<_, Error>(Response::bytes(body))
        });
        assert_eq!(resp.status(), 200);
    }
}
