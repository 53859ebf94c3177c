//! Static files (feature `fs`): [`ServeDir`] serves a directory.

mod answer;
mod cache;
mod conditional;
mod path;

use std::borrow::Cow;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use self::answer::{answer, directory_location, respelled_location};
use self::cache::{Cache, Entry, FileId};
use crate::handler::Handler;
use crate::request::Request;
use crate::response::Response;

/// Bytes of small files a [`ServeDir`] keeps in memory by default
/// ([`ServeDir::memory_cache`]).
pub const DEFAULT_MEMORY_CACHE_BYTES: usize = 8 << 20;

/// A handler serving the files under a directory.
///
/// - `GET` and `HEAD`; other methods get `405` with `Allow: GET, HEAD`.
/// - `Content-Type` from the extension (`text/*` types with `charset=utf-8`;
///   `application/octet-stream` when unknown; `.svgz` is `image/svg+xml`
///   with `Content-Encoding: gzip`), `ETag` and `Last-Modified`
///   from the file's length and modification time (a time in the future
///   shown as now; for the second after a write, until which another
///   write could keep both, the `ETag` is weak, `W/"…"`, and neither
///   holds an `If-Match` or `If-Range`), `304 Not Modified` for
///   `If-None-Match` or (without it) `If-Modified-Since`, `412 Precondition Failed` for `If-Match` or
///   (without it) `If-Unmodified-Since`, in RFC 9110 §13.2.2's order.
/// - One byte range per `GET` (`206` with `Content-Range`; `416` with
///   `Content-Range: bytes */len` when it starts past the end); several
///   ranges, or an `If-Range` that no longer holds, get the whole file.
/// - A directory serves its `index.html` ([`ServeDir::index_file`]); asked
///   for without its trailing `/`, it answers `301` to the path with one
///   (so relative links in the page resolve inside it), or `404` when
///   directories have no index file. No listings.
/// - A path spelled otherwise than its plain form (`//a`, `/./a`, `/%61`,
///   lowercase escapes, `[` or `|` not escaped) answers `308` to the plain
///   form: a router's routes in front (a guard on `/private/…`) see the
///   path the file is found by, which `/%70rivate/…` would otherwise get
///   past. (On a file system that ignores case, as Windows' and macOS's
///   do by default, `/Private/…` still finds the same file: keep what a
///   route must guard out of the root.)
/// - No way out of the root: the path is percent-decoded segment by
///   segment, `..` and segments that decode to hold `/`, `\` or NUL are
///   refused (`403`), a bad escape is `400`, and what a path leads to
///   must be under the root once symlinks are resolved, which is checked
///   before anything else about it: a way out (a symlink to a file or a
///   directory outside, with or without the `/`), or a directory on the
///   way the server may not search, is `404`, as a name that leads
///   nowhere is, so nothing tells what exists outside. Names starting
///   with `.` are `404` unless [`ServeDir::hidden_files`] says otherwise.
///   Only regular files are served (never a FIFO or a device).
/// - Small files (up to 32 KiB, [`DEFAULT_MEMORY_CACHE_BYTES`] in all) are
///   kept in memory and sent with the head in one write; larger ones are
///   sent with `sendfile` on Linux over plain TCP. Each request checks
///   that the file is still the one remembered (one `stat`; a second
///   one when the path goes through a symlink): an edited or replaced
///   file, or a symlink on the way removed or pointed elsewhere, is looked
///   up and read again. Behind `httpool::compress`, a small
///   file's gzipped copy is kept beside it, in the same bytes.
///
/// ```no_run
/// use httpool::{Request, Response, ServeDir, Server};
///
/// fn main() -> std::io::Result<()> {
///     // Everything from ./site:
///     Server::bind("127.0.0.1:8000")?.spawn_handler(ServeDir::new("./site")?)?;
///
///     // Or /static/… from ./assets, next to other routes:
///     let assets = ServeDir::new("./assets")?.strip_prefix("/static");
///     Server::bind("127.0.0.1:8001")?.serve(move |req: &mut Request| match req.path() {
///         "/" => Response::html("<link rel=stylesheet href=/static/site.css>hello\n"),
///         _ => assets.serve(req),
///     })
/// }
/// ```
///
/// Limits: the check that a file is under the root and the `open` that
/// follows are two steps, so someone who can create symlinks inside the
/// root while the server runs can race them; serve directories that only
/// trusted users write to.
#[derive(Debug)]
pub struct ServeDir {
    root: PathBuf,
    prefix: Option<String>,
    index: Option<String>,
    hidden: bool,
    cache: Cache,
}

