//! The client behind trusted proxies, as a request tells it: `Forwarded`
//! and `X-Forwarded-*` read from the right past the proxies trusted.

use std::net::SocketAddr;

use crate::net::Peer;
use crate::request_fixture::with_request_from;

const PROXIES: &[&str] = &["127.0.0.1", "10.0.0.0/8", "::1", "fd00::/8"];

/// `(client_addr, client_scheme, client_host)` of a request with `headers`
/// from `peer` (`None`: a Unix socket), to a server trusting `proxies`.
fn seen(peer: Option<&str>, proxies: &[&str], headers: &str) -> (Option<String>, String, Option<String>) {
    let raw = format!("GET / HTTP/1.1\r\nHost: origin.example\r\n{headers}\r\n");
    let peer = match peer {
        Some(ip) => Peer::Ip(SocketAddr::new(ip.parse().unwrap(), 40000)),
        #[cfg(unix)]
        None => Peer::Local,
        #[cfg(not(unix))]
        None => unreachable!("no Unix domain sockets here"),
    };
    with_request_from(raw.as_bytes(), peer, proxies, |req| {
        let addr = req.client_addr().map(|ip| ip.to_string());
        (addr, req.client_scheme().to_owned(), req.client_host().map(str::to_owned))
    })
}

/// The client's address alone, from a trusted proxy.
fn client(headers: &str) -> Option<String> {
    seen(Some("10.0.0.1"), PROXIES, headers).0
}

#[test]
fn forwarded_for_from_the_right_past_trusted_proxies() {
    for (headers, want) in [
        // No header: the peer.
        ("", "10.0.0.1"),
        ("X-Forwarded-For: 203.0.113.9\r\n", "203.0.113.9"),
        ("X-Forwarded-For: 203.0.113.9, 10.2.3.4, 127.0.0.1\r\n", "203.0.113.9"),
        // A client's own entry at the left is not believed.
        ("X-Forwarded-For: 1.1.1.1, 203.0.113.9, 10.2.3.4\r\n", "203.0.113.9"),
        // Every one trusted: the left-most.
        ("X-Forwarded-For: 10.9.9.9, 127.0.0.1\r\n", "10.9.9.9"),
        // Lines combine, in order.
        ("X-Forwarded-For: 1.1.1.1\r\nX-Forwarded-For: 203.0.113.9, 10.2.3.4\r\n", "203.0.113.9"),
        ("X-Forwarded-For: 2001:db8::7\r\n", "2001:db8::7"),
        ("X-Forwarded-For: [2001:db8::7]:443, fd00::1\r\n", "2001:db8::7"),
        ("X-Forwarded-For: 203.0.113.9:5000\r\n", "203.0.113.9"),
        ("X-Forwarded-For:  203.0.113.9 ,, 10.2.3.4 \r\n", "203.0.113.9"),
        // Not an address: the walk ends, at the proxy that wrote it.
        ("X-Forwarded-For: 203.0.113.9, garbage, 10.2.3.4\r\n", "10.2.3.4"),
        ("X-Forwarded-For: 203.0.113.9, unknown\r\n", "10.0.0.1"),
        ("X-Forwarded-For: 203.0.113.9:99999\r\n", "10.0.0.1"),
        ("X-Forwarded-For: 203.0.113.9, 300.1.1.1\r\n", "10.0.0.1"),
    ] {
        assert_eq!(client(headers).as_deref(), Some(want), "{headers:?}");
    }
}

