//! Signed and private cookies, and sessions (feature `sessions`).
//!
//! # Signed and private cookies
//!
//! With a [`Key`] of the application's, [`Response::with_signed_cookie`]
//! signs a cookie's value (HMAC-SHA256: the client sees it but cannot
//! change it) and [`Response::with_private_cookie`] encrypts it
//! (AES-256-GCM, the cookie's name bound in: the client can neither read
//! nor change it, nor move it under another name);
//! [`Request::signed_cookie`](crate::Request::signed_cookie) and
//! [`Request::private_cookie`](crate::Request::private_cookie) read them
//! back. A cookie that does not verify (a byte changed, made with another
//! key, never signed) reads as absent. The format is the `cookie` crate's
//! jars' (so axum-extra's and Rocket's, with the same key). A signed value
//! is bound to the key, not to the name: with one key for several signed
//! cookies, a client may send one's value under another's name; use
//! private cookies where that matters.
//!
//! The key is 64 bytes kept secret: the same in every process that serves
//! the site and across restarts (or every cookie made before reads as
//! absent), loaded with `Key::from(&bytes)` (it panics on fewer than 64
//! bytes); `Key::generate()` makes a random one.
//!
//! # Sessions
//!
//! [`Sessions`] keeps a [`Session`], a map of names to text values, for
//! each browser: its data stays on the server, in a [`SessionStore`]
//! ([`MemoryStore`] by default: bounded, with an idle timeout), and the
//! browser holds only its id, 128 random bits in a private cookie
//! (`HttpOnly`, `SameSite=Lax`, `Path=/`, `Secure` unless turned off).
//! A handler loads the session, reads and changes it, and saves it with
//! its response; the cookie is written only when the session begins, moves
//! to a new id or ends.
//!
//! ```
//! use httpool::cookie::Key;
//! use httpool::session::Sessions;
//! use httpool::{Request, Response};
//!
//! // Plain HTTP in this example: `Secure` cookies go over HTTPS only.
//! let sessions = Sessions::new(Key::generate()).secure(false);
//!
//! let app = move |req: &mut Request| -> std::io::Result<Response> {
//!     let mut session = sessions.load(req)?;
//!     let resp = match req.path() {
//!         "/login" => {
//!             // (The password is checked here.) A new id at login, so
//!             // an id planted in the browser before is worth nothing.
//!             session.rotate();
//!             session.insert("user", "alice");
//!             Response::see_other("/")
//!         }
//!         "/logout" => {
//!             session.destroy();
//!             Response::see_other("/")
//!         }
//!         _ => match session.get("user") {
//!             Some(user) => Response::text(format!("hello, {user}\n")),
//!             None => Response::text("who are you?\n").with_status(401),
//!         },
//!     };
//!     sessions.save(session, resp)
//! };
//!
//! # use httpool::test::TestRequest;
//! let login = TestRequest::post("/login").send(&app);
//! let cookie = login.header("set-cookie").unwrap();
//! assert!(cookie.ends_with("; HttpOnly; SameSite=Lax; Path=/"), "{cookie}");
//! let pair = cookie.split(';').next().unwrap();
//! let home = TestRequest::get("/").header("Cookie", pair).send(&app);
//! assert_eq!((home.text(), home.header("set-cookie")), ("hello, alice\n", None));
//! let logout = TestRequest::post("/logout").header("Cookie", pair).send(&app);
//! assert!(logout.header("set-cookie").unwrap().contains("Max-Age=0"));
//! // The id is forgotten on the server too: a copy of the cookie is no
//! // longer a login.
//! assert_eq!(TestRequest::get("/").header("Cookie", pair).send(&app).status(), 401);
//! ```
//!
//! With a [`Router`](crate::Router), keep the `Sessions` in the router's
//! state ([`Router::with_state`](crate::Router::with_state)) and load and
//! save in the routes that use it; `examples/login.rs` is a whole login.
//!
//! Sessions make a site's logins, not its defences: check passwords with
//! a slow hash, and keep state-changing requests to `POST` (a
//! `SameSite=Lax` cookie is not sent with another site's `POST`, but is
//! with a link's `GET`).

use std::borrow::Cow;
use std::fmt;
use std::io;

use cookie::{Cookie, Key, SameSite};
use rand::RngCore;

use crate::proto::is_token;
use crate::request::Request;
use crate::response::Response;

mod store;

pub use store::{DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT, MemoryStore, SessionData, SessionStore};

/// The name of the session cookie by default.
pub const DEFAULT_SESSION_COOKIE: &str = "session";

/// Sessions for a site: the key that encrypts the id cookie, the store
/// that keeps the data, and the cookie's name and `Secure` attribute. One
/// for the whole server (it is `Send + Sync`: share it by reference, in a
/// router's state, or in an `Arc`). See [the module](self).
pub struct Sessions {
    key: Key,
    store: Box<dyn SessionStore>,
    cookie_name: Cow<'static, str>,
    secure: bool,
}

impl Sessions {
    /// Sessions whose id cookie is encrypted with `key`, kept in a
    /// [`MemoryStore::new`], in a cookie named [`DEFAULT_SESSION_COOKIE`]
    /// that is `Secure`.
    pub fn new(key: Key) -> Sessions {
        Sessions { key, store: Box::new(MemoryStore::new()), cookie_name: DEFAULT_SESSION_COOKIE.into(), secure: true }
    }

    /// Keeps the sessions in `store` (a [`MemoryStore`] with other limits,
    /// or a store of your own).
    pub fn store(mut self, store: impl SessionStore) -> Sessions {
        self.store = Box::new(store);
        self
    }

