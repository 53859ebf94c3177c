//! Entry points for the fuzz targets in `fuzz/`. Not part of the public API.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::config::Config;
use crate::conn::{ConnState, Ctx, Next, Scratch, serve};
use crate::io::Script;
use crate::parse::parse_head;
use crate::request::Request;
use crate::response::Response;
use crate::stats::Counters;

/// Parses `data` as a request head with the default limits.
pub fn parse(data: &[u8]) {
    // Built once: `Config::default` asks the OS for the core count.
    static LIMITS: std::sync::OnceLock<crate::parse::Limits> = std::sync::OnceLock::new();
    let limits = LIMITS.get_or_init(|| Config::default().limits);
    let mut spans = Vec::new();
    if let Ok(Some(head)) = parse_head(data, limits, &mut spans) {
        assert!(head.len <= data.len());
        for span in &spans {
            assert!((span.value.0 + span.value.1) as usize <= head.len);
        }
    }
}

/// Runs the connection loop over `chunks` (each arriving after the worker
/// parked), with a handler that reads the body and answers with it. Returns
/// the bytes written.
pub fn serve_chunks(chunks: &[&[u8]]) -> Vec<u8> {
    static CONFIG: std::sync::OnceLock<Config> = std::sync::OnceLock::new();
    let config = CONFIG.get_or_init(|| Config { body_read_timeout: Duration::from_millis(1), ..Config::default() });
    let mut scratch = Scratch::new(config);
    let stopping = AtomicBool::new(false);
    let counters = Counters::default();
    let handler = |req: &mut Request<'_>| match req.read_body(64 * 1024) {
        Ok(body) => Response::bytes(body),
        Err(_) => Response::status(400),
    };
    let peer = crate::net::Peer::Ip(SocketAddr::from((Ipv4Addr::LOCALHOST, 1)));
    let mut io = Script::new(chunks);
    io.eof = true;
    io.patient = true;
    let mut conn = ConnState::default();
    let mut cx =
        Ctx { handler: &handler, config, scratch: &mut scratch, stopping: &stopping, counters: &counters, peer };
    // Each round consumes at least one chunk, so this ends.
    loop {
        io.release();
        if serve(&mut conn, &mut io, &mut cx) == Next::Close || (io.chunks.is_empty() && io.current.is_empty()) {
            break;
        }
    }
    io.written
}
