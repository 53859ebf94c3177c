//! The server-wide budget for requests not yet begun
//! (`max_pending_head_bytes`): TLS handshakes that hold a large unfinished
//! ClientHello, and parked connections that hold a large unfinished head.

mod common;

use std::io::Read;

use common::{connect, get, read_reply, send, wait_for};
use httpool::{Response, Server, ServerHandle, Stats};

/// Reads until the server closes the connection (end of stream or a
/// reset); fails if it is still open after [`PATIENCE`].
fn closed_by_server(conn: &mut impl Read) {
    let mut sink = [0u8; 4096];
    loop {
        match conn.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("the server did not close the connection: {e}"),
        }
    }
}

/// Waits for `cond`, checking at every look that the budget holds.
fn wait_within(server: &ServerHandle, budget: u64, what: &str, cond: impl Fn(&Stats) -> bool) -> Stats {
    wait_for(server, what, |s| {
        assert!(s.pending_head_bytes <= budget, "past the budget: {s:?}");
        cond(s)
    })
}

/// Parked heads of 12 KiB keep a buffer of the read buffer's size (20
/// KiB with the defaults): one fits in a budget of 32 KiB, the next is
/// answered `503` with `Retry-After` and closed; with the first client
/// gone the budget is whole again and requests are served.
#[test]
fn a_parked_head_past_the_budget_is_answered_503_and_its_share_goes_back_at_the_close() {
    const BUDGET: u64 = 32 * 1024;
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_pending_head_bytes(BUDGET)
        .spawn(|_: &mut httpool::Request| Response::text("ok"))
        .unwrap();
    let mut head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ".to_vec();
    head.resize(12 * 1024, b'a');
    let mut first = connect(server.local_addr());
    send(&mut first, &head);
    let read_buffer = (httpool::DEFAULT_MAX_HEAD_BYTES + 4096) as u64;
    wait_within(&server, BUDGET, "the first head to hold its share", |s| s.pending_head_bytes == read_buffer);
    for _ in 0..3 {
        let mut next = connect(server.local_addr());
        send(&mut next, &head);
        let reply = read_reply(&mut next, false).unwrap();
        assert_eq!((reply.status, reply.header("retry-after")), (503, Some("1")));
        assert_eq!(reply.header("connection"), Some("close"));
        closed_by_server(&mut next);
        wait_within(&server, BUDGET, "the refused share to go back", |s| s.pending_head_bytes == read_buffer);
    }
    // The first head, finished, is served: its share goes back.
    send(&mut first, b"\r\n\r\n");
    assert_eq!(read_reply(&mut first, false).unwrap().status, 200);
    wait_within(&server, BUDGET, "the share to go back", |s| s.pending_head_bytes == 0);
    send(&mut first, &head);
    wait_within(&server, BUDGET, "the next head to hold its share", |s| s.pending_head_bytes == read_buffer);
    drop(first);
    wait_within(&server, BUDGET, "a closed connection's share to go back", |s| s.pending_head_bytes == 0);
    let mut conn = connect(server.local_addr());
    send(&mut conn, &get("/"));
    assert_eq!(read_reply(&mut conn, false).unwrap().status, 200);
    assert_eq!(server.stats().rejected, 3);
    assert!(server.shutdown());
}

/// A head parked in a small buffer (a short head) takes nothing.
#[test]
fn a_short_parked_head_takes_no_share() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .max_pending_head_bytes(0)
        .spawn(|_: &mut httpool::Request| Response::text("ok"))
        .unwrap();
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"GET / HTTP/1.1\r\nHost: x\r\n");
    wait_for(&server, "the head to park", |s| s.parked == 1);
    send(&mut conn, b"\r\n");
    assert_eq!(read_reply(&mut conn, false).unwrap().status, 200);
    assert_eq!(server.stats().pending_head_bytes, 0);
    assert!(server.shutdown());
}

#[cfg(feature = "tls")]
mod tls {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::sync::Arc;

    use httpool::{Response, Server};
    use rustls::pki_types::{CertificateDer, ServerName};

    use super::{closed_by_server, wait_within};
    use crate::common::{PATIENCE, allow_descriptors};

