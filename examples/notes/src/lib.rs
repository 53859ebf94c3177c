//! A notes service on SQLite: what httpool is for. Handlers call the
//! database directly, blocking, through a connection pool: no adapter, no
//! `spawn_blocking` (a handler that blocks lets its seat go; the pool grows
//! for it).
//!
//! ```sh
//! cargo run --release --manifest-path examples/notes/Cargo.toml   # 127.0.0.1:8010, notes.db
//! curl -i -H 'Content-Type: application/json' -d '{"text":"buy milk"}' http://127.0.0.1:8010/api/notes
//! curl -i 'http://127.0.0.1:8010/api/notes?q=milk'
//! ```
//!
//! | route | answer |
//! |---|---|
//! | `GET /` | the notes as HTML, newest first, and a form to add one |
//! | `POST /notes` | the form (`application/x-www-form-urlencoded`): `303` to `/` |
//! | `GET /api/notes` | the notes as JSON; `?q=word` keeps those containing it (SQL `LIKE`) |
//! | `POST /api/notes` | `{"text": "..."}`: `201` with the note and its `Location` |
//! | `GET /api/notes/{id}` | the note, `404` when there is none, `400` for an id that is not a number |
//! | `DELETE /api/notes/{id}` | `204`, or `404` |
//! | `GET /static/...` | files from `examples/notes/static` |
//!
//! `HEAD` is answered wherever `GET` is; another method on a known path gets
//! `405` with `Allow`; a body that is not JSON (or not a form) `415`, a
//! malformed one `400`; errors are JSON on `/api`. Every answer is
//! compressed when the client accepts gzip and logged (Combined Log
//! Format) to stderr.
//!
//! A crate of its own (SQLite is C, built from source by `bundled`), so the
//! library's checks for other targets do not need a C toolchain for them;
//! its tests (`tests/notes.rs`) run with the library's in CI.

use std::fmt::Display;
use std::path::Path;

use httpool::{IntoResponse, Request, Response, ServeDir};
use r2d2_sqlite::SqliteConnectionManager;
use r2d2_sqlite::rusqlite::{self, OptionalExtension, params};
use serde::{Deserialize, Serialize};

/// Connections to the database: at most this many handlers query at once
/// (the others wait for one, at most `POOL_WAIT`).
pub const POOL_SIZE: u32 = 16;

/// Largest request body accepted (a note is text).
pub const MAX_BODY: usize = 64 * 1024;

/// Most notes one answer lists.
pub const PAGE: u32 = 100;

/// The service: a pool of SQLite connections and the static files.
pub struct Notes {
    db: r2d2::Pool<SqliteConnectionManager>,
    files: ServeDir,
}

