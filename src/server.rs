//! The builder, and the handle of a running server.

use std::io;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
#[cfg(unix)]
use std::os::unix::net::UnixListener;
#[cfg(unix)]
use std::path::Path;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::config::{Config, DEFAULT_LISTEN_BACKLOG, Overload};
use crate::handler::{Handler, IntoResponse};
use crate::monitor::Monitor;
use crate::net::Listener;
#[cfg(unix)]
use crate::net::SocketFile;
use crate::pool::{Pool, Workers};
use crate::request::Request;
use crate::shared::Shared;
use crate::signals::StopSignals;
use crate::stats::Stats;
use crate::sys;

/// More threads than any process can have: Linux's bound on thread ids
/// (`PID_MAX_LIMIT` on 64-bit targets; other systems allow fewer). A core
/// worker count past it fails [`Server::spawn`] at once rather than after
/// starting threads until the system refuses.
const MAX_THREADS: usize = 1 << 22;

/// A server, configured and bound, not yet running.
///
/// ```no_run
/// use httpool::{Response, Server};
///
/// fn main() -> std::io::Result<()> {
///     Server::bind("127.0.0.1:8080")?
///         .workers(8)
///         .serve(|_req| Response::text("hello\n"))
/// }
/// ```
#[derive(Debug)]
pub struct Server {
    listener: Bound,
    config: Config,
    /// [`Server::stop_on_signals`]; `None`: on for `serve`, off for `spawn`.
    stop_on_signals: Option<bool>,
}

/// A listening socket before the server runs.
#[derive(Debug)]
enum Bound {
    Tcp(TcpListener),
    /// With its file when bound here (removed at the end, before the
    /// socket closes).
    #[cfg(unix)]
    Unix(Option<SocketFile>, UnixListener),
}

