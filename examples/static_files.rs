//! Serves a directory with `httpool::ServeDir` (feature `fs`): `Content-Type`
//! by extension, `ETag` and `Last-Modified` with `304 Not Modified`, single
//! byte ranges (`206`, `416`), `HEAD`, `index.html` for directories, small
//! files from memory and large ones with `sendfile`, and no way out of the
//! root.
//!
//! ```sh
//! cargo run --release --features fs --example static_files -- 127.0.0.1:8005 ./site   # default: 127.0.0.1:8005 and .
//! curl -i http://127.0.0.1:8005/index.html
//! curl -i -H 'Range: bytes=0-99' http://127.0.0.1:8005/index.html      # 206
//! curl -i -H 'If-None-Match: "<etag from above>"' http://127.0.0.1:8005/index.html   # 304
//! ```
//!
//! With `--features fs,compression` and a third argument `gzip`, the
//! directory is served through `httpool::compress`.

use httpool::{ServeDir, Server};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8005".into());
    let root = args.next().unwrap_or_else(|| ".".into());
    let server = Server::bind(&addr)?;
    eprintln!("serving {root} on http://{}/", server.local_addr()?);
    let dir = ServeDir::new(root)?;
    match args.next().as_deref() {
        #[cfg(feature = "compression")]
        Some("gzip") => server.serve_handler(httpool::compress(dir)),
        _ => server.serve_handler(dir),
    }
}