    /// A server certificate for `localhost`, and a client that trusts it.
    fn setup() -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let server =
            httpool::tls::config_from_pem(cert.cert.pem().as_bytes(), cert.key_pair.serialize_pem().as_bytes())
                .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from(cert.cert.der().to_vec())).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        (server, Arc::new(client))
    }

    /// Bytes of a ClientHello whose message announces `len` bytes, all
    /// sent but the last, in handshake records of at most 16 KiB (rustls
    /// joins a message across records).
    fn unfinished_client_hello(len: usize) -> Vec<u8> {
        let mut message = vec![1, (len >> 16) as u8, (len >> 8) as u8, len as u8];
        message.resize(4 + len - 1, 0);
        let mut bytes = Vec::new();
        for record in message.chunks(16 * 1024) {
            bytes.extend_from_slice(&[0x16, 0x03, 0x01]);
            bytes.extend_from_slice(&(record.len() as u16).to_be_bytes());
            bytes.extend_from_slice(record);
        }
        bytes
    }

    fn raw(addr: std::net::SocketAddr) -> TcpStream {
        let sock = TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(PATIENCE)).unwrap();
        sock.set_write_timeout(Some(PATIENCE)).unwrap();
        sock
    }

    /// One ClientHello of 60,000 bytes fits in the budget (with the
    /// handshake's steps of 16 KiB it holds 68 KiB), a second does not:
    /// it is closed, and its share goes back. With the first client gone
    /// the budget is whole again and a real client is served.
    #[test]
    fn a_handshake_past_the_budget_is_closed_and_shares_go_back() {
        const BUDGET: u64 = 128 * 1024;
        const HELD: u64 = 68 * 1024;
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(2)
            .tls(server_config)
            .max_pending_head_bytes(BUDGET)
            .spawn(|_: &mut httpool::Request| Response::text("secure"))
            .unwrap();
        let hello = unfinished_client_hello(60_000);
        let mut first = raw(server.local_addr());
        first.write_all(&hello).unwrap();
        wait_within(&server, BUDGET, "the first handshake to hold its share", |s| s.pending_head_bytes == HELD);
        for _ in 0..4 {
            let mut next = raw(server.local_addr());
            // The server may close before it has read it all.
            let _ = next.write_all(&hello);
            closed_by_server(&mut next);
            wait_within(&server, BUDGET, "the refused share to go back", |s| s.pending_head_bytes == HELD);
        }
        drop(first);
        wait_within(&server, BUDGET, "every share to go back", |s| s.pending_head_bytes == 0 && s.open == 0);
        let sock = raw(server.local_addr());
        let name = ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(client_config, name).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, sock);
        tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        let mut answer = Vec::new();
        let _ = tls.read_to_end(&mut answer);
        assert!(answer.starts_with(b"HTTP/1.1 200 OK\r\n"), "{}", String::from_utf8_lossy(&answer));
        assert!(answer.ends_with(b"secure"));
        assert_eq!(server.stats().pending_head_bytes, 0);
        assert!(server.shutdown());
    }

    /// Many clients at once, each with an unfinished ClientHello of 60,000
    /// bytes: what the server holds for them never passes the budget, those
    /// past it are closed, and once every client has gone nothing is held.
    #[test]
    fn many_unfinished_handshakes_stay_within_the_budget() {
        const CLIENTS: usize = 64;
        const BUDGET: u64 = 512 * 1024;
        allow_descriptors(4 * CLIENTS as u64 + 64);
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .tls(server_config)
            .max_pending_head_bytes(BUDGET)
            .spawn(|_: &mut httpool::Request| Response::text("secure"))
            .unwrap();
        let hello = unfinished_client_hello(60_000);
        let writers: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let mut sock = raw(server.local_addr());
                let hello = hello.clone();
                std::thread::spawn(move || {
                    let _ = sock.write_all(&hello);
                    sock
                })
            })
            .collect();
        let socks: Vec<TcpStream> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        // Every client is either held whole (its share is 68 KiB) or closed.
        let most_held = (BUDGET / (68 * 1024)) as usize;
        let stats = wait_within(&server, BUDGET, "every handshake held whole or closed", |s| {
            s.open as usize <= most_held && s.pending_head_bytes == s.open * 68 * 1024
        });
        assert!(stats.open > 0, "{stats:?}");
        drop(socks);
        wait_within(&server, BUDGET, "every share to go back", |s| s.pending_head_bytes == 0 && s.open == 0);
        let sock = raw(server.local_addr());
        let name = ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(client_config, name).unwrap();
        let mut tls = rustls::StreamOwned::new(conn, sock);
        tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        let mut answer = Vec::new();
        let _ = tls.read_to_end(&mut answer);
        assert!(answer.starts_with(b"HTTP/1.1 200 OK\r\n"), "{}", String::from_utf8_lossy(&answer));
        assert!(server.shutdown());
    }
}