impl Server {
    /// Binds a listening socket.
    ///
    /// # Errors
    ///
    /// The error of resolving or binding `addr`.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<Server> {
        Ok(Server::from_listener(TcpListener::bind(addr)?).listen_backlog(DEFAULT_LISTEN_BACKLOG))
    }

    /// Serves on a TCP listener bound elsewhere (socket activation, a port
    /// chosen by the caller, `SO_REUSEPORT`).
    ///
    /// For several processes sharing one port on Linux, bind each listener
    /// with `SO_REUSEPORT` (e.g. with `socket2`) and pass it here: the
    /// kernel spreads new connections over them. macOS accepts the option
    /// but gives every new connection to one of the listeners, so there it
    /// does not spread load over processes. With systemd socket activation
    /// (Linux), wrap the inherited descriptor 3 in a `TcpListener` and pass
    /// it here; on macOS, launchd hands over the descriptors of a job's
    /// sockets through `launch_activate_socket(3)`.
    ///
    /// On macOS the listener is given `SO_NOSIGPIPE` (its connections
    /// inherit it), so a client's reset cannot raise `SIGPIPE` in a host
    /// process that does not ignore that signal.
    pub fn from_listener(listener: TcpListener) -> Server {
        Server { listener: Bound::Tcp(listener), config: Config::default(), stop_on_signals: None }
    }

    /// Binds a Unix domain socket at `path`.
    /// [`Request::peer_addr`](crate::Request::peer_addr) is `None` for its
    /// clients. Unix only.
    ///
    /// A socket file already at `path` that no process listens on (left by
    /// a server that did not stop cleanly) is replaced. The file is removed
    /// when the server stops (if it still is this socket's), or when the
    /// `Server` is dropped unstarted. On macOS and the BSDs a server whose
    /// backlog is full refuses connections as a dead one does, so it looks
    /// stale there too: start one server per path.
    ///
    /// # Errors
    ///
    /// The error of binding `path`: `AddrInUse` when a process listens on
    /// it, or it is not a socket.
    #[cfg(unix)]
    pub fn bind_unix(path: impl AsRef<Path>) -> io::Result<Server> {
        let (listener, file) = SocketFile::bind(path.as_ref())?;
        Ok(Server { listener: Bound::Unix(Some(file), listener), config: Config::default(), stop_on_signals: None })
    }

    /// Serves on a Unix domain socket listener bound elsewhere (on macOS
    /// given `SO_NOSIGPIPE`, as in [`from_listener`](Server::from_listener)).
    /// Its file is left where it is when the server stops. Unix only.
    #[cfg(unix)]
    pub fn from_unix_listener(listener: UnixListener) -> Server {
        Server { listener: Bound::Unix(None, listener), config: Config::default(), stop_on_signals: None }
    }

    /// The configuration the builder holds (for `TestServer::config_of`).
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The address the server listens on; the unspecified address `0.0.0.0:0`
    /// for a Unix domain socket.
    ///
    /// # Errors
    ///
    /// The error of `getsockname`.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.listener {
            Bound::Tcp(l) => l.local_addr(),
            #[cfg(unix)]
            Bound::Unix(..) => Ok(SocketAddr::from(([0, 0, 0, 0], 0))),
        }
    }

    /// Serves HTTPS with this rustls configuration (see
    /// [`tls::config_from_pem`](crate::tls::config_from_pem)). Connections are
    /// parked between requests like plain ones and keep their TLS session.
    /// Under [`Overload::Reject`] a TLS client is closed without a `503`:
    /// there is no session to send it in. TCP listeners only: a server
    /// bound to a Unix domain socket with TLS fails to start
    /// ([`io::ErrorKind::InvalidInput`]) rather than serve plaintext.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: std::sync::Arc<rustls::ServerConfig>) -> Server {
        self.config.tls = Some(config);
        self
    }

    /// Core worker threads, which start with the server and live as long
    /// as it; each runs one handler call at a time. While handlers block,
    /// more are started on demand, up to [`Server::max_workers`]. Default:
    /// one per CPU where workers are pinned ([`Server::pin_workers`], on by
    /// default on Linux), else [`default_workers`](crate::default_workers)
    /// (twice the cores, at least 4). At least 1; raises `max_workers` to
    /// match if it is lower. Setting it turns pinning off unless
    /// `pin_workers(true)` asks for it, which sets the count to the CPUs
    /// again.
    pub fn workers(mut self, n: usize) -> Server {
        self.config.workers = n.max(1);
        self.config.pin_workers.get_or_insert(false);
        self.config.max_workers = self.config.max_workers.max(self.config.workers);
        self
    }

    /// Worker threads at most, core and on-demand ones together. A handler
    /// call that blocks holds its thread; when a seat's worker is held and
    /// no thread is idle, another is started to take its place, so that
    /// other connections go on being served. With `n` threads all held by
    /// handlers, new requests wait for one ([`Server::queue_depth`], then
    /// [`Overload`]). Default: [`DEFAULT_MAX_WORKERS`](crate::DEFAULT_MAX_WORKERS).
    /// At least the core count ([`Server::workers`], which it lowers to
    /// match if it is higher) and at least 1.
    pub fn max_workers(mut self, n: usize) -> Server {
        self.config.max_workers = n.max(1);
        self.config.workers = self.config.workers.min(self.config.max_workers);
        self
    }

    /// How long a worker started on demand waits idle before it retires
    /// (the core ones never do). Default:
    /// [`DEFAULT_WORKER_IDLE_TIMEOUT`](crate::DEFAULT_WORKER_IDLE_TIMEOUT).
    /// `Duration::MAX` keeps them.
    pub fn worker_idle_timeout(mut self, d: Duration) -> Server {
        self.config.worker_idle_timeout = d;
        self
    }

    /// Stack size of each worker thread, on which handlers run. Default:
    /// [`DEFAULT_WORKER_STACK_SIZE`](crate::DEFAULT_WORKER_STACK_SIZE); at
    /// least [`MIN_WORKER_STACK_SIZE`](crate::MIN_WORKER_STACK_SIZE) (a
    /// smaller size is raised to it: the server's own code overflowed a
    /// few tens of KiB, and a stack overflow aborts the process). A size
    /// the system cannot give fails [`Server::spawn`] (for the core
    /// threads), or leaves the server with the threads it has (for the
    /// on-demand ones, logged).
    pub fn worker_stack_size(mut self, bytes: usize) -> Server {
        self.config.worker_stack_size = bytes.max(crate::config::MIN_WORKER_STACK_SIZE);
        self
    }

    /// Ready connections that may wait for a free worker (they wait only
    /// while every worker is busy). When that many wait, the server stops
    /// accepting (clients wait in the kernel's backlog), or answers `503`
    /// with [`Overload::Reject`]. Default: [`DEFAULT_QUEUE_DEPTH`](crate::DEFAULT_QUEUE_DEPTH).
    pub fn queue_depth(mut self, n: usize) -> Server {
        self.config.queue_depth = n.max(1);
        self
    }

    /// Open connections at most. When a new client finds this many open,
    /// an idle keep-alive connection is closed to make room for it, as
    /// nginx does: one idle for a while rather than one just answered (its
    /// write side first; a request found in its socket is served instead).
    /// The closed connection lingers, reading and dropping what its client
    /// still sends for up to 2 s, so that a request sent at that moment
    /// meets the end of stream rather than a reset (see the
    /// [guide](crate::guide)'s Clients and retries); up to 64 lingering at
    /// once are not counted here (their descriptors are open beyond it),
    /// and the new client is let in at once. Past 64, the new client waits
    /// for such a close, up to 2 s, under [`Overload::Reject`] too. With none
    /// idle, the server stops accepting until one closes (or answers `503`,
    /// see [`Server::overload`]). A connection in the middle of a request,
    /// or one that has not sent its first, is never closed for room.
    /// [`Stats::reclaimed`](crate::Stats::reclaimed) counts those closed.
    /// Default: [`DEFAULT_MAX_CONNECTIONS`](crate::DEFAULT_MAX_CONNECTIONS).
    pub fn max_connections(mut self, n: usize) -> Server {
        // Connections lingering after a close for room take slots beyond it.
        self.config.max_connections = n.clamp(1, crate::shared::slots::MAX_SLOTS - crate::shared::ROOM_LINGERS);
        self
    }

    /// On Linux, run the worker threads under the `SCHED_BATCH` policy
    /// (sched(7)): same CPU share as normal threads, but a worker that wakes
    /// for a request does not preempt the thread running on its core; it
    /// runs when that thread blocks or its time slice ends. Where clients
    /// and server share the cores, both then serve more per wake-up: in
    /// this project's loopback benchmarks it raised keep-alive throughput
    /// 6–12% and cut CPU per new connection by a third (BENCHMARKS.md).
    /// The cost is that a worker may wait for a time slice
    /// (a few ms) when every core is busy with other work. On macOS and
    /// other systems (no such policy) it does nothing. Default: on.
    pub fn batch_scheduling(mut self, on: bool) -> Server {
        self.config.batch_scheduling = on;
        self
    }

    /// On Linux, run one core worker per CPU the server may run on (those
    /// of the thread that starts it), and keep every worker thread on the
    /// CPU of the seat it serves (sched_setaffinity(2)): the core count
    /// ([`Server::workers`]) is then that number of CPUs, and
    /// [`Server::max_workers`] at least that. A thread started on demand,
    /// for a handler that blocks, runs on the CPU of the seat it takes over.
    ///
    /// Where other busy threads share the machine's cores (a load generator,
    /// a database), this keeps the tail short at saturation: with one
    /// worker on every core, the scheduler spreads the other threads
    /// instead of stacking two on one core, where each waits out the
    /// other's time slice (BENCHMARKS.md).
    ///
    /// A worker that lets its seat go before a handler expected to block or
    /// to compute for long (one that did on that connection before) lets go
    /// of the seat's CPU too, until it polls a seat again: the handler
    /// wakes, or computes, on whichever CPU is free, not behind the thread
    /// that took the seat over. A connection's first such call keeps its
    /// worker's CPU: the monitor finds it asleep there (or, after some
    /// 20 ms, computing) and the thread it starts for the seat runs on the
    /// same CPU. Where most connections make one call that computes for
    /// long (no keep-alive), leave it off.
    ///
    /// It does nothing when the process is given less CPU time than the
    /// CPUs it may run on (a container's CPU quota): every such process
    /// would pin its workers to the same first few CPUs. Nor on macOS,
    /// Windows and other systems. Default: on where the server may run on
    /// two CPUs or more, unless [`Server::workers`] was set or
    /// [`Server::max_workers`] is below the CPUs.
    pub fn pin_workers(mut self, on: bool) -> Server {
        self.config.pin_workers = Some(on);
        self
    }

    /// Connections the kernel completes and holds until the server accepts
    /// them (listen(2)'s backlog), set on the listener as the server starts.
    /// Past it, a new client's handshake is dropped and retried a second
    /// later (or its first request resent 200 ms later): a burst of
    /// connections larger than the backlog, as when a thousand clients
    /// connect at once, shows in the tail. The kernel caps it (Linux:
    /// `net.core.somaxconn`, 4096 by default).
    ///
    /// Default: [`DEFAULT_LISTEN_BACKLOG`] for a listener [`Server::bind`]
    /// binds (std's `TcpListener::bind` gives 128). A listener given to
    /// [`Server::from_listener`] (systemd's `Backlog=`, say), and one
    /// [`Server::bind_unix`] binds (std asks for the system's maximum), keep
    /// theirs unless this is called. Linux and macOS only: elsewhere a
    /// listener keeps the backlog it was bound with.
    pub fn listen_backlog(mut self, n: u32) -> Server {
        self.config.listen_backlog = Some(n);
        self
    }

    /// The proxies whose forwarding headers are believed: addresses
    /// (`"127.0.0.1"`, `"::1"`), ranges in CIDR notation (`"10.0.0.0/8"`,
    /// `"fd00::/8"`), and `"unix"` for peers on a Unix domain socket. A
    /// request from one of them has [`Request::client_addr`](crate::Request::client_addr),
    /// [`client_scheme`](crate::Request::client_scheme) and
    /// [`client_host`](crate::Request::client_host) from its `Forwarded`
    /// or `X-Forwarded-*` headers, and its `X-Request-Id` taken by
    /// [`request_id`](crate::request_id); from any other peer those
    /// headers are ignored. Default: none (every request's client is its
    /// peer). See [`proxy`](crate::proxy) for how the headers are read.
    ///
    /// # Panics
    ///
    /// On an entry that is none of those, naming it.
    pub fn trusted_proxies<S: AsRef<str>>(mut self, proxies: impl IntoIterator<Item = S>) -> Server {
        self.config.set_trusted_proxies(proxies);
        self
    }

    /// What happens to new connections while the server is saturated (queue
    /// full or `max_connections` open). Default: [`Overload::Wait`].
    pub fn overload(mut self, policy: Overload) -> Server {
        self.config.overload = policy;
        self
    }

    /// How long an idle keep-alive connection stays open. Default:
    /// [`DEFAULT_IDLE_TIMEOUT`](crate::DEFAULT_IDLE_TIMEOUT).
    pub fn idle_timeout(mut self, d: Duration) -> Server {
        self.config.idle_timeout = d;
        self
    }

    /// How long a client may take to send a request head; then `408` and
    /// close. Default: [`DEFAULT_HEAD_TIMEOUT`](crate::DEFAULT_HEAD_TIMEOUT).
    pub fn head_timeout(mut self, d: Duration) -> Server {
        self.config.head_timeout = d;
        self
    }

    /// How long one read of a request body waits for the client; then the
    /// read fails with `TimedOut`, the client gets `408` and the connection
    /// closes. Default:
    /// [`DEFAULT_BODY_READ_TIMEOUT`](crate::DEFAULT_BODY_READ_TIMEOUT).
    pub fn body_read_timeout(mut self, d: Duration) -> Server {
        self.config.body_read_timeout = d;
        self
    }

    /// How long a whole request body may take to arrive, from the first read
    /// that waits; then reads fail with `TimedOut`, the client gets `408` and
    /// the connection closes. Default:
    /// [`DEFAULT_BODY_TIMEOUT`](crate::DEFAULT_BODY_TIMEOUT).
    pub fn body_timeout(mut self, d: Duration) -> Server {
        self.config.body_timeout = d;
        self
    }

    /// How long one write waits for the client to take bytes; then the
    /// connection closes. Default:
    /// [`DEFAULT_WRITE_TIMEOUT`](crate::DEFAULT_WRITE_TIMEOUT).
    pub fn write_timeout(mut self, d: Duration) -> Server {
        self.config.write_timeout = d;
        self
    }

    /// The least rate, in bytes per second, at which a client must take a
    /// response: while a worker waits on it (a streamed body, answers past
    /// [`Server::max_unsent_bytes`], at shutdown), the worker's waits for the
    /// client in one turn of the connection add up, and may total
    /// `write_timeout` plus one second for every `bytes_per_second` bytes
    /// the client has taken; past that the connection closes. An answer
    /// held while the connection is parked (waiting for room, no worker
    /// on it) is held to the same sum over all the time since it was first
    /// held. So a client
    /// taking a byte just often enough to beat `write_timeout` cannot hold a
    /// worker for long. Only time spent waiting for the client counts: a
    /// stream that is slow to produce its body is not cut. `0` turns the
    /// rule off (each wait is then bounded by `write_timeout` alone);
    /// `u64::MAX` makes `write_timeout` a bound on all the waits of a turn.
    /// Connections handed to an upgrade's closure are not paced (their
    /// timeouts are the closure's). Default:
    /// [`DEFAULT_WRITE_MIN_RATE`](crate::DEFAULT_WRITE_MIN_RATE).
    pub fn write_min_rate(mut self, bytes_per_second: u64) -> Server {
        self.config.write_min_rate = bytes_per_second;
        self
    }

    /// Least rate, in bytes per second, at which a client must send a
    /// request body while a worker waits on it (as Apache's
    /// `mod_reqtimeout` `MinRate`): the worker's waits for body bytes may
    /// total [`body_read_timeout`](Server::body_read_timeout) plus a second
    /// for every this many bytes received; past that the client gets `408`.
    /// So a client that sends a byte just often enough to beat the read
    /// timeout is cut in about that timeout, not after
    /// [`body_timeout`](Server::body_timeout). Only time spent waiting for
    /// the client counts, not the handler's own work between reads. `0`
    /// turns the rule off. Default:
    /// [`DEFAULT_BODY_MIN_RATE`](crate::DEFAULT_BODY_MIN_RATE).
    pub fn body_min_rate(mut self, bytes_per_second: u64) -> Server {
        self.config.body_min_rate = bytes_per_second;
        self
    }

    /// Most workers that may wait for request body bytes at once. A
    /// handler's body read that would wait while this many do fails at once
    /// (`ErrorKind::ResourceBusy`), and the client gets `503` and a close:
    /// clients trickling bodies cannot take the threads that other requests
    /// need. Default: half of [`max_workers`](Server::max_workers) (at
    /// least 1).
    pub fn max_body_waits(mut self, n: usize) -> Server {
        self.config.max_body_waits = Some(n.max(1));
        self
    }

    /// Most workers at once held by an answer that is written on the worker
    /// for as long as it lasts, these kinds together:
    ///
    /// - a [`Response::stream`](crate::Response::stream) body, its closure
    ///   run while the body is sent (a server-sent events loop may run for
    ///   hours);
    /// - a [`Response::reader`](crate::Response::reader) body, read while
    ///   it is sent: the worker waits on the reader, which may be a pipe, a
    ///   socket or a child process, and on a client slow to take its bytes;
    /// - an upgraded connection ([`Response::upgrade`](crate::Response::upgrade):
    ///   WebSocket and the like), until its closure returns.
    ///
    /// Bodies in memory and files ([`Response::file`](crate::Response::file),
    /// `ServeDir`'s) are not counted: a client slow to take
    /// one parks with the rest of it, holding no worker. Nor is an answer
    /// with no body to write (to a `HEAD`, a `204`, a `304`), whose closure
    /// or reader is never run.
    ///
    /// An answer of those kinds made while this many are being written is
    /// not sent: the client gets `503` with `Retry-After: 1` and
    /// `Connection: close` in its stead (instead of the `101` for an
    /// upgrade), the closure or reader is dropped unrun, and the refusal is
    /// logged as a warning and counted in [`Stats::rejected`](crate::Stats::rejected).
    /// So long streams cannot take the threads that other requests need:
    /// with the defaults, 256 streams at most, and the other 256 workers
    /// serve the rest of the site. [`Stats::streaming_workers`](crate::Stats::streaming_workers)
    /// counts the places taken. Default: half of
    /// [`max_workers`](Server::max_workers) (at least 1); raise both to
    /// hold more.
    pub fn max_streaming_workers(mut self, n: usize) -> Server {
        self.config.max_streaming_workers = Some(n.max(1));
        self
    }

    /// The same setting as [`max_streaming_workers`](Server::max_streaming_workers),
    /// named for one of the kinds of answer it bounds: upgraded connections
    /// share their bound with streamed bodies.
    pub fn max_upgrades(self, n: usize) -> Server {
        self.max_streaming_workers(n)
    }

    /// How long one read on an upgraded connection waits for the client
    /// before it fails (`TimedOut`), unless the closure sets its own
    /// ([`Upgraded::set_read_timeout`](crate::Upgraded::set_read_timeout));
    /// a closure that then returns closes the connection. Default:
    /// [`DEFAULT_UPGRADE_IDLE_TIMEOUT`](crate::DEFAULT_UPGRADE_IDLE_TIMEOUT);
    /// `Duration::MAX` waits without limit.
    pub fn upgrade_idle_timeout(mut self, d: Duration) -> Server {
        self.config.upgrade_idle_timeout = d;
        self
    }

    /// Whether SIGINT and SIGTERM (Ctrl-C, and the stop of a container or a
    /// service manager) stop the server gracefully, as
    /// [`ServerHandle::shutdown`] does: the listener closes, requests
    /// received are answered, then [`Server::serve`] returns. A second
    /// signal while stopping ends the process at once. On by default for
    /// [`Server::serve`] (the server is the program: stopping it is what
    /// the signal asks for), off for [`Server::spawn`] (the program runs the
    /// server beside other work and decides itself what a signal means).
    ///
    /// Handlers the program installed itself are kept and still run, and
    /// several servers may watch the signals; once the last one has
    /// stopped, each signal does what it did before the first watched it
    /// (ends the process, runs the program's handler, or nothing). A signal
    /// the process ignores when the first server starts watching (SIGINT
    /// in a shell's background job) is not watched. Turn it off when the
    /// program handles these signals itself and stops the server with a
    /// [`ShutdownSignal`]. On Windows the signals are the console's Ctrl-C
    /// and Ctrl-Break (see the [guide](crate::guide)'s Platforms).
    pub fn stop_on_signals(mut self, on: bool) -> Server {
        self.stop_on_signals = Some(on);
        self
    }

    /// How long [`ServerHandle::shutdown`] waits for in-flight requests;
    /// less the 2 s a lingering close may take after it, how long a
    /// connection goes on reading requests its client had already sent (a
    /// client that keeps sending is not served past it), a handler's read
    /// of a request body waits for it (then the client gets `408`), and a
    /// worker waits for a client to take an answer (one it has not taken
    /// by then is cut short; under a grace of less than 4 s, half the grace
    /// is left for that).
    /// Default: [`DEFAULT_SHUTDOWN_GRACE`](crate::DEFAULT_SHUTDOWN_GRACE).
    pub fn shutdown_grace(mut self, d: Duration) -> Server {
        self.config.shutdown_grace = d;
        self
    }

    /// Largest request head (request line and headers); larger gets `431`.
    /// Default: [`DEFAULT_MAX_HEAD_BYTES`](crate::DEFAULT_MAX_HEAD_BYTES).
    /// Each connection being served holds a buffer of this size plus 4 KiB.
    pub fn max_head_bytes(mut self, n: usize) -> Server {
        self.config.set_max_head_bytes(n);
        self
    }

    /// Most request headers; more gets `431`. Default:
    /// [`DEFAULT_MAX_HEADERS`](crate::DEFAULT_MAX_HEADERS), at most 256.
    pub fn max_headers(mut self, n: usize) -> Server {
        self.config.set_max_headers(n);
        self
    }

    /// Longest request target; longer gets `414`. Default:
    /// [`DEFAULT_MAX_URI_BYTES`](crate::DEFAULT_MAX_URI_BYTES).
    pub fn max_uri_bytes(mut self, n: usize) -> Server {
        self.config.set_max_uri_bytes(n);
        self
    }

    /// Largest request body; a larger `Content-Length` gets `413` before
    /// the handler runs, a chunked body that grows past it gets `413`.
    /// Default: [`DEFAULT_MAX_BODY_BYTES`](crate::DEFAULT_MAX_BODY_BYTES).
    pub fn max_body_bytes(mut self, n: u64) -> Server {
        self.config.limits.max_body_bytes = n;
        self
    }

    /// Accept any method token instead of answering `501 Not Implemented`
    /// to methods outside the IANA registry and the common extensions
    /// (`PURGE`, `M-SEARCH`, `NOTIFY`, `SUBSCRIBE`, `UNSUBSCRIBE`, `SOURCE`).
    /// Turn it on when handlers implement methods of their own; they then
    /// answer `501` themselves to what they do not implement (RFC 9110
    /// §9.1). Default: off.
    pub fn any_method(mut self, allow: bool) -> Server {
        self.config.limits.any_method = allow;
        self
    }

    /// Read the two non-HTTP request lines that share HTTP/1.0's syntax as
    /// HTTP/1.0 requests, as Node's parser (llhttp) does: Icecast's
    /// `SOURCE /mount ICE/1.0`, and an RTSP/1.0 method (RFC 2326 §6.1, and
    /// `GET`/`POST` as AirPlay sends them) with `RTSP/1.0`. The handler sees
    /// the method and [`Version::Http10`](crate::Version::Http10); the
    /// answer is an HTTP response. Off, they get `400` like any protocol name
    /// other than `HTTP`. Default: on.
    pub fn legacy_protocols(mut self, allow: bool) -> Server {
        self.config.limits.legacy_protocols = allow;
        self
    }

    /// Most unread body bytes discarded after a handler returns, to keep the
    /// connection; a longer remainder closes it instead. Default:
    /// [`DEFAULT_MAX_DRAIN_BYTES`](crate::DEFAULT_MAX_DRAIN_BYTES).
    pub fn max_drain_bytes(mut self, n: u64) -> Server {
        self.config.max_drain_bytes = n;
        self
    }

    /// Most body bytes of one request collected before its handler runs.
    /// A request whose body comes slowly waits parked, holding no worker,
    /// until its body is in (or this much of it, for a larger or chunked
    /// one: the handler then reads the rest as it comes), as the rest of a
    /// head does: the client has the head timeout plus a second for every
    /// [`body_min_rate`](Server::body_min_rate) bytes it sends, then gets
    /// `408`. Not for a request that asks for `100 Continue` (the client
    /// waits for the handler's first read). A handler that must see body
    /// bytes as they arrive (a request body streamed interactively, the
    /// client waiting for answers as it sends) needs `0`: then only a body
    /// with a length that fits in the read buffer with its head (about 20
    /// KiB) is collected, and a chunked one never. Default:
    /// [`DEFAULT_BODY_BUFFER_BYTES`](crate::DEFAULT_BODY_BUFFER_BYTES).
    pub fn body_buffer_bytes(mut self, n: usize) -> Server {
        self.config.body_buffer_bytes = n;
        self
    }

    /// Most bytes, server-wide, by which read buffers may grow past their
    /// usual size to collect bodies (see
    /// [`body_buffer_bytes`](Server::body_buffer_bytes)): a buffer about to
    /// grow takes `body_buffer_bytes` of it, and gives it back once it is
    /// its usual size again. With none left, a body is collected no further
    /// than the usual buffer and its handler reads the rest itself (bounded
    /// by [`max_body_waits`](Server::max_body_waits) and
    /// [`body_min_rate`](Server::body_min_rate)). Default:
    /// [`DEFAULT_MAX_BUFFERED_BODY_BYTES`](crate::DEFAULT_MAX_BUFFERED_BODY_BYTES).
    pub fn max_buffered_body_bytes(mut self, n: u64) -> Server {
        self.config.max_buffered_body_bytes = n;
        self
    }

    /// Most bytes, server-wide, held for requests not yet begun: the bytes
    /// a TLS handshake under way has read (rustls keeps a handshake message
    /// until it is whole, a ClientHello up to 64 KiB), and the buffer a
    /// parked connection keeps for an unfinished head (up to
    /// [`max_head_bytes`](Server::max_head_bytes) and 4 KiB). Each
    /// connection holds up to 4 KiB without a share; past that it counts
    /// all it holds, and gives its share back when the handshake ends, the
    /// head is served or the connection closes (see
    /// [`Stats::pending_head_bytes`](crate::Stats::pending_head_bytes)).
    /// With none left, a TLS handshake that needs more is closed before it
    /// reads it, after a `close_notify` alert (logged at debug), and a head
    /// that would park holding more is answered `503` with `Retry-After: 1`
    /// and `Connection: close`. Default:
    /// [`DEFAULT_MAX_PENDING_HEAD_BYTES`](crate::DEFAULT_MAX_PENDING_HEAD_BYTES).
    pub fn max_pending_head_bytes(mut self, n: u64) -> Server {
        self.config.max_pending_head_bytes = n;
        self
    }

    /// Most response bytes held, server-wide, for clients slow to take
    /// them: an answer a client does not take at once waits with its parked
    /// connection (holding no worker) while this allows; past it, the
    /// worker waits on the client as it writes, up to `write_timeout` per
    /// stall and paced by [`Server::write_min_rate`]. Bodies that live in a `&'static` slice count nothing. Default:
    /// [`DEFAULT_MAX_UNSENT_BYTES`](crate::DEFAULT_MAX_UNSENT_BYTES).
    pub fn max_unsent_bytes(mut self, n: u64) -> Server {
        self.config.max_unsent_bytes = n;
        self
    }

    /// Runs the server on this thread, answering every request with
    /// `handler`: a closure or a function taking `&mut Request` and
    /// returning a [`Response`](crate::Response) or a `Result` of one (see
    /// [`IntoResponse`]). A closure needs no type annotations.
    ///
    /// Returns once the server has stopped: SIGINT or SIGTERM stop it
    /// gracefully ([`Server::stop_on_signals`], on by default here).
    ///
    /// For a type implementing [`Handler`], or an `Arc` of one, use
    /// [`Server::serve_handler`].
    ///
    /// # Errors
    ///
    /// As [`Server::spawn`].
    pub fn serve<F, R>(self, handler: F) -> io::Result<()>
    where
        F: Fn(&mut Request<'_>) -> R + Send + Sync + 'static,
        R: IntoResponse,
    {
        self.serve_handler(handler)
    }

    /// Starts the server on its own threads, answering every request with
    /// `handler` (as [`Server::serve`]), and returns a handle to it.
    ///
    /// # Errors
    ///
    /// Creating a readiness set, a descriptor or a thread failed; every
    /// thread already started is stopped and joined first. A core worker
    /// count ([`Server::workers`]) above 4,194,304 (no system runs that
    /// many threads) fails with [`io::ErrorKind::InvalidInput`], and so does
    /// TLS ([`Server::tls`]) on a Unix domain socket.
    pub fn spawn<F, R>(self, handler: F) -> io::Result<ServerHandle>
    where
        F: Fn(&mut Request<'_>) -> R + Send + Sync + 'static,
        R: IntoResponse,
    {
        self.spawn_handler(handler)
    }

    /// [`Server::serve`] for a type implementing [`Handler`] (an
    /// application object, an `Arc<H>`, an `Arc<dyn Handler>`).
    ///
    /// # Errors
    ///
    /// As [`Server::spawn`].
    pub fn serve_handler<H: Handler>(self, handler: H) -> io::Result<()> {
        let on = self.stop_on_signals.unwrap_or(true);
        self.start(handler, on)?.join();
        Ok(())
    }

    /// [`Server::spawn`] for a type implementing [`Handler`].
    ///
    /// # Errors
    ///
    /// As [`Server::spawn`].
    pub fn spawn_handler<H: Handler>(self, handler: H) -> io::Result<ServerHandle> {
        let on = self.stop_on_signals.unwrap_or(false);
        self.start(handler, on)
    }

    /// Starts the server; with `signals`, SIGINT and SIGTERM stop it.
    fn start<H: Handler>(self, handler: H, signals: bool) -> io::Result<ServerHandle> {
        // TLS runs over TCP only: a Unix socket's clients would be served
        // plaintext, the configuration silently ignored.
        #[cfg(all(unix, feature = "tls"))]
        if self.config.tls.is_some() && matches!(self.listener, Bound::Unix(..)) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "TLS is not served on a Unix domain socket"));
        }
        let addr = self.local_addr()?;
        if let Some(backlog) = self.config.listen_backlog {
            let set = match &self.listener {
                Bound::Tcp(l) => sys::set_backlog(l, backlog),
                #[cfg(unix)]
                Bound::Unix(_, l) => sys::set_backlog(l, backlog),
            };
            if let Err(e) = set {
                warn!("setting the listen backlog to {backlog} failed: {e}");
            }
        }
        let listener = match self.listener {
            Bound::Tcp(l) => Listener::tcp(l)?,
            #[cfg(unix)]
            Bound::Unix(file, l) => Listener::unix(l, file)?,
        };
        let cores = thread::available_parallelism().map_or(1, |n| n.get());
        let mut config = self.config;
        let mut cpus = if config.pin_workers.unwrap_or(true) { sys::allowed_cpus() } else { Vec::new() };
        if cpus.len() > cores {
            // A CPU share below the CPUs allowed (a container's quota): the
            // first few CPUs would take the pinned workers of every such
            // process on the machine.
            debug!("workers not pinned: {cores} CPUs' worth of time on {} CPUs", cpus.len());
            cpus.clear();
        }
        if config.pin_workers.is_none() && (cpus.len() < 2 || config.max_workers < cpus.len()) {
            // By default, not where there is one CPU (nothing to spread),
            // nor where a bound on threads below the CPUs was set.
            cpus.clear();
        }
        if !cpus.is_empty() {
            config.workers = cpus.len();
            config.max_workers = config.max_workers.max(config.workers);
        }
        if config.workers > MAX_THREADS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} core workers: more threads than any system runs ({MAX_THREADS})", config.workers),
            ));
        }
        let seats = config.workers.min(cores);
        let shared = Shared::new(config, listener, seats)?.into_shared();
        let (pool, started) = Pool::start(&shared, handler, &cpus);
        let workers: Arc<dyn Workers> = pool;
        let monitor = Monitor::new(shared.clone(), workers.clone());
        let monitor = match started {
            Ok(()) => thread::Builder::new().name("httpool-monitor".into()).spawn(move || monitor.run()),
            Err(e) => Err(e),
        };
        let mut handle = ServerHandle { shared, addr, monitor: None, workers, signals: None };
        match monitor {
            Ok(monitor) => {
                let _ = handle.shared.monitor.set(monitor.thread().clone());
                handle.monitor = Some(monitor);
                if signals {
                    match StopSignals::watch(handle.shared.clone()) {
                        Ok(watch) => handle.signals = Some(watch),
                        Err(e) => {
                            handle.shutdown();
                            return Err(e);
                        }
                    }
                }
                Ok(handle)
            }
            Err(e) => {
                // Stop what started: with no monitor to sweep, the workers
                // are let go directly.
                handle.shared.stop();
                handle.shared.sweep();
                handle.join();
                Err(e)
            }
        }
    }
}

