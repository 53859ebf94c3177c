//! The broadcast target of issue 50 on axum 0.8 and tokio's multi-thread
//! runtime (a worker per CPU), written the way axum's docs and examples show:
//!
//! - `GET /` → 200 `text/plain` `ok`;
//! - `GET /events` → `Sse` over a `tokio::sync::broadcast` receiver, with
//!   axum's default `KeepAlive` (a comment every 15 s);
//! - `GET /ws` → `WebSocketUpgrade`; each socket's task selects between the
//!   client's next message (text echoed back) and the next broadcast;
//! - `GET /page` → the page of the contract.
//!
//! One task sends the unix time in milliseconds to the channel once a second.
//! A subscriber that falls more than `BACKLOG` broadcasts behind loses the
//! oldest (the channel's `Lagged`); it is not disconnected. argv[1] is the
//! listen address.

use std::convert::Infallible;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use futures_util::{Stream, StreamExt};
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;

/// Broadcasts a subscriber may fall behind before it loses the oldest.
const BACKLOG: usize = 16;

/// The time between two broadcasts.
const TICK: Duration = Duration::from_secs(1);

const PAGE: &str = include_str!("../../broadcast_page.html");

type Tx = broadcast::Sender<String>;

fn unix_millis() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()
}

async fn broadcaster(tx: Tx) {
    let mut tick = tokio::time::interval(TICK);
    loop {
        tick.tick().await;
        // No subscriber is not an error: the next tick tries again.
        let _ = tx.send(unix_millis().to_string());
    }
}

async fn events(State(tx): State<Tx>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    // A lagged subscriber skips what it lost and goes on.
    let stream = BroadcastStream::new(tx.subscribe())
        .filter_map(|msg| async move { msg.ok().map(|ms| Ok(Event::default().data(ms))) });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn ws(State(tx): State<Tx>, upgrade: WebSocketUpgrade) -> impl IntoResponse {
    let rx = tx.subscribe();
    upgrade.on_upgrade(move |socket| socket_loop(socket, rx))
}

/// Echoes the client's text and forwards broadcasts until either side ends.
/// The socket itself answers pings and closes.
async fn socket_loop(mut socket: WebSocket, mut rx: broadcast::Receiver<String>) {
    loop {
        let out = tokio::select! {
            msg = socket.recv() => match msg {
                Some(Ok(Message::Text(text))) => Message::Text(text),
                // The socket answers a close on the next `recv`, which then
                // ends the stream.
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return,
            },
            ms = rx.recv() => match ms {
                Ok(ms) => Message::Text(ms.into()),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            },
        };
        if socket.send(out).await.is_err() {
            return;
        }
    }
}

#[tokio::main]
async fn main() {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8050".into());
    let (tx, _) = broadcast::channel(BACKLOG);
    tokio::spawn(broadcaster(tx.clone()));
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .route("/events", get(events))
        .route("/ws", get(ws))
        .route("/page", get(|| async { Html(PAGE) }))
        .with_state(tx);
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("bind");
    axum::serve(listener, app).await.expect("serve");
}
