#![doc = include_str!("../README.md")]
#![deny(unsafe_code)]
#![warn(missing_debug_implementations)]
#![cfg(unix)]

#[macro_use]
mod logging;

#[cfg(feature = "log")]
mod access_log;
mod body;
#[cfg(feature = "compression")]
mod compress;
mod config;
mod conn;
mod cookies;
mod date;
mod error;
#[cfg(feature = "fs")]
mod fs;
#[doc(hidden)]
pub mod fuzz;
mod handler;
mod headers;
#[cfg(feature = "http")]
mod http_interop;
mod io;
#[cfg(feature = "json")]
mod json;
mod lot;
mod monitor;
mod net;
mod parse;
mod pool;
mod request;
mod response;
mod server;
mod stats;
mod status;
mod stream;
#[cfg(test)]
mod testing;
#[cfg(feature = "tls")]
pub mod tls;
mod upgrade;
mod urlencoded;

#[cfg(feature = "log")]
pub use access_log::{ACCESS_LOG_TARGET, AccessLog, LogFormat, access_log};
pub use body::Body;
#[cfg(feature = "compression")]
pub use compress::{Compress, DEFAULT_COMPRESS_MIN_BYTES, DEFAULT_COMPRESSION_LEVEL, compress};
pub use config::{
    DEFAULT_BODY_READ_TIMEOUT, DEFAULT_BODY_TIMEOUT, DEFAULT_HEAD_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_DRAIN_BYTES, DEFAULT_MAX_HEAD_BYTES,
    DEFAULT_MAX_HEADERS, DEFAULT_MAX_UNSENT_BYTES, DEFAULT_MAX_URI_BYTES, DEFAULT_QUEUE_DEPTH, DEFAULT_SHUTDOWN_GRACE,
    DEFAULT_WRITE_TIMEOUT, Overload, default_workers,
};
#[cfg(feature = "cookies")]
pub use cookie;
pub use date::http_date;
pub use error::{Error, ErrorKind};
#[cfg(feature = "fs")]
pub use fs::{DEFAULT_MEMORY_CACHE_BYTES, ServeDir};
pub use handler::Handler;
pub use headers::HeaderIter;
pub use request::{Request, Version};
pub use response::{Content, Response};
pub use server::{Server, ServerHandle, ShutdownSignal};
pub use stats::Stats;
pub use stream::BodyWriter;
pub use upgrade::Upgraded;
pub use urlencoded::Form;
