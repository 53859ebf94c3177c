//! Signed and private cookies (feature `sessions`), through the `cookie`
//! crate's jars and a [`Key`] of the application's.
//!
//! A **signed** cookie carries its value in the clear after an HMAC-SHA256
//! of it: the client can read it but not change it. A **private** one is
//! encrypted and authenticated (AES-256-GCM, the cookie's name bound in):
//! the client can neither read nor change it, nor move it under another
//! name. Either kind that does not verify (a byte changed, made with
//! another key, never signed) reads as absent, as a missing cookie does.
//! The format is the `cookie` crate's, which other Rust servers using it
//! (axum-extra's jars, Rocket) read and write with the same key.
//!
//! A signed value is bound to the key, not to the cookie's name: with one
//! key for several signed cookies, a client can send one's value under
//! another's name. Use private cookies, or a key per cookie, when that
//! matters.
//!
//! ```
//! use httpool::cookie::{Cookie, Key};
//! use httpool::test::TestRequest;
//! use httpool::{Request, Response};
//!
//! // In a real program: 64 random bytes kept secret, from a file or the
//! // environment (`Key::from(&bytes)`), the same for every restart and
//! // every process that serves the site; `Key::generate()` makes a new one.
//! let key = Key::generate();
//! let (k1, k2) = (key.clone(), key.clone());
//! let set = TestRequest::get("/").send(&move |_req: &mut Request| {
//!     Response::text("hi\n")
//!         .with_signed_cookie(&k1, ("theme", "dark"))
//!         .with_private_cookie(&k1, Cookie::build(("cart", "3 apples")).path("/").http_only(true))
//! });
//! let cookies: Vec<&str> = set.header_all("set-cookie").map(|c| c.split(';').next().unwrap()).collect();
//! assert!(cookies[0].starts_with("theme=") && cookies[0].ends_with("dark"));
//! assert!(!cookies[1].contains("apples"));
//!
//! let back = TestRequest::get("/").header("Cookie", &cookies.join("; "));
//! let answer = back.send(&move |req: &mut Request| {
//!     let theme = req.signed_cookie(&k2, "theme").unwrap_or_default();
//!     let cart = req.private_cookie(&k2, "cart").unwrap_or_default();
//!     Response::text(format!("{theme}, {cart}\n"))
//! });
//! assert_eq!(answer.text(), "dark, 3 apples\n");
//! ```

use cookie::{Cookie, CookieJar, Key};

use crate::request::Request;
use crate::response::Response;

impl Request<'_> {
    /// The value of the cookie `name` signed with `key`
    /// ([`Response::with_signed_cookie`]), verified; `None` when there is no
    /// such cookie or none that verifies. Of several cookies of that name,
    /// the first that verifies.
    pub fn signed_cookie(&self, key: &Key, name: &str) -> Option<String> {
        let jar = CookieJar::new();
        let signed = jar.signed(key);
        self.named(name).find_map(|cookie| signed.verify(cookie)).map(|c| c.value().to_owned())
    }

    /// The value of the cookie `name` encrypted with `key`
    /// ([`Response::with_private_cookie`]), decrypted and verified; `None`
    /// when there is no such cookie or none that decrypts. Of several
    /// cookies of that name, the first that decrypts.
    pub fn private_cookie(&self, key: &Key, name: &str) -> Option<String> {
        let jar = CookieJar::new();
        let private = jar.private(key);
        self.named(name).find_map(|cookie| private.decrypt(cookie)).map(|c| c.value().to_owned())
    }

    /// The cookies named `name`, owned (as the jars take them).
    fn named<'s>(&'s self, name: &'s str) -> impl Iterator<Item = Cookie<'static>> + 's {
        self.cookies().filter(move |&(n, _)| n == name).map(|(n, v)| Cookie::new(n.to_owned(), v.to_owned()))
    }
}

impl Response {
    /// Adds a `Set-Cookie` header for `cookie` with its value signed with
    /// `key` (HMAC-SHA256, base64, before the value): the client sees the
    /// value but cannot change it. Read it back with
    /// [`Request::signed_cookie`]. The value must be cookie-octets, as for
    /// [`Response::with_cookie`] (a `500` otherwise); the attributes are
    /// written as given. Remove it as any cookie:
    /// `with_cookie(Cookie::build(name).path(path).removal())`.
    pub fn with_signed_cookie<'c>(self, key: &Key, cookie: impl Into<Cookie<'c>>) -> Response {
        let mut jar = CookieJar::new();
        jar.signed_mut(key).add(cookie.into().into_owned());
        self.with_jar_cookie(jar)
    }

    /// Adds a `Set-Cookie` header for `cookie` with its value encrypted and
    /// authenticated with `key` (AES-256-GCM with a random nonce, the name
    /// bound in, base64): the client can neither read nor change it. Read
    /// it back with [`Request::private_cookie`]. Any text may be the value;
    /// the attributes are written as given.
    pub fn with_private_cookie<'c>(self, key: &Key, cookie: impl Into<Cookie<'c>>) -> Response {
        let mut jar = CookieJar::new();
        jar.private_mut(key).add(cookie.into().into_owned());
        self.with_jar_cookie(jar)
    }

    /// The one cookie added to `jar`, as a `Set-Cookie` header.
    fn with_jar_cookie(self, jar: CookieJar) -> Response {
        match jar.delta().next() {
            Some(cookie) => self.with_cookie(cookie.clone()),
            None => self,
        }
    }
}

#[cfg(test)]
mod tests;