/// A running server.
///
/// Dropping the handle leaves the server running, watching signals if it
/// did; stop it with [`ServerHandle::shutdown`] (or a [`ShutdownSignal`]
/// taken before).
pub struct ServerHandle {
    shared: Arc<Shared>,
    addr: SocketAddr,
    monitor: Option<JoinHandle<()>>,
    workers: Arc<dyn Workers>,
    /// Watches SIGINT and SIGTERM until the server has stopped.
    signals: Option<StopSignals>,
}

impl ServerHandle {
    /// The address the server listens on (`0.0.0.0:0` for a Unix domain
    /// socket).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// A cloneable way to start shutdown from another thread (e.g. a signal
    /// handler thread) while this handle waits in [`ServerHandle::join`].
    pub fn signal(&self) -> ShutdownSignal {
        ShutdownSignal { shared: self.shared.clone() }
    }

    /// Live counters; see [`Stats`].
    pub fn stats(&self) -> Stats {
        self.shared.snapshot()
    }

    /// Stops the server gracefully and waits for it: the listener closes
    /// (new clients are refused), idle connections close, requests in
    /// flight finish (their responses say `Connection: close`), every
    /// thread is joined.
    ///
    /// Returns `true` when every thread ended within the grace period; a
    /// handler still running past it is left behind, detached. (Threads
    /// that retired earlier, idle, were let go when they finished their
    /// loop: their thread-local destructors — a handler's per-thread
    /// database connection, say — may still be running.)
    ///
    /// Called by a handler of this server, it starts the shutdown and
    /// returns `false` at once: the server cannot have stopped while one of
    /// its handlers runs, and that handler's answer can go out only once it
    /// returns. The answer is then sent in full, saying `Connection:
    /// close`, and the server stops as it would otherwise, on its own
    /// threads. A program that must know when the server has stopped (to
    /// exit, say) gives the handler a [`ShutdownSignal`] and waits in
    /// [`ServerHandle::join`] on another thread.
    pub fn shutdown(self) -> bool {
        self.signal().shutdown();
        self.join()
    }