/// Where a request path leads.
enum Found {
    /// A regular file; the open file when its bytes are not in memory and
    /// the answer needs them.
    File(Arc<Entry>, Option<File>),
    /// A directory asked for without its trailing `/`.
    Directory,
    /// A path spelled another way than this server spells it (see
    /// [`path::respelled`]): the client is sent to that spelling.
    Respelled(String),
    Refused(u16),
}

impl ServeDir {
    /// Serves the files under `root`.
    ///
    /// # Errors
    ///
    /// `root` does not exist, cannot be resolved, or is not a directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<ServeDir> {
        let root = fs::canonicalize(root)?;
        if !root.is_dir() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "ServeDir root is not a directory"));
        }
        let index = Some("index.html".to_owned());
        Ok(ServeDir { root, prefix: None, index, hidden: false, cache: Cache::new(DEFAULT_MEMORY_CACHE_BYTES) })
    }

    /// Serves only request paths under `prefix` (e.g. `/static`), with the
    /// prefix taken off: `/static/app.js` is `app.js` under the root.
    /// Other paths get `404`.
    pub fn strip_prefix(mut self, prefix: impl Into<String>) -> ServeDir {
        let prefix = prefix.into();
        let prefix = prefix.trim_end_matches('/');
        self.prefix = (!prefix.is_empty()).then(|| prefix.to_owned());
        self
    }

    /// The file a directory serves (`index.html` by default); `None`: a
    /// directory is `404`.
    pub fn index_file(mut self, name: Option<&str>) -> ServeDir {
        self.index = name.map(str::to_owned);
        self
    }

    /// Whether names starting with `.` (`.git`, `.env`, `.well-known`) are
    /// served; off by default, when they are `404`.
    pub fn hidden_files(mut self, serve: bool) -> ServeDir {
        self.hidden = serve;
        self
    }

    /// Most bytes of small files kept in memory over all files, their
    /// gzipped copies (behind `httpool::compress`) included
    /// ([`DEFAULT_MEMORY_CACHE_BYTES`] by default); `0` keeps none, and
    /// every file is read from disk on each request.
    pub fn memory_cache(mut self, bytes: usize) -> ServeDir {
        self.cache = Cache::new(bytes);
        self
    }

    /// Answers `req` from the directory; what [`Handler::handle`] does, for
    /// calling from a handler of your own.
    pub fn serve(&self, req: &Request<'_>) -> Response {
        let is_head = match req.method() {
            "GET" => false,
            "HEAD" => true,
            _ => return Response::status(405).with_header("Allow", "GET, HEAD"),
        };
        let found = match self.below_prefix(req.path()) {
            None => Found::Refused(404),
            // The prefix itself, without its `/`.
            Some("") => self.directory(),
            Some(raw) => match path::respelled(raw, self.hidden) {
                Some(path) => Found::Respelled(path),
                None => self.lookup(raw),
            },
        };
        match found {
            Found::File(entry, file) => answer(req, &entry, file, is_head),
            Found::Directory => Response::redirect(301, directory_location(req)),
            Found::Respelled(path) => {
                Response::redirect(308, respelled_location(req, self.prefix.as_deref().unwrap_or(""), &path))
            }
            Found::Refused(code) => Response::status(code),
        }
    }

    /// What `raw` leads to: a remembered file if it is still the same, else
    /// a fresh look.
    fn lookup(&self, raw: &str) -> Found {
        match self.cache.get(raw) {
            Some(entry) => match self.reuse(&entry) {
                Some(file) => Found::File(entry, file),
                None => {
                    self.cache.remove(raw);
                    self.find(raw)
                }
            },
            None => self.find(raw),
        }
    }

    /// A directory asked for without its `/`: sent to the path with one,
    /// where its index is; `404` when directories have none, as they get
    /// with the `/` (the redirect would only tell that one is there).
    fn directory(&self) -> Found {
        match self.index {
            Some(_) => Found::Directory,
            None => Found::Refused(404),
        }
    }

    /// The request path below the prefix: `/` first, or empty for the
    /// prefix itself.
    fn below_prefix<'p>(&self, path: &'p str) -> Option<&'p str> {
        let Some(prefix) = &self.prefix else { return Some(path) };
        let rest = path.strip_prefix(prefix.as_str())?;
        (rest.is_empty() || rest.starts_with('/')).then_some(rest)
    }

    /// Checks that a remembered file is still the same: `Some` with the
    /// open file when the answer needs one not in memory (a `HEAD` too:
    /// it is answered as the `GET`, see [`answer`]). `None`: look again.
    ///
    /// The file is checked where it was found (its real path, the one
    /// checked to be under the root and not hidden) and, when the request
    /// names it through a symlink, by that name too: a symlink on the way
    /// removed or pointed elsewhere changes the answer. Without symlinks
    /// the two are one path, and one `stat` (or `fstat`) does.
    fn reuse(&self, entry: &Entry) -> Option<Option<File>> {
        let same = |meta: &fs::Metadata| meta.is_file() && FileId::of(meta) == entry.id;
        let named_same = || entry.named == entry.path || fs::metadata(&entry.named).is_ok_and(|m| same(&m));
        if entry.bytes.is_some() {
            let meta = fs::metadata(&entry.path).ok()?;
            return (same(&meta) && named_same()).then_some(None);
        }
        // Opened, then checked: what is open is what gets sent.
        let file = open(&entry.path).ok()?;
        let meta = file.metadata().ok()?;
        (same(&meta) && named_same()).then_some(Some(file))
    }

    /// Resolves `raw` from scratch and remembers what it found — under a
    /// plain spelling only (no `%`, `.` or empty segments): each other
    /// spelling of a file (`/./a`, `//a`, `/%61`, as many as a client
    /// cares to send, each up to `max_uri_bytes`) would take an entry of
    /// its own, and their keys are not counted in the cache's bytes.
    ///
    /// Whether the path stays under the root is settled before what it
    /// leads to counts: a directory outside (through a symlink) must not
    /// get the `301` a directory inside gets.
    fn find(&self, raw: &str) -> Found {
        let target = match path::target(raw, self.hidden) {
            Ok(target) => target,
            Err(code) => return Found::Refused(code),
        };
        let remember = matches!(target.rel, std::borrow::Cow::Borrowed(_));
        let mut named = self.root.join(&*target.rel);
        let Some((mut real, mut meta)) = self.resolve(raw, &named) else { return Found::Refused(404) };
        if meta.is_dir() {
            if !target.dir {
                return self.directory();
            }
            let Some(index) = &self.index else { return Found::Refused(404) };
            named.push(index);
            let Some(found) = self.resolve(raw, &named) else { return Found::Refused(404) };
            (real, meta) = found;
        } else if target.dir {
            return Found::Refused(404);
        }
        if !meta.is_file() {
            return Found::Refused(404);
        }
        match self.load(raw, named, real, remember) {
            Ok(found) => found,
            Err(e) => {
                error!("ServeDir: reading {raw:?}: {e}; answering 500");
                Found::Refused(500)
            }
        }
    }

    /// The real path of `named` (symlinks resolved) and what is there, when
    /// it is under the root and not hidden there. `None` (answered `404`)
    /// for every other case alike — nothing there, a way out of the root, a
    /// directory on the way the server may not search: an answer of its
    /// own for any of them would tell what exists where the client may
    /// not look.
    fn resolve(&self, raw: &str, named: &Path) -> Option<(PathBuf, fs::Metadata)> {
        let real = fs::canonicalize(named).ok()?;
        if !real.starts_with(&self.root) {
            debug!("ServeDir: {raw:?} leads to {}, outside the root; answering 404", real.display());
            return None;
        }
        // The name a request spells is not the only one a file has (a
        // symbolic link, an 8.3 short name on Windows: `GIT~1` for
        // `.git`): hidden files are refused by their real path too.
        if !self.hidden && is_hidden_under(&real, &self.root) {
            debug!("ServeDir: {raw:?} leads to hidden {}; answering 404", real.display());
            return None;
        }
        let meta = fs::metadata(&real).ok()?;
        Some((real, meta))
    }

    /// Opens the file at `real` (resolved under the root by
    /// [`resolve`](Self::resolve)), and remembers it under `raw`.
    fn load(&self, raw: &str, named: PathBuf, real: PathBuf, remember: bool) -> io::Result<Found> {
        let mut file = match open(&real) {
            Ok(file) => file,
            Err(e) => return Ok(Found::Refused(lookup_status(&e))),
        };
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Ok(Found::Refused(404));
        }
        let id = FileId::of(&meta);
        let mut bytes = None;
        if self.cache.would_hold(id.len) {
            let mut buf = Vec::with_capacity(id.len as usize);
            file.read_to_end(&mut buf)?;
            // Edited while being read: serve the file, but from disk, and
            // remember nothing.
            if buf.len() as u64 != id.len || FileId::of(&file.metadata()?) != id {
                file.seek(SeekFrom::Start(0))?;
                let entry = Arc::new(entry(real, named, &meta, None));
                return Ok(Found::File(entry, Some(file)));
            }
            bytes = Some(self.cache.body(buf));
        }
        let in_memory = bytes.is_some();
        let entry = Arc::new(entry(real, named, &meta, bytes));
        if remember {
            self.cache.insert(raw, Arc::clone(&entry));
        }
        Ok(Found::File(entry, (!in_memory).then_some(file)))
    }
}

