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

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::Metadata;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

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
    pub(crate) bytes: Option<Vec<u8>>,
}

impl Entry {
    fn held(&self) -> usize {
        self.bytes.as_ref().map_or(0, Vec::len)
    }
}

/// Request paths (as sent, after any prefix) to entries.
#[derive(Debug)]
pub(crate) struct Cache {
    map: RwLock<Map>,
    /// Most file bytes held over all entries.
    max_bytes: usize,
}

#[derive(Debug, Default)]
struct Map {
    entries: HashMap<Box<str>, Arc<Entry>>,
    bytes: usize,
}

impl Cache {
    pub(crate) fn new(max_bytes: usize) -> Cache {
        Cache { map: RwLock::new(Map::default()), max_bytes }
    }

    /// Whether a file of `len` bytes should be kept in memory.
    pub(crate) fn would_hold(&self, len: u64) -> bool {
        len <= MAX_FILE_IN_MEMORY && len <= self.max_bytes as u64
    }

    pub(crate) fn get(&self, key: &str) -> Option<Arc<Entry>> {
        self.map.read().unwrap_or_else(PoisonError::into_inner).entries.get(key).cloned()
    }

    pub(crate) fn insert(&self, key: &str, entry: Arc<Entry>) {
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = map.entries.remove(key) {
            map.bytes -= old.held();
        }
        while map.entries.len() >= MAX_ENTRIES || map.bytes + entry.held() > self.max_bytes {
            let Some(victim) = map.entries.keys().next().cloned() else { break };
            if let Some(old) = map.entries.remove(&victim) {
                map.bytes -= old.held();
            }
        }
        map.bytes += entry.held();
        map.entries.insert(key.into(), entry);
    }

    pub(crate) fn remove(&self, key: &str) {
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = map.entries.remove(key) {
            map.bytes -= old.held();
        }
    }

    #[cfg(test)]
    pub(crate) fn held(&self) -> (usize, usize) {
        let map = self.map.read().unwrap_or_else(PoisonError::into_inner);
        (map.entries.len(), map.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(bytes: usize) -> Arc<Entry> {
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
            bytes: Some(vec![0; bytes]),
        })
    }

    #[test]
    fn bytes_held_stay_within_the_bound() {
        let cache = Cache::new(10_000);
        for i in 0..10 {
            cache.insert(&format!("/f{i}"), entry(3000));
            assert!(cache.held().1 <= 10_000);
        }
        assert_eq!(cache.held(), (3, 9000));
        cache.insert("/f9", entry(1000));
        assert!(cache.get("/f9").is_some_and(|e| e.held() == 1000));
        assert_eq!(cache.held().1, cache.held().0 * 3000 - 2000);
        cache.remove("/f9");
        assert!(cache.get("/f9").is_none());
    }

    #[test]
    fn entries_stay_within_the_bound() {
        let cache = Cache::new(usize::MAX);
        for i in 0..MAX_ENTRIES + 10 {
            cache.insert(&format!("/f{i}"), entry(0));
        }
        assert_eq!(cache.held().0, MAX_ENTRIES);
    }
}
