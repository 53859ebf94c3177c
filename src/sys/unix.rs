//! The Unix side of the platform layer (see `sys.rs`): Linux and macOS,
//! other Unix systems through mio on a best-effort basis.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};

use mio::event::Source;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

use super::{ListenerSetup, ThreadRef};

/// The wall clock as the kernel last ticked it (`CLOCK_REALTIME_COARSE`,
/// at most a tick of 1–10 ms behind): the `Date` of every response, whose
/// unit is the second. A reading costs 4–5 ns here against 33–34 ns for
/// `SystemTime::now` (`tsc` under KVM), some 5% of a pipelined request's
/// CPU time. Before 1970: the fine clock (which says 0). In whole seconds,
/// as `Date` takes them: a `SystemTime` made of it, and compared at every
/// response, cost about 15 instructions more under callgrind.
///
/// std has no coarse clock, and rustix's reads the vDSO with a parser of
/// its own that valgrind cannot run (rustix issue 1559: the process dies at
/// its first reading), hence `unsafe` and glibc's or musl's call.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
#[allow(unsafe_code)]
pub(crate) fn coarse_secs() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime(2) writes one `timespec` behind the pointer,
    // which points at `now`, alive on this frame for the whole call; it
    // reads no memory of ours.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &raw mut now) };
    match (rc, u64::try_from(now.tv_sec)) {
        (0, Ok(secs)) => secs,
        _ => super::secs_since_epoch(std::time::SystemTime::now()),
    }
}

#[cfg(not(all(target_os = "linux", not(httpool_portable))))]
pub(crate) fn coarse_secs() -> u64 {
    super::secs_since_epoch(std::time::SystemTime::now())
}

/// A read that returns fewer bytes than asked for has emptied the socket:
/// the next bytes bring a new readiness edge.
pub(crate) const SHORT_READ_EMPTIES: bool = true;

/// A TCP connection's socket: std's, registered through its descriptor, so
/// that Linux can `sendfile` to it.
#[derive(Debug)]
pub(crate) struct TcpConn(pub(super) std::net::TcpStream);

impl TcpConn {
    /// A connection as the listener accepted it.
    pub(crate) fn accepted(stream: mio::net::TcpStream) -> TcpConn {
        TcpConn(stream.into())
    }

    /// The socket as mio's type, for TLS (which needs no `sendfile`).
    #[cfg(feature = "tls")]
    pub(crate) fn into_mio(self) -> mio::net::TcpStream {
        mio::net::TcpStream::from_std(self.0)
    }
}

impl AsFd for TcpConn {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl Source for TcpConn {
    fn register(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        SourceFd(&self.0.as_raw_fd()).register(registry, token, interests)
    }

    fn reregister(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        SourceFd(&self.0.as_raw_fd()).reregister(registry, token, interests)
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        SourceFd(&self.0.as_raw_fd()).deregister(registry)
    }
}

/// What a seat registers to hear of new connections: the listener's
/// descriptor itself (epoll and kqueue let one socket be in many sets).
#[derive(Debug)]
pub(crate) struct ListenerWatch(Option<RawFd>);

impl ListenerWatch {
    pub(crate) fn tcp(listener: &mio::net::TcpListener) -> io::Result<ListenerWatch> {
        Ok(ListenerWatch(Some(listener.as_raw_fd())))
    }

    pub(crate) fn unix(listener: &mio::net::UnixListener) -> io::Result<ListenerWatch> {
        Ok(ListenerWatch(Some(listener.as_raw_fd())))
    }

    pub(crate) fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        match self.0 {
            Some(fd) => SourceFd(&fd).register(registry, token, Interest::READABLE),
            None => Ok(()),
        }
    }

    /// The seat reported the listener: nothing to note.
    pub(crate) fn reported(&mut self) {}

    /// After an accept pass emptied the listener: nothing to do, the next
    /// connection brings a new edge.
    pub(crate) fn rearm(&mut self, _: &Registry, _: Token) {}

    /// Stops watching, for good (the listener is about to close).
    pub(crate) fn forget(&mut self, registry: &Registry) {
        if let Some(fd) = self.0.take() {
            let _ = SourceFd(&fd).deregister(registry);
        }
    }
}