    /// Waits until the server stops (after a [`ShutdownSignal`]). Returns as
    /// [`ServerHandle::shutdown`] does; called by a handler of this server,
    /// it returns `false` at once.
    pub fn join(mut self) -> bool {
        if crate::pool::is_worker_of(&self.shared) {
            // Waiting here would hold the answer of the handler calling,
            // and its thread, which the server must end; once dropped, the
            // handle keeps the signal watch until the server has stopped.
            return false;
        }
        if let Some(monitor) = self.monitor.take() {
            let _ = monitor.join();
        }
        // A grace too long to add (`Duration::MAX`) waits without limit.
        let deadline = Instant::now().checked_add(self.shared.config.shutdown_grace);
        let all = self.shared.wait_for_workers(deadline);
        if all {
            // Every worker has left its loop: the joins are prompt.
            self.workers.join_all();
        } else {
            let left = self.shared.live_threads();
            warn!("{left} workers still busy after the shutdown grace period");
        }
        // Until here a second signal could still end the process at once.
        drop(self.signals.take());
        all
    }
}

impl Drop for ServerHandle {
    /// The server goes on without its handle; when it watches signals
    /// (dropped unjoined), a thread keeps the watch until it has stopped, as
    /// [`ServerHandle::join`] would.
    fn drop(&mut self) {
        let Some(signals) = self.signals.take() else { return };
        let (shared, monitor) = (self.shared.clone(), self.monitor.take());
        let keeper = thread::Builder::new().name("httpool-signals".into()).spawn(move || {
            if let Some(monitor) = monitor {
                let _ = monitor.join();
            }
            shared.wait_for_workers(Instant::now().checked_add(shared.config.shutdown_grace));
            drop(signals);
        });
        if let Err(e) = keeper {
            // The watch ends with the thread that could not keep it.
            warn!("the server's handle was dropped, and no thread could keep its signal watch: {e}");
        }
    }
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle").field("addr", &self.addr).finish_non_exhaustive()
    }
}

