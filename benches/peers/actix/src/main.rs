//! actix-web 4: its default worker count (one per CPU), each a
//! single-threaded runtime; unmatched routes get actix's 404.

use actix_web::{App, HttpResponse, HttpServer, web};

async fn keepalive() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("Testolope")
}

async fn nokeepalive() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").force_close().body("Testolope")
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:19006".into());
    eprintln!("peer-actix listening on {addr}");
    HttpServer::new(|| {
        App::new()
            .route("/testolope", web::get().to(keepalive))
            .route("/testolope-nokeepalive", web::get().to(nokeepalive))
    })
    .bind(&addr)?
    .run()
    .await
}
