//! `multipart/form-data` bodies (RFC 7578; feature `multipart`): what an
//! HTML form with a file input posts, read part by part as the bytes
//! arrive, so a file of any size streams to disk through a buffer of
//! 16 KiB.
//!
//! ```
//! use std::path::Path;
//!
//! use httpool::multipart::Multipart;
//! use httpool::{Error, Request, Response};
//!
//! // <form method=post enctype=multipart/form-data>
//! //   <input name=title> <input type=file name=photo> </form>
//! fn upload(req: &mut Request, dir: &Path) -> Result<Response, Error> {
//!     let mut form = Multipart::new(req)?.max_parts(10);
//!     let (mut title, mut stored) = (String::new(), Vec::new());
//!     while let Some(mut part) = form.next_part()? {
//!         match (part.name(), part.filename()) {
//!             (Some("title"), None) => title = part.text()?,
//!             // The client's file name is only text: the file gets a name
//!             // of the server's, in a directory of the server's.
//!             (Some("photo"), Some(_)) => stored.push(part.save_in(dir)?),
//!             _ => {} // Skipped: the next call reads past it.
//!         }
//!     }
//!     let sizes: Vec<u64> = stored.iter().map(|file| file.size()).collect();
//!     # for file in &stored { std::fs::remove_file(file.path()).unwrap(); }
//!     Ok(Response::text(format!("{title}: {sizes:?}\n")))
//! }
//!
//! # use httpool::test::TestRequest;
//! # let body = b"--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nHoliday\r\n\
//! #     --XyZ\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"a.jpg\"\r\n\
//! #     Content-Type: image/jpeg\r\n\r\n\xff\xd8 jpeg bytes\r\n--XyZ--\r\n";
//! # let dir = std::env::temp_dir();
//! # let handler = move |req: &mut Request| upload(req, &dir);
//! # let resp = TestRequest::post("/")
//! #     .header("Content-Type", "multipart/form-data; boundary=XyZ")
//! #     .body(&body[..])
//! #     .send(&handler);
//! # assert_eq!(resp.text(), "Holiday: [13]\n");
//! ```
//!
//! A [`Part`] is an [`io::Read`] (and [`BufRead`]) of its content, read
//! from the body on demand; [`Multipart::next_part`] reads past what is
//! left of the one before. Every error is an [`Error`] whose
//! [`status`](Error::status) is the answer (`?` in a handler sends it).
//!
//! # Limits
//!
//! | limit | default | past it |
//! |---|---|---|
//! | [`Multipart::max_total_bytes`] | none of its own: the server's `max_body_bytes` | `413` |
//! | [`Multipart::max_parts`] | [`DEFAULT_MAX_PARTS`] (1,000) | `413`, like a form with too many fields |
//! | [`Multipart::max_part_header_bytes`] | [`DEFAULT_MAX_PART_HEADER_BYTES`] (8 KiB) | `400`: no client writes such a part (`431` is for the request's own head) |
//! | [`Multipart::max_field_bytes`] | [`DEFAULT_MAX_FIELD_BYTES`] (64 KiB) | `413` |
//!
//! The field limit bounds what is read of a part without a file name (a
//! text field) however it is read, and what [`Part::text`] reads of any
//! part. File parts are bounded by the total only.
//!
//! A body that does not follow the grammar is a `400`: no boundary, a
//! boundary not followed by CRLF or `--`, a body that ends before its
//! closing `--boundary--`, a part head that does not parse. A preamble
//! before the first boundary and an epilogue after the last are allowed
//! (and ignored: the epilogue is not read, the server drains it).
//!
//! # Names and file names
//!
//! [`Part::name`] and [`Part::filename`] are the `Content-Disposition`
//! parameters as written between their quotes. Browsers, curl and Python's
//! requests write a `"`, CR or LF in them as `%22`, `%0D` and `%0A` and
//! anything else (a `%`, a backslash) as itself, so the crate decodes
//! nothing; a file name is what the client's user named the file, or any
//! text a client makes up (`../../etc/passwd`): show it, never open it as
//! a path. [`Part::save_in`] picks a name of its own.

use std::collections::hash_map::RandomState;
use std::fs::{self, File, OpenOptions};
use std::hash::BuildHasher;
use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use scan::{Failure, PartHead, Scan, Scanner, boundary_of};

use crate::body::Body;
use crate::error::{Error, ErrorKind};
use crate::headers::{HeaderIter, Headers};
use crate::request::Request;

mod replay;

