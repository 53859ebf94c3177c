//! The notes service (see the library's doc):
//! `httpool-notes [ADDR] [DB] [unpinned | bounded]`; with `NOTES_POOL_WAIT`
//! set, it prints how long handlers waited for a database connection when
//! it stops.

use std::path::Path;
use std::sync::Arc;

use httpool::Server;
use httpool_notes::{Notes, POOL_SIZE, PoolTimes, app};

/// Writes `log` records (the access lines among them) to stderr.
struct Stderr;

impl log::Log for Stderr {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            eprintln!("{}", record.args());
        }
    }

    fn flush(&self) {}
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8010".into());
    let db = args.next().unwrap_or_else(|| "notes.db".into());
    // Without a logger the access log goes nowhere.
    log::set_logger(&Stderr).map_err(|e| e.to_string())?;
    log::set_max_level(log::LevelFilter::Info);
    let statics = Path::new(env!("CARGO_MANIFEST_DIR")).join("static");
    // `NOTES_POOL_WAIT` set: how long handlers waited for a database
    // connection, printed when the server stops (a measurement).
    let times = std::env::var_os("NOTES_POOL_WAIT").map(|_| Arc::new(PoolTimes::default()));
    let notes = match &times {
        Some(times) => Notes::open_timed(&db, statics, times.clone())?,
        None => Notes::open(&db, statics)?,
    };
    // The defaults: the pool grows for handlers that block only as far as
    // more threads finish more calls, so threads waiting in r2d2's queue
    // are not added (the guide's "Handlers that wait on a shared pool").
    let mut server = Server::bind(&addr)?;
    // To compare: `unpinned`, workers not pinned to CPUs
    // (`Server::pin_workers`); `bounded`, at most as many threads as
    // database connections (`Server::max_workers`).
    match args.next().as_deref() {
        Some("unpinned") => server = server.pin_workers(false),
        Some("bounded") => server = server.max_workers(POOL_SIZE as usize),
        _ => {}
    }
    eprintln!("notes on http://{}/ (database {db})", server.local_addr()?);
    server.serve_handler(app(notes))?;
    if let Some(times) = times {
        eprintln!("{times}");
    }
    Ok(())
}
