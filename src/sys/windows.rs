//! The Windows side of the platform layer (see `sys.rs`). Tested under Wine
//! on every CI run (`ci/windows.sh`), not measured on a Windows machine.
//!
//! mio emulates readiness on Windows over the completion port: a source
//! reports an event, then stays quiet until an operation through mio's own
//! type returns `WouldBlock` (which re-arms it) or it is registered again.
//! Everything here keeps the engine's rule "park only after a read would
//! block" true under those terms.

use std::fs::File;
use std::io;
use std::os::windows::io::AsSocket;

use mio::event::Source;
use mio::{Interest, Registry, Token};

use super::{ListenerSetup, ThreadRef};

/// The wall clock, for `Date` (std's; the coarse one is a Linux reading).
pub(crate) fn coarse_secs() -> u64 {
    super::secs_since_epoch(std::time::SystemTime::now())
}

/// Only `WouldBlock` re-arms a source: a short read leaves the connection
/// unwatched until the engine reads again.
pub(crate) const SHORT_READ_EMPTIES: bool = false;

/// A TCP connection's socket: mio's own type, through which every read and
/// write goes, so that a `WouldBlock` re-arms its registration.
#[derive(Debug)]
pub(crate) struct TcpConn(pub(super) mio::net::TcpStream);

impl TcpConn {
    /// A connection as the listener accepted it.
    pub(crate) fn accepted(stream: mio::net::TcpStream) -> TcpConn {
        TcpConn(stream)
    }

    /// The socket as mio's type, for TLS.
    #[cfg(feature = "tls")]
    pub(crate) fn into_mio(self) -> mio::net::TcpStream {
        self.0
    }
}

impl Source for TcpConn {
    fn register(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        self.0.register(registry, token, interests)
    }

    fn reregister(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        self.0.reregister(registry, token, interests)
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        self.0.deregister(registry)
    }
}

/// What a seat registers to hear of new connections: a handle of its own
/// to the listening socket (a mio source is in one readiness set at a
/// time). Accepts go through another handle, so nothing re-arms this one
/// but [`ListenerWatch::rearm`], once an accept pass has emptied the
/// backlog: re-armed while connections wait there (accepts held back while
/// the server is full, or paused after an error), it would be reported at
/// once, again and again, and its seat's worker would spin.
#[derive(Debug)]
pub(crate) struct ListenerWatch {
    handle: Option<mio::net::TcpListener>,
    /// Reported since it was last armed: quiet until re-armed.
    quiet: bool,
}

impl ListenerWatch {
    pub(crate) fn tcp(listener: &mio::net::TcpListener) -> io::Result<ListenerWatch> {
        let handle = listener.as_socket().try_clone_to_owned()?;
        Ok(ListenerWatch { handle: Some(mio::net::TcpListener::from(handle)), quiet: false })
    }

    pub(crate) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        match &mut self.handle {
            Some(listener) => listener.register(registry, token, Interest::READABLE),
            None => Ok(()),
        }
    }

    /// The seat reported the listener: mio watches it no more.
    pub(crate) fn reported(&mut self) {
        self.quiet = true;
    }

    /// After an accept pass emptied the backlog: watches again (when
    /// quiet), so the next connection is reported. One that came after the
    /// pass's last accept is reported at once.
    pub(crate) fn rearm(&mut self, registry: &Registry, token: Token) {
        let Some(listener) = &mut self.handle else { return };
        if !self.quiet {
            return;
        }
        match listener.reregister(registry, token, Interest::READABLE) {
            Ok(()) => self.quiet = false,
            Err(e) => error!("watching the listener again failed: {e}"),
        }
    }

    /// Stops watching and closes this handle, so that the listening socket
    /// closes with the listener itself.
    pub(crate) fn forget(&mut self, registry: &Registry) {
        if let Some(mut listener) = self.handle.take() {
            let _ = listener.deregister(registry);
        }
    }
}

/// Makes `listener` non-blocking. std binds without `SO_REUSEADDR` on
/// Windows (which there would let another socket take the port), and since
/// Windows Server 2003 a bound port is not shared without the owner's
/// consent, so no `SO_EXCLUSIVEADDRUSE` is needed.
pub(crate) fn set_up_tcp_listener(listener: &std::net::TcpListener) -> io::Result<ListenerSetup> {
    listener.set_nonblocking(true)?;
    Ok(ListenerSetup { deferred: false, nodelay_inherited: false })
}

/// Winsock keeps the backlog a listening socket was given: a second
/// listen(2) changes nothing.
pub(crate) fn set_backlog(_: &std::net::TcpListener, _: u32) -> io::Result<()> {
    Ok(())
}

/// No `sendfile` here: the caller copies through a buffer.
pub(crate) fn send_file(_: &TcpConn, _: &mut File, _: &mut u64) -> Option<io::Result<bool>> {
    None
}

/// True when a path segment names another file than its plain reading
/// says: a colon (a drive, or an alternate data stream such as
/// `page.html::$DATA`), or a trailing dot or space (Windows drops them, so
/// `secret.txt.` is `secret.txt`). Device names (`CON`, `NUL`) need no rule
/// here: they do not resolve under the root.
#[cfg(feature = "fs")]
pub(crate) fn names_another_file(segment: &str) -> bool {
    segment.contains(':') || segment.ends_with(['.', ' '])
}

#[cfg(feature = "fs")]
/// Opens a file to serve (Windows has no FIFOs in the file system).
pub(crate) fn open_file(path: &std::path::Path) -> io::Result<File> {
    File::open(path)
}

#[cfg(feature = "fs")]
/// Which file, in which version: its creation and last-write times (the
/// length is compared besides). Stable Rust has no file index on Windows;
/// a file replaced by a rename has a creation time of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileStamp {
    created: u64,
    written: u64,
}

#[cfg(feature = "fs")]
impl FileStamp {
    pub(crate) fn of(meta: &std::fs::Metadata) -> FileStamp {
        use std::os::windows::fs::MetadataExt;
        FileStamp { created: meta.creation_time(), written: meta.last_write_time() }
    }

    #[cfg(test)]
    pub(crate) fn fake(n: u64) -> FileStamp {
        FileStamp { created: n, written: n }
    }
}

/// Nothing to do: the Windows heap gives back what it can itself.
pub(crate) fn give_back_free_memory() {}

pub(crate) fn trim_own_arena() {}

pub(crate) fn flush_stack_cache() {}

/// Linux only.
pub(crate) fn schedule_as_batch() {}

/// Linux only: no worker is pinned here.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Linux only.
pub(crate) fn run_current_thread_on(_: &[usize]) {}

/// Linux only.
pub(crate) fn sleeps_and_cpu() -> Option<(u64, std::time::Duration)> {
    None
}

/// Linux only: a thread's state is not read here.
pub(crate) fn current_thread() -> Option<ThreadRef> {
    None
}

/// Linux only.
pub(crate) fn wants_cpu(_: ThreadRef) -> Option<bool> {
    None
}
