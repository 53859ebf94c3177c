//! Request ids: [`request_id`] gives each request an id, which the handler
//! reads with [`Request::request_id`], the response carries in
//! `X-Request-Id`, and [`access_log`](crate::access_log) writes at the end
//! of the request's line.

use std::hash::{BuildHasher, Hasher};
use std::io::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::handler::Handler;
use crate::request::{MADE_LEN, Request, RequestIdText};
use crate::response::Response;

/// The longest `X-Request-Id` taken from a trusted proxy; a longer one is
/// replaced by an id of the server's.
pub const MAX_REQUEST_ID_BYTES: usize = 128;

/// 48 random bits, drawn once a process: ids of two runs differ.
fn process_prefix() -> u64 {
    static PREFIX: OnceLock<u64> = OnceLock::new();
    *PREFIX.get_or_init(|| {
        // std's hasher keys are random per process; the time and the pid
        // vary them further on a platform whose keys are not.
        let mut hasher = std::hash::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        hasher.write_u128(now.map_or(0, |d| d.as_nanos()));
        hasher.finish() & 0xffff_ffff_ffff
    })
}

/// A new id, unique in the process: its prefix and the next count.
fn make() -> RequestIdText<'static> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Relaxed);
    let mut bytes = [0u8; MADE_LEN];
    let mut out = &mut bytes[..];
    // 12 + 1 + at most 16 digits: it fits.
    write!(out, "{:012x}-{n:x}", process_prefix()).ok();
    let len = MADE_LEN - out.len();
    RequestIdText::Made { len: len as u8, bytes }
}

/// The proxy's id, when it is one to take: visible ASCII, 1 to
/// [`MAX_REQUEST_ID_BYTES`] bytes.
fn is_valid(id: &[u8]) -> bool {
    (1..=MAX_REQUEST_ID_BYTES).contains(&id.len()) && id.iter().all(|b| (0x21..=0x7e).contains(b))
}

/// The id of a request: the `X-Request-Id` of a trusted proxy (its last
/// line), when valid; else a new one.
fn id_of<'a>(req: &Request<'a>) -> RequestIdText<'a> {
    if req.is_from_trusted_proxy() {
        let given = req.header_values("x-request-id").last().filter(|id| is_valid(id));
        // Visible ASCII is UTF-8.
        if let Some(id) = given.and_then(|id| std::str::from_utf8(id).ok()) {
            return RequestIdText::Given(id);
        }
    }
    make()
}

/// Wraps `handler` so that each request has an id: the `X-Request-Id` a
/// trusted proxy ([`Server::trusted_proxies`](crate::Server::trusted_proxies))
/// sent, if it is visible ASCII of at most [`MAX_REQUEST_ID_BYTES`], else
/// one made here, unique in the process (a random prefix per process and a
/// count: `3f9a0c12e4b7-1a`). The handler reads it with
/// [`Request::request_id`]; the response carries it in `X-Request-Id`
/// (unless the handler set that header); wrapped inside
/// [`access_log`](crate::access_log), or around it, the access line ends
/// with it.
///
/// Without the wrapper no id is made or read: the requests of a server that
/// does not use it cost nothing more.
///
/// ```
/// use httpool::test::TestRequest;
/// use httpool::{Request, Response, request_id};
///
/// let app = request_id(|req: &mut Request| {
///     // Passed on to the services this handler calls, say.
///     let id = req.request_id().unwrap_or("-");
///     Response::text(format!("{id}\n"))
/// });
/// let resp = TestRequest::get("/").send(&app);
/// assert_eq!(resp.header("x-request-id"), Some(resp.text().trim_end()));
///
/// // An id sent by a client that is not a trusted proxy is not taken.
/// let resp = TestRequest::get("/").header("X-Request-Id", "mine").send(&app);
/// assert_ne!(resp.text(), "mine\n");
/// ```
pub fn request_id<H: Handler>(handler: H) -> RequestId<H> {
    RequestId { inner: handler }
}

/// A handler whose requests have ids; see [`request_id`].
#[derive(Debug)]
pub struct RequestId<H> {
    inner: H,
}

impl<H: Handler> Handler for RequestId<H> {
    fn handle(&self, req: &mut Request<'_>) -> Response {
        let id = id_of(req);
        req.request_id = Some(id);
        let mut resp = self.inner.handle(req);
        if resp.header("x-request-id").is_none() {
            resp.set_header("X-Request-Id", id.as_str().to_owned());
        }
        resp
    }
}

impl Request<'_> {
    /// The request's id, when the handler is wrapped in [`request_id`]
    /// (`None` otherwise).
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_ref().map(RequestIdText::as_str)
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use crate::test::{TestRequest, TestServer};
    use crate::{Request, Response};

    use super::*;

    fn echo(req: &mut Request<'_>) -> Response {
        Response::text(req.request_id().unwrap_or("none").to_owned())
    }

    #[test]
    fn made_ids_are_unique_and_share_the_process_prefix() {
        let (a, b) = (make(), make());
        let (a, b) = (a.as_str(), b.as_str());
        assert_ne!(a, b);
        assert_eq!(a.len(), 12 + 1 + a.rsplit('-').next().unwrap().len());
        assert_eq!(a.split('-').next(), b.split('-').next());
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit() || c == b'-'), "{a}");
    }

    #[test]
    fn without_the_wrapper_there_is_no_id() {
        let resp = TestRequest::get("/").header("X-Request-Id", "abc").send(&echo);
        assert_eq!((resp.text(), resp.header("x-request-id")), ("none", None));
    }

    #[test]
    fn a_trusted_proxys_valid_id_is_taken_and_echoed() {
        let app = TestServer::from_handler(request_id(echo)).trusted_proxies(["10.0.0.0/8"]);
        let proxy: SocketAddr = "10.0.0.5:4000".parse().unwrap();
        let stranger: SocketAddr = "192.0.2.1:4000".parse().unwrap();
        let too_long = "x".repeat(MAX_REQUEST_ID_BYTES + 1);
        let longest = "y".repeat(MAX_REQUEST_ID_BYTES);
        for (peer, sent, taken) in [
            (proxy, "req-42", true),
            (proxy, longest.as_str(), true),
            (proxy, too_long.as_str(), false),
            (proxy, "two words", false),
            (proxy, "caf\u{e9}", false),
            (stranger, "req-42", false),
        ] {
            let resp = app.send(TestRequest::get("/").peer(peer).header("X-Request-Id", sent));
            let id = resp.text();
            assert_eq!(id == sent, taken, "{sent:?} from {peer}");
            assert_eq!(resp.header("x-request-id"), Some(id));
            if !taken {
                assert_eq!(id.split('-').next().map(str::len), Some(12), "{id}");
            }
        }
    }

    #[test]
    fn a_header_the_handler_set_is_kept() {
        let app = request_id(|_req: &mut Request<'_>| Response::text("").with_header("X-Request-Id", "own"));
        assert_eq!(TestRequest::get("/").send(&app).header("x-request-id"), Some("own"));
    }
}
