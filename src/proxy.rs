//! The client behind trusted proxies:
//! [`Request::client_addr`](crate::Request::client_addr),
//! [`Request::client_scheme`](crate::Request::client_scheme) and
//! [`Request::client_host`](crate::Request::client_host).
//!
//! Behind nginx or HAProxy every connection comes from the proxy, and
//! [`Request::peer_addr`](crate::Request::peer_addr) names it. The proxy
//! says who its client was in a header: `Forwarded` (RFC 7239) or the
//! older `X-Forwarded-For`,
//! `X-Forwarded-Proto` and `X-Forwarded-Host`. Anyone can send those
//! headers, so they are read only from the proxies named with
//! [`Server::trusted_proxies`](crate::Server::trusted_proxies) (none by
//! default): from any other peer they are ignored, and the client is the
//! peer.
//!
//! Each proxy adds the address it got the request from at the right of the
//! list, so only the right end of it is known to be true: the client is
//! the right-most address that is not itself a trusted proxy (every one
//! trusted: the left-most). An entry that is not an address (`unknown`, an
//! obfuscated `_name`, a malformed one) ends the walk there: the client is
//! then the trusted address to its right (the proxy that wrote it), or the
//! peer. `Forwarded` is read when the request has one, else
//! `X-Forwarded-For`; several lines of a header count as one list, in
//! order.
//!
//! ```
//! use httpool::test::{TestRequest, TestServer};
//! use httpool::{Request, Response};
//!
//! let app = TestServer::new(|req: &mut Request| {
//!     let client = req.client_addr().map_or("-".to_owned(), |ip| ip.to_string());
//!     Response::text(format!("{client} {}\n", req.client_scheme()))
//! })
//! .trusted_proxies(["127.0.0.1", "10.0.0.0/8"]);
//!
//! // From nginx on this host, which adds the address its client came from.
//! let proxied = TestRequest::get("/")
//!     .peer("127.0.0.1:50000".parse().unwrap())
//!     .header("X-Forwarded-For", "203.0.113.9, 10.1.2.3")
//!     .header("X-Forwarded-Proto", "https");
//! assert_eq!(app.send(proxied).text(), "203.0.113.9 https\n");
//!
//! // The same headers straight from a client: ignored.
//! let spoofed = TestRequest::get("/")
//!     .peer("198.51.100.4:50000".parse().unwrap())
//!     .header("X-Forwarded-For", "203.0.113.9")
//!     .header("X-Forwarded-Proto", "https");
//! assert_eq!(app.send(spoofed).text(), "198.51.100.4 http\n");
//! ```
//!
//! Nothing is computed until a handler asks: the headers are read at each
//! call.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// The proxies whose forwarding headers are believed.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct TrustedProxies {
    nets: Vec<Net>,
    /// Peers on a Unix domain socket (`"unix"`).
    unix: bool,
}

/// No proxy trusted: what a request is built with outside a server.
pub(crate) static NO_PROXIES: TrustedProxies = TrustedProxies { nets: Vec::new(), unix: false };

/// An address range: the first `prefix` bits of `bits`. IPv4 addresses
/// are kept as IPv4-mapped IPv6 ones (`::ffff:a.b.c.d`), so one
/// comparison serves both.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Net {
    bits: u128,
    prefix: u8,
}

impl Net {
    fn contains(self, ip: IpAddr) -> bool {
        let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
        mapped(ip) & mask == self.bits
    }
}

/// `ip` as 128 bits, an IPv4 address mapped into IPv6.
fn mapped(ip: IpAddr) -> u128 {
    match ip.to_canonical() {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// Why an entry of [`Server::trusted_proxies`](crate::Server::trusted_proxies)
/// was refused.
#[derive(Debug)]
pub(crate) struct BadProxy(String);

impl fmt::Display for BadProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not an address, a CIDR range (10.0.0.0/8, fd00::/8) or \"unix\"", self.0)
    }
}

impl TrustedProxies {
    /// Parses each of `entries`: an address (`127.0.0.1`, `::1`), a range
    /// in CIDR notation (`10.0.0.0/8`, `fd00::/8`), or `unix` (peers on a
    /// Unix domain socket).
    pub(crate) fn parse<S: AsRef<str>>(entries: impl IntoIterator<Item = S>) -> Result<TrustedProxies, BadProxy> {
        let mut proxies = TrustedProxies::default();
        for entry in entries {
            let entry = entry.as_ref().trim();
            if entry == "unix" {
                proxies.unix = true;
                continue;
            }
            let bad = || BadProxy(entry.to_owned());
            let (addr, prefix) = match entry.split_once('/') {
                Some((addr, prefix)) => (addr, Some(prefix)),
                None => (entry, None),
            };
            let ip = IpAddr::from_str(addr).map_err(|_| bad())?;
            // A v4 prefix counts within the mapped address's last 32 bits.
            let (width, offset) = if ip.to_canonical().is_ipv4() { (32, 96) } else { (128, 0) };
            let prefix = match prefix {
                Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => p.parse::<u8>().map_err(|_| bad())?,
                Some(_) => return Err(bad()),
                None => width,
            };
            if prefix > width {
                return Err(bad());
            }
            let prefix = prefix + offset;
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            proxies.nets.push(Net { bits: mapped(ip) & mask, prefix });
        }
        Ok(proxies)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.nets.is_empty() && !self.unix
    }

    fn contains(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|net| net.contains(ip))
    }

    /// Whether the connection's peer (`None`: a Unix domain socket) is
    /// trusted.
    pub(crate) fn trusts_peer(&self, peer: Option<IpAddr>) -> bool {
        match peer {
            Some(ip) => self.contains(ip),
            None => self.unix,
        }
    }
}