/// Starts a graceful shutdown of the server it came from.
#[derive(Clone)]
pub struct ShutdownSignal {
    shared: Arc<Shared>,
}

impl ShutdownSignal {
    /// Starts shutdown and returns at once; [`ServerHandle::join`] waits.
    pub fn shutdown(&self) {
        self.shared.stop();
    }

    /// The server's live counters, as [`ServerHandle::stats`].
    #[cfg(feature = "router")]
    pub(crate) fn stats(&self) -> Stats {
        self.shared.snapshot()
    }
}

impl std::fmt::Debug for ShutdownSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShutdownSignal")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `bind` asks for a larger backlog than std's; a listener given to the
    /// server keeps its own unless asked (`net.rs` tests that it applies).
    #[test]
    fn bind_asks_for_the_default_backlog_and_a_given_listener_keeps_its_own() {
        let bound = Server::bind("127.0.0.1:0").unwrap();
        assert_eq!(bound.config().listen_backlog, Some(DEFAULT_LISTEN_BACKLOG));
        let given = Server::from_listener(TcpListener::bind("127.0.0.1:0").unwrap());
        assert_eq!(given.config().listen_backlog, None);
        assert_eq!(given.listen_backlog(64).config().listen_backlog, Some(64));
    }
}

/// A server watching signals, and the console handler's answers to the
/// events it is called with as the system would call it (Wine does deliver
/// a real Ctrl-C: `ci/windows.sh` sends one to testolope).
#[cfg(all(test, windows))]
mod console_tests {
    use std::io::{Read, Write};
    use std::sync::mpsc;

