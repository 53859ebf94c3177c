use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::request_fixture::with_request;

fn key(byte: u8) -> Key {
    Key::from(&[byte; 64])
}

fn data(pairs: &[(&str, &str)]) -> SessionData {
    pairs.iter().map(|&(n, v)| (n.to_owned(), v.to_owned())).collect()
}

/// Loads the session of a request carrying `cookie` (a `Cookie` value, or
/// none), lets `change` work on it, and saves it with a `204`: the
/// `Set-Cookie` written, if any, and what `change` returned.
fn exchange<T>(
    sessions: &Sessions,
    cookie: Option<&str>,
    change: impl FnOnce(&mut Session) -> T,
) -> (Option<String>, T) {
    let raw = match cookie {
        Some(c) => format!("GET / HTTP/1.1\r\nHost: x\r\nCookie: {c}\r\n\r\n"),
        None => "GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_owned(),
    };
    with_request(raw.as_bytes(), |req| {
        let mut session = sessions.load(req).unwrap();
        let out = change(&mut session);
        let resp = sessions.save(session, Response::status(204)).unwrap();
        assert!(resp.invalid.is_none(), "{resp:?}");
        (resp.header("set-cookie").map(str::to_owned), out)
    })
}

/// The `name=value` of a `Set-Cookie` value.
fn pair(set_cookie: &str) -> &str {
    set_cookie.split(';').next().unwrap()
}

/// Logs in as `user`: a new session (rotated, as at a login), its cookie.
fn login(sessions: &Sessions, cookie: Option<&str>, user: &str) -> String {
    let (set, ()) = exchange(sessions, cookie, |s| {
        s.rotate();
        s.insert("user", user);
    });
    pair(&set.expect("a login sets the cookie")).to_owned()
}

fn user(sessions: &Sessions, cookie: &str) -> Option<String> {
    exchange(sessions, Some(cookie), |s| s.get("user").map(str::to_owned)).1
}

#[test]
fn a_new_session_sets_an_encrypted_id_with_the_attributes() {
    let sessions = Sessions::new(key(1));
    let (set, ()) = exchange(&sessions, None, |s| s.insert("user", "alice"));
    let set = set.unwrap();
    let (name, rest) = set.split_once('=').unwrap();
    assert_eq!(name, "session");
    assert!(rest.ends_with("; HttpOnly; SameSite=Lax; Secure; Path=/"), "{set}");
    assert!(!set.contains("alice"));
    // The value is the id, encrypted: 32 hex digits inside.
    let id = with_request(format!("GET / HTTP/1.1\r\nHost: x\r\nCookie: {}\r\n\r\n", pair(&set)).as_bytes(), |req| {
        req.private_cookie(&key(1), "session")
    });
    let id = id.unwrap();
    assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    assert_eq!(user(&sessions, pair(&set)), Some("alice".into()));
}

#[test]
fn the_cookie_is_written_only_when_the_id_changes() {
    let sessions = Sessions::new(key(1)).secure(false).cookie_name("sid");
    let (set, ()) = exchange(&sessions, None, |s| s.insert("cart", "1"));
    let cookie = pair(set.as_deref().unwrap()).to_owned();
    assert!(cookie.starts_with("sid=") && !set.unwrap().contains("Secure"));
    // Reading, and changing the data under the same id: no cookie.
    assert_eq!(exchange(&sessions, Some(&cookie), |s| s.get("cart").map(str::to_owned)), (None, Some("1".into())));
    assert_eq!(exchange(&sessions, Some(&cookie), |s| s.insert("cart", "2")).0, None);
    assert_eq!(exchange(&sessions, Some(&cookie), |s| s.get("cart").map(str::to_owned)).1, Some("2".into()));
    // Nothing put in: no session, no cookie.
    assert_eq!(exchange(&sessions, None, |s| s.get("cart").is_none()), (None, true));
    assert_eq!(exchange(&sessions, None, |s| s.remove("cart")), (None, None));
}

