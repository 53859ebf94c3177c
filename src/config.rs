//! Every bound and timeout, with its default.

use std::time::Duration;

use crate::parse::{Limits, MAX_HEADERS_CAP};
use crate::proxy::TrustedProxies;

/// Default count of core worker threads, which live as long as the server,
/// where workers are not pinned ([`Server::pin_workers`](crate::Server::pin_workers),
/// on by default on Linux, runs one per CPU): twice the available cores, at
/// least 4. More are started on demand while handlers block, up to
/// [`DEFAULT_MAX_WORKERS`].
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map_or(4, |n| (n.get() * 2).max(4))
}

/// Default bound on worker threads in all, core and on-demand ones: each
/// handler call that blocks holds one, so this many may block at once before
/// new clients wait (or get `503`). Tokio's blocking pool has the same bound.
pub const DEFAULT_MAX_WORKERS: usize = 512;
/// Default time a worker started on demand waits idle before it retires.
pub const DEFAULT_WORKER_IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default stack size of a worker thread (the size Rust gives spawned
/// threads): handlers run on it.
pub const DEFAULT_WORKER_STACK_SIZE: usize = 2 * 1024 * 1024;
/// The least stack a worker thread is given: what the server's own code
/// needs on it at its deepest (reading a chunked body, a TLS handshake),
/// with room to spare for a small handler. `Request::json` needs no more:
/// a nesting level that finds less than 256 KiB left goes on in a stack
/// segment of its own (see the [guide](crate::guide)'s Security). A smaller
/// [`Server::worker_stack_size`](crate::Server::worker_stack_size) is
/// raised to it.
pub const MIN_WORKER_STACK_SIZE: usize = 512 * 1024;

/// Default number of ready connections that may wait for a free worker.
pub const DEFAULT_QUEUE_DEPTH: usize = 1024;

/// Default listen backlog of a listener [`Server::bind`](crate::Server::bind)
/// binds: connections the kernel completes and holds until the server
/// accepts them (std's `TcpListener::bind` gives 128).
pub const DEFAULT_LISTEN_BACKLOG: u32 = 1024;
/// Default cap on open connections; past it the server stops accepting.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16_384;
/// Default time an idle keep-alive connection is kept open.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// Default time a client has to send a complete request head (from its first
/// byte, or from accept for a new connection); past it: `408` and close.
pub const DEFAULT_HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time one read of a request body may wait for the client.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time a whole request body may take to arrive, from the first read
/// that waits for the client (so a client trickling a byte just often enough
/// to beat the per-read timeout still cannot hold a worker for long).
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(60);
/// Default time one write may wait for the client to take bytes.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time one read on an upgraded connection (WebSocket and the like)
/// may wait for the client: as long as nginx waits on a proxied one by
/// default (`proxy_read_timeout`), so that a client that went quiet does
/// not hold its worker for ever; a protocol's pings keep a live one open.
pub const DEFAULT_UPGRADE_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Default least rate, in bytes per second, at which a client must take a
/// response while a worker waits on it: a worker's waits for the client add
/// up, and may total `write_timeout` plus a second for every this many
/// bytes taken (so a client taking a byte just often enough to beat
/// `write_timeout` still cannot hold a worker for long).
pub const DEFAULT_WRITE_MIN_RATE: u64 = 1024;
/// Default least rate, in bytes per second, at which a client must send a
/// request body while a worker waits on it: a worker's waits for body
/// bytes add up, and may total `body_read_timeout` plus a second for every
/// this many bytes received (so a client sending a byte just often enough
/// to beat `body_read_timeout` is cut with `408` long before
/// `body_timeout`).
pub const DEFAULT_BODY_MIN_RATE: u64 = 1024;
/// Default time `shutdown` lets in-flight requests finish.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(10);
/// Default cap on the bytes of a request head; past it: `431`.
pub const DEFAULT_MAX_HEAD_BYTES: usize = 16 * 1024;
/// Default cap on the number of request headers; past it: `431`.
pub const DEFAULT_MAX_HEADERS: usize = 64;
/// Default cap on the request-target length; past it: `414`.
pub const DEFAULT_MAX_URI_BYTES: usize = 8 * 1024;
/// Default cap on a request body; a larger `Content-Length` gets `413`, and
/// a chunked body that grows past it is cut off with `413`.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 1024 * 1024;
/// Default cap on the unread body bytes discarded after a handler returns so
/// the connection can be reused; past it the connection is closed instead.
pub const DEFAULT_MAX_DRAIN_BYTES: u64 = 64 * 1024;
/// Default cap on the response bytes held, server-wide, for clients slow to
/// take them (connections parked until they can take more); past it a
/// worker waits on the client as it writes.
pub const DEFAULT_MAX_UNSENT_BYTES: u64 = 64 * 1024 * 1024;
/// Default cap on the body bytes of one request collected before its
/// handler runs, while the connection waits parked (holding no worker).
pub const DEFAULT_BODY_BUFFER_BYTES: usize = 64 * 1024;
/// Default cap, server-wide, on the bytes of requests collected past the
/// read buffer's size (`body_buffer_bytes`).
pub const DEFAULT_MAX_BUFFERED_BODY_BYTES: u64 = 64 * 1024 * 1024;
/// Default cap, server-wide, on the bytes held for requests not yet begun
/// past 4 KiB a connection: TLS handshakes under way and unfinished heads of
/// parked connections.
pub const DEFAULT_MAX_PENDING_HEAD_BYTES: u64 = 16 * 1024 * 1024;

/// What a connection may hold for a TLS handshake under way, or for an
/// unfinished head while parked, without a share of
/// `max_pending_head_bytes`: a browser's ClientHello (about 2 KiB) and a
/// parked head of up to 2 KiB (in a buffer of twice that) cost no atomic
/// operation.
pub(crate) const FREE_PENDING_BYTES: usize = 4 * 1024;

/// What the server does with new connections while it is saturated: the
/// `queue_depth` connections wait for a worker or `max_connections` are open.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Overload {
    /// Stop accepting: new clients wait in the kernel's listen backlog until
    /// there is room (the default; nothing is refused while the backlog
    /// lasts).
    #[default]
    Wait,
    /// Accept and answer `503 Service Unavailable` with `Retry-After` (whole
    /// seconds) and `Connection: close`, so clients learn at once.
    Reject {
        /// The `Retry-After` value.
        retry_after: Duration,
    },
}

