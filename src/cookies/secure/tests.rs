use cookie::{Cookie, Key};

use crate::request_fixture::with_request;
use crate::response::Response;

fn key(byte: u8) -> Key {
    Key::from(&[byte; 64])
}

/// The `name=value` of the one `Set-Cookie` of `resp`.
fn pair(resp: &Response) -> String {
    assert!(resp.invalid.is_none(), "{resp:?}");
    resp.header("set-cookie").unwrap().split(';').next().unwrap().to_owned()
}

/// What `read` gets from a request carrying `cookie` (a `Cookie` value).
fn read_back(cookie: &str, read: impl FnOnce(&crate::Request<'_>) -> Option<String>) -> Option<String> {
    let raw = format!("GET / HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\n\r\n");
    let mut out = None;
    with_request(raw.as_bytes(), |req| out = read(req));
    out
}

/// `pair` with one character of its value replaced by another base64
/// character, at `at` bytes into the value.
fn flipped(pair: &str, at: usize) -> String {
    let (name, value) = pair.split_once('=').unwrap();
    let mut bytes = value.as_bytes().to_vec();
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    format!("{name}={}", String::from_utf8(bytes).unwrap())
}

#[test]
fn a_signed_cookie_reads_back_and_shows_its_value() {
    let set = pair(&Response::status(204).with_signed_cookie(&key(1), ("theme", "dark")));
    assert!(set.starts_with("theme=") && set.ends_with("dark"), "{set}");
    assert_eq!(set.len(), "theme=".len() + 44 + 4, "{set}");
    assert_eq!(read_back(&set, |req| req.signed_cookie(&key(1), "theme")), Some("dark".into()));
}

#[test]
fn a_private_cookie_reads_back_and_hides_its_value() {
    let resp =
        Response::status(204).with_private_cookie(&key(1), Cookie::build(("cart", "3 apples; 2 pears")).path("/"));
    assert!(resp.header("set-cookie").unwrap().ends_with("; Path=/"));
    let set = pair(&resp);
    assert!(!set.contains("apples"), "{set}");
    assert_eq!(read_back(&set, |req| req.private_cookie(&key(1), "cart")), Some("3 apples; 2 pears".into()));
    // A random nonce each time: the same value never looks the same.
    let again = pair(&Response::status(204).with_private_cookie(&key(1), ("cart", "3 apples; 2 pears")));
    assert_ne!(set, again);
}

#[test]
fn a_tampered_cookie_reads_as_absent() {
    let signed = pair(&Response::status(204).with_signed_cookie(&key(1), ("theme", "dark")));
    let private = pair(&Response::status(204).with_private_cookie(&key(1), ("cart", "3 apples")));
    for at in [0, 10, 43] {
        let bad = flipped(&signed, at);
        assert_eq!(read_back(&bad, |req| req.signed_cookie(&key(1), "theme")), None, "{bad}");
    }
    // The value after the signature, changed.
    let changed = signed.replace("dark", "dork");
    assert_eq!(read_back(&changed, |req| req.signed_cookie(&key(1), "theme")), None);
    let value_len = private.len() - "cart=".len();
    for at in [0, 11, 12, value_len / 2, value_len - 5] {
        let bad = flipped(&private, at);
        assert_eq!(read_back(&bad, |req| req.private_cookie(&key(1), "cart")), None, "{bad}");
    }
    for cut in ["theme=dark", "theme=", "theme"] {
        assert_eq!(read_back(cut, |req| req.signed_cookie(&key(1), "theme")), None, "{cut}");
    }
    assert_eq!(read_back("cart=3 apples", |req| req.private_cookie(&key(1), "cart")), None);
}

#[test]
fn a_cookie_made_with_another_key_reads_as_absent() {
    let signed = pair(&Response::status(204).with_signed_cookie(&key(2), ("theme", "dark")));
    assert_eq!(read_back(&signed, |req| req.signed_cookie(&key(1), "theme")), None);
    let private = pair(&Response::status(204).with_private_cookie(&key(2), ("cart", "3 apples")));
    assert_eq!(read_back(&private, |req| req.private_cookie(&key(1), "cart")), None);
    // Neither kind passes for the other.
    let private_as_signed = private.replacen("cart", "theme", 1);
    assert_eq!(read_back(&private_as_signed, |req| req.signed_cookie(&key(2), "theme")), None);
}

#[test]
fn a_private_value_moved_under_another_name_reads_as_absent() {
    let private = pair(&Response::status(204).with_private_cookie(&key(1), ("role", "user")));
    let moved = private.replacen("role", "admin", 1);
    assert_eq!(read_back(&moved, |req| req.private_cookie(&key(1), "admin")), None);
    // A signed value is bound to the key only (the cookie crate's format).
    let signed = pair(&Response::status(204).with_signed_cookie(&key(1), ("role", "user")));
    let moved = signed.replacen("role", "admin", 1);
    assert_eq!(read_back(&moved, |req| req.signed_cookie(&key(1), "admin")), Some("user".into()));
}

#[test]
fn the_first_cookie_of_the_name_that_verifies_is_read() {
    let good = pair(&Response::status(204).with_private_cookie(&key(1), ("sid", "mine")));
    let foreign = pair(&Response::status(204).with_private_cookie(&key(2), ("sid", "planted")));
    let both = format!("{foreign}; {good}");
    assert_eq!(read_back(&both, |req| req.private_cookie(&key(1), "sid")), Some("mine".into()));
}

#[test]
fn a_signed_value_outside_cookie_octets_is_a_500() {
    let resp = Response::status(204).with_signed_cookie(&key(1), ("note", "two words"));
    assert_eq!(resp.invalid, Some("invalid cookie"));
    // Private values are base64 whatever they hold.
    let resp = Response::status(204).with_private_cookie(&key(1), ("note", "two words; \"quoted\""));
    assert!(resp.invalid.is_none());
}