/// The `multipart` fuzz target: see [`replay::check_cuts`].
pub(crate) use replay::check_cuts as fuzz_cuts;
mod scan;

/// Most parts a body may have, by default ([`Multipart::max_parts`]).
pub const DEFAULT_MAX_PARTS: usize = 1000;

/// Most bytes of one part's header section, by default
/// ([`Multipart::max_part_header_bytes`]).
pub const DEFAULT_MAX_PART_HEADER_BYTES: usize = 8 * 1024;

/// Most bytes of a field (a part without a file name), by default
/// ([`Multipart::max_field_bytes`]).
pub const DEFAULT_MAX_FIELD_BYTES: u64 = 64 * 1024;

/// The most [`Multipart::max_part_header_bytes`] takes: the buffer holds a
/// head whole.
const MAX_PART_HEADER_BYTES: usize = 1024 * 1024;

const FORM_DATA: &str = "multipart/form-data";

/// The limits one body is read under.
#[derive(Clone, Copy, Debug)]
struct Limits {
    max_total_bytes: u64,
    max_parts: usize,
    max_part_header_bytes: usize,
    max_field_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_total_bytes: u64::MAX,
            max_parts: DEFAULT_MAX_PARTS,
            max_part_header_bytes: DEFAULT_MAX_PART_HEADER_BYTES,
            max_field_bytes: DEFAULT_MAX_FIELD_BYTES,
        }
    }
}

/// Where the body bytes come from: a request's body, or bytes in a test.
pub(crate) trait Source: Read {
    /// The [`Error`] a failed read stands for.
    fn read_error(&self, e: io::Error) -> Error {
        Error::from_body(e)
    }
}

impl Source for Body<'_> {
    fn read_error(&self, e: io::Error) -> Error {
        Body::read_error(self, e)
    }
}

/// The body and the scanner that reads it, borrowed for one part.
struct Stream<'m> {
    source: &'m mut (dyn Source + 'm),
    scanner: &'m mut Scanner,
}

impl Stream<'_> {
    /// Reads more of the body into the scanner.
    fn fill(&mut self) -> Result<(), Error> {
        loop {
            match self.source.read(self.scanner.room()) {
                Ok(n) => {
                    self.scanner.filled(n);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.source.read_error(e)),
            }
        }
    }

    /// The length of the content known next ([`Scanner::content`]),
    /// reading the body as needed; 0 at the part's end.
    fn content(&mut self) -> Result<usize, Error> {
        loop {
            match self.scanner.content().map_err(Failure::error)? {
                Scan::Ready(n) => return Ok(n),
                Scan::NeedInput => self.fill()?,
            }
        }
    }
}

/// The parts of a `multipart/form-data` body, one at a time.
///
/// Made by [`Multipart::new`] or [`Request::multipart`]; the limits are
/// set on it before the first part is read (see [the module](self)).
pub struct Multipart<'r> {
    source: &'r mut (dyn Source + 'r),
    scanner: Scanner,
    head: PartHead,
}

