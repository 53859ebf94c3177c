//! An HTML upload form (feature `multipart`): `GET /` serves a form with a
//! text field and a file input; `POST /upload` reads the
//! `multipart/form-data` body part by part, streams each file to a new
//! file in a directory (second argument; default `httpool-form-uploads` in
//! the temporary directory) under a name the server picks, and answers
//! with what it received.
//!
//! ```sh
//! cargo run --features multipart --example upload_form     # 127.0.0.1:8015
//! curl -F note=hello -F files=@big.bin -F files=@notes.txt http://127.0.0.1:8015/upload
//! ```
//!
//! answers
//!
//! ```text
//! note: hello
//! file "big.bin" (application/octet-stream): 3000000 bytes, stored as upload-5f0c2e9a1b7d4c36
//! file "notes.txt" (text/plain): 12 bytes, stored as upload-0d94b1e2f7a85c10
//! ```
//!
//! A file's bytes go from the socket to the disk through a 16 KiB buffer,
//! however large it is (up to the server's `max_body_bytes`, here 64 MiB).
//! The name the client gave a file is shown, never used as a path. A body
//! that fails midway (malformed, cut short, over a limit) is answered with
//! its status (`400`, `413`), and the files it had stored are removed.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use httpool::multipart::SavedFile;
use httpool::{Error, Request, Response, Server};

/// The largest body the server takes: the files of one form together.
pub const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;

/// The most parts one form may have.
pub const MAX_PARTS: usize = 32;

const FORM: &str = r#"<!doctype html>
<meta charset="utf-8">
<title>Upload</title>
<form method="post" action="/upload" enctype="multipart/form-data">
  <p><label>Note <input name="note" id="note"></label>
  <p><label>Files <input type="file" name="files" id="files" multiple></label>
  <p><button id="send">Send</button>
</form>
"#;

/// `GET /` the form, `POST /upload` its submission, stored in `dir`.
pub fn handler(dir: &Path, req: &mut Request) -> Result<Response, Error> {
    match (req.method(), req.path()) {
        ("GET", "/") => Ok(Response::text(FORM).with_content_type("text/html; charset=utf-8")),
        ("POST", "/upload") => upload(dir, req),
        (_, "/" | "/upload") => Ok(Response::status(405).with_header("Allow", "GET, POST")),
        _ => Ok(Response::status(404)),
    }
}

fn upload(dir: &Path, req: &mut Request) -> Result<Response, Error> {
    let mut stored = Vec::new();
    let received = receive(dir, req, &mut stored);
    if received.is_err() {
        for file in &stored {
            let _ = fs::remove_file(file.path());
        }
    }
    Ok(Response::text(received?))
}

/// Reads every part, storing the files (listed in `stored` as they are
/// written); returns the summary to answer with.
fn receive(dir: &Path, req: &mut Request, stored: &mut Vec<SavedFile>) -> Result<String, Error> {
    let mut form = req.multipart()?.max_parts(MAX_PARTS);
    let mut summary = String::new();
    while let Some(mut part) = form.next_part()? {
        match (part.name(), part.filename()) {
            (Some("note"), None) => {
                let note = part.text()?;
                let _ = writeln!(summary, "note: {note}");
            }
            // A file input left empty: no file.
            (Some("files"), Some("")) => {}
            (Some("files"), Some(name)) => {
                let line = format!("file {name:?} ({})", part.content_type().unwrap_or("no type"));
                let file = part.save_in(dir)?;
                let stored_as = file.path().file_name().unwrap_or_default().to_string_lossy();
                let _ = writeln!(summary, "{line}: {} bytes, stored as {stored_as}", file.size());
                stored.push(file);
            }
            // Anything else is skipped: the next part is read past it.
            _ => {}
        }
    }
    Ok(summary)
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8015".into());
    let dir = args.next().map_or_else(|| std::env::temp_dir().join("httpool-form-uploads"), PathBuf::from);
    fs::create_dir_all(&dir)?;
    let server = Server::bind(&addr)?.max_body_bytes(MAX_BODY_BYTES);
    eprintln!("storing uploads in {}; the form is at http://{}/", dir.display(), server.local_addr()?);
    server.serve(move |req| handler(&dir, req))
}
