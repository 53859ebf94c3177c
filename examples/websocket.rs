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

/// Answers `GET /echo` with the WebSocket handshake; echoes every message.
pub fn handler(req: &mut Request) -> Response {
    let wants_websocket = req.header("upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let key = req.header("sec-websocket-key");
    match (req.path(), wants_websocket, key) {
        ("/echo", true, Some(key)) => Response::upgrade(echo)
            .with_header("Upgrade", "websocket")
            .with_header("Sec-WebSocket-Accept", derive_accept_key(key.as_bytes())),
        ("/echo", _, _) => Response::status(426).with_header("Upgrade", "websocket"),
        _ => Response::status(404),
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