impl Handler for ServeDir {
    fn handle(&self, req: &mut Request<'_>) -> Response {
        self.serve(req)
    }
}

/// Opens for reading, on Unix without blocking on a FIFO swapped in after
/// the check.
fn open(path: &Path) -> io::Result<File> {
    crate::sys::open_file(path)
}

/// True when a component of `real` below `root` starts with a dot.
fn is_hidden_under(real: &Path, root: &Path) -> bool {
    let below = real.strip_prefix(root).unwrap_or(real);
    below.components().any(|c| c.as_os_str().as_encoded_bytes().first() == Some(&b'.'))
}

/// The status for a file under the root that cannot be opened: `403` when
/// the server may not read it (its name was found, so saying so tells
/// nothing new), `404` otherwise.
fn lookup_status(e: &io::Error) -> u16 {
    match e.kind() {
        io::ErrorKind::PermissionDenied => 403,
        _ => 404,
    }
}

fn entry(path: PathBuf, named: PathBuf, meta: &fs::Metadata, bytes: Option<Arc<cache::Body>>) -> Entry {
    let id = FileId::of(meta);
    let mtime = meta.modified().unwrap_or(UNIX_EPOCH);
    let nanos = mtime.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    // A time in the future is shown, and compared, as now: no answer may
    // say a file changed after its `Date` (RFC 9110 §8.8.2.1), and a
    // client told so would take every edit until then as no change.
    let modified = mtime.min(SystemTime::now());
    Entry {
        etag: format!("\"{:x}-{nanos:x}\"", id.len),
        last_modified: crate::date::http_date(modified),
        content_type: content_type(&path),
        content_encoding: content_encoding(&path),
        path,
        named,
        id,
        mtime,
        modified,
        bytes,
    }
}

/// `Content-Type` by extension; text in UTF-8.
fn content_type(path: &Path) -> Cow<'static, str> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match mime_guess::from_ext(ext).first_raw() {
        Some("text/html") => "text/html; charset=utf-8".into(),
        Some("text/css") => "text/css; charset=utf-8".into(),
        Some("text/plain") => "text/plain; charset=utf-8".into(),
        // RFC 9239: JavaScript is text/javascript, whatever the extension.
        Some("text/javascript" | "application/javascript") => "text/javascript; charset=utf-8".into(),
        Some(text) if text.starts_with("text/") => format!("{text}; charset=utf-8").into(),
        Some(other) => other.into(),
        None => "application/octet-stream".into(),
    }
}

/// The `Content-Encoding` of a file whose extension says its bytes are
/// compressed data of another type: `.svgz` is gzipped SVG (served as
/// `image/svg+xml`, which a browser renders only when told the coding).
/// Archives (`.gz`, `.tgz`) are data of their own type, sent as they are.
fn content_encoding(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?;
    ext.eq_ignore_ascii_case("svgz").then_some("gzip")
}

#[cfg(test)]
mod tests;
