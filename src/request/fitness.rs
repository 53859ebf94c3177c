//! Whether a request may be answered with a switch of protocol (RFC 9110
//! §7.8), and if not, why.

use super::Request;
use crate::proto::{Version, tokens};

/// What keeps a request from being answered with a switch to a protocol,
/// in the order it is looked for. Each but the last is the client's: the
/// request asked for no switch that a `101` could answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unfit {
    /// Not HTTP/1.1: a server must ignore `Upgrade` in an HTTP/1.0
    /// request (RFC 9110 §7.8).
    Version,
    /// No `upgrade` among the `Connection` options: an `Upgrade` field,
    /// if any, was not meant for this hop (RFC 9110 §7.8).
    NoConnectionOption,
    /// No `Upgrade` field offering a protocol.
    NothingOffered,
    /// A `HEAD`: it asks for what a `GET` would be answered with, and acts
    /// on nothing; a switch answers no such question.
    Head,
    /// The `Upgrade` field offers other protocols only.
    NotOffered,
}

impl Unfit {
    /// What the request lacks, for the log.
    pub(crate) fn why(self) -> &'static str {
        match self {
            Unfit::Version => "not HTTP/1.1",
            Unfit::NoConnectionOption => "no `Connection: upgrade`",
            Unfit::NothingOffered => "no `Upgrade` field",
            Unfit::Head => "a HEAD request",
            Unfit::NotOffered => "upgrade to a protocol the request did not offer",
        }
    }
}

/// Whether `req` may be answered with a switch to `protocol` (a token of
/// `Upgrade`, matched without regard to case), and if not, why: the rules
/// behind [`Request::is_upgrade_to`] and `response::refusal`, so that the two
/// cannot disagree.
pub(crate) fn fitness(req: &Request<'_>, protocol: &[u8]) -> Result<(), Unfit> {
    if req.version() != Version::Http11 {
        return Err(Unfit::Version);
    }
    if !req.has_upgrade_option() {
        return Err(Unfit::NoConnectionOption);
    }
    let mut offered = req.header_all("upgrade").flat_map(tokens).peekable();
    if offered.peek().is_none() {
        return Err(Unfit::NothingOffered);
    }
    if req.method() == "HEAD" {
        return Err(Unfit::Head);
    }
    match offered.any(|o| o.eq_ignore_ascii_case(protocol)) {
        true => Ok(()),
        false => Err(Unfit::NotOffered),
    }
}

#[cfg(test)]
mod tests {
    use super::{Unfit, fitness};
    use crate::request_fixture::with_request;

    /// `GET / HTTP/1.1` with `fields`, then whether it is fit for a switch
    /// to `protocol`.
    macro_rules! fit {
        ($($name:ident: $head:expr, $protocol:expr => $want:expr;)*) => {$(
            #[test]
            fn $name() {
                let raw = format!("{}\r\n\r\n", $head);
                let (got, is) = with_request(raw.as_bytes(), |req| {
                    (fitness(req, $protocol.as_bytes()), req.is_upgrade_to($protocol))
                });
                assert_eq!(got, $want, "{raw:?}");
                assert_eq!(is, got.is_ok(), "{raw:?}");
            }
        )*};
    }

    const ASKED: &str = "Host: a\r\nConnection: upgrade";

    fit! {
        a_get_that_asks_is_fit: format!("GET / HTTP/1.1\r\n{ASKED}\r\nUpgrade: websocket"), "websocket" => Ok(());
        the_protocol_is_matched_without_regard_to_case:
            format!("GET / HTTP/1.1\r\n{ASKED}\r\nUpgrade: WebSocket"), "websocket" => Ok(());
        the_protocol_may_be_one_of_several:
            format!("GET / HTTP/1.1\r\n{ASKED}\r\nUpgrade: h2c, websocket"), "websocket" => Ok(());
        the_protocol_may_be_in_a_second_field:
            format!("GET / HTTP/1.1\r\n{ASKED}\r\nUpgrade: h2c\r\nUpgrade: websocket"), "websocket" => Ok(());
        the_option_may_be_one_of_several:
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: echo", "echo" => Ok(());
        a_post_may_switch_after_its_body:
            format!("POST / HTTP/1.1\r\n{ASKED}\r\nUpgrade: h2c\r\nContent-Length: 2\r\n\r\nhi"), "h2c" => Ok(());
        http_1_0_is_not:
            "GET / HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: echo", "echo" => Err(Unfit::Version);
        an_upgrade_field_without_the_option_is_not:
            "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: echo", "echo" => Err(Unfit::NoConnectionOption);
        an_option_like_upgrade_is_not_upgrade:
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: upgraded\r\nUpgrade: echo", "echo" => Err(Unfit::NoConnectionOption);
        the_option_without_an_upgrade_field_is_not:
            format!("GET / HTTP/1.1\r\n{ASKED}"), "echo" => Err(Unfit::NothingOffered);
        an_upgrade_field_of_empty_elements_is_not:
            format!("GET / HTTP/1.1\r\n{ASKED}\r\nUpgrade: , ,"), "echo" => Err(Unfit::NothingOffered);
        a_head_is_not: format!("HEAD / HTTP/1.1\r\n{ASKED}\r\nUpgrade: echo"), "echo" => Err(Unfit::Head);
        another_protocol_is_not: format!("GET / HTTP/1.1\r\n{ASKED}\r\nUpgrade: h2c"), "echo" => Err(Unfit::NotOffered);
        a_protocol_is_a_whole_token:
            format!("GET / HTTP/1.1\r\n{ASKED}\r\nUpgrade: websocket/13"), "websocket" => Err(Unfit::NotOffered);
    }
}
