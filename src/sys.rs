//! The platform layer: everything the server does differently on Unix and
//! on Windows, behind one small interface, so that the engine (`shared`,
//! `http1`, `pool`) reads the same everywhere.
//!
//! What differs:
//!
//! - **A connection's socket** ([`TcpConn`]). On Unix it is std's socket,
//!   registered with its seat through its descriptor, so that Linux can
//!   `sendfile` from a file to it. On Windows it is mio's own type: mio
//!   emulates readiness there over the completion port and re-arms a source
//!   only when an operation through that type returns `WouldBlock`, so every
//!   read and write goes through it.
//! - **Whether a short read empties the socket** ([`SHORT_READ_EMPTIES`]).
//!   Under epoll and kqueue, a read that returns less than asked for has
//!   emptied the socket, and the next bytes bring a new edge: a connection
//!   may park. On Windows only `WouldBlock` re-arms the source, so the
//!   engine reads until it sees one.
//! - **How a seat hears of new connections** ([`ListenerWatch`]). On Unix
//!   every seat registers the listener's descriptor (one socket, many
//!   readiness sets). On Windows a socket is registered with one set at a
//!   time, so each seat registers a handle of its own to the listening
//!   socket, re-armed once an accept pass has emptied the backlog (the
//!   accepts go through another handle, whose `WouldBlock` re-arms
//!   nothing).
//! - Listener options: `TCP_NODELAY` inherited from the listener and
//!   `TCP_DEFER_ACCEPT` on Linux, `SO_NOSIGPIPE` on Apple systems; Windows
//!   sets `TCP_NODELAY` on each accepted socket, as macOS does.
//! - `sendfile(2)` on Linux ([`send_file`]); elsewhere a buffered copy.
//! - Files: opened without blocking on a FIFO (Unix), and a file's identity
//!   for the `fs` cache ([`FileStamp`]).
//! - On Linux with glibc, freed memory handed back after a burst
//!   ([`give_back_free_memory`], [`trim_own_arena`], [`flush_stack_cache`])
//!   and `SCHED_BATCH` ([`schedule_as_batch`]).
//! - On Linux, a thread's state ([`current_thread`], [`wants_cpu`]): the
//!   monitor tells a worker asleep in a handler from one that computes.
//!
//! Unix domain sockets are Unix only (`Server::bind_unix`, `cfg(unix)`), and
//! so is stopping on `SIGTERM`; Ctrl-C stops a server on every platform
//! (`crate::signals`).

/// A thread of this process as the kernel names it (its id, never 0), to
/// ask whether it waits for a CPU ([`wants_cpu`]; [`current_thread`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ThreadRef(u32);

impl ThreadRef {
    /// Its id as a number (0 is no thread's), to keep in an atomic.
    pub(crate) fn raw(self) -> u32 {
        self.0
    }

    pub(crate) fn from_raw(raw: u32) -> Option<ThreadRef> {
        (raw != 0).then_some(ThreadRef(raw))
    }
}

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::*;

/// How a listener was set up, and what its connections need.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ListenerSetup {
    /// The kernel hands over a connection only once its first bytes have
    /// arrived (Linux's `TCP_DEFER_ACCEPT`; never elsewhere).
    pub(crate) deferred: bool,
    /// Accepted sockets inherit `TCP_NODELAY` from the listener (Linux);
    /// elsewhere it is set on each accepted socket.
    pub(crate) nodelay_inherited: bool,
}

// What the socket does the same on every platform.
impl TcpConn {
    pub(crate) fn set_nodelay(&self, on: bool) -> std::io::Result<()> {
        self.0.set_nodelay(on)
    }

    #[cfg(test)]
    pub(crate) fn nodelay(&self) -> std::io::Result<bool> {
        self.0.nodelay()
    }

    pub(crate) fn shutdown_write(&self) -> std::io::Result<()> {
        self.0.shutdown(std::net::Shutdown::Write)
    }

    /// Copies bytes waiting in the socket without taking them.
    pub(crate) fn peek(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.peek(buf)
    }
}

impl std::io::Read for TcpConn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl std::io::Write for TcpConn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf)
    }

    /// A socket holds nothing to flush.
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whole seconds since the Unix epoch of `time`; 0 before it.
pub(crate) fn secs_since_epoch(time: std::time::SystemTime) -> u64 {
    time.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
