//! An HTTP/1.1 server on a bounded pool of OS threads. You write an ordinary
//! blocking closure — use `std::fs`, a blocking database driver, `ureq` — and
//! httpool does everything between the socket and that closure: accepting,
//! parsing, framing, keep-alive, pipelining, limits, timeouts and errors. An
//! idle keep-alive connection costs no thread.
//!
//! ```no_run
//! use httpool::{Response, Server};
//!
//! fn main() -> std::io::Result<()> {
//!     Server::bind("127.0.0.1:8000")?.serve(|req| match req.path() {
//!         "/" => Response::text("Hello, world!\n"),
//!         _ => Response::status(404),
//!     })
//! }
//! ```
//!
//! # A short tour
//!
//! - [`Server`] binds a socket, takes limits and timeouts (each with a
//!   `DEFAULT_…` constant) and runs a handler: [`Server::serve`] on this
//!   thread, or [`Server::spawn`], which returns a [`ServerHandle`] for
//!   [`stats`](ServerHandle::stats) and a graceful
//!   [`shutdown`](ServerHandle::shutdown).
//! - A handler gets a [`Request`] — method, target, headers, and a body to
//!   [`Read`](std::io::Read) or [`read_body`](Request::read_body) — and
//!   returns a [`Response`], or a `Result` of one ([`IntoResponse`]): `?` on
//!   an [`Error`] answers with [`Error::status`] (`413`, `400`, `408`, `500`).
//!   Its error type can be yours, answered as you choose.
//! - A [`Response`] carries text or bytes ([`Response::text`],
//!   [`Response::bytes`]), a file ([`Response::file`], `sendfile` on Linux),
//!   a reader ([`Response::reader`]), a stream written as it is sent
//!   ([`Response::stream`], [`BodyWriter`]), or takes over the connection
//!   ([`Response::upgrade`], [`Upgraded`]) for WebSocket and the like.
//! - A [`Router`] (feature `router`, on by default) sends each method and
//!   path pattern to a handler, with path parameters
//!   ([`Request::param_as`]), `HEAD`, `404` and `405` answered, and state
//!   shared by every handler ([`Router::with_state`]).
//! - An application object implements [`Handler`] and runs with
//!   [`Server::serve_handler`] ([`Handler`] says why closures and named
//!   handlers have entry points of their own).
//! - [`test`](mod@test) sends requests to a handler in memory, through the real
//!   connection loop: [`test::TestRequest::get`]`("/").send(&handler)`.
//! - Features: `log` (default: errors and client misbehaviour through the
//!   `log` facade, and [`access_log`]), `router` (default: [`Router`]),
//!   `tls` (HTTPS with rustls: `Server::tls`), `http` (conversions to and
//!   from the `http` crate's request and response), `json` (bodies, and
//!   `JsonError` for a JSON API's errors), `forms` (`Request::query_as`
//!   and `Request::form_as`, into your types), `cookies`, `sessions`
//!   (signed and private cookies, and `session::Sessions`), `compression`
//!   ([`compress`]), `fs` ([`ServeDir`]) and `multipart` (HTML forms
//!   with files, streamed: `httpool::multipart`). [`cors()`] needs none.
//!
//! The [`guide`] has a cookbook, every limit and default, the protocol
//! and security details and the platforms; ARCHITECTURE.md
//! tells how the engine works and BENCHMARKS.md how it measures against
//! other servers; the examples directory has a program for each feature,
//! each tested in `tests/examples.rs`.

#![deny(unsafe_code)]
#![warn(missing_debug_implementations)]

#[macro_use]
mod logging;

#[cfg(feature = "log")]
mod access_log;
mod body;
mod body_writer;
#[cfg(feature = "compression")]
mod compress;
mod config;
mod cookies;
pub mod cors;
mod date;
mod deadline;
mod encode;
mod error;
pub mod events;
mod feed;
#[cfg(feature = "fs")]
mod fs;
#[doc(hidden)]
pub mod fuzz_entry;
mod handler;
mod headers;
mod http1;
#[cfg(feature = "http")]
mod http_interop;
mod io;
#[cfg(feature = "json")]
mod json;
#[cfg(feature = "json")]
pub use json::JsonError;
#[cfg(feature = "router")]
pub mod metrics;
mod monitor;
#[cfg(feature = "multipart")]
pub mod multipart;
mod net;
mod outbox;
mod parse;
mod pool;
mod proto;
pub mod proxy;
mod request;
#[cfg(test)]
mod request_fixture;
mod request_id;
mod response;
#[cfg(feature = "router")]
pub mod router;
mod server;
#[cfg(feature = "sessions")]
pub mod session;
mod shared;
mod signals;
mod stats;
mod status;
mod stop;
mod sync;
mod sys;
pub mod test;
#[cfg(feature = "tls")]
pub mod tls;
#[cfg(feature = "forms")]
mod typed;
mod upgrade;
mod urlencoded;
#[cfg(feature = "websocket")]
pub mod websocket;

#[cfg(feature = "log")]
pub use access_log::{ACCESS_LOG_TARGET, AccessLog, LogFormat, access_log};
pub use body::Body;
pub use body_writer::BodyWriter;
#[cfg(feature = "compression")]
pub use compress::{Compress, DEFAULT_COMPRESS_MIN_BYTES, DEFAULT_COMPRESSION_LEVEL, compress};
pub use config::{
    DEFAULT_BODY_BUFFER_BYTES, DEFAULT_BODY_MIN_RATE, DEFAULT_BODY_READ_TIMEOUT, DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEAD_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_LISTEN_BACKLOG, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_BUFFERED_BODY_BYTES, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_DRAIN_BYTES, DEFAULT_MAX_HEAD_BYTES,
    DEFAULT_MAX_HEADERS, DEFAULT_MAX_PENDING_HEAD_BYTES, DEFAULT_MAX_UNSENT_BYTES, DEFAULT_MAX_URI_BYTES,
    DEFAULT_MAX_WORKERS, DEFAULT_QUEUE_DEPTH, DEFAULT_SHUTDOWN_GRACE, DEFAULT_UPGRADE_IDLE_TIMEOUT,
    DEFAULT_WORKER_IDLE_TIMEOUT, DEFAULT_WORKER_STACK_SIZE, DEFAULT_WRITE_MIN_RATE, DEFAULT_WRITE_TIMEOUT,
    MIN_WORKER_STACK_SIZE, Overload, default_workers,
};
#[cfg(feature = "cookies")]
pub use cookie;
pub use cors::{Cors, cors};
pub use date::http_date;
pub use error::{Error, ErrorKind};
#[cfg(feature = "fs")]
pub use fs::{DEFAULT_MEMORY_CACHE_BYTES, ServeDir};
pub use handler::{Handler, IntoResponse};
pub use headers::HeaderIter;
#[cfg(feature = "router")]
pub use metrics::Metrics;
pub use proto::Version;
pub use request::Request;
pub use request_id::{MAX_REQUEST_ID_BYTES, RequestId, request_id};
pub use response::{Content, Response};
#[cfg(feature = "router")]
pub use router::Router;
pub use server::{Server, ServerHandle, ShutdownSignal};
pub use stats::Stats;
pub use upgrade::Upgraded;
pub use urlencoded::Form;

pub mod guide;

/// The README's code, compiled and run as doctests. It is written for the
/// default features (its first recipe routes with `Router`), so it is
/// tested only where they are on.
#[cfg(all(doctest, feature = "router"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
