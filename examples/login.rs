//! A form login with a session (feature `sessions`, and `router`): one
//! demo user, `alice` with the password `wonderland`; a page only she may
//! see; a logout that ends the session on the server too.
//!
//! ```sh
//! cargo run --features sessions --example login     # 127.0.0.1:8009
//! ```
//!
//! Then open <http://127.0.0.1:8009/> in a browser, or with curl:
//!
//! ```sh
//! curl -i http://127.0.0.1:8009/private                        # 401
//! curl -i -c jar -d 'user=alice&password=wonderland' http://127.0.0.1:8009/login
//! #   303 See Other, Location: /private, Set-Cookie: session=…; HttpOnly; SameSite=Lax; Path=/
//! curl -i -b jar http://127.0.0.1:8009/private                 # 200: alice's page
//! curl -i -b jar -c jar -X POST http://127.0.0.1:8009/logout   # 303, the cookie cleared
//! ```
//!
//! The session key comes from `HTTPOOL_SESSION_KEY` (128 hex digits, the
//! same across restarts) or is made at start (every session then ends with
//! the process). The cookie is not `Secure` because this example speaks
//! plain HTTP; a site on HTTPS leaves it `Secure`.

use httpool::cookie::Key;
use httpool::router::State;
use httpool::session::Sessions;
use httpool::{Request, Response, Router, Server};

/// The one user of the example, and her password. A real site keeps a
/// slow hash of each password (argon2, scrypt), never the password.
const DEMO_USER: (&str, &str) = ("alice", "wonderland");

/// The application: its routes, with the sessions in the router's state.
pub fn app(key: Key) -> Router<State<Sessions>> {
    Router::with_state(Sessions::new(key).secure(false))
        .get("/", home)
        .get("/login", |_req, _sessions| page("Sign in", LOGIN_FORM))
        .post("/login", login)
        .get("/private", private)
        .post("/logout", logout)
}

type Answer = std::io::Result<Response>;

fn home(req: &mut Request, sessions: &Sessions) -> Answer {
    let session = sessions.load(req)?;
    Ok(match session.get("user") {
        Some(user) => page("Home", &format!("<p>Signed in as {user}. <a href=\"/private\">Your page</a></p>{LOGOUT}")),
        None => page("Home", "<p><a href=\"/login\">Sign in</a> to see your page.</p>"),
    })
}

fn login(req: &mut Request, sessions: &Sessions) -> Answer {
    let form = req.form_within(4096)?;
    let (user, password) = (form.get("user").unwrap_or_default(), form.get("password").unwrap_or_default());
    if (user, password) != DEMO_USER {
        let retry = format!("<p id=\"error\">Wrong user or password.</p>{LOGIN_FORM}");
        return Ok(page("Sign in", &retry).with_status(401));
    }
    let mut session = sessions.load(req)?;
    // A new id at login: an id planted in this browser before it logs
    // in nobody.
    session.rotate();
    session.insert("user", user);
    sessions.save(session, Response::see_other("/private"))
}

fn private(req: &mut Request, sessions: &Sessions) -> Answer {
    let session = sessions.load(req)?;
    Ok(match session.get("user") {
        Some(user) => page("Your page", &format!("<p id=\"welcome\">Welcome, {user}.</p>{LOGOUT}")),
        None => page("Sign in first", "<p><a href=\"/login\">Sign in</a> to see this page.</p>").with_status(401),
    })
}

fn logout(req: &mut Request, sessions: &Sessions) -> Answer {
    let mut session = sessions.load(req)?;
    session.destroy();
    sessions.save(session, Response::see_other("/"))
}

const LOGIN_FORM: &str = "<form method=\"post\" action=\"/login\">\
    <label>User <input name=\"user\" id=\"user\"></label> \
    <label>Password <input name=\"password\" id=\"password\" type=\"password\"></label> \
    <button id=\"sign-in\">Sign in</button></form>";

const LOGOUT: &str = "<form method=\"post\" action=\"/logout\"><button id=\"sign-out\">Sign out</button></form>";

fn page(title: &str, body: &str) -> Response {
    Response::html(format!("<!doctype html><meta charset=\"utf-8\"><title>{title}</title><h1>{title}</h1>{body}\n"))
}

/// The key from `HTTPOOL_SESSION_KEY` (128 hex digits), or a new one.
fn key() -> Key {
    let Ok(hex) = std::env::var("HTTPOOL_SESSION_KEY") else { return Key::generate() };
    let bytes: Option<Vec<u8>> =
        (0..hex.len()).step_by(2).map(|i| hex.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok())).collect();
    match bytes {
        Some(bytes) if bytes.len() >= 64 => Key::from(&bytes),
        _ => panic!("HTTPOOL_SESSION_KEY must be at least 128 hex digits"),
    }
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8009".into());
    let server = Server::bind(addr)?;
    eprintln!("login example on http://{}/ (alice / wonderland)", server.local_addr()?);
    server.serve_handler(app(key()))
}
