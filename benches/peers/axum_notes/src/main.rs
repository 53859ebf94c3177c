//! The read routes of httpool's `examples/notes` on axum 0.8 and tokio's
//! multi-thread runtime: `GET /api/notes/{id}` (one row) and
//! `GET /api/notes?q=word` (a `LIKE` search), over the same schema, pool
//! size and queries. Each database call runs in `tokio::task::spawn_blocking`,
//! as tokio's docs advise for blocking work. argv[1]: the listen address;
//! argv[2]: the database file (made by the httpool example, or created here
//! empty).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use r2d2_sqlite::SqliteConnectionManager;
use r2d2_sqlite::rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

type Pool = r2d2::Pool<SqliteConnectionManager>;

#[derive(Serialize)]
struct Note {
    id: i64,
    text: String,
    created: i64,
}

#[derive(Deserialize)]
struct Search {
    q: Option<String>,
}

fn note(r: &r2d2_sqlite::rusqlite::Row) -> r2d2_sqlite::rusqlite::Result<Note> {
    Ok(Note { id: r.get(0)?, text: r.get(1)?, created: r.get(2)? })
}

/// Runs a blocking database call on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    pool: Arc<Pool>,
    f: impl FnOnce(&r2d2_sqlite::rusqlite::Connection) -> Result<T, StatusCode> + Send + 'static,
) -> Result<T, StatusCode> {
    tokio::task::spawn_blocking(move || {
        let db = pool.get().map_err(|_| StatusCode::SERVICE_UNAVAILABLE)?;
        f(&db)
    })
    .await
    .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?
}

async fn one(State(pool): State<Arc<Pool>>, Path(id): Path<i64>) -> Result<Json<Note>, StatusCode> {
    let note = blocking(pool, move |db| {
        db.prepare_cached("SELECT id, text, created FROM notes WHERE id = ?1")
            .and_then(|mut s| s.query_row([id], note).optional())
            .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)
    })
    .await?;
    note.map(Json).ok_or(StatusCode::NOT_FOUND)
}

async fn list(State(pool): State<Arc<Pool>>, Query(search): Query<Search>) -> Result<Json<Vec<Note>>, StatusCode> {
    let notes = blocking(pool, move |db| {
        let search = search.q.map(|s| s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
        let mut stmt = db
            .prepare_cached(
                "SELECT id, text, created FROM notes
                 WHERE ?1 IS NULL OR text LIKE '%' || ?1 || '%' ESCAPE '\\'
                 ORDER BY id DESC LIMIT ?2",
            )
            .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
        let rows = stmt.query_map(params![search, 100], note).map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)
    })
    .await?;
    Ok(Json(notes))
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:19010".into());
    let db = args.next().unwrap_or_else(|| "notes.db".into());
    let manager = SqliteConnectionManager::file(db).with_init(|c| {
        c.execute_batch("PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL;")
    });
    let pool = Arc::new(r2d2::Pool::builder().max_size(16).build(manager).expect("database"));
    pool.get()
        .expect("database")
        .execute_batch(
            "CREATE TABLE IF NOT EXISTS notes (
                 id INTEGER PRIMARY KEY,
                 text TEXT NOT NULL,
                 created INTEGER NOT NULL DEFAULT (unixepoch())
             )",
        )
        .expect("schema");
    let app = Router::new().route("/api/notes", get(list)).route("/api/notes/{id}", get(one)).with_state(pool);
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("bind");
    eprintln!("axum notes on http://{addr}/api/notes");
    axum::serve(listener, app).await.expect("serve");
}
