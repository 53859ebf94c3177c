//! A WebSocket echo server: `/echo` echoes every message. The handshake is
//! answered by `httpool::websocket::accept`, and between messages the
//! connection parks like an idle keep-alive one: a socket holds no thread.
//!
//! ```sh
//! cargo run --example websocket            # ws://127.0.0.1:8002/echo
//! ```

use httpool::websocket;
use httpool::{Request, Response, Server};

/// Answers `GET /echo` with the WebSocket handshake (RFC 6455 §4.2);
/// echoes every text and binary message. A request that is no handshake
/// gets the status that tells the client what to change: `405` to another
/// method, `426` to one that asked for no upgrade to WebSocket or for
/// another version than 13, `400` to one without a proper key.
pub fn handler(req: &mut Request) -> Response {
    if req.path() != "/echo" {
        return Response::status(404);
    }
    let (_sender, resp) = websocket::accept(req, |ws, message| {
        if message.is_text() || message.is_binary() {
            let _ = ws.send(message);
        }
    });
    resp
}

#[allow(dead_code)] // The tests include this file for `handler`.
fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8002".into());
    let server = Server::bind(&addr)?;
    eprintln!("WebSocket echo on ws://{}/echo", server.local_addr()?);
    server.serve(handler)
}
