//! The guide: everything the README shows and more, one chapter a module.
//!
//! - [`cookbook`]: recipes, each from a tested example: routes, state, errors, query
//!   strings and forms, JSON, cookies, static files, server-sent events, uploads, WebSocket
//!   and other upgrades, testing handlers without a socket, handlers that block, HTTPS,
//!   compression and an access log, graceful shutdown, behind a proxy, scaling out.
//! - [`limits`]: every limit and timeout, its default, and what a client that crosses it
//!   gets; the memory a client can make the server hold.
//! - [`protocol`]: how requests are framed and answered, and what clients may retry.
//! - [`security`]: what the server defends against, and what it leaves to the application.
//! - [`features`]: the Cargo features and what each adds.
//! - [`stats`]: the counters a running server keeps.
//! - [`testing`]: how httpool itself is tested: conformance, fuzzing, model checks.
//! - [`platforms`]: Linux, macOS and Windows, and what differs between them.
//!
//! Every code block is compiled as a doctest; a block that needs a feature is compiled when
//! that feature is on (`cargo test --all-features`, as CI runs).

#[doc = include_str!("cookbook.md")]
pub mod cookbook {}

#[doc = include_str!("limits.md")]
pub mod limits {}

#[doc = include_str!("protocol.md")]
pub mod protocol {}

#[doc = include_str!("security.md")]
pub mod security {}

#[doc = include_str!("features.md")]
pub mod features {}

#[doc = include_str!("stats.md")]
pub mod stats {}

#[doc = include_str!("testing.md")]
pub mod testing {}

#[doc = include_str!("platforms.md")]
pub mod platforms {}