#[test]
fn a_tampered_or_foreign_cookie_is_no_session() {
    let sessions = Sessions::new(key(1));
    let cookie = login(&sessions, None, "alice");
    let (name, value) = cookie.split_once('=').unwrap();
    for at in [0, 12, value.len() / 2, value.len() - 4] {
        let mut bytes = value.as_bytes().to_vec();
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        let tampered = format!("{name}={}", String::from_utf8(bytes).unwrap());
        assert_eq!(user(&sessions, &tampered), None, "{tampered}");
    }
    // The same cookie made with another key: never decrypts here.
    let other_site = Sessions::new(key(2));
    let foreign = login(&other_site, None, "alice");
    assert_eq!(user(&sessions, &foreign), None);
    assert_eq!(user(&sessions, &cookie), Some("alice".into()));
    // The id in the clear is no cookie either.
    let id = with_request(format!("GET / HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\n\r\n").as_bytes(), |req| {
        req.private_cookie(&key(1), "session")
    });
    assert_eq!(user(&sessions, &format!("session={}", id.unwrap())), None);
}

#[test]
fn rotation_at_login_leaves_a_planted_id_logged_in_as_nobody() {
    let sessions = Sessions::new(key(1));
    // The attacker's own session, planted in the victim's browser.
    let (set, ()) = exchange(&sessions, None, |s| s.insert("cart", "bait"));
    let planted = pair(&set.unwrap()).to_owned();
    // The victim logs in with it.
    let victim = login(&sessions, Some(&planted), "victim");
    assert_ne!(victim, planted);
    assert_eq!(user(&sessions, &planted), None, "the planted id is forgotten");
    assert!(exchange(&sessions, Some(&planted), |s| s.is_empty()).1);
    // The data moved with the session to its new id.
    let kept =
        exchange(&sessions, Some(&victim), |s| (s.get("user").map(str::to_owned), s.get("cart").map(str::to_owned)));
    assert_eq!(kept.1, (Some("victim".into()), Some("bait".into())));
}

#[test]
fn destroy_forgets_the_session_and_clears_the_cookie() {
    let sessions = Sessions::new(key(1)).secure(false);
    let cookie = login(&sessions, None, "alice");
    let (set, ()) = exchange(&sessions, Some(&cookie), Session::destroy);
    let set = set.unwrap();
    assert!(set.starts_with("session=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0; Expires="), "{set}");
    assert_eq!(user(&sessions, &cookie), None, "a copy of the cookie is no login");
    // Emptied, it ends as well.
    let cookie = login(&sessions, None, "bob");
    let (set, ()) = exchange(&sessions, Some(&cookie), Session::clear);
    assert!(set.unwrap().contains("Max-Age=0"));
    assert_eq!(user(&sessions, &cookie), None);
    // Destroyed, then used again: a new session under a new id.
    let cookie = login(&sessions, None, "carol");
    let (set, ()) = exchange(&sessions, Some(&cookie), |s| {
        s.destroy();
        s.insert("flash", "signed out");
    });
    let fresh = pair(&set.unwrap()).to_owned();
    assert_ne!(fresh, cookie);
    assert_eq!(user(&sessions, &cookie), None);
    assert_eq!(exchange(&sessions, Some(&fresh), |s| s.get("flash").map(str::to_owned)).1, Some("signed out".into()));
    // A logout without a session clears a stale cookie, and sets none
    // where there was none.
    assert!(exchange(&sessions, Some(&cookie), Session::destroy).0.unwrap().contains("Max-Age=0"));
    assert_eq!(exchange(&sessions, None, Session::destroy).0, None);
}

#[test]
fn an_idle_session_expires() {
    let store = MemoryStore::new().idle_timeout(Duration::from_secs(60));
    let t0 = Instant::now();
    store.save_at("a", &data(&[("user", "alice")]), t0);
    store.save_at("b", &data(&[("user", "bob")]), t0);
    assert_eq!(store.load_at("a", t0 + Duration::from_secs(59)), Some(data(&[("user", "alice")])));
    // A load is a use: `a` lives on from there, `b` does not.
    assert!(store.load_at("a", t0 + Duration::from_secs(118)).is_some());
    assert_eq!(store.load_at("b", t0 + Duration::from_secs(60)), None);
    assert_eq!(store.len(), 1, "an expired session is dropped when found");
    assert_eq!(store.load_at("a", t0 + Duration::from_secs(178)), None);
    assert!(store.is_empty());
}