/// Makes `listener` non-blocking, and on Linux sets `TCP_NODELAY` once for
/// every connection it accepts (they inherit it), saving a system call per
/// connection, and defers accepts until the client has sent something (see
/// [`defer_accept`]). Elsewhere, and on Linux built with
/// `--cfg httpool_portable` (macOS's paths, tested on Linux CI),
/// `TCP_NODELAY` is set on each accepted socket and accepts are not
/// deferred.
pub(crate) fn set_up_tcp_listener(listener: &std::net::TcpListener) -> io::Result<ListenerSetup> {
    listener.set_nonblocking(true)?;
    no_sigpipe(listener)?;
    #[cfg(all(target_os = "linux", not(httpool_portable)))]
    {
        rustix::net::sockopt::set_tcp_nodelay(listener, true)?;
        Ok(ListenerSetup { deferred: defer_accept(listener).is_ok(), nodelay_inherited: true })
    }
    #[cfg(not(all(target_os = "linux", not(httpool_portable))))]
    Ok(ListenerSetup { deferred: false, nodelay_inherited: false })
}

/// Sets how many connections the kernel completes and holds for accepting
/// ([`Server::listen_backlog`](crate::Server::listen_backlog)): listen(2)
/// on a socket that already listens changes its backlog. The kernel caps
/// it (Linux: `net.core.somaxconn`). Linux and macOS (where rustix is at
/// hand); elsewhere the listener keeps its backlog.
#[cfg(any(target_os = "linux", target_vendor = "apple"))]
pub(crate) fn set_backlog(listener: &impl AsFd, backlog: u32) -> io::Result<()> {
    Ok(rustix::net::listen(listener, i32::try_from(backlog).unwrap_or(i32::MAX))?)
}

#[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
pub(crate) fn set_backlog(_: &impl AsFd, _: u32) -> io::Result<()> {
    Ok(())
}

/// Copies bytes waiting in a connection's socket (a Unix domain one: std
/// peeks TCP only on stable Rust) without taking them; `WouldBlock` when
/// none wait. Linux and macOS (where rustix is at hand); elsewhere it
/// reports none.
#[cfg(any(target_os = "linux", target_vendor = "apple"))]
pub(crate) fn peek(socket: &impl AsFd, buf: &mut [u8]) -> io::Result<usize> {
    let flags = rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT;
    Ok(rustix::net::recv(socket, buf, flags)?.0)
}

#[cfg(not(any(target_os = "linux", target_vendor = "apple")))]
pub(crate) fn peek(_: &impl AsFd, _: &mut [u8]) -> io::Result<usize> {
    Ok(0)
}

/// Makes a Unix domain listener non-blocking, and on Apple systems never
/// raising `SIGPIPE` (see [`no_sigpipe`]).
pub(crate) fn set_up_unix_listener(listener: &std::os::unix::net::UnixListener) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    no_sigpipe(listener)
}

/// Sets `SO_NOSIGPIPE` on Apple systems, where a write to a connection the
/// peer has reset otherwise raises `SIGPIPE` (Linux: std sends with
/// `MSG_NOSIGNAL`), and the default action of that signal ends the process.
/// Rust's `main` ignores it, but a host process (a C program embedding a
/// Rust library, a listener handed over by launchd) may not. Sockets std
/// creates have it set already; one made elsewhere may not. Accepted
/// sockets inherit it from the listener (XNU's `sonewconn` copies it).
#[cfg(target_vendor = "apple")]
fn no_sigpipe(listener: &impl AsFd) -> io::Result<()> {
    Ok(rustix::net::sockopt::set_socket_nosigpipe(listener, true)?)
}

#[cfg(not(target_vendor = "apple"))]
fn no_sigpipe(_: &impl AsFd) -> io::Result<()> {
    Ok(())
}

/// How long the kernel holds a silent new connection back: after this it
/// hands it over anyway, and the head deadline applies as usual.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
const DEFER_ACCEPT_SECS: libc::c_int = 1;