impl<'r> Multipart<'r> {
    /// The parts of `req`'s body. Nothing is read yet.
    ///
    /// # Errors
    ///
    /// - [`ErrorKind::UnsupportedMediaType`] (`415`) unless `Content-Type`
    ///   is `multipart/form-data`;
    /// - [`ErrorKind::BadRequest`] (`400`) when it has no `boundary`, or
    ///   one RFC 2046 does not allow.
    pub fn new(req: &'r mut Request<'_>) -> Result<Multipart<'r>, Error> {
        if !req.media_type().is_some_and(|t| t.eq_ignore_ascii_case(FORM_DATA)) {
            return Err(Error::new(ErrorKind::UnsupportedMediaType, "expected Content-Type: multipart/form-data"));
        }
        let content_type = req.header("content-type").unwrap_or("").as_bytes();
        let Some(boundary) = boundary_of(content_type) else {
            return Err(Error::new(ErrorKind::BadRequest, "multipart/form-data without a valid boundary"));
        };
        let scanner = Scanner::new(boundary, Limits::default());
        Ok(Multipart::over(req.body(), scanner))
    }

    fn over(source: &'r mut (dyn Source + 'r), scanner: Scanner) -> Multipart<'r> {
        Multipart { source, scanner, head: PartHead::default() }
    }

    /// Most bytes of the whole body (its framing included); past it,
    /// `413`. By default none but the server's `max_body_bytes`, which
    /// applies too.
    pub fn max_total_bytes(mut self, bytes: u64) -> Multipart<'r> {
        self.scanner.limits_mut().max_total_bytes = bytes;
        self
    }

    /// Most parts; one more is `413`. Default [`DEFAULT_MAX_PARTS`].
    pub fn max_parts(mut self, parts: usize) -> Multipart<'r> {
        self.scanner.limits_mut().max_parts = parts;
        self
    }

    /// Most bytes of one part's header section (its blank line included);
    /// a longer one is `400`. Default [`DEFAULT_MAX_PART_HEADER_BYTES`].
    /// The buffer the body goes through holds one whole, so it is larger
    /// than this (16 KiB at least); a bound past 1 MiB is taken as 1 MiB.
    pub fn max_part_header_bytes(mut self, bytes: usize) -> Multipart<'r> {
        self.scanner.limits_mut().max_part_header_bytes = bytes.min(MAX_PART_HEADER_BYTES);
        self
    }

    /// Most bytes read of a field (a part without a file name), however it
    /// is read, and of any part by [`Part::text`]; past it, `413`. Default
    /// [`DEFAULT_MAX_FIELD_BYTES`].
    pub fn max_field_bytes(mut self, bytes: u64) -> Multipart<'r> {
        self.scanner.limits_mut().max_field_bytes = bytes;
        self
    }

    /// The next part, after reading past what is left of the one before;
    /// `None` after the last.
    ///
    /// # Errors
    ///
    /// `400` for a malformed body, `413` past a limit (see [the
    /// module](self)), or the errors of reading the request body
    /// ([`Request::read_body`]). Once a call has failed, every later one
    /// fails.
    pub fn next_part(&mut self) -> Result<Option<Part<'_>>, Error> {
        let field_limit = self.scanner.limits_mut().max_field_bytes;
        let mut stream = Stream { source: &mut *self.source, scanner: &mut self.scanner };
        loop {
            match stream.scanner.next_head(&mut self.head).map_err(Failure::error)? {
                Scan::Ready(true) => break,
                Scan::Ready(false) => return Ok(None),
                Scan::NeedInput => stream.fill()?,
            }
        }
        Ok(Some(Part { head: &self.head, stream, field_limit }))
    }
}

impl std::fmt::Debug for Multipart<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Multipart").finish_non_exhaustive()
    }
}

impl Request<'_> {
    /// The parts of a `multipart/form-data` body: [`Multipart::new`]
    /// (feature `multipart`).
    ///
    /// # Errors
    ///
    /// As [`Multipart::new`].
    pub fn multipart(&mut self) -> Result<Multipart<'_>, Error> {
        Multipart::new(self)
    }
}

/// One part of a `multipart/form-data` body: its head, and its content as
/// a [`Read`].
///
/// The content is read from the body as it is asked for; reading past its
/// end gives `Ok(0)`. A read fails with an [`io::Error`] that wraps the
/// [`Error`] (a handler returning `io::Result` answers with its status).
pub struct Part<'m> {
    head: &'m PartHead,
    stream: Stream<'m>,
    field_limit: u64,
}