#[test]
fn a_full_store_evicts_the_session_used_longest_ago() {
    let store = MemoryStore::new().max_sessions(3).idle_timeout(Duration::from_secs(60));
    let t0 = Instant::now();
    let at = |s| t0 + Duration::from_secs(s);
    for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
        store.save_at(id, &data(&[("n", id)]), at(i as u64));
    }
    // `a` is used again, so `b` is now the oldest.
    assert!(store.load_at("a", at(3)).is_some());
    store.save_at("d", &data(&[("n", "d")]), at(4));
    assert_eq!(store.len(), 3);
    assert_eq!(store.load_at("b", at(5)), None);
    for id in ["a", "c", "d"] {
        assert!(store.load_at(id, at(5)).is_some(), "{id}");
    }
    // Saving one it has takes no room.
    store.save_at("c", &data(&[("n", "c2")]), at(6));
    assert_eq!(store.len(), 3);
    // Expired sessions go first, all of them: at 65 s, `a` and `d` (last
    // used at 5 s) have expired, `c` (6 s) not yet.
    store.save_at("e", &data(&[]), at(65));
    assert_eq!(store.len(), 2);
    assert!(store.load_at("c", at(65)).is_some());
}

#[test]
fn sessions_stay_bounded_under_a_flood_of_logins() {
    let sessions = Sessions::new(key(1)).store(MemoryStore::new().max_sessions(2));
    let first = login(&sessions, None, "first");
    let second = login(&sessions, None, "second");
    let third = login(&sessions, None, "third");
    assert_eq!(user(&sessions, &first), None);
    assert_eq!(user(&sessions, &second), Some("second".into()));
    assert_eq!(user(&sessions, &third), Some("third".into()));
}

/// A store that fails every call, as a database that is down.
struct Down;

impl SessionStore for Down {
    fn load(&self, _: &str) -> io::Result<Option<SessionData>> {
        Err(io::Error::other("database down"))
    }
    fn save(&self, _: &str, _: &SessionData) -> io::Result<()> {
        Err(io::Error::other("database down"))
    }
    fn remove(&self, _: &str) -> io::Result<()> {
        Err(io::Error::other("database down"))
    }
}

#[test]
fn a_failing_store_is_an_error_for_the_handler() {
    let working = Sessions::new(key(1));
    let cookie = login(&working, None, "alice");
    let down = Sessions::new(key(1)).store(Down);
    let raw = format!("GET / HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\n\r\n");
    with_request(raw.as_bytes(), |req| assert!(down.load(req).is_err()));
    with_request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", |req| {
        let mut session = down.load(req).unwrap();
        session.insert("user", "alice");
        assert!(down.save(session, Response::status(204)).is_err());
    });
}

#[test]
fn debug_shows_no_secrets() {
    let sessions = Arc::new(Sessions::new(key(7)));
    assert_eq!(format!("{sessions:?}"), "Sessions { cookie_name: \"session\", secure: true, .. }");
    let mut session = Session::empty();
    session.insert("token", "s3cret");
    let shown = format!("{session:?}");
    assert!(shown.contains("token") && !shown.contains("s3cret"), "{shown}");
    assert_eq!(
        format!("{:?}", MemoryStore::new()),
        "MemoryStore { sessions: 0, max_sessions: 10000, idle_timeout: 1800s }"
    );
}

#[test]
fn settings_out_of_range_panic_when_built() {
    assert!(std::panic::catch_unwind(|| MemoryStore::new().max_sessions(0)).is_err());
    assert!(std::panic::catch_unwind(|| Sessions::new(key(1)).cookie_name("a b")).is_err());
    // The extremes that make sense work.
    let store = MemoryStore::new().max_sessions(usize::MAX).idle_timeout(Duration::MAX);
    let t0 = Instant::now();
    store.save_at("a", &data(&[("n", "1")]), t0);
    assert!(store.load_at("a", t0 + Duration::from_secs(1 << 30)).is_some());
    let store = MemoryStore::new().idle_timeout(Duration::ZERO);
    store.save_at("a", &data(&[("n", "1")]), t0);
    assert_eq!(store.load_at("a", t0), None);
}