    /// Names the session cookie ([`DEFAULT_SESSION_COOKIE`] by default).
    ///
    /// # Panics
    ///
    /// When `name` is not a token.
    pub fn cookie_name(mut self, name: impl Into<Cow<'static, str>>) -> Sessions {
        let name = name.into();
        assert!(is_token(name.as_bytes()), "Sessions::cookie_name({name:?}): a cookie name is a token");
        self.cookie_name = name;
        self
    }

    /// Whether the cookie is `Secure`, sent by browsers over HTTPS only
    /// (on by default). Turn it off for a site served over plain HTTP,
    /// such as a program trying things on `127.0.0.1`; leave it on behind
    /// a proxy that ends TLS, where the browser speaks HTTPS.
    pub fn secure(mut self, secure: bool) -> Sessions {
        self.secure = secure;
        self
    }

    /// The session of `req`'s browser: the one its cookie names when the
    /// cookie decrypts and the store still has it, else a new empty one
    /// (a session begins when something is put in it).
    ///
    /// # Errors
    ///
    /// The store's, when it fails.
    pub fn load(&self, req: &Request<'_>) -> io::Result<Session> {
        let mut session = Session::empty();
        session.presented = req.cookie(&self.cookie_name).is_some();
        if let Some(id) = req.private_cookie(&self.key, &self.cookie_name) {
            if let Some(data) = self.store.load(&id)? {
                session.id = Some(id);
                session.data = data;
            }
        }
        Ok(session)
    }

    /// Stores what changed in `session` and returns `resp` with the cookie
    /// it needs: the new id when the session begins or moves to a new id
    /// ([`Session::rotate`]), a removal when it ends ([`Session::destroy`],
    /// or emptied), nothing when only its data changed or nothing did.
    ///
    /// # Errors
    ///
    /// The store's, when it fails (`?` in a handler answers `500`).
    pub fn save(&self, session: Session, resp: Response) -> io::Result<Response> {
        let Session { id, data, change, presented } = session;
        match (change, &id) {
            (Change::None, _) => return Ok(resp),
            (Change::Data, Some(id)) if !data.is_empty() => {
                self.store.save(id, &data)?;
                return Ok(resp);
            }
            _ => {}
        }
        // The session begins, moves to a new id, or ends: its old id goes.
        if let Some(old) = &id {
            self.store.remove(old)?;
        }
        if data.is_empty() {
            // A session that held something, or a cookie the client sent
            // (expired, of another key), is cleared from the browser too.
            let ended = id.is_some() || presented;
            return Ok(if ended { resp.with_cookie(self.cookie(String::new()).removal()) } else { resp });
        }
        let fresh = new_id();
        self.store.save(&fresh, &data)?;
        Ok(resp.with_private_cookie(&self.key, self.cookie(fresh)))
    }

    /// The session cookie with its attributes, holding `value`.
    fn cookie(&self, value: String) -> cookie::CookieBuilder<'static> {
        Cookie::build((self.cookie_name.clone(), value))
            .path("/")
            .http_only(true)
            .same_site(SameSite::Lax)
            .secure(self.secure)
    }
}

impl fmt::Debug for Sessions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sessions")
            .field("cookie_name", &self.cookie_name)
            .field("secure", &self.secure)
            .finish_non_exhaustive()
    }
}

/// 128 random bits as 32 hex digits, from a generator seeded by the
/// operating system.
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One browser's session, loaded by [`Sessions::load`] and saved with the
/// response by [`Sessions::save`]: a map of names to text values.
pub struct Session {
    /// The id the store knows it by; `None` for a session not stored yet.
    id: Option<String>,
    data: SessionData,
    change: Change,
    /// The request carried a cookie of the session's name (valid or not).
    presented: bool,
}

/// What saving a session must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    None,
    /// Store the data under the id it has (a new one if it has none).
    Data,
    /// Store the data under a new id, and forget the old one.
    NewId,
    /// Forget the session, and clear the browser's cookie.
    Destroy,
}

impl Session {
    fn empty() -> Session {
        Session { id: None, data: SessionData::new(), change: Change::None, presented: false }
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.data.get(name).map(String::as_str)
    }

    /// Sets `name` to `value`.
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let (name, value) = (name.into(), value.into());
        if self.data.get(&name) != Some(&value) {
            self.data.insert(name, value);
            self.changed();
        }
    }

    /// Removes `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<String> {
        let removed = self.data.remove(name);
        if removed.is_some() {
            self.changed();
        }
        removed
    }

    /// Removes every value; a session left empty ends when saved.
    pub fn clear(&mut self) {
        if !self.data.is_empty() {
            self.data.clear();
            self.changed();
        }
    }

    /// True when the session holds nothing.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The names and values it holds, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.data.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// Moves the session to a new id when it is saved, keeping its data;
    /// the old id is forgotten. Call it when the user logs in (or gains a
    /// right): an id an attacker planted in the browser beforehand (session
    /// fixation) then logs in nobody.
    pub fn rotate(&mut self) {
        if self.change != Change::Destroy {
            self.change = Change::NewId;
        }
    }

    /// Ends the session when it is saved: the store forgets it and the
    /// browser's cookie is cleared (logout). Values inserted after this
    /// start a new session, under a new id.
    pub fn destroy(&mut self) {
        self.data.clear();
        self.change = Change::Destroy;
    }

    fn changed(&mut self) {
        self.change = match self.change {
            Change::None => Change::Data,
            Change::Destroy => Change::NewId,
            other => other,
        };
    }
}

/// The names it holds; values are not shown (they may be secrets).
impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.data.keys().map(String::as_str).collect();
        names.sort_unstable();
        f.debug_struct("Session").field("names", &names).field("change", &self.change).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
