//! hyper 1 (HTTP/1 server connection) on tokio's multi-thread runtime
//! (a worker per CPU), a task per connection.
//!
//! `/sleep` blocks inside `tokio::task::spawn_blocking`, as tokio's docs
//! advise for blocking work: the call runs on the blocking thread pool and
//! the task awaits it.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{CONNECTION, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode, body::Incoming};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// How long `GET /sleep` blocks: a stand-in for a database call.
const SLEEP: Duration = Duration::from_millis(50);

async fn testolope(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let ok = || {
        let mut resp = Response::new(Full::new(Bytes::from_static(b"Testolope")));
        resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        resp
    };
    Ok(match req.uri().path() {
        "/testolope" => ok(),
        "/sleep" => {
            // Only a panic of the closure fails the join; it cannot panic.
            tokio::task::spawn_blocking(|| std::thread::sleep(SLEEP)).await.expect("sleep panicked");
            let mut resp = Response::new(Full::new(Bytes::from_static(b"Slept")));
            resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            resp
        }
        "/testolope-nokeepalive" => {
            let mut resp = ok();
            // hyper closes the connection after a response that says so.
            resp.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
            resp
        }
        _ => {
            let mut resp = Response::new(Full::new(Bytes::new()));
            *resp.status_mut() = StatusCode::NOT_FOUND;
            resp
        }
    })
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:19005".into());
    let listener = TcpListener::bind(&addr).await?;
    eprintln!("peer-hyper listening on {addr}");
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service_fn(testolope)).await;
        });
    }
}
