//! Serves a directory: `Content-Type` by extension, `ETag` and
//! `Last-Modified` with `304 Not Modified`, single byte ranges (`206`,
//! `416`), `HEAD`, and no way out of the root.
//!
//! ```sh
//! cargo run --release --example static_files -- 127.0.0.1:8005 ./site   # default: 127.0.0.1:8005 and .
//! curl -i http://127.0.0.1:8005/index.html
//! curl -i -H 'Range: bytes=0-99' http://127.0.0.1:8005/index.html      # 206
//! curl -i -H 'If-None-Match: "<etag from above>"' http://127.0.0.1:8005/index.html   # 304
//! ```
//!
//! The body is a `Response::file`: on plain TCP the kernel copies the file to
//! the socket (`sendfile` on Linux), never through the worker's buffers. The
//! worker still waits while a large download is taken by a slow client.
//!
//! A request path is percent-decoded, then refused if it has a `..` segment
//! or a NUL (`403`), and the file found is canonicalized (symlinks resolved)
//! and must still be inside the canonical root (`403`).

use std::fs::{self, File};
use std::io::{self, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use httpool::{Request, Response, Server};

fn content_type(path: &Path) -> &'static str {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "json" => "application/json",
        "txt" | "md" | "rs" | "toml" => "text/plain; charset=utf-8",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "wasm" => "application/wasm",
        "pdf" => "application/pdf",
        "woff2" => "font/woff2",
        _ => "application/octet-stream",
    }
}

/// Decodes `%XX` escapes; `None` for a bad escape or a result that is not
/// UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex = [bytes.next()?, bytes.next()?];
            out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

/// What a request path names under the root.
enum Found {
    File(PathBuf),
    /// A directory asked for without its trailing `/`.
    Directory,
}

/// The file a request path names under `root`, or the status refusing it.
fn resolve(root: &Path, raw_path: &str) -> Result<Found, u16> {
    if !raw_path.starts_with('/') {
        return Err(400);
    }
    let path = percent_decode(raw_path).ok_or(400u16)?;
    let mut file = root.to_path_buf();
    // Splitting after decoding also catches an encoded `/` (`..%2f`).
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => return Err(403),
            s if s.contains('\0') => return Err(403),
            s => file.push(s),
        }
    }
    if file.is_dir() {
        if !raw_path.ends_with('/') {
            return Ok(Found::Directory);
        }
        file.push("index.html");
    }
    let real = file.canonicalize().map_err(|e| error_status(&e))?;
    if !real.starts_with(root) {
        return Err(403);
    }
    Ok(Found::File(real))
}

fn error_status(e: &io::Error) -> u16 {
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => 404,
        io::ErrorKind::PermissionDenied => 403,
        _ => 500,
    }
}

/// A `Range` header's single byte range, as `(first, last)` inclusive.
/// `Ok(None)` when the header should be ignored (absent, not bytes, several
/// ranges, malformed), `Err(())` when it cannot be satisfied.
fn byte_range(header: Option<&str>, len: u64) -> Result<Option<(u64, u64)>, ()> {
    let Some(spec) = header.and_then(|h| h.trim().strip_prefix("bytes=")) else {
        return Ok(None);
    };
    let Some((first, last)) = spec.trim().split_once('-') else {
        return Ok(None);
    };
    if spec.contains(',') {
        return Ok(None); // Several ranges: a full 200 is allowed instead.
    }
    // Digits only: `u64::from_str` would also take a `+`.
    let number = |s: &str| s.bytes().all(|b| b.is_ascii_digit()).then(|| s.parse::<u64>().ok()).flatten();
    let (first, last) = match (number(first), number(last)) {
        (Some(a), Some(b)) if a <= b => (a, b.min(len.saturating_sub(1))),
        (Some(a), None) if last.is_empty() => (a, len.saturating_sub(1)),
        (None, Some(n)) if first.is_empty() => match n {
            0 => return Err(()),
            n => (len.saturating_sub(n), len.saturating_sub(1)),
        },
        _ => return Ok(None),
    };
    if first >= len { Err(()) } else { Ok(Some((first, last))) }
}

/// Whether an `If-None-Match` list names `etag` (weak comparison).
fn etag_matches(header: &str, etag: &str) -> bool {
    header.split(',').map(str::trim).any(|t| t == "*" || t.trim_start_matches("W/") == etag)
}

fn serve_file(root: &Path, req: &Request) -> Response {
    let path = match resolve(root, req.path()) {
        Ok(Found::File(path)) => path,
        // Relative links in the index must resolve inside the directory.
        Ok(Found::Directory) => return Response::status(301).with_header("Location", format!("{}/", req.path())),
        Err(code) => return Response::status(code),
    };
    let (mut file, meta) = match File::open(&path).and_then(|f| Ok((f.metadata()?, f))) {
        Ok((meta, file)) if meta.is_file() => (file, meta),
        Ok(_) => return Response::status(404),
        Err(e) => return Response::status(error_status(&e)),
    };
    let len = meta.len();
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).unwrap_or_default();
    let etag = format!("\"{len:x}-{:x}\"", mtime.as_nanos());
    let last_modified = httpool::http_date(UNIX_EPOCH + mtime);

    // RFC 9110 §13.2.2: If-None-Match wins over If-Modified-Since, which is
    // only compared for equality with the date we sent (what clients echo).
    let not_modified = match req.header("if-none-match") {
        Some(tags) => etag_matches(tags, &etag),
        None => req.header("if-modified-since") == Some(last_modified.as_str()),
    };
    if not_modified {
        return Response::status(304).with_header("ETag", etag).with_header("Last-Modified", last_modified);
    }

    // Ranges apply to GET only, and only if `If-Range` (when sent) is ours.
    let if_range_ok = req.header("if-range").is_none_or(|v| v == etag || v == last_modified);
    let range = if req.method() == "GET" && if_range_ok { byte_range(req.header("range"), len) } else { Ok(None) };
    let resp = match range {
        Ok(None) => Response::file(file, len),
        Ok(Some((first, last))) => {
            if let Err(e) = file.seek(SeekFrom::Start(first)) {
                return Response::status(error_status(&e));
            }
            let n = last - first + 1;
            Response::file(file, n).with_status(206).with_header("Content-Range", format!("bytes {first}-{last}/{len}"))
        }
        Err(()) => {
            return Response::status(416).with_header("Content-Range", format!("bytes */{len}"));
        }
    };
    resp.with_content_type(content_type(&path))
        .with_header("ETag", etag)
        .with_header("Last-Modified", last_modified)
        .with_header("Accept-Ranges", "bytes")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8005".into());
    let root = fs::canonicalize(args.next().unwrap_or_else(|| ".".into()))?;
    let server = Server::bind(&addr)?;
    eprintln!("serving {} on http://{}/", root.display(), server.local_addr()?);
    server.serve(move |req: &mut Request| match req.method() {
        "GET" | "HEAD" => serve_file(&root, req),
        _ => Response::status(405).with_header("Allow", "GET, HEAD"),
    })?;
    Ok(())
}
