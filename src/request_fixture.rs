//! For unit tests of request helpers: a `Request` over bytes in memory,
//! built the way the connection loop builds one.

use std::net::{Ipv4Addr, SocketAddr};

use crate::body::Body;
use crate::config::Config;
use crate::io::Script;
use crate::net::Peer;
use crate::parse::parse_head;
use crate::request::Request;

/// Calls `f` with the request `raw` holds (head and whole body), under the
/// default limits but `max_body_bytes`.
pub(crate) fn with_request_limited<R>(raw: &[u8], max_body_bytes: u64, f: impl FnOnce(&mut Request<'_>) -> R) -> R {
    let mut config = Config::default();
    config.limits.max_body_bytes = max_body_bytes;
    let peer = Peer::Ip(SocketAddr::from((Ipv4Addr::new(192, 0, 2, 7), 51000)));
    request_under(raw, &config, peer, f)
}

/// Calls `f` with the request `raw` holds, come from `peer` to a server
/// that trusts `proxies`.
pub(crate) fn with_request_from<R>(
    raw: &[u8],
    peer: Peer,
    proxies: &[&str],
    f: impl FnOnce(&mut Request<'_>) -> R,
) -> R {
    let mut config = Config::default();
    config.set_trusted_proxies(proxies);
    request_under(raw, &config, peer, f)
}

fn request_under<R>(raw: &[u8], config: &Config, peer: Peer, f: impl FnOnce(&mut Request<'_>) -> R) -> R {
    let mut spans = Vec::new();
    let head = parse_head(raw, &config.limits, &mut spans).expect("a valid head").expect("a whole head");
    let mut buf = raw.to_vec();
    let (before, rest) = buf.split_at_mut(head.len);
    let buffered = rest.len();
    let mut io = Script { eof: true, ..Script::default() };
    let bounds = config.body_bounds();
    let body = Body::new(head.body, &mut io, rest, buffered, &bounds, false);
    let mut req = Request::new(before, head, &spans, peer, false, body, &config.trusted_proxies);
    f(&mut req)
}

/// [`with_request_limited`] with the default body limit.
pub(crate) fn with_request<R>(raw: &[u8], f: impl FnOnce(&mut Request<'_>) -> R) -> R {
    with_request_limited(raw, crate::config::DEFAULT_MAX_BODY_BYTES, f)
}
