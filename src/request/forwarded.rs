//! What trusted proxies say of the client, read from the request's
//! forwarding headers (`Forwarded`, `X-Forwarded-*`) by the rules of
//! [`crate::proxy`], which holds the parsing: the request's own methods.

use std::net::IpAddr;

use super::Request;
use crate::proxy::{Hop, Walk, hops, node_ip};

/// What the trusted proxies say of the client.
#[derive(Debug, Default)]
struct Forwarded<'h> {
    client: Option<IpAddr>,
    proto: Option<&'h str>,
    host: Option<&'h str>,
}

/// The right-most comma-separated item of every line of `name`.
fn last_item<'r>(req: &'r Request<'_>, name: &'static str) -> Option<&'r str> {
    let last = req.header_all(name).filter_map(|v| std::str::from_utf8(v).ok()).last()?;
    last.rsplit(',').next().map(str::trim).filter(|v| !v.is_empty())
}

impl<'a> Request<'a> {
    /// The peer's address, `None` on a Unix domain socket.
    fn peer_ip(&self) -> Option<IpAddr> {
        self.peer_addr().map(|a| a.ip())
    }

    /// Whether the connection comes from a proxy of
    /// [`Server::trusted_proxies`](crate::Server::trusted_proxies).
    pub(crate) fn is_from_trusted_proxy(&self) -> bool {
        !self.proxies().is_empty() && self.proxies().trusts_peer(self.peer_ip())
    }

    /// The forwarding headers of a trusted peer, read.
    fn forwarded(&self) -> Forwarded<'_> {
        let peer = self.peer_ip();
        if !self.is_from_trusted_proxy() {
            return Forwarded { client: peer, ..Forwarded::default() };
        }
        let trusted = self.proxies();
        if self.header_all("forwarded").next().is_some() {
            let mut walk = Walk::new();
            for line in self.header_all("forwarded") {
                // A line that is not UTF-8 is one hop that names nobody.
                let Ok(line) = std::str::from_utf8(line) else {
                    walk.feed(None, Hop::default(), trusted);
                    continue;
                };
                for hop in hops(line) {
                    walk.feed(hop.by_for.and_then(node_ip), hop, trusted);
                }
            }
            let (client, hop) = walk.end(peer);
            let hop = hop.unwrap_or_default();
            return Forwarded { client, proto: hop.proto, host: hop.host };
        }
        let mut walk = Walk::new();
        for line in self.header_all("x-forwarded-for") {
            let line = std::str::from_utf8(line).unwrap_or("");
            for item in line.split(',').filter(|i| !i.trim().is_empty()) {
                walk.feed(node_ip(item), (), trusted);
            }
        }
        let (client, _) = walk.end(peer);
        Forwarded { client, proto: last_item(self, "x-forwarded-proto"), host: last_item(self, "x-forwarded-host") }
    }

    /// The client's address: the peer's, or, when the peer is a trusted
    /// proxy, the one its forwarding headers give (see the
    /// [module](crate::proxy)'s rules). `None` on a Unix domain socket
    /// with nothing forwarded. Without
    /// [`Server::trusted_proxies`](crate::Server::trusted_proxies), the
    /// peer's address ([`Request::peer_addr`] without the port: a
    /// forwarded port is the client's port at the proxy, which tells the
    /// application nothing). Read afresh at each call.
    pub fn client_addr(&self) -> Option<IpAddr> {
        self.forwarded().client
    }

    /// The scheme the client used: `Forwarded`'s `proto` (of the client's
    /// own hop) or the right-most `X-Forwarded-Proto` value when the peer
    /// is a trusted proxy and it says (a valid scheme), else `https` over
    /// TLS and `http` without. Compare without regard to case.
    pub fn client_scheme(&self) -> &str {
        match self.forwarded().proto.filter(|p| crate::proto::is_scheme(p.as_bytes())) {
            Some(proto) => proto,
            None if self.is_tls() => "https",
            None => "http",
        }
    }

    /// The host the client asked for: `Forwarded`'s `host` (of the client's
    /// own hop) or the right-most `X-Forwarded-Host` value when the peer is
    /// a trusted proxy and it says (a valid `Host` value), else
    /// [`Request::host`].
    pub fn client_host(&self) -> Option<&str> {
        let forwarded = self.forwarded().host.filter(|h| crate::parse::is_valid_host(h.as_bytes()));
        forwarded.or_else(|| self.host())
    }
}

#[cfg(test)]
mod tests;