/// Sets `TCP_DEFER_ACCEPT` (tcp(7)): the kernel completes the handshake but
/// queues the connection for `accept` only when its first bytes arrive (or
/// [`DEFER_ACCEPT_SECS`] pass). A new connection then needs no readiness
/// registration and no wake-up before its first read, which measured 22.7
/// against 30.1 µs of server CPU per connection without keep-alive
/// (`wrk -t2 -c64`, 2 cores) and 1.17× the requests per second. A
/// connection that never sends costs no slot, no descriptor and no timer
/// until the kernel lets it through.
///
/// Neither std (unstable `tcp_deferaccept`) nor rustix wraps this option,
/// hence `unsafe` (one of the crate's few; see the guide's
/// Security section).
#[cfg(all(target_os = "linux", not(httpool_portable)))]
#[allow(unsafe_code)]
fn defer_accept(listener: &std::net::TcpListener) -> io::Result<()> {
    let secs = DEFER_ACCEPT_SECS;
    // SAFETY: setsockopt(2) reads exactly `optlen` bytes from `optval`,
    // which points at `secs`, a live `c_int` on this stack frame of that
    // size; the descriptor is the listener's own, open while it is borrowed.
    // The call writes no memory of ours.
    let rc = unsafe {
        libc::setsockopt(
            listener.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&raw const secs).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Sends up to `*left` bytes of `file` from its current position with
/// `sendfile(2)` until the socket is full, counting down `left`: `Some`
/// (true once all are sent) on Linux, `None` where the caller must copy
/// (elsewhere, and under `--cfg httpool_portable`, which takes macOS's
/// path).
#[cfg(all(target_os = "linux", not(httpool_portable)))]
pub(crate) fn send_file(sock: &TcpConn, file: &mut File, left: &mut u64) -> Option<io::Result<bool>> {
    use std::io::{Seek, SeekFrom};
    let mut send = || {
        let mut offset = file.stream_position()?;
        let sent = loop {
            if *left == 0 {
                break true;
            }
            let count = usize::try_from(*left).unwrap_or(usize::MAX).min(1 << 30);
            match rustix::fs::sendfile(sock, &*file, Some(&mut offset), count) {
                Ok(0) => {
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file shorter than the response length"));
                }
                Ok(n) => *left -= n as u64,
                Err(rustix::io::Errno::AGAIN) => break false,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        };
        // `sendfile` with an offset leaves the file's position alone.
        if !sent {
            file.seek(SeekFrom::Start(offset))?;
        }
        Ok(sent)
    };
    Some(send())
}

#[cfg(not(all(target_os = "linux", not(httpool_portable))))]
pub(crate) fn send_file(_: &TcpConn, _: &mut File, _: &mut u64) -> Option<io::Result<bool>> {
    None
}

/// True when a path segment names another file than its plain reading
/// says: never on Unix.
#[cfg(feature = "fs")]
pub(crate) fn names_another_file(_: &str) -> bool {
    false
}

#[cfg(feature = "fs")]
/// Opens a file to serve, without blocking on a FIFO swapped in after the
/// check (`O_NONBLOCK` does nothing to a regular file).
pub(crate) fn open_file(path: &std::path::Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)
}

#[cfg(feature = "fs")]
/// Which file, in which version: device, inode, and modification time to
/// the nanosecond (the length is compared besides); and the status-change
/// time, which a `chmod` or `chown` moves: a file made unreadable (what a
/// fresh lookup answers `403`) is not one to go on serving from memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileStamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

#[cfg(feature = "fs")]
impl FileStamp {
    pub(crate) fn of(meta: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    #[cfg(test)]
    pub(crate) fn fake(n: u64) -> FileStamp {
        FileStamp { dev: n, ino: n, mtime: (n as i64, 0), ctime: (n as i64, 0) }
    }
}

/// Once the last extra thread retires, glibc is asked to give the memory
/// the extra threads freed back to the system: it keeps freed memory in
/// per-thread arenas otherwise (`testolope` 12 s after 256 blocking
/// connections went away: resident 7.3 MiB without this, 4.2–5.3 MiB with
/// it; 2.3 MiB before the load; see also [`trim_own_arena`] and
/// [`flush_stack_cache`]). Walks glibc's arenas only (a program with
/// another global allocator gives that nothing back this way, and loses
/// nothing).
///
/// Neither std nor rustix wraps malloc_trim(3), hence `unsafe`. Not under
/// `--cfg httpool_portable`, which takes macOS's path (no such call).
#[cfg(all(target_os = "linux", target_env = "gnu", not(httpool_portable)))]
#[allow(unsafe_code)]
pub(crate) fn give_back_free_memory() {
    // SAFETY: malloc_trim takes no pointer and touches only memory glibc's
    // allocator owns and has marked free, under each arena's lock; it may be
    // called from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", not(httpool_portable))))]
pub(crate) fn give_back_free_memory() {}

/// A retiring thread's last allocation. glibc shrinks a thread arena's
/// top only when a free of 64 KiB or more merges into it (`heap_trim`);
/// `malloc_trim` never does, and merges small freed chunks into the top
/// before it gives back free pages, so an arena whose last frees were small
/// kept its whole top resident (after 256 blocking connections, 4 of 15
/// arenas with an untrimmed top of 0.9 MiB, 230–280 KiB resident each). A
/// block that size, freed at once, has the calling thread's arena merge its
/// small freed chunks and give back its top past 128 KiB (`testolope`
/// 13 s after 256 blocking connections: 15 arenas 0.6 MiB resident, 1.5–2.4
/// MiB without). Safe code: a global allocator other than glibc's just
/// allocates and frees a block.
#[cfg(all(target_os = "linux", target_env = "gnu", not(httpool_portable)))]
pub(crate) fn trim_own_arena() {
    drop(std::hint::black_box(Vec::<u8>::with_capacity(64 * 1024)));
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", not(httpool_portable))))]
pub(crate) fn trim_own_arena() {}

/// Empties glibc's cache of the stacks of finished threads: it keeps up to
/// 40 MiB of them (19 worker stacks of 2 MiB, each with 20 KiB still
/// resident: 0.4 MiB) for the next threads, and frees the oldest only when
/// a stack joining it takes it past that size. A thread whose stack alone
/// is past it, started and joined, does that: every cached stack is
/// unmapped, its own with them. The cache is the process's, so this also
/// drops stacks cached for the host's threads: they are mapped afresh when
/// needed, as after any other eviction. (Smaller worker stacks would make
/// it worse: 256 KiB ones fill the cache with some 150 stacks, 6.7 MiB
/// resident 13 s after the burst above.)
#[cfg(all(target_os = "linux", target_env = "gnu", not(httpool_portable)))]
pub(crate) fn flush_stack_cache() {
    const PAST_THE_CACHE: usize = 64 * 1024 * 1024;
    let flusher = std::thread::Builder::new().name("httpool-flush".into()).stack_size(PAST_THE_CACHE);
    if let Ok(thread) = flusher.spawn(|| {}) {
        let _ = thread.join();
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu", not(httpool_portable))))]
pub(crate) fn flush_stack_cache() {}

/// The calling thread; `None` where its state cannot be read (everywhere
/// but Linux, and under `--cfg httpool_portable`).
#[cfg(all(target_os = "linux", not(httpool_portable)))]
pub(crate) fn current_thread() -> Option<ThreadRef> {
    // "/proc/thread-self" links to "PID/task/TID".
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok().and_then(ThreadRef::from_raw)
}

#[cfg(not(all(target_os = "linux", not(httpool_portable))))]
pub(crate) fn current_thread() -> Option<ThreadRef> {
    None
}

/// The calling thread's sleeps so far (voluntary context switches: a
/// blocking call, a lock, a sleep) and the CPU time it has used, from
/// getrusage(2); `None` where this is not read. A worker that let its seat
/// go before a handler expected to block tells from them whether the call
/// blocked, where nobody else looks: it slept, and ran for less than half
/// the call. (A handler that computes, and waits a moment for a lock, ran
/// for most of its call.)
///
/// Neither std nor rustix reads a thread's usage, hence `unsafe`.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
#[allow(unsafe_code)]
pub(crate) fn sleeps_and_cpu() -> Option<(u64, std::time::Duration)> {
    // SAFETY: `rusage` holds only integers and `timeval`s, for which all
    // zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage(2) writes one `rusage` through the pointer, which
    // points to `usage`, alive on this frame for the whole call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &raw mut usage) };
    if rc != 0 {
        return None;
    }
    let time = |t: libc::timeval| {
        std::time::Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + std::time::Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    Some((u64::try_from(usage.ru_nvcsw).unwrap_or(0), time(usage.ru_utime) + time(usage.ru_stime)))
}

#[cfg(not(all(target_os = "linux", not(httpool_portable))))]
pub(crate) fn sleeps_and_cpu() -> Option<(u64, std::time::Duration)> {
    None
}

/// Whether `thread` is running or runnable (`R`: on a CPU, or preempted
/// and waiting for one) rather than asleep (blocked in a system call, a
/// lock, a sleep); `None` when that cannot be told. Read from
/// `/proc/self/task/TID/stat`, without allocating: the monitor asks this of
/// a seat's worker only when the seat looks stuck.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
pub(crate) fn wants_cpu(thread: ThreadRef) -> Option<bool> {
    use std::io::{Read, Write};
    use std::os::unix::ffi::OsStrExt;
    let mut path = [0u8; 48];
    let len = {
        let mut at = &mut path[..];
        write!(at, "/proc/self/task/{}/stat", thread.raw()).ok()?;
        48 - at.len()
    };
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(&path[..len]));
    let mut stat = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut stat).ok()?;
    // "TID (comm) S ...": the name may hold spaces and parentheses, the
    // state follows the last ')'.
    let stat = &stat[..n];
    let close = stat.iter().rposition(|&b| b == b')')?;
    stat.get(close + 2).map(|&state| state == b'R')
}

#[cfg(not(all(target_os = "linux", not(httpool_portable))))]
pub(crate) fn wants_cpu(_: ThreadRef) -> Option<bool> {
    None
}

/// Puts the calling thread under `SCHED_BATCH`
/// ([`Server::batch_scheduling`](crate::Server::batch_scheduling)).
///
/// Neither std nor rustix wraps sched_setscheduler(2), hence `unsafe`; what
/// it buys is measured in BENCHMARKS.md. Not under
/// `--cfg httpool_portable`, which takes macOS's path (no policy change).
#[cfg(all(target_os = "linux", not(httpool_portable)))]
#[allow(unsafe_code)]
pub(crate) fn schedule_as_batch() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler(2) only reads the one `sched_param` behind
    // the pointer, which points at `param`, alive on this frame for the
    // whole call; pid 0 names the calling thread. It writes no memory of
    // ours.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &raw const param) };
    if rc != 0 {
        warn!("running the worker under SCHED_BATCH failed: {}", io::Error::last_os_error());
    }
}

#[cfg(not(all(target_os = "linux", not(httpool_portable))))]
pub(crate) fn schedule_as_batch() {}

/// The CPUs the calling thread may run on, in order
/// ([`Server::pin_workers`](crate::Server::pin_workers)); empty when they
/// cannot be read.
///
/// Neither std nor rustix reads the affinity mask, hence `unsafe`.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
#[allow(unsafe_code)]
pub(crate) fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `cpu_set_t` is a plain bit array, for which all zeroes is a
    // valid (empty) value.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: sched_getaffinity(2) writes at most the size given, which is
    // the size of `set`, into `set`, alive on this frame for the whole
    // call; pid 0 names the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw mut set) };
    if rc != 0 {
        warn!("reading the CPUs the process may use failed: {}", io::Error::last_os_error());
        return Vec::new();
    }
    // SAFETY: CPU_ISSET only reads the bit array behind the reference, and
    // only for indices below CPU_SETSIZE, which is its size in bits.
    (0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) }).collect()
}

#[cfg(not(all(target_os = "linux", not(httpool_portable))))]
pub(crate) fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Runs the calling thread on `cpus` only
/// ([`Server::pin_workers`](crate::Server::pin_workers)): one CPU to pin
/// it, all those allowed to let it go. A failure (a CPU went offline, say)
/// is logged; the thread then runs where it may.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
#[allow(unsafe_code)]
pub(crate) fn run_current_thread_on(cpus: &[usize]) {
    // SAFETY: all zeroes is a valid, empty `cpu_set_t` (a plain bit array).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus.iter().filter(|&&cpu| cpu < libc::CPU_SETSIZE as usize) {
        // SAFETY: CPU_SET writes one bit of the array behind the reference,
        // at an index below CPU_SETSIZE, its size in bits.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: sched_setaffinity(2) reads the size given, the size of `set`,
    // from `set`, alive on this frame for the whole call; pid 0 names the
    // calling thread. It writes no memory of ours.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &raw const set) };
    if rc != 0 {
        warn!("moving a thread to CPUs {cpus:?} failed: {}", io::Error::last_os_error());
    }
}

#[cfg(not(all(target_os = "linux", not(httpool_portable))))]
pub(crate) fn run_current_thread_on(_: &[usize]) {}

/// What the process does with a signal when it comes, as it stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Disposition {
    /// The system's action (for SIGINT and SIGTERM: the process ends).
    Default,
    Ignored,
    /// A handler of the program's (or of a library it uses).
    Handled,
}

/// The disposition of `signal`, read without changing it: what the process
/// should go back to once no server watches the signal
/// ([`crate::signals`]).
///
/// Neither std, rustix nor signal-hook reads a signal's disposition
/// without setting it, hence `unsafe`.
#[allow(unsafe_code)]
pub(crate) fn disposition(signal: i32) -> io::Result<Disposition> {
    let mut current = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: with a null new action, sigaction(2) changes nothing and only
    // writes the current action into the one `sigaction` behind the second
    // pointer: `current`, alive on this frame for the whole call. Zeroed, it
    // is already a valid value of that plain C struct, so reading it is
    // sound whether or not the call wrote it.
    let (rc, current) = unsafe {
        let rc = libc::sigaction(signal, std::ptr::null(), current.as_mut_ptr());
        (rc, current.assume_init())
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(match current.sa_sigaction {
        libc::SIG_DFL => Disposition::Default,
        libc::SIG_IGN => Disposition::Ignored,
        _ => Disposition::Handled,
    })
}

#[cfg(all(test, target_os = "linux", not(httpool_portable)))]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, mpsc};

    use super::{coarse_secs, current_thread, sleeps_and_cpu, wants_cpu};
    use crate::sys::secs_since_epoch;

    /// The coarse clock is the fine one as of the kernel's last tick: never
    /// ahead of it, and behind by a tick at most (1–10 ms; a second allowed
    /// for a descheduled test thread).
    #[test]
    fn the_coarse_clock_trails_the_fine_one_by_a_tick() {
        for _ in 0..1000 {
            let before = secs_since_epoch(std::time::SystemTime::now());
            let coarse = coarse_secs();
            let after = secs_since_epoch(std::time::SystemTime::now());
            assert!(coarse <= after, "{coarse} ahead of {after}");
            assert!(before <= coarse + 1, "{coarse} behind {before}");
        }
    }

    /// A thread that spins is running or waiting for a CPU, always; one
    /// blocked on a channel is asleep once it has got there; each thread has
    /// its own id.
    #[test]
    fn a_thread_that_spins_wants_a_cpu_and_one_that_waits_does_not() {
        let me = current_thread().expect("this thread's id");
        assert_eq!(wants_cpu(me), Some(true), "this thread is running");
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let spinner = {
            let (stop, tx) = (stop.clone(), tx.clone());
            std::thread::spawn(move || {
                tx.send(current_thread()).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        let spinning = rx.recv().unwrap().expect("the spinner's id");
        assert_ne!(spinning, me);
        for _ in 0..100 {
            assert_eq!(wants_cpu(spinning), Some(true));
        }
        stop.store(true, Ordering::Relaxed);
        spinner.join().unwrap();

        let (wake, asleep) = mpsc::channel::<()>();
        let sleeper = std::thread::spawn(move || {
            tx.send(current_thread()).unwrap();
            asleep.recv().unwrap();
        });
        let sleeping = rx.recv().unwrap().expect("the sleeper's id");
        // It sends its id before it blocks: it is asleep soon after.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while wants_cpu(sleeping) != Some(false) {
            assert!(std::time::Instant::now() < deadline, "a thread blocked on a channel never showed asleep");
            std::thread::yield_now();
        }
        wake.send(()).unwrap();
        sleeper.join().unwrap();
        // A thread that is gone has no state (its entry may outlive the
        // join for a moment).
        while wants_cpu(sleeping).is_some() {
            assert!(std::time::Instant::now() < deadline, "a thread that ended still has a state");
            std::thread::yield_now();
        }
    }

    /// A thread's sleeps count up when it waits (here the wait is the
    /// point), and its CPU time when it computes.
    #[test]
    fn a_thread_counts_its_sleeps_and_its_cpu_time() {
        let (sleeps, cpu) = sleeps_and_cpu().expect("the thread's usage");
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (after, _) = sleeps_and_cpu().unwrap();
        assert!(after > sleeps, "{sleeps} then {after}");
        let until = std::time::Instant::now() + std::time::Duration::from_millis(20);
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
        let (_, used) = sleeps_and_cpu().unwrap();
        assert!(used > cpu, "{cpu:?} then {used:?}");
    }
}