#[test]
fn forwarded_as_rfc_7239_writes_it() {
    for (headers, want) in [
        ("Forwarded: for=192.0.2.60;proto=http;by=203.0.113.43\r\n", "192.0.2.60"),
        ("Forwarded: For=\"[2001:db8:cafe::17]:4711\"\r\n", "2001:db8:cafe::17"),
        ("Forwarded: for=192.0.2.43, for=198.51.100.17\r\n", "198.51.100.17"),
        ("Forwarded: for=192.0.2.43, for=10.1.1.1;proto=https\r\n", "192.0.2.43"),
        ("Forwarded: for=192.0.2.43\r\nForwarded: for=\"10.1.1.1:80\"\r\n", "192.0.2.43"),
        ("Forwarded: for=\"192.0.2.43:_obf\"\r\n", "192.0.2.43"),
        // Unknown and obfuscated nodes end the walk.
        ("Forwarded: for=unknown\r\n", "10.0.0.1"),
        ("Forwarded: for=192.0.2.43, for=_hidden, for=10.7.7.7\r\n", "10.7.7.7"),
        // An element without `for`, a malformed or escaped value: the same.
        ("Forwarded: proto=https\r\n", "10.0.0.1"),
        ("Forwarded: for=\"192.0.2.43\r\n", "10.0.0.1"),
        ("Forwarded: for=\"192.0.\\2.43\"\r\n", "10.0.0.1"),
        ("Forwarded: for=[2001:db8::1\r\n", "10.0.0.1"),
        // A comma inside quotes does not split elements.
        ("Forwarded: for=192.0.2.43;host=\"a,b\", for=10.1.1.1\r\n", "192.0.2.43"),
        // `Forwarded` goes before `X-Forwarded-For`.
        ("X-Forwarded-For: 198.51.100.1\r\nForwarded: for=192.0.2.60\r\n", "192.0.2.60"),
    ] {
        assert_eq!(client(headers).as_deref(), Some(want), "{headers:?}");
    }
}

#[test]
fn scheme_and_host_of_the_clients_hop() {
    let from_proxy = |headers| {
        let (_, scheme, host) = seen(Some("127.0.0.1"), PROXIES, headers);
        (scheme, host.unwrap_or_default())
    };
    for (headers, scheme, host) in [
        ("", "http", "origin.example"),
        ("X-Forwarded-Proto: https\r\nX-Forwarded-Host: shop.example\r\n", "https", "shop.example"),
        // The right-most value, which the nearest proxy wrote.
        ("X-Forwarded-Proto: https, http\r\n", "http", "origin.example"),
        ("X-Forwarded-Host: a.example\r\nX-Forwarded-Host: b.example:8443\r\n", "http", "b.example:8443"),
        // Invalid ones are not taken.
        ("X-Forwarded-Proto: ht tp\r\nX-Forwarded-Host: a/b\r\n", "http", "origin.example"),
        ("Forwarded: for=192.0.2.1;proto=https;host=shop.example\r\n", "https", "shop.example"),
        // Of the element whose `for` is the client.
        (
            "Forwarded: for=192.0.2.1;proto=https;host=shop.example, for=10.0.0.2;proto=http;host=inner\r\n",
            "https",
            "shop.example",
        ),
        ("Forwarded: for=unknown;proto=https;host=\"shop.example:443\"\r\n", "https", "shop.example:443"),
    ] {
        assert_eq!(from_proxy(headers), (scheme.to_owned(), host.to_owned()), "{headers:?}");
    }
}

#[test]
fn headers_from_an_untrusted_peer_are_ignored() {
    let spoofed = "X-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6;proto=https;host=evil.example\r\n\
                   X-Forwarded-Proto: https\r\nX-Forwarded-Host: evil.example\r\n";
    let plain = |peer: &str| (Some(peer.to_owned()), "http".to_owned(), Some("origin.example".to_owned()));
    assert_eq!(seen(Some("192.0.2.9"), PROXIES, spoofed), plain("192.0.2.9"));
    // No proxy trusted (the default).
    assert_eq!(seen(Some("127.0.0.1"), &[], spoofed), plain("127.0.0.1"));
    // An IPv4-mapped peer is its IPv4 address, trusted or not alike.
    assert_eq!(seen(Some("::ffff:192.0.2.9"), PROXIES, spoofed).0.as_deref(), Some("::ffff:192.0.2.9"));
    assert_eq!(seen(Some("::ffff:10.0.0.3"), PROXIES, spoofed).0.as_deref(), Some("6.6.6.6"));
    // A Unix socket peer: trusted with `unix` only.
    #[cfg(unix)]
    {
        assert_eq!(seen(None, PROXIES, spoofed).0, None);
        assert_eq!(seen(None, &["unix"], spoofed).0.as_deref(), Some("6.6.6.6"));
    }
}