impl Part<'_> {
    /// The `name` of `Content-Disposition` (the form control's name);
    /// `None` when the part has none.
    pub fn name(&self) -> Option<&str> {
        self.text_at(self.head.name)
    }

    /// The `filename` of `Content-Disposition`, as the client wrote it (see
    /// [the module](self)); `None` for a field. A file input left empty is
    /// sent as a part with the file name `""` and no content.
    pub fn filename(&self) -> Option<&str> {
        self.text_at(self.head.filename)
    }

    fn text_at(&self, span: Option<(u32, u32)>) -> Option<&str> {
        let (start, len) = span?;
        // Checked to be UTF-8 when the head was parsed.
        std::str::from_utf8(&self.head.block[start as usize..(start + len) as usize]).ok()
    }

    /// The `Content-Type` of the part, if it has one (a file's, as the
    /// client guessed it; RFC 7578 makes a part without one `text/plain`).
    pub fn content_type(&self) -> Option<&str> {
        self.header("content-type")
    }

    /// The first value of the part's header `name` (case-insensitive), if
    /// present and valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        Headers::new(&self.head.block, &self.head.spans).get(name)
    }

    /// The part's headers in the order received.
    pub fn headers(&self) -> HeaderIter<'_> {
        Headers::new(&self.head.block, &self.head.spans).iter()
    }

    /// Reads the rest of the content as UTF-8 text, within the
    /// multipart's [`max_field_bytes`](Multipart::max_field_bytes).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::BodyTooLarge`] (`413`) past the limit,
    /// [`ErrorKind::InvalidUtf8`] (`400`), or the errors of
    /// [`Multipart::next_part`].
    pub fn text(&mut self) -> Result<String, Error> {
        self.text_within(self.field_limit)
    }

    /// [`Part::text`] with a limit of its own (a field's
    /// [`max_field_bytes`](Multipart::max_field_bytes) applies too).
    ///
    /// # Errors
    ///
    /// As [`Part::text`].
    pub fn text_within(&mut self, limit: u64) -> Result<String, Error> {
        let mut bytes = Vec::new();
        loop {
            let n = self.stream.content()?;
            if n == 0 {
                break;
            }
            if (bytes.len() + n) as u64 > limit {
                return Err(Failure::FieldTooLarge.error());
            }
            bytes.extend_from_slice(self.stream.scanner.content_bytes(n));
            self.stream.scanner.consume(n);
        }
        String::from_utf8(bytes).map_err(|_| Error::new(ErrorKind::InvalidUtf8, "multipart field is not UTF-8"))
    }

    /// Writes the rest of the content to a new file at `path`, which must
    /// not exist (it is created as `create_new` does: no file is
    /// overwritten, no link followed). Returns the bytes written. If
    /// reading the body fails, the file is removed.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the file cannot be made or written (`500`),
    /// or the errors of [`Multipart::next_part`].
    pub fn save_to(&mut self, path: impl AsRef<Path>) -> Result<u64, Error> {
        let path = path.as_ref();
        let file = OpenOptions::new().write(true).create_new(true).open(path).map_err(storage)?;
        let written = self.copy_to(file);
        if written.is_err() {
            let _ = fs::remove_file(path);
        }
        written
    }

    /// Writes the rest of the content to a new file in `dir`, under a name
    /// the crate picks (`upload-` and 16 random hex digits; never one that
    /// exists); see [`Part::save_to`]. The file is the caller's: it stays
    /// until the caller renames or removes it.
    ///
    /// # Errors
    ///
    /// As [`Part::save_to`].
    pub fn save_in(&mut self, dir: impl AsRef<Path>) -> Result<SavedFile, Error> {
        static TRIES: AtomicU64 = AtomicU64::new(0);
        let dir = dir.as_ref();
        let mut attempts = 0;
        loop {
            // Keyed afresh per process by the OS's randomness, and never
            // the same input twice: a name nobody can guess ahead.
            let salt = RandomState::new().hash_one(TRIES.fetch_add(1, Ordering::Relaxed));
            let path = dir.join(format!("upload-{salt:016x}"));
            match self.save_to(&path) {
                Ok(size) => return Ok(SavedFile { path, size }),
                // Taken, a million to one: another name.
                Err(e) if is_taken(&e) && attempts < 8 => attempts += 1,
                Err(e) => return Err(e),
            }
        }
    }

    fn copy_to(&mut self, mut file: File) -> Result<u64, Error> {
        let mut written = 0u64;
        loop {
            let n = self.stream.content()?;
            if n == 0 {
                file.flush().map_err(storage)?;
                return Ok(written);
            }
            file.write_all(self.stream.scanner.content_bytes(n)).map_err(storage)?;
            self.stream.scanner.consume(n);
            written += n as u64;
        }
    }
}

/// An error writing an upload's file: the server's own.
fn storage(e: io::Error) -> Error {
    Error::new(ErrorKind::Io, "storing an uploaded file").with_source(e)
}

fn is_taken(e: &Error) -> bool {
    let source = std::error::Error::source(e).and_then(|s| s.downcast_ref::<io::Error>());
    source.is_some_and(|s| s.kind() == io::ErrorKind::AlreadyExists)
}

impl Read for Part<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let data = self.fill_buf()?;
        let n = data.len().min(out.len());
        out[..n].copy_from_slice(&data[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Part<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let n = self.stream.content()?;
        Ok(self.stream.scanner.content_bytes(n))
    }

    fn consume(&mut self, n: usize) {
        self.stream.scanner.consume(n);
    }
}

impl std::fmt::Debug for Part<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Part")
            .field("name", &self.name())
            .field("filename", &self.filename())
            .field("content_type", &self.content_type())
            .finish_non_exhaustive()
    }
}

/// A file [`Part::save_in`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedFile {
    path: PathBuf,
    size: u64,
}

impl SavedFile {
    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes written.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The path, owned.
    pub fn into_path(self) -> PathBuf {
        self.path
    }
}

#[cfg(test)]
mod tests;
