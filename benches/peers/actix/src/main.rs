//! actix-web 4: its default worker count (one per CPU), each a
//! single-threaded runtime; unmatched routes get actix's 404.
//!
//! `/sleep` blocks inside `web::block`, as actix-web's docs advise for
//! blocking work: the call runs on the blocking thread pool and the worker
//! awaits it.

use std::time::Duration;

use actix_web::{App, HttpResponse, HttpServer, web};

/// How long `GET /sleep` blocks: a stand-in for a database call.
const SLEEP: Duration = Duration::from_millis(50);

async fn keepalive() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("Testolope")
}

async fn nokeepalive() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").force_close().body("Testolope")
}

async fn sleep() -> actix_web::Result<HttpResponse> {
    web::block(|| std::thread::sleep(SLEEP)).await?;
    Ok(HttpResponse::Ok().content_type("text/plain").body("Slept"))
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:19006".into());
    eprintln!("peer-actix listening on {addr}");
    HttpServer::new(|| {
        App::new()
            .route("/testolope", web::get().to(keepalive))
            .route("/testolope-nokeepalive", web::get().to(nokeepalive))
            .route("/sleep", web::get().to(sleep))
    })
    .bind(&addr)?
    .run()
    .await
}
