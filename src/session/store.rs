//! Where sessions live between requests: the [`SessionStore`] trait and
//! its bounded in-memory default, [`MemoryStore`].

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// What a session holds: names to values.
pub type SessionData = HashMap<String, String>;

/// The most sessions a [`MemoryStore`] keeps by default; a new one past it
/// evicts the one used longest ago.
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;

/// How long a [`MemoryStore`] keeps a session nobody uses, by default.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Keeps sessions by id. [`Sessions`](super::Sessions) calls it: `load`
/// for a request that brings a session cookie, `save` after a change,
/// `remove` when a session ends or moves to a new id.
///
/// Implement it over a database or a cache shared by several processes.
/// A store decides how long a session lives: `load` of one past its
/// expiry is `Ok(None)`, and a `load` may count as a use that pushes an
/// idle timeout back, as [`MemoryStore`]'s does. An error is the server's
/// failure: a handler that passes it on with `?` answers `500`.
///
/// Ids are made by [`Sessions`](super::Sessions) (128 random bits, 32 hex
/// digits) and reach the store only from a cookie that decrypted with the
/// key, so they are never the client's choice.
pub trait SessionStore: Send + Sync + 'static {
    /// The data of the session `id`, or `None` when there is none (never
    /// saved, removed, expired).
    fn load(&self, id: &str) -> io::Result<Option<SessionData>>;

    /// Keeps `data` as the session `id`, replacing what it held.
    fn save(&self, id: &str, data: &SessionData) -> io::Result<()>;

    /// Forgets the session `id` (nothing to do when there is none).
    fn remove(&self, id: &str) -> io::Result<()>;
}

/// The default store: sessions in this process's memory, at most
/// [`max_sessions`](MemoryStore::max_sessions) of them, each dropped once
/// unused for [`idle_timeout`](MemoryStore::idle_timeout). Sessions end
/// with the process, and each process of a site has its own: use a store
/// of your own to share them.
///
/// A new session when the store is full evicts the one used longest ago
/// (an expired one, if there is any): a flood of new sessions costs the
/// oldest sessions their login, never memory without bound. Finding it
/// costs a logarithm of the count (an index by last use beside the map).
pub struct MemoryStore {
    max_sessions: usize,
    idle_timeout: Duration,
    table: Mutex<Table>,
}

/// The sessions and their order of use. Invariant: `by_use` holds exactly
/// one entry for each session, under the `used` key it has in `sessions`.
#[derive(Default)]
struct Table {
    sessions: HashMap<String, Entry>,
    by_use: BTreeMap<Used, String>,
    /// Tells apart uses at the same instant.
    uses: u64,
}

/// When a session was last used, and the use's number (unique).
type Used = (Instant, u64);

struct Entry {
    data: SessionData,
    used: Used,
}

impl MemoryStore {
    /// A store of at most [`DEFAULT_MAX_SESSIONS`] sessions, each kept
    /// [`DEFAULT_SESSION_IDLE_TIMEOUT`] past its last use.
    pub fn new() -> MemoryStore {
        MemoryStore {
            max_sessions: DEFAULT_MAX_SESSIONS,
            idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            table: Mutex::new(Table::default()),
        }
    }

    /// The most sessions kept ([`DEFAULT_MAX_SESSIONS`] by default); a new
    /// one past it evicts the one used longest ago.
    ///
    /// # Panics
    ///
    /// When `max` is 0.
    pub fn max_sessions(mut self, max: usize) -> MemoryStore {
        assert!(max > 0, "MemoryStore::max_sessions(0): a store must keep at least one session");
        self.max_sessions = max;
        self
    }

    /// How long a session is kept after its last load or save
    /// ([`DEFAULT_SESSION_IDLE_TIMEOUT`] by default); a request after that
    /// finds no session (the user logs in again).
    pub fn idle_timeout(mut self, timeout: Duration) -> MemoryStore {
        self.idle_timeout = timeout;
        self
    }

    /// How many sessions are kept now (expired ones not yet dropped
    /// included: they go when found, or when room is needed).
    pub fn len(&self) -> usize {
        self.table().sessions.len()
    }

    /// True when no session is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        // Nothing of the caller's runs under the lock, and every change to
        // the table is made whole before anything there could panic (an
        // allocation failing aborts): a poisoned lock guards a consistent
        // table.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_expired(&self, used: Used, now: Instant) -> bool {
        now.saturating_duration_since(used.0) >= self.idle_timeout
    }

    pub(super) fn load_at(&self, id: &str, now: Instant) -> Option<SessionData> {
        let mut table = self.table();
        let used = table.sessions.get(id)?.used;
        if self.is_expired(used, now) {
            table.forget(id);
            return None;
        }
        let fresh = table.next_use(now);
        table.by_use.remove(&used);
        table.by_use.insert(fresh, id.to_owned());
        let entry = table.sessions.get_mut(id)?;
        entry.used = fresh;
        Some(entry.data.clone())
    }

    pub(super) fn save_at(&self, id: &str, data: &SessionData, now: Instant) {
        let mut table = self.table();
        table.forget(id);
        while let Some((&oldest, _)) = table.by_use.first_key_value() {
            if table.sessions.len() < self.max_sessions && !self.is_expired(oldest, now) {
                break;
            }
            if let Some((_, evicted)) = table.by_use.pop_first() {
                table.sessions.remove(&evicted);
            }
        }
        let used = table.next_use(now);
        table.by_use.insert(used, id.to_owned());
        table.sessions.insert(id.to_owned(), Entry { data: data.clone(), used });
    }
}

impl Table {
    fn next_use(&mut self, now: Instant) -> Used {
        self.uses += 1;
        (now, self.uses)
    }

    fn forget(&mut self, id: &str) {
        if let Some(entry) = self.sessions.remove(id) {
            self.by_use.remove(&entry.used);
        }
    }
}

impl Default for MemoryStore {
    fn default() -> MemoryStore {
        MemoryStore::new()
    }
}

impl SessionStore for MemoryStore {
    fn load(&self, id: &str) -> io::Result<Option<SessionData>> {
        Ok(self.load_at(id, Instant::now()))
    }

    fn save(&self, id: &str, data: &SessionData) -> io::Result<()> {
        self.save_at(id, data, Instant::now());
        Ok(())
    }

    fn remove(&self, id: &str) -> io::Result<()> {
        self.table().forget(id);
        Ok(())
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore")
            .field("sessions", &self.len())
            .field("max_sessions", &self.max_sessions)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}
