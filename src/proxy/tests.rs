use std::net::IpAddr;

use super::*;

#[test]
fn proxies_parse_addresses_and_ranges() {
    let trusted = TrustedProxies::parse(["127.0.0.1", " 10.0.0.0/8", "::1", "fd00::/8", "0.0.0.0/0"]).unwrap();
    assert_eq!(format!("{trusted:?}"), "[127.0.0.1/32, 10.0.0.0/8, ::1/128, fd00::/8, 0.0.0.0/0]");
    let v6_only = TrustedProxies::parse(["fd00::/8"]).unwrap();
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    assert!(v6_only.contains(ip("fdab::1")) && !v6_only.contains(ip("fe00::1")));
    assert!(!v6_only.contains(ip("10.0.0.1")));
    let v4 = TrustedProxies::parse(["10.1.0.0/16", "192.0.2.1"]).unwrap();
    assert!(v4.contains(ip("10.1.255.3")) && !v4.contains(ip("10.2.0.1")));
    assert!(v4.contains(ip("::ffff:10.1.0.9")) && v4.contains(ip("192.0.2.1")) && !v4.contains(ip("192.0.2.2")));
    // Host bits set in a range are ignored, as routers do.
    assert!(TrustedProxies::parse(["10.1.2.3/8"]).unwrap().contains(ip("10.200.0.1")));
    let all6 = TrustedProxies::parse(["::/0"]).unwrap();
    assert!(all6.contains(ip("2001:db8::1")) && all6.contains(ip("10.0.0.1")));
    for bad in ["", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/+8", "localhost", "10.0.0", "[::1]", "unix:"] {
        assert!(TrustedProxies::parse([bad]).is_err(), "{bad:?}");
    }
}

#[test]
fn nodes_are_addresses_with_ports_or_nothing() {
    let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
    for (node, want) in [
        ("192.0.2.43", ip("192.0.2.43")),
        ("192.0.2.43:80", ip("192.0.2.43")),
        ("[2001:db8::1]", ip("2001:db8::1")),
        ("[2001:db8::1]:_port-1", ip("2001:db8::1")),
        ("2001:db8::1", ip("2001:db8::1")),
        ("unknown", None),
        ("_obf", None),
        ("192.0.2.43:", None),
        ("192.0.2.43:_", None),
        ("[2001:db8::1]x", None),
        ("[192.0.2.1]", None),
        ("", None),
    ] {
        assert_eq!(node_ip(node), want, "{node:?}");
    }
}