impl fmt::Debug for TrustedProxies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        for net in &self.nets {
            let ip = std::net::Ipv6Addr::from(net.bits);
            match ip.to_ipv4_mapped() {
                Some(v4) if net.prefix >= 96 => list.entry(&format_args!("{v4}/{}", net.prefix - 96)),
                _ => list.entry(&format_args!("{ip}/{}", net.prefix)),
            };
        }
        if self.unix {
            list.entry(&"unix");
        }
        list.finish()
    }
}

/// One element of `Forwarded` (one hop): its `for`, `proto` and `host`
/// values, unquoted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Hop<'h> {
    pub(crate) by_for: Option<&'h str>,
    pub(crate) proto: Option<&'h str>,
    pub(crate) host: Option<&'h str>,
}

/// `value` cut at each `sep` outside a quoted string.
fn split_unquoted(value: &str, sep: u8) -> impl Iterator<Item = &str> {
    let mut rest = Some(value);
    std::iter::from_fn(move || {
        let text = rest?;
        let (mut quoted, mut escaped) = (false, false);
        for (i, b) in text.bytes().enumerate() {
            match b {
                _ if escaped => escaped = false,
                b'\\' if quoted => escaped = true,
                b'"' => quoted = !quoted,
                _ if b == sep && !quoted => {
                    rest = Some(&text[i + 1..]);
                    return Some(&text[..i]);
                }
                _ => {}
            }
        }
        rest = None;
        Some(text)
    })
}

/// A parameter value: a token as it is, a quoted string without its
/// quotes. `None` for one with a backslash escape (which cannot be
/// borrowed unescaped, and which no address, scheme or host needs) or
/// unbalanced quotes.
fn unquote(value: &str) -> Option<&str> {
    let value = value.trim();
    match value.strip_prefix('"') {
        Some(inner) => inner.strip_suffix('"').filter(|v| !v.contains(['"', '\\'])),
        None => (!value.contains('"')).then_some(value),
    }
}

/// The elements of one `Forwarded` line (RFC 7239 §4): comma-separated,
/// each `name=value` pairs separated by semicolons; names without regard
/// to case.
pub(crate) fn hops(line: &str) -> impl Iterator<Item = Hop<'_>> {
    split_unquoted(line, b',').filter(|e| !e.trim().is_empty()).map(|element| {
        let mut hop = Hop::default();
        for pair in split_unquoted(element, b';') {
            let Some((name, value)) = pair.split_once('=') else { continue };
            let slot = match name.trim() {
                n if n.eq_ignore_ascii_case("for") => &mut hop.by_for,
                n if n.eq_ignore_ascii_case("proto") => &mut hop.proto,
                n if n.eq_ignore_ascii_case("host") => &mut hop.host,
                _ => continue,
            };
            *slot = unquote(value);
        }
        hop
    })
}

/// The address a node names (RFC 7239 §6: `192.0.2.43`, `"[2001:db8::17]"`,
/// either with a `:port`), or, leniently, as `X-Forwarded-For` has it (an
/// IPv6 address without brackets). `None` for `unknown`, an obfuscated
/// identifier (`_hidden`) and anything malformed.
pub(crate) fn node_ip(node: &str) -> Option<IpAddr> {
    let node = node.trim();
    if let Ok(ip) = IpAddr::from_str(node) {
        return Some(ip);
    }
    let (ip, port) = match node.strip_prefix('[') {
        Some(bracketed) => {
            let (inside, after) = bracketed.split_once(']')?;
            let port = if after.is_empty() { None } else { Some(after.strip_prefix(':')?) };
            (IpAddr::V6(inside.parse().ok()?), port)
        }
        None => {
            let (host, port) = node.split_once(':')?;
            (IpAddr::V4(host.parse().ok()?), Some(port))
        }
    };
    // `node-port = port / obfport` (`_` then letters, digits, `.`, `_`, `-`).
    let port_ok = |p: &str| match p.strip_prefix('_') {
        Some(obf) => !obf.is_empty() && obf.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
        None => p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok(),
    };
    port.is_none_or(port_ok).then_some(ip)
}

/// The walk from the right end of a list of hops: the right-most that is
/// not a trusted proxy, fed from the left, one at a time.
pub(crate) struct Walk<T> {
    /// The last hop fed that is not a trusted address, and its address.
    stop: Option<(Option<IpAddr>, T)>,
    /// The first trusted address fed after `stop`.
    after_stop: Option<IpAddr>,
    /// The first hop fed (when every one is trusted, the client).
    first: Option<(IpAddr, T)>,
    seen: bool,
}

impl<T: Copy> Walk<T> {
    pub(crate) fn new() -> Walk<T> {
        Walk { stop: None, after_stop: None, first: None, seen: false }
    }

    pub(crate) fn feed(&mut self, ip: Option<IpAddr>, hop: T, trusted: &TrustedProxies) {
        let first = !self.seen;
        self.seen = true;
        match ip {
            Some(ip) if trusted.contains(ip) => {
                self.after_stop.get_or_insert(ip);
                if first {
                    self.first = Some((ip, hop));
                }
            }
            _ => {
                self.stop = Some((ip, hop));
                self.after_stop = None;
            }
        }
    }

    /// The client's address and its hop; `peer` when nothing was fed, or
    /// the hop that ended the walk names no address and no trusted one
    /// follows it.
    pub(crate) fn end(self, peer: Option<IpAddr>) -> (Option<IpAddr>, Option<T>) {
        match (self.stop, self.first) {
            (Some((Some(ip), hop)), _) => (Some(ip), Some(hop)),
            (Some((None, hop)), _) => (self.after_stop.or(peer), Some(hop)),
            (None, Some((ip, hop))) => (Some(ip), Some(hop)),
            (None, None) => (peer, None),
        }
    }
}

#[cfg(test)]
mod tests;