    use windows_sys::Win32::Foundation::{FALSE, TRUE};
    use windows_sys::Win32::System::Console::{CTRL_C_EVENT, CTRL_CLOSE_EVENT};

    use crate::signals::on_console_event;
    use crate::{Request, Response, Server};

    #[test]
    fn ctrl_c_stops_a_watching_server_once_then_is_passed_on() {
        // Nobody watches: the event goes on to the next handler.
        assert_eq!(on_console_event(CTRL_C_EVENT), FALSE);
        let (entered, in_handler) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let released = std::sync::Mutex::new(released);
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .stop_on_signals(true)
            .spawn(move |_: &mut Request| {
                entered.send(()).unwrap();
                released.lock().unwrap().recv().unwrap();
                Response::text("done")
            })
            .unwrap();
        let mut client = std::net::TcpStream::connect(server.local_addr()).unwrap();
        client.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        in_handler.recv().unwrap();
        assert_eq!(on_console_event(CTRL_CLOSE_EVENT), FALSE, "only Ctrl-C and Ctrl-Break stop");
        assert_eq!(on_console_event(CTRL_C_EVENT), TRUE, "the first Ctrl-C starts the stop");
        assert_eq!(on_console_event(CTRL_C_EVENT), FALSE, "a second one while stopping ends the process");
        release.send(()).unwrap();
        let mut reply = String::new();
        client.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n") && reply.ends_with("\r\n\r\ndone"), "{reply}");
        assert!(server.join(), "the server stopped gracefully");
        assert_eq!(on_console_event(CTRL_C_EVENT), FALSE, "its watch ended with it");
    }
}