/// Room after a full head so a body reader always has buffer space.
const BODY_SLACK: usize = 4096;

#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) workers: usize,
    pub(crate) max_workers: usize,
    pub(crate) worker_idle_timeout: Duration,
    pub(crate) worker_stack_size: usize,
    pub(crate) queue_depth: usize,
    pub(crate) max_connections: usize,
    pub(crate) idle_timeout: Duration,
    pub(crate) head_timeout: Duration,
    pub(crate) body_read_timeout: Duration,
    pub(crate) body_timeout: Duration,
    pub(crate) body_min_rate: u64,
    /// Most workers waiting on body bytes at once; `None`: half of
    /// `max_workers`.
    pub(crate) max_body_waits: Option<usize>,
    /// Most workers writing bodies that hold them or running upgrades at
    /// once; `None`: half of `max_workers`.
    pub(crate) max_streaming_workers: Option<usize>,
    pub(crate) write_timeout: Duration,
    pub(crate) upgrade_idle_timeout: Duration,
    pub(crate) write_min_rate: u64,
    pub(crate) shutdown_grace: Duration,
    pub(crate) max_drain_bytes: u64,
    /// See [`BodyBounds::drain_wait`](BodyBounds); not a
    /// setting (the in-memory harnesses lift it, so that how long a run
    /// takes changes nothing they check).
    pub(crate) drain_wait: Duration,
    pub(crate) max_unsent_bytes: u64,
    pub(crate) body_buffer_bytes: usize,
    pub(crate) max_buffered_body_bytes: u64,
    pub(crate) max_pending_head_bytes: u64,
    pub(crate) overload: Overload,
    /// Workers run under `SCHED_BATCH` (Linux).
    pub(crate) batch_scheduling: bool,
    /// One core worker per CPU, pinned to it (Linux); `None`: unless the
    /// worker count was set.
    pub(crate) pin_workers: Option<bool>,
    /// Set on the listener as the server starts; `None`: left as it is.
    pub(crate) listen_backlog: Option<u32>,
    pub(crate) limits: Limits,
    /// Whose forwarding headers are believed; none by default.
    pub(crate) trusted_proxies: TrustedProxies,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<std::sync::Arc<rustls::ServerConfig>>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            workers: default_workers(),
            max_workers: DEFAULT_MAX_WORKERS,
            worker_idle_timeout: DEFAULT_WORKER_IDLE_TIMEOUT,
            worker_stack_size: DEFAULT_WORKER_STACK_SIZE,
            queue_depth: DEFAULT_QUEUE_DEPTH,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            head_timeout: DEFAULT_HEAD_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            body_min_rate: DEFAULT_BODY_MIN_RATE,
            max_body_waits: None,
            max_streaming_workers: None,
            write_timeout: DEFAULT_WRITE_TIMEOUT,
            upgrade_idle_timeout: DEFAULT_UPGRADE_IDLE_TIMEOUT,
            write_min_rate: DEFAULT_WRITE_MIN_RATE,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            max_drain_bytes: DEFAULT_MAX_DRAIN_BYTES,
            drain_wait: Duration::from_secs(1),
            max_unsent_bytes: DEFAULT_MAX_UNSENT_BYTES,
            body_buffer_bytes: DEFAULT_BODY_BUFFER_BYTES,
            max_buffered_body_bytes: DEFAULT_MAX_BUFFERED_BODY_BYTES,
            max_pending_head_bytes: DEFAULT_MAX_PENDING_HEAD_BYTES,
            overload: Overload::Wait,
            batch_scheduling: true,
            pin_workers: None,
            listen_backlog: None,
            trusted_proxies: TrustedProxies::default(),
            #[cfg(feature = "tls")]
            tls: None,
            limits: Limits {
                max_head_bytes: DEFAULT_MAX_HEAD_BYTES,
                max_headers: DEFAULT_MAX_HEADERS,
                max_uri_bytes: DEFAULT_MAX_URI_BYTES,
                max_body_bytes: DEFAULT_MAX_BODY_BYTES,
                any_method: false,
                legacy_protocols: true,
            },
        }
    }
}

