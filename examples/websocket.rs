//! A WebSocket echo server: the handshake is an ordinary request answered
//! with `Response::upgrade`, then tungstenite speaks the protocol over the
//! upgraded connection (which holds its worker until it closes).
//!
//! ```sh
//! cargo run --example websocket            # ws://127.0.0.1:8002/echo
//! ```

use httpool::{Request, Response, Server, Upgraded};
use tungstenite::handshake::derive_accept_key;
use tungstenite::protocol::{Role, WebSocket};

/// Answers `GET /echo` with the WebSocket handshake (RFC 6455 §4.2);
/// echoes every message. A request that is no handshake gets the status
/// that tells the client what to change: `405` to another method, `426`
/// to one that asked for no upgrade to WebSocket or for another version
/// than 13, `400` to one without a proper key.
pub fn handler(req: &mut Request) -> Response {
    if req.path() != "/echo" {
        return Response::status(404);
    }
    if req.method() != "GET" {
        return Response::status(405).with_header("Allow", "GET");
    }
    // A 426 names the protocol it requires, in an `Upgrade` field, which
    // goes with the `upgrade` connection option (RFC 9110 §7.8, §15.5.22).
    let required = || Response::status(426).with_header("Upgrade", "websocket").with_header("Connection", "upgrade");
    if !req.is_upgrade_to("websocket") {
        return required();
    }
    if req.header("sec-websocket-version") != Some("13") {
        return required().with_header("Sec-WebSocket-Version", "13");
    }
    match req.header("sec-websocket-key").filter(|key| is_nonce(key)) {
        Some(key) => Response::upgrade(echo)
            .with_header("Upgrade", "websocket")
            .with_header("Sec-WebSocket-Accept", derive_accept_key(key.as_bytes())),
        None => Response::status(400),
    }
}

/// A WebSocket key: 16 bytes in base64 (RFC 6455 §4.1), 22 characters
/// and `==`, the last character before it carrying no bits past the 16th
/// byte.
fn is_nonce(key: &str) -> bool {
    let is_base64 = |b: &u8| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/';
    match key.as_bytes() {
        [digits @ .., last, b'=', b'='] if digits.len() == 21 => {
            digits.iter().all(is_base64) && matches!(last, b'A' | b'Q' | b'g' | b'w')
        }
        _ => false,
    }
}

fn echo(conn: Upgraded<'_>) {
    let mut ws = WebSocket::from_raw_socket(conn, Role::Server, None);
    while let Ok(message) = ws.read() {
        if message.is_close() || ((message.is_text() || message.is_binary()) && ws.send(message).is_err()) {
            break;
        }
    }
}

#[allow(dead_code)] // The tests include this file for `handler`.
fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8002".into());
    let server = Server::bind(&addr)?;
    eprintln!("WebSocket echo on ws://{}/echo", server.local_addr()?);
    server.serve(handler)
}
