//! Uploads: `PUT /upload/{name}` streams the request body to a file in a
//! directory (second argument; default `httpool-uploads` in the temporary
//! directory), 10 MiB at most, while the directory holds less than 1 GiB
//! (`507 Insufficient Storage` past it: clients cannot fill the disk).
//!
//! ```sh
//! cargo run --example upload            # 127.0.0.1:8007
//! head -c 3000000 /dev/urandom > big.bin
//! curl -v -T big.bin -H 'Expect: 100-continue' http://127.0.0.1:8007/upload/big.bin
//! ```
//!
//! shows the client holding the body back until the server asks for it:
//!
//! ```text
//! > PUT /upload/big.bin HTTP/1.1
//! > Content-Length: 3000000
//! > Expect: 100-continue
//! >
//! < HTTP/1.1 100 Continue
//! < HTTP/1.1 201 Created
//! stored 3000000 bytes as big.bin
//! ```
//!
//! The server sends `100 Continue` itself, when the handler first reads the
//! body, never before. A `Content-Length` over the limit is refused from the
//! header alone: `413` without `100 Continue`, and curl never sends the
//! body. A chunked body (`curl -T - < file`) is counted as it is read and
//! cut off with `413` once it passes the limit.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use httpool::{IntoResponse, Request, Response, Server};

/// The largest upload this example stores.
pub const LIMIT: u64 = 10 * 1024 * 1024;

/// The most the upload directory holds: an upload that would take it past
/// this is refused. (Uploads running at once may each add up to [`LIMIT`]
/// beyond it.)
pub const QUOTA: u64 = 1024 * 1024 * 1024;

/// A file name of letters, digits, `.`, `_` and `-`, not starting with a dot.
fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Why an upload was not stored, and how that is answered.
#[derive(Debug)]
pub enum Refusal {
    /// Over [`LIMIT`]: `413`.
    TooLarge,
    /// A bad, slow or cut-off body: `400` (the server answers `400`, `408`
    /// or `413` itself, or closes, whatever is returned).
    Body(io::Error),
    /// The directory holds its [`QUOTA`] already: `507`.
    Full,
    /// The file could not be written: `500`.
    Storage(io::Error),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::TooLarge => Response::text(format!("uploads are limited to {LIMIT} bytes\n")).with_status(413),
            Refusal::Body(e) => Response::text(format!("{e}\n")).with_status(400),
            Refusal::Full => Response::text("no room for more uploads\n").with_status(507),
            Refusal::Storage(e) => Response::text(format!("cannot store: {e}\n")).with_status(500),
        }
    }
}

fn upload(dir: &Path, quota: u64, req: &mut Request, name: &str) -> Result<Response, Refusal> {
    let declared = req.header("content-length").and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > LIMIT) {
        // Answered before the body is read: no `100 Continue` is sent.
        return Err(Refusal::TooLarge);
    }
    // A body of unknown length (chunked) counts as one of the limit's size.
    if used_bytes(dir).map_err(Refusal::Storage)?.saturating_add(declared.unwrap_or(LIMIT)) > quota {
        return Err(Refusal::Full);
    }
    // Write to a private name, renamed into place once the body is complete.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let partial = dir.join(format!(".{name}.{}.part", NEXT.fetch_add(1, Ordering::Relaxed)));
    let stored = File::create(&partial).map_err(Refusal::Storage).and_then(|file| receive(req, file));
    let stored = stored.and_then(|n| fs::rename(&partial, dir.join(name)).map(|()| n).map_err(Refusal::Storage));
    if stored.is_err() {
        let _ = fs::remove_file(&partial);
    }
    let n = stored?;
    Ok(Response::text(format!("stored {n} bytes as {name}\n"))
        .with_status(201)
        .with_header("Location", format!("/upload/{name}")))
}

/// The bytes the files in `dir` hold (those being written included).
fn used_bytes(dir: &Path) -> io::Result<u64> {
    let mut used = 0u64;
    for entry in fs::read_dir(dir)? {
        used = used.saturating_add(entry?.metadata()?.len());
    }
    Ok(used)
}

/// Copies the request body into `file`, counting: at most `LIMIT` bytes.
fn receive(req: &mut Request, mut file: File) -> Result<u64, Refusal> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut stored = 0u64;
    loop {
        // The first read sends `100 Continue` if the client asked for it.
        let n = req.body().read(&mut buf).map_err(Refusal::Body)?;
        if n == 0 {
            return Ok(stored);
        }
        stored += n as u64;
        if stored > LIMIT {
            return Err(Refusal::TooLarge);
        }
        file.write_all(&buf[..n]).map_err(Refusal::Storage)?;
    }
}

/// `PUT /upload/{name}` stores the body in `dir`, which may hold [`QUOTA`].
pub fn handler(dir: &Path, req: &mut Request) -> Result<Response, Refusal> {
    handler_within(dir, QUOTA, req)
}

/// [`handler`], with `dir` holding at most `quota` bytes.
pub fn handler_within(dir: &Path, quota: u64, req: &mut Request) -> Result<Response, Refusal> {
    let Some(name) = req.path().strip_prefix("/upload/").map(str::to_owned) else {
        return Ok(Response::status(404));
    };
    match req.method() {
        "PUT" if valid_name(&name) => upload(dir, quota, req, &name),
        "PUT" => Ok(Response::text("names are letters, digits, '.', '_' and '-'\n").with_status(400)),
        _ => Ok(Response::status(405).with_header("Allow", "PUT")),
    }
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8007".into());
    let dir = args.next().map_or_else(|| std::env::temp_dir().join("httpool-uploads"), PathBuf::from);
    fs::create_dir_all(&dir)?;
    // The server's own limit (1 MiB by default) answers 413 before the
    // handler sees the request: raise it above ours so the handler decides.
    let server = Server::bind(&addr)?.max_body_bytes(2 * LIMIT);
    eprintln!("storing uploads in {}; PUT http://{}/upload/NAME", dir.display(), server.local_addr()?);
    server.serve(move |req| handler(&dir, req))
}