impl Config {
    /// `Server::max_head_bytes` and `TestServer::max_head_bytes`: at least
    /// 256 bytes (a request line and `Host`), and offsets that fit in `u32`.
    pub(crate) fn set_max_head_bytes(&mut self, n: usize) {
        self.limits.max_head_bytes = n.clamp(256, u32::MAX as usize / 4);
    }

    /// `Server::max_headers` and `TestServer::max_headers`: 1 to
    /// [`MAX_HEADERS_CAP`].
    pub(crate) fn set_max_headers(&mut self, n: usize) {
        self.limits.max_headers = n.clamp(1, MAX_HEADERS_CAP);
    }

    /// `Server::max_uri_bytes` and `TestServer::max_uri_bytes`: at least 1.
    pub(crate) fn set_max_uri_bytes(&mut self, n: usize) {
        self.limits.max_uri_bytes = n.max(1);
    }

    pub(crate) fn body_bounds(&self) -> BodyBounds {
        BodyBounds {
            limit: self.limits.max_body_bytes,
            read_timeout: self.body_read_timeout,
            total_timeout: self.body_timeout,
            min_rate: self.body_min_rate,
            drain_wait: self.drain_wait,
            max_drain: self.max_drain_bytes,
        }
    }

    /// Most workers that may wait on request body bytes at once
    /// (`Server::max_body_waits`): by default half of the most threads.
    pub(crate) fn body_waits(&self) -> usize {
        self.max_body_waits.unwrap_or(self.max_workers.max(self.workers) / 2).max(1)
    }

    /// Most workers at once held by a body they write (a stream, a reader)
    /// or by an upgraded connection (`Server::max_streaming_workers`): by
    /// default half of the most threads.
    pub(crate) fn streaming_workers(&self) -> usize {
        self.max_streaming_workers.unwrap_or(self.max_workers.max(self.workers) / 2).max(1)
    }

    /// `Server::trusted_proxies` and `TestServer::trusted_proxies`.
    ///
    /// # Panics
    ///
    /// On an entry that is not an address, a CIDR range or `unix`.
    pub(crate) fn set_trusted_proxies<S: AsRef<str>>(&mut self, proxies: impl IntoIterator<Item = S>) {
        match TrustedProxies::parse(proxies) {
            Ok(proxies) => self.trusted_proxies = proxies,
            Err(e) => panic!("trusted_proxies: {e}"),
        }
    }

    /// Size of a connection's read buffer while a worker serves it.
    pub(crate) fn read_buffer_size(&self) -> usize {
        self.limits.max_head_bytes + BODY_SLACK
    }
}

/// The bounds one body is read under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyBounds {
    /// Most body bytes.
    pub(crate) limit: u64,
    /// Longest wait for one read.
    pub(crate) read_timeout: Duration,
    /// Longest time for the whole body, from the first read that waits.
    pub(crate) total_timeout: Duration,
    /// Least rate in bytes per second: the waits of one body may total
    /// `read_timeout` plus a second for every `min_rate` bytes received; 0:
    /// no least rate.
    pub(crate) min_rate: u64,
    /// Longest a worker waits for the rest of a body its handler did not
    /// read, to keep the connection; a slower client is closed after the
    /// response.
    pub(crate) drain_wait: Duration,
    /// Most unread body bytes discarded after the handler returns
    /// (`Server::max_drain_bytes`).
    pub(crate) max_drain: u64,
}
