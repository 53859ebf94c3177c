//! The answers the server writes on its own behalf: every `4xx`/`5xx` that
//! no handler chose (a refused request, a timeout, an overload `503`), in
//! one place.

use std::time::Duration;

use crate::response::{Response, encode_closing};

/// Appends the whole answer with `status` and `Connection: close`: its
/// reason phrase as a short text body, none for a `HEAD` request.
pub(crate) fn encode_error(status: u16, is_head: bool, date: &[u8], out: &mut Vec<u8>) {
    encode_closing(&Response::error(status), is_head, date, out);
}

/// Appends `503 Service Unavailable` with `Retry-After` in whole seconds (at
/// least one) and `Connection: close`: the answer to a client accepted while
/// the server is saturated.
pub(crate) fn encode_overloaded(retry_after: Duration, date: &[u8], out: &mut Vec<u8>) {
    let mut resp = Response::error(503);
    resp.set_header("Retry-After", retry_after.as_secs().max(1).to_string());
    encode_closing(&resp, false, date, out);
}
