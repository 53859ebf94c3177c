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

use std::path::Path;
use std::sync::Arc;

use httpool::router::State;
use httpool::{JsonError, Request, Response, Router, ServeDir};
use r2d2_sqlite::SqliteConnectionManager;
use r2d2_sqlite::rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

mod pool_times;
pub use pool_times::PoolTimes;

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

/// Errors are JSON: `{"error": message}` with their status. A request
/// that cannot be read answers as `httpool::Error::status` says (`415`,
/// `413`, `400`); the database failing, or no connection coming free in
/// time, is a `503`; another failure of the server's own a `500` (logged).
type Answer = Result<Response, JsonError>;

fn unavailable(e: r2d2::Error) -> JsonError {
    JsonError::new(503, e)
}

impl Notes {
    /// Opens (and creates) the database at `path`; static files come from
    /// `static_dir`.
    pub fn open(path: impl AsRef<Path>, static_dir: impl AsRef<Path>) -> Result<Notes, Box<dyn std::error::Error>> {
        Notes::open_with(path, static_dir, None)
    }

    /// As [`Notes::open`], and `times` records how long each handler
    /// waited for a database connection and held it.
    pub fn open_timed(
        path: impl AsRef<Path>,
        static_dir: impl AsRef<Path>,
        times: Arc<PoolTimes>,
    ) -> Result<Notes, Box<dyn std::error::Error>> {
        Notes::open_with(path, static_dir, Some(times))
    }

    fn open_with(
        path: impl AsRef<Path>,
        static_dir: impl AsRef<Path>,
        times: Option<Arc<PoolTimes>>,
    ) -> Result<Notes, Box<dyn std::error::Error>> {
        // WAL: readers do not wait for a writer. A busy timeout: writers
        // wait for each other rather than fail.
        let manager = SqliteConnectionManager::file(path).with_init(|c| {
            c.execute_batch("PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL;")
        });
        let mut pool = r2d2::Pool::builder().max_size(POOL_SIZE);
        if let Some(times) = times {
            pool = pool.event_handler(Box::new(pool_times::Recorder(times)));
        }
        let db = pool.build(manager)?;
        db.get()?.execute_batch(
            "CREATE TABLE IF NOT EXISTS notes (
                 id INTEGER PRIMARY KEY,
                 text TEXT NOT NULL,
                 created INTEGER NOT NULL DEFAULT (unixepoch())
             )",
        )?;
        Ok(Notes { db, files: ServeDir::new(static_dir)?.strip_prefix("/static") })
    }

    fn list(&self, req: &mut Request) -> Answer {
        Ok(Response::json(&self.query(req.query_param("q").as_deref())?))
    }

    /// The newest notes, those containing `search` when given.
    fn query(&self, search: Option<&str>) -> Result<Vec<Note>, JsonError> {
        let db = self.db.get().map_err(unavailable)?;
        let mut stmt = db
            .prepare_cached(
                "SELECT id, text, created FROM notes
             WHERE ?1 IS NULL OR text LIKE '%' || ?1 || '%' ESCAPE '\\'
             ORDER BY id DESC LIMIT ?2",
            )
            .map_err(JsonError::internal)?;
        // `%` and `_` in the search are the user's, not wildcards.
        let search = search.map(|s| s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
        let rows = stmt
            .query_map(params![search, PAGE], |r| Ok(Note { id: r.get(0)?, text: r.get(1)?, created: r.get(2)? }))
            .map_err(JsonError::internal)?;
        rows.collect::<Result<_, _>>().map_err(JsonError::internal)
    }

    fn one(&self, req: &mut Request) -> Answer {
        let id = note_id(req)?;
        let db = self.db.get().map_err(unavailable)?;
        let note = db
            .prepare_cached("SELECT id, text, created FROM notes WHERE id = ?1")
            .and_then(|mut stmt| {
                stmt.query_row([id], |r| Ok(Note { id: r.get(0)?, text: r.get(1)?, created: r.get(2)? })).optional()
            })
            .map_err(JsonError::internal)?;
        match note {
            Some(note) => Ok(Response::json(&note)),
            None => Err(JsonError::new(404, format!("no note {id}"))),
        }
    }

    fn insert(&self, text: &str) -> Result<Note, JsonError> {
        if text.trim().is_empty() {
            return Err(JsonError::new(400, "a note needs some text"));
        }
        let db = self.db.get().map_err(unavailable)?;
        db.prepare_cached("INSERT INTO notes (text) VALUES (?1) RETURNING id, text, created")
            .and_then(|mut stmt| {
                stmt.query_row([text], |r| Ok(Note { id: r.get(0)?, text: r.get(1)?, created: r.get(2)? }))
            })
            .map_err(JsonError::internal)
    }

    fn add(&self, req: &mut Request) -> Answer {
        let new: NewNote = req.json_within(MAX_BODY)?;
        let note = self.insert(&new.text)?;
        let location = format!("/api/notes/{}", note.id);
        Ok(Response::json(&note).with_status(201).with_header("Location", location))
    }

    fn add_from_form(&self, req: &mut Request) -> Answer {
        let form: NewNote = req.form_as_within(MAX_BODY)?;
        self.insert(&form.text)?;
        Ok(Response::see_other("/"))
    }

    fn delete(&self, req: &mut Request) -> Answer {
        let id = note_id(req)?;
        let db = self.db.get().map_err(unavailable)?;
        match db.execute("DELETE FROM notes WHERE id = ?1", [id]).map_err(JsonError::internal)? {
            0 => Err(JsonError::new(404, format!("no note {id}"))),
            _ => Ok(Response::status(204)),
        }
    }

    fn page(&self, _req: &mut Request) -> Answer {
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

/// The `{id}` of the route, as a note id: `400` when it is not a number.
fn note_id(req: &Request) -> Result<i64, JsonError> {
    let id = req.param("id").unwrap_or_default();
    id.parse().map_err(|_| JsonError::new(400, format!("{id:?} is not a note id")))
}

/// The routes: `HEAD` is answered by each `GET` route, another method on a
/// known path gets `405` with `Allow` (JSON on `/api`), an unknown path
/// `404`.
pub fn routes(notes: Notes) -> Router<State<Notes>> {
    Router::with_state(notes)
        .get("/", |req, notes| notes.page(req))
        .post("/notes", |req, notes| notes.add_from_form(req))
        .get("/api/notes", |req, notes| notes.list(req))
        .post("/api/notes", |req, notes| notes.add(req))
        .get("/api/notes/{id}", |req, notes| notes.one(req))
        .delete("/api/notes/{id}", |req, notes| notes.delete(req))
        .route("GET", "/static/{*path}", |req, notes| notes.files.serve(req))
        .fallback(|_req, _notes| JsonError::new(404, "not found"))
        .method_not_allowed(|_req, _notes| JsonError::new(405, "method not allowed"))
}

/// The service as a server runs it: compressed, then logged.
pub fn app(notes: Notes) -> impl httpool::Handler {
    httpool::access_log(httpool::compress(routes(notes)))
}
