//! Whether a handler's `101 Switching Protocols` may answer its request
//! (RFC 9110 §7.8, §15.2.2), and the answer sent in its stead when not.

use std::borrow::Cow;

use super::Response;
use super::build::error_response;
use crate::proto::tokens;
use crate::request::{Request, Unfit, fitness};

/// Why a handler's `101` may not be sent, and whose doing that is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The handler's (`500`, logged as an error): its `101` names no
    /// protocol in `Upgrade` (RFC 9110 §15.2.2), or one that the request,
    /// which offered others, did not (§7.8).
    Handler(&'static str),
    /// The client's (`4xx`, logged at debug): its request asked for no
    /// switch the `101` could answer.
    Client(Unfit),
}

impl Refusal {
    /// The status answered in the `101`'s stead: `400` to a `HEAD` (no
    /// request of that method can switch), `426 Upgrade Required` to a
    /// request that could, asked for properly.
    pub(crate) fn status(self) -> u16 {
        match self {
            Refusal::Handler(_) => 500,
            Refusal::Client(Unfit::Head) => 400,
            Refusal::Client(_) => 426,
        }
    }

    /// What is logged of the refusal.
    pub(crate) fn why(self) -> &'static str {
        match self {
            Refusal::Handler(why) => why,
            Refusal::Client(unfit) => unfit.why(),
        }
    }

    /// The answer in the stead of `resp`, the handler's `101`. A `426`
    /// names the protocols `resp` switched to in its own `Upgrade` field,
    /// with the `upgrade` option that field needs (RFC 9110 §7.8,
    /// §15.5.22).
    pub(crate) fn answer(self, resp: &Response) -> Response {
        let mut answer = error_response(self.status());
        if answer.status == 426 {
            for (_, protocols) in upgrade_fields(resp) {
                answer.set_header("Upgrade", protocols.clone());
            }
            answer.set_header("Connection", "upgrade");
        }
        answer
    }
}

/// The `Upgrade` fields of a response.
fn upgrade_fields(resp: &Response) -> impl Iterator<Item = &(Cow<'static, str>, Cow<'static, str>)> {
    resp.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case("upgrade"))
}

/// Why the upgrade `resp` may not answer `req`, if it may not: `resp`
/// names no protocol, or `req` is unfit for a switch to one it names (see
/// [`fitness`]). The server answers such a response as the refusal says,
/// and the access log says so.
pub(crate) fn refusal(req: &Request<'_>, resp: &Response) -> Option<Refusal> {
    let mut chosen = upgrade_fields(resp).flat_map(|(_, v)| tokens(v.as_bytes())).peekable();
    if chosen.peek().is_none() {
        return Some(Refusal::Handler("101 without an Upgrade field naming the protocol"));
    }
    match chosen.find_map(|protocol| fitness(req, protocol).err())? {
        Unfit::NotOffered => Some(Refusal::Handler(Unfit::NotOffered.why())),
        unfit => Some(Refusal::Client(unfit)),
    }
}

#[cfg(test)]
mod tests {
    use super::{Refusal, Response, refusal};
    use crate::request::Unfit;
    use crate::request_fixture::with_request;

    const ASKED: &str = "Host: a\r\nConnection: upgrade";

    /// The refusal of a `101` naming `protocols` to the request `head`.
    fn refused(head: &str, protocols: &[&'static str]) -> Option<Refusal> {
        let resp = protocols.iter().fold(Response::upgrade(|_| {}), |r, p| r.with_header("Upgrade", *p));
        with_request(format!("{head}\r\n\r\n").as_bytes(), |req| refusal(req, &resp))
    }

    #[test]
    fn a_101_is_refused_for_the_handler_or_for_the_client() {
        let asked = format!("GET / HTTP/1.1\r\n{ASKED}\r\nUpgrade: echo, h2c");
        assert_eq!(refused(&asked, &["echo"]), None);
        assert_eq!(refused(&asked, &["h2c, ECHO"]), None);
        // The handler's: no protocol named, or one not offered.
        let unnamed = refused(&asked, &[]);
        assert!(matches!(unnamed, Some(Refusal::Handler(_))), "{unnamed:?}");
        let unnamed = refused("GET / HTTP/1.1\r\nHost: a", &[" , "]);
        assert!(matches!(unnamed, Some(Refusal::Handler(_))), "{unnamed:?}");
        let other = refused(&asked, &["echo", "pong"]);
        assert_eq!(other.map(Refusal::status), Some(500));
        // The client's: no switch asked for, or a HEAD.
        assert_eq!(refused("GET / HTTP/1.1\r\nHost: a", &["echo"]), Some(Refusal::Client(Unfit::NoConnectionOption)));
        let head = refused(&format!("HEAD / HTTP/1.1\r\n{ASKED}\r\nUpgrade: echo"), &["echo"]);
        assert_eq!(head.map(Refusal::status), Some(400));
    }

    /// A `426` names the protocols the handler's `101` did, with the
    /// `upgrade` option an `Upgrade` field needs; a `400` or `500` neither.
    #[test]
    fn a_426_names_the_protocols_the_101_did() {
        let resp = Response::upgrade(|_| {}).with_header("Upgrade", "echo").with_header("Upgrade", "h2c");
        let answer = Refusal::Client(Unfit::Version).answer(&resp);
        assert_eq!((answer.status, answer.close), (426, true));
        let fields: Vec<_> = answer.headers.iter().map(|(n, v)| format!("{n}: {v}")).collect();
        assert_eq!(fields, ["Upgrade: echo", "Upgrade: h2c", "Connection: upgrade"]);
        for refusal in [Refusal::Client(Unfit::Head), Refusal::Handler("bare")] {
            let answer = refusal.answer(&resp);
            assert_eq!((answer.status, answer.headers.len()), (refusal.status(), 0));
        }
    }
}
