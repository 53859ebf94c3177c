//! What `ServeDir` remembers of the files it served: where a request path
//! led (checked to stay under the root), the file's identity and headers,
//! and the bytes of small files.
//!
//! An entry is used only while the file still has the identity it had
//! (device, inode, length, modification time): a hit costs one `stat` of
//! the remembered path (small files) or an `open` and `fstat` (larger
//! ones), instead of the lookups that resolve a path and its symlinks;
//! and one more `stat` of the path the request names when that goes
//! through a symlink. When a file or a directory on its path is replaced,
//! moved or edited, or a symlink on the way is removed or pointed
//! elsewhere, the identity differs and the path is resolved again from
//! scratch. The map is bounded in entries and in bytes held; past either
//! bound, entries are dropped (whichever the map yields first) to make
//! room.
//!
//! A small file's bytes ([`Body`]) are shared with the answers that send
//! them, and keep a gzipped copy beside them once `compress` asks for one.
//! The copy is counted in the bytes held, and goes with its file's entry.
//! The map's lock guards the count: an entry's bytes, the copy included,
//! are added when it goes in and taken off when it goes out, and a copy is
//! kept only under the lock and only while its entry is in the map (a
//! flag of the body's, written under the lock), so that the count never
//! holds a copy that nothing in the map holds.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::Metadata;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock, Weak};

use crate::response::SharedBody;
use crate::sys::FileStamp;

/// Most entries kept: with their paths and headers, a few hundred KiB.
pub(crate) const MAX_ENTRIES: usize = 4096;

/// Largest file kept in memory. The connection loop writes an in-memory
/// body of up to 32 KiB together with the head in one `write`; a larger
/// one goes out in a second write anyway, where `sendfile` costs no copy.
pub(crate) const MAX_FILE_IN_MEMORY: u64 = 32 * 1024;

/// Which file, in which version: a change to any of these is a change of
/// file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileId {
    stamp: FileStamp,
    pub(crate) len: u64,
}

impl FileId {
    pub(crate) fn of(meta: &Metadata) -> FileId {
        FileId { stamp: FileStamp::of(meta), len: meta.len() }
    }
}

/// A file as served: its resolved path, identity, headers and, when small,
/// its bytes.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The canonical path (symlinks resolved, under the root).
    pub(crate) path: PathBuf,
    /// The path the request names (the root joined with it, symlinks not
    /// resolved): checked too when it differs from `path`, so that a
    /// symlink on the way removed or pointed elsewhere is a change of file.
    pub(crate) named: PathBuf,
    pub(crate) id: FileId,
    /// The modification time as the file system has it: whether the
    /// validators are strong is judged by it, answer by answer.
    pub(crate) mtime: std::time::SystemTime,
    /// The modification time as shown (`Last-Modified`) and compared:
    /// never later than when the entry was made.
    pub(crate) modified: std::time::SystemTime,
    /// The strong form; answers made less than a second after `mtime` send
    /// it weak (`W/`), see [`is_strong`](super::conditional::is_strong).
    pub(crate) etag: String,
    pub(crate) last_modified: String,
    pub(crate) content_type: Cow<'static, str>,
    /// The coding the file's bytes are stored in, by its extension
    /// (`gzip` for `.svgz`).
    pub(crate) content_encoding: Option<&'static str>,
    /// The whole file, when it is at most [`MAX_FILE_IN_MEMORY`].
    pub(crate) bytes: Option<Arc<Body>>,
}

impl Entry {
    fn held(&self) -> usize {
        self.bytes.as_ref().map_or(0, |body| body.held())
    }

    fn holds(&self, body: &Body) -> bool {
        self.bytes.as_ref().is_some_and(|own| std::ptr::eq(&**own, body))
    }
}

/// A small file's bytes, and their gzipped copy once one was asked for.
#[derive(Debug)]
pub(crate) struct Body {
    bytes: Vec<u8>,
    /// The zlib level and the bytes gzipped at it (`None`: gzip does not
    /// make them smaller). Set under the map's lock, while `in_map`.
    gzipped: OnceLock<(u32, Option<Arc<Vec<u8>>>)>,
    /// Whether the entry holding this body is in the map; written under
    /// the map's lock.
    in_map: AtomicBool,
    /// The cache that counts these bytes.
    cache: Weak<Shared>,
}

impl Body {
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.bytes
    }

    /// Bytes held: the file's, and its gzipped copy's.
    fn held(&self) -> usize {
        let gzipped = self.gzipped.get().and_then(|(_, gzipped)| gzipped.as_ref());
        self.bytes.len() + gzipped.map_or(0, |gzipped| gzipped.len())
    }

    #[cfg(test)]
    pub(crate) fn kept_gzipped(&self) -> Option<&Arc<Vec<u8>>> {
        self.gzipped.get().and_then(|(_, gzipped)| gzipped.as_ref())
    }
}

impl SharedBody for Body {
    fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The kept copy when there is one at `level`; else one made now, and
    /// kept (the first time, at the first level asked) if the cache still
    /// holds this body and has room for it.
    fn gzipped(&self, level: u32, gzip: &dyn Fn(&[u8]) -> Option<Vec<u8>>) -> Option<Arc<dyn SharedBody>> {
        let as_body = |gzipped: Arc<Vec<u8>>| gzipped as Arc<dyn SharedBody>;
        if let Some((kept_level, kept)) = self.gzipped.get() {
            return match *kept_level == level {
                true => kept.clone().map(as_body),
                false => gzip(&self.bytes).map(|gzipped| as_body(Arc::new(gzipped))),
            };
        }
        // Made outside the lock: gzip is the slow part.
        let gzipped = gzip(&self.bytes).map(Arc::new);
        if let Some(cache) = self.cache.upgrade() {
            cache.keep_gzipped(self, level, gzipped.clone());
        }
        gzipped.map(as_body)
    }
}