#[derive(Serialize)]
struct Note {
    id: i64,
    text: String,
    created: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewNote {
    text: String,
}

/// An error, answered with its status: `{"error": message}`.
#[derive(Debug)]
pub struct ApiError {
    status: u16,
    message: String,
}

impl ApiError {
    fn new(status: u16, message: impl Display) -> ApiError {
        ApiError { status, message: message.to_string() }
    }
}

/// A body that could not be read: `415` for another `Content-Type`, `413`
/// past the limit, `400` for a malformed one (`httpool::Error::status`).
impl From<httpool::Error> for ApiError {
    fn from(e: httpool::Error) -> ApiError {
        ApiError::new(e.status(), e)
    }
}

/// The database failed, or no connection came free in time: `503`.
impl From<r2d2::Error> for ApiError {
    fn from(e: r2d2::Error) -> ApiError {
        ApiError::new(503, e)
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(e: rusqlite::Error) -> ApiError {
        ApiError::new(500, e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        Response::json(&serde_json::json!({ "error": self.message })).with_status(self.status)
    }
}

/// `405` with the methods a path allows (`HEAD` wherever `GET` is).
fn not_allowed(allow: &'static str) -> Result<Response, ApiError> {
    Ok(ApiError::new(405, "method not allowed").into_response().with_header("Allow", allow))
}

impl Notes {
    /// Opens (and creates) the database at `path`; static files come from
    /// `static_dir`.
    pub fn open(path: impl AsRef<Path>, static_dir: impl AsRef<Path>) -> Result<Notes, Box<dyn std::error::Error>> {
        // WAL: readers do not wait for a writer. A busy timeout: writers
        // wait for each other rather than fail.
        let manager = SqliteConnectionManager::file(path).with_init(|c| {
            c.execute_batch("PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL;")
        });
        let db = r2d2::Pool::builder().max_size(POOL_SIZE).build(manager)?;
        db.get()?.execute_batch(
            "CREATE TABLE IF NOT EXISTS notes (
                 id INTEGER PRIMARY KEY,
                 text TEXT NOT NULL,
                 created INTEGER NOT NULL DEFAULT (unixepoch())
             )",
        )?;
        Ok(Notes { db, files: ServeDir::new(static_dir)?.strip_prefix("/static") })
    }

    /// Every request: routes by method and path.
    pub fn handle(&self, req: &mut Request) -> Result<Response, ApiError> {
        let path = req.path().to_owned();
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let get = matches!(req.method(), "GET" | "HEAD");
        match (req.method(), segments.as_slice()) {
            (_, [""]) if get => self.page(),
            (_, [""]) => not_allowed("GET, HEAD"),
            ("POST", ["notes"]) => self.add_from_form(req),
            (_, ["notes"]) => not_allowed("POST"),
            (_, ["api", "notes"]) if get => self.list(req.query_param("q").as_deref()),
            ("POST", ["api", "notes"]) => self.add(req),
            (_, ["api", "notes"]) => not_allowed("GET, HEAD, POST"),
            (method, ["api", "notes", id]) => {
                let id: i64 = id.parse().map_err(|_| ApiError::new(400, format!("{id:?} is not a note id")))?;
                match method {
                    "GET" | "HEAD" => self.one(id),
                    "DELETE" => self.delete(id),
                    _ => not_allowed("GET, HEAD, DELETE"),
                }
            }
            (_, ["static", ..]) => Ok(self.files.serve(req)),
            _ => Err(ApiError::new(404, "not found")),
        }
    }

    fn list(&self, search: Option<&str>) -> Result<Response, ApiError> {
        Ok(Response::json(&self.query(search)?))
    }

    /// The newest notes, those containing `search` when given.
    fn query(&self, search: Option<&str>) -> Result<Vec<Note>, ApiError> {
        let db = self.db.get()?;
        let mut stmt = db.prepare_cached(
            "SELECT id, text, created FROM notes
             WHERE ?1 IS NULL OR text LIKE '%' || ?1 || '%' ESCAPE '\\'
             ORDER BY id DESC LIMIT ?2",
        )?;
        // `%` and `_` in the search are the user's, not wildcards.
        let search = search.map(|s| s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
        let rows =
            stmt.query_map(params![search, PAGE], |r| Ok(Note { id: r.get(0)?, text: r.get(1)?, created: r.get(2)? }))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn one(&self, id: i64) -> Result<Response, ApiError> {
        let db = self.db.get()?;
        let note = db
            .prepare_cached("SELECT id, text, created FROM notes WHERE id = ?1")?
            .query_row([id], |r| Ok(Note { id: r.get(0)?, text: r.get(1)?, created: r.get(2)? }))
            .optional()?;
        match note {
            Some(note) => Ok(Response::json(&note)),
            None => Err(ApiError::new(404, format!("no note {id}"))),
        }
    }

    fn insert(&self, text: &str) -> Result<Note, ApiError> {
        if text.trim().is_empty() {
            return Err(ApiError::new(400, "a note needs some text"));
        }
        let db = self.db.get()?;
        let note = db
            .prepare_cached("INSERT INTO notes (text) VALUES (?1) RETURNING id, text, created")?
            .query_row([text], |r| Ok(Note { id: r.get(0)?, text: r.get(1)?, created: r.get(2)? }))?;
        Ok(note)
    }

    fn add(&self, req: &mut Request) -> Result<Response, ApiError> {
        let new: NewNote = req.json_within(MAX_BODY)?;
        let note = self.insert(&new.text)?;
        let location = format!("/api/notes/{}", note.id);
        Ok(Response::json(&note).with_status(201).with_header("Location", location))
    }

    fn add_from_form(&self, req: &mut Request) -> Result<Response, ApiError> {
        let form = req.form_within(MAX_BODY)?;
        self.insert(form.get("text").unwrap_or(""))?;
        Ok(Response::see_other("/"))
    }

    fn delete(&self, id: i64) -> Result<Response, ApiError> {
        match self.db.get()?.execute("DELETE FROM notes WHERE id = ?1", [id])? {
            0 => Err(ApiError::new(404, format!("no note {id}"))),
            _ => Ok(Response::status(204)),
        }
    }

    fn page(&self) -> Result<Response, ApiError> {
        let mut html = String::from(
            "<!doctype html><meta charset=utf-8><title>Notes</title>\
             <link rel=stylesheet href=/static/style.css><h1>Notes</h1>\
             <form method=post action=/notes><input name=text autofocus> <button>Add</button></form><ul>",
        );
        for note in self.query(None)? {
            html.push_str("<li>");
            escape_into(&mut html, &note.text);
        }
        html.push_str("</ul>");
        Ok(Response::html(html))
    }
}

/// Writes `text` into HTML, its markup characters escaped.
fn escape_into(html: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '<' => html.push_str("&lt;"),
            '>' => html.push_str("&gt;"),
            '&' => html.push_str("&amp;"),
            '"' => html.push_str("&quot;"),
            '\'' => html.push_str("&#39;"),
            c => html.push(c),
        }
    }
}

/// The service as a server runs it: compressed, then logged.
pub fn app(notes: Notes) -> impl httpool::Handler {
    httpool::access_log(httpool::compress(move |req: &mut Request| notes.handle(req)))
}
