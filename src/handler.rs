//! What the user plugs in.

use std::sync::Arc;

use crate::request::Request;
use crate::response::Response;

/// Turns a request into a response, on the worker thread that owns the
/// connection. It may block: a blocked handler holds only its own worker.
///
/// Implemented for every `Fn(&mut Request) -> Response + Send + Sync +
/// 'static` and for `Arc<H>` where `H: Handler`.
///
/// A panic inside `handle` is caught: the client gets `500` with
/// `Connection: close`, the panic is logged, and the worker goes on.
pub trait Handler: Send + Sync + 'static {
    /// Answers one request.
    fn handle(&self, req: &mut Request<'_>) -> Response;
}

impl<F> Handler for F
where
    F: Fn(&mut Request<'_>) -> Response + Send + Sync + 'static,
{
    fn handle(&self, req: &mut Request<'_>) -> Response {
        self(req)
    }
}

impl<H: Handler> Handler for Arc<H> {
    fn handle(&self, req: &mut Request<'_>) -> Response {
        (**self).handle(req)
    }
}