/// Request paths (as sent, after any prefix) to entries.
#[derive(Debug)]
pub(crate) struct Cache {
    shared: Arc<Shared>,
}

/// The map, and its bound; bodies reach it to keep their gzipped copies.
#[derive(Debug)]
struct Shared {
    map: RwLock<Map>,
    /// Most file bytes held over all entries, gzipped copies included.
    max_bytes: usize,
}

#[derive(Debug, Default)]
struct Map {
    entries: HashMap<Box<str>, Arc<Entry>>,
    bytes: usize,
}

impl Map {
    fn take(&mut self, key: &str) {
        if let Some(old) = self.entries.remove(key) {
            self.bytes -= old.held();
            if let Some(body) = &old.bytes {
                body.in_map.store(false, Ordering::Relaxed);
            }
        }
    }

    /// Drops entries (but the one holding `keep`) until `len` more bytes
    /// fit under `max_bytes`; false when they cannot.
    fn make_room(&mut self, len: usize, max_bytes: usize, keep: Option<&Body>) -> bool {
        while self.bytes + len > max_bytes {
            let is_kept = |entry: &Entry| keep.is_some_and(|body| entry.holds(body));
            let victim = self.entries.iter().find(|(_, entry)| !is_kept(entry)).map(|(key, _)| key.clone());
            let Some(victim) = victim else { return false };
            self.take(&victim);
        }
        true
    }
}

impl Cache {
    pub(crate) fn new(max_bytes: usize) -> Cache {
        Cache { shared: Arc::new(Shared { map: RwLock::new(Map::default()), max_bytes }) }
    }

    /// Whether a file of `len` bytes should be kept in memory.
    pub(crate) fn would_hold(&self, len: u64) -> bool {
        len <= MAX_FILE_IN_MEMORY && len <= self.shared.max_bytes as u64
    }

    /// A file's bytes, to be held by an entry of this cache.
    pub(crate) fn body(&self, bytes: Vec<u8>) -> Arc<Body> {
        let cache = Arc::downgrade(&self.shared);
        Arc::new(Body { bytes, gzipped: OnceLock::new(), in_map: AtomicBool::new(false), cache })
    }

    pub(crate) fn get(&self, key: &str) -> Option<Arc<Entry>> {
        self.shared.map.read().unwrap_or_else(PoisonError::into_inner).entries.get(key).cloned()
    }

    pub(crate) fn insert(&self, key: &str, entry: Arc<Entry>) {
        let mut map = self.shared.map.write().unwrap_or_else(PoisonError::into_inner);
        map.take(key);
        while map.entries.len() >= MAX_ENTRIES {
            let Some(victim) = map.entries.keys().next().cloned() else { break };
            map.take(&victim);
        }
        map.make_room(entry.held(), self.shared.max_bytes, None);
        map.bytes += entry.held();
        if let Some(body) = &entry.bytes {
            body.in_map.store(true, Ordering::Relaxed);
        }
        map.entries.insert(key.into(), entry);
    }

    pub(crate) fn remove(&self, key: &str) {
        self.shared.map.write().unwrap_or_else(PoisonError::into_inner).take(key);
    }

    #[cfg(test)]
    pub(crate) fn held(&self) -> (usize, usize) {
        let map = self.shared.map.read().unwrap_or_else(PoisonError::into_inner);
        (map.entries.len(), map.bytes)
    }
}

impl Shared {
    /// Keeps `gzipped` beside `body` (made at `level`), counted, if the map
    /// still holds `body` and there is room (other entries dropped to make
    /// it); else nothing is kept, and the next answer gzips again.
    fn keep_gzipped(&self, body: &Body, level: u32, gzipped: Option<Arc<Vec<u8>>>) {
        let len = gzipped.as_ref().map_or(0, |gzipped| gzipped.len());
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        if !body.in_map.load(Ordering::Relaxed) || body.bytes.len() + len > self.max_bytes {
            return;
        }
        if !map.make_room(len, self.max_bytes, Some(body)) {
            return;
        }
        // Set once: another answer may have kept a copy meanwhile.
        if body.gzipped.set((level, gzipped)).is_ok() {
            map.bytes += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(cache: &Cache, bytes: usize) -> Arc<Entry> {
        Arc::new(Entry {
            path: PathBuf::from("/x"),
            named: PathBuf::from("/x"),
            id: FileId { stamp: FileStamp::fake(1), len: bytes as u64 },
            mtime: std::time::UNIX_EPOCH,
            modified: std::time::UNIX_EPOCH,
            etag: String::new(),
            last_modified: String::new(),
            content_type: Cow::Borrowed("text/plain"),
            content_encoding: None,
            bytes: Some(cache.body(vec![0; bytes])),
        })
    }

    #[test]
    fn bytes_held_stay_within_the_bound() {
        let cache = Cache::new(10_000);
        for i in 0..10 {
            cache.insert(&format!("/f{i}"), entry(&cache, 3000));
            assert!(cache.held().1 <= 10_000);
        }
        assert_eq!(cache.held(), (3, 9000));
        cache.insert("/f9", entry(&cache, 1000));
        assert!(cache.get("/f9").is_some_and(|e| e.held() == 1000));
        assert_eq!(cache.held().1, cache.held().0 * 3000 - 2000);
        cache.remove("/f9");
        assert!(cache.get("/f9").is_none());
    }

    #[test]
    fn entries_stay_within_the_bound() {
        let cache = Cache::new(usize::MAX);
        for i in 0..MAX_ENTRIES + 10 {
            cache.insert(&format!("/f{i}"), entry(&cache, 0));
        }
        assert_eq!(cache.held().0, MAX_ENTRIES);
    }
}
