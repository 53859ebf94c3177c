//! Listeners other than IPv4 TCP: IPv6, a pre-bound listener, Unix domain
//! sockets, and (feature `tls`) HTTPS.

mod common;

use common::{connect, get, read_reply, send};
use httpool::{Request, Response, Server};

fn peer_handler(req: &mut Request) -> Response {
    Response::text(format!("{:?}", req.peer_addr().map(|a| a.ip())))
}

#[test]
fn serves_ipv6() {
    let Ok(server) = Server::bind("[::1]:0") else {
        eprintln!("no IPv6 loopback here; skipping");
        return;
    };
    let server = server.workers(1).spawn(peer_handler).unwrap();
    assert!(server.local_addr().is_ipv6());
    let mut conn = connect(server.local_addr());
    send(&mut conn, &get("/"));
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"Some(::1)");
    assert!(server.shutdown());
}

#[test]
fn serves_a_listener_bound_by_the_caller() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Server::from_listener(listener).workers(1).spawn(peer_handler).unwrap();
    assert_eq!(server.local_addr(), addr);
    let mut conn = connect(addr);
    send(&mut conn, &get("/"));
    assert_eq!(read_reply(&mut conn, false).unwrap().body, b"Some(127.0.0.1)");
    assert!(server.shutdown());
}

#[test]
#[cfg(unix)] // Unix domain sockets are Unix only.
fn serves_a_unix_domain_socket() {
    use std::io::{BufRead, Read, Write};

    let unix = common::UnixPath::new("serve");
    let server = Server::bind_unix(&unix.path).unwrap().workers(1).spawn(peer_handler).unwrap();
    let (mut writer, mut reader) = unix.open();
    for _ in 0..2 {
        writer.write_all(&get("/")).unwrap();
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        assert_eq!(status, "HTTP/1.1 200 OK\r\n");
        let mut line = String::new();
        while line != "\r\n" {
            line.clear();
            reader.read_line(&mut line).unwrap();
        }
        let mut body = [0u8; 4];
        reader.read_exact(&mut body).unwrap();
        assert_eq!(&body, b"None");
    }
    assert!(server.shutdown());
}

/// `bind_unix` owns its socket file: one left by a server that is gone
/// (nothing listens on it) is replaced, a live one is not, and the server
/// removes its own when it stops.
#[test]
#[cfg(unix)]
fn bind_unix_replaces_a_stale_socket_file_and_removes_its_own_at_shutdown() {
    use std::io::Write;

    let unix = common::UnixPath::new("stale");
    // A server gone: its socket closed, its file left.
    drop(std::os::unix::net::UnixListener::bind(&unix.path).unwrap());
    assert!(std::fs::symlink_metadata(&unix.path).is_ok());
    let server = Server::bind_unix(&unix.path).unwrap().workers(1).spawn(peer_handler).unwrap();
    let (mut writer, mut reader) = unix.open();
    writer.write_all(&get("/")).unwrap();
    assert_eq!(read_reply(&mut reader, false).unwrap().status, 200);
    // A second server finds the socket live: refused, and the file kept.
    let second = Server::bind_unix(&unix.path).unwrap_err();
    assert_eq!(second.kind(), std::io::ErrorKind::AddrInUse);
    writer.write_all(&get("/")).unwrap();
    assert_eq!(read_reply(&mut reader, false).unwrap().status, 200);
    drop((writer, reader));
    assert!(server.shutdown());
    let after = std::fs::symlink_metadata(&unix.path).map(|_| ());
    assert_eq!(after.unwrap_err().kind(), std::io::ErrorKind::NotFound);
}

/// Anything at the path but a socket nothing listens on is left alone: a
/// file that is not a socket fails the bind, and is kept as it was.
#[test]
#[cfg(unix)]
fn bind_unix_leaves_a_file_that_is_not_a_socket() {
    let unix = common::UnixPath::new("not-socket");
    std::fs::write(&unix.path, b"data").unwrap();
    let err = Server::bind_unix(&unix.path).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    assert_eq!(std::fs::read(&unix.path).unwrap(), b"data");
}

/// A socket that took over the path while the server ran (a new server,
/// the old file moved aside) is not removed when the old one stops; a
/// listener given to the server keeps its file too.
#[test]
#[cfg(unix)]
fn a_stopping_server_removes_no_socket_file_but_the_one_it_bound() {
    let unix = common::UnixPath::new("taken-over");
    let server = Server::bind_unix(&unix.path).unwrap().workers(1).spawn(peer_handler).unwrap();
    // Moved aside, so that the new socket cannot reuse its inode.
    std::fs::rename(&unix.path, unix.path.with_extension("old")).unwrap();
    let newer = std::os::unix::net::UnixListener::bind(&unix.path).unwrap();
    assert!(server.shutdown());
    let _still_there = std::os::unix::net::UnixStream::connect(&unix.path).unwrap();
    newer.accept().unwrap();
    drop(newer);

    std::fs::remove_file(&unix.path).unwrap();
    let given = std::os::unix::net::UnixListener::bind(&unix.path).unwrap();
    let server = Server::from_unix_listener(given).workers(1).spawn(peer_handler).unwrap();
    assert!(server.shutdown());
    assert!(std::fs::symlink_metadata(&unix.path).is_ok());
}

/// The Unix-socket side of `no_request_lost.rs`'s idle-close race: a
/// request sent on a kept-alive connection as its idle deadline passes is
/// answered, or meets the end of the stream, never a reset. (A Unix socket
/// closed with input unread makes the peer's read fail with
/// `ECONNRESET` even after a shutdown, so the request must be found.)
#[test]
#[cfg(any(target_os = "linux", target_vendor = "apple"))]
fn a_unix_socket_request_racing_the_idle_close_is_answered_or_meets_the_end_of_stream_never_a_reset() {
    use std::io::Write;

    use common::IdleRace;

    let unix = common::UnixPath::new("race");
    let server = Server::bind_unix(&unix.path)
        .unwrap()
        .idle_timeout(std::time::Duration::ZERO)
        .spawn(|req: &mut Request| Response::text(req.path().to_string()))
        .unwrap();
    let mut race = IdleRace::default();
    for i in 0..300 {
        let (mut writer, mut reader) = unix.open();
        writer.write_all(&get("/first")).unwrap();
        assert_eq!(read_reply(&mut reader, false).unwrap().body, b"/first");
        // A write after the close may fail; what the read then meets counts.
        let _ = writer.write_all(&get("/second"));
        race.judge(i, read_reply(&mut reader, false), "/second");
    }
    assert!(server.shutdown());
}

/// At `max_connections` on a Unix socket, the idle connection closed to
/// make room lingers (a Unix socket always does): the new client, taken
/// from the backlog, waits for the linger to end, and is served once the
/// idle connection's client has read the end of stream and closed.
#[test]
#[cfg(any(target_os = "linux", target_vendor = "apple"))]
fn a_unix_socket_client_waits_for_the_idle_connection_closed_for_it_to_end_its_linger() {
    use std::io::{Read, Write};

    let unix = common::UnixPath::new("room");
    let server = Server::bind_unix(&unix.path)
        .unwrap()
        .max_connections(1)
        .idle_timeout(std::time::Duration::from_secs(3600))
        .spawn(|req: &mut Request| Response::text(req.path().to_string()))
        .unwrap();
    let (mut idle, mut idle_reader) = unix.open();
    idle.write_all(&get("/idle")).unwrap();
    assert_eq!(read_reply(&mut idle_reader, false).unwrap().body, b"/idle");
    let (mut new, mut new_reader) = unix.open();
    new.write_all(&get("/new")).unwrap();
    // The idle connection meets the end of stream; its client closes.
    let mut rest = Vec::new();
    assert_eq!(idle_reader.read_to_end(&mut rest).unwrap(), 0);
    drop((idle, idle_reader));
    assert_eq!(read_reply(&mut new_reader, false).unwrap().body, b"/new");
    let stats = server.stats();
    assert_eq!((stats.accepted, stats.reclaimed, stats.timeouts), (2, 1, 0));
    // Closed first, so that the shutdown does not linger over it.
    drop((new, new_reader));
    assert!(server.shutdown());
}

/// One idle connection is closed for a client that waits for its linger,
/// not one more at each accept pass meanwhile: each worker runs a pass
/// after serving, and such a pass used to close the next idle connection
/// for the same client (here the one served just before it).
#[test]
#[cfg(any(target_os = "linux", target_vendor = "apple"))]
fn a_client_waiting_for_a_lingering_close_has_no_other_idle_connection_closed_for_it() {
    use std::io::{Read, Write};

    let unix = common::UnixPath::new("room-once");
    let server = Server::bind_unix(&unix.path)
        .unwrap()
        .max_connections(2)
        .idle_timeout(std::time::Duration::from_secs(3600))
        .spawn(|req: &mut Request| Response::text(req.path().to_string()))
        .unwrap();
    let (idle, mut idle_reader) = unix.open();
    let (mut kept, mut kept_reader) = unix.open();
    for (conn, reader, path) in [(&idle, &mut idle_reader, "/idle"), (&kept, &mut kept_reader, "/kept")] {
        (&*conn).write_all(&get(path)).unwrap();
        assert_eq!(read_reply(reader, false).unwrap().body, path.as_bytes());
    }
    // Both idle, parked in the order they were answered.
    common::wait_for(&server, "both connections to park", |s| s.parked == 2);
    let (mut new, mut new_reader) = unix.open();
    new.write_all(&get("/new")).unwrap();
    // The first connection in slot order (in a fresh server, the one
    // idle longest) meets the end of stream; its client keeps it open, so
    // its close lingers.
    let mut rest = Vec::new();
    assert_eq!(idle_reader.read_to_end(&mut rest).unwrap(), 0);
    for _ in 0..2 {
        kept.write_all(&get("/kept")).unwrap();
        assert_eq!(read_reply(&mut kept_reader, false).unwrap().body, b"/kept");
    }
    drop((idle, idle_reader));
    assert_eq!(read_reply(&mut new_reader, false).unwrap().body, b"/new");
    let stats = server.stats();
    assert_eq!((stats.accepted, stats.reclaimed, stats.timeouts), (3, 1, 0));
    drop((kept, kept_reader, new, new_reader));
    assert!(server.shutdown());
}

/// Under `Overload::Reject`, a client for whom an idle connection was
/// closed (a Unix socket always lingers) is served. It used to be refused
/// with `503` while the idle connection was closed all the same: each new
/// client cost an idle connection and was served none the better.
#[test]
#[cfg(any(target_os = "linux", target_vendor = "apple"))]
fn under_reject_a_client_waits_for_the_lingering_close_made_for_it() {
    use std::io::{Read, Write};

    let unix = common::UnixPath::new("room-reject");
    let server = Server::bind_unix(&unix.path)
        .unwrap()
        .max_connections(1)
        .overload(httpool::Overload::Reject { retry_after: std::time::Duration::from_secs(1) })
        .idle_timeout(std::time::Duration::from_secs(3600))
        .spawn(|req: &mut Request| Response::text(req.path().to_string()))
        .unwrap();
    let (mut idle, mut idle_reader) = unix.open();
    idle.write_all(&get("/idle")).unwrap();
    assert_eq!(read_reply(&mut idle_reader, false).unwrap().body, b"/idle");
    // Answered, it may not be parked yet (not idle): a client then is
    // refused.
    common::wait_for(&server, "the idle connection to park", |s| s.parked == 1);
    let (mut new, mut new_reader) = unix.open();
    new.write_all(&get("/new")).unwrap();
    let mut rest = Vec::new();
    assert_eq!(idle_reader.read_to_end(&mut rest).unwrap(), 0);
    drop((idle, idle_reader));
    let reply = read_reply(&mut new_reader, false).unwrap();
    assert_eq!((reply.status, reply.body.as_slice()), (200, b"/new".as_slice()));
    let stats = server.stats();
    assert_eq!((stats.accepted, stats.reclaimed, stats.rejected), (2, 1, 0));
    drop((new, new_reader));
    assert!(server.shutdown());
}

#[cfg(feature = "tls")]
mod tls {
    use std::io::{BufReader, Read, Write};
    use std::net::TcpStream;
    use std::sync::Arc;

    use httpool::{Request, Response, Server};
    use rustls::pki_types::{CertificateDer, ServerName};

    use crate::common::PATIENCE;

    /// A server certificate for `localhost`, and a client that trusts it.
    fn setup() -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
        let (server, client, _) = setup_with(vec!["localhost".into()], rustls::DEFAULT_VERSIONS);
        (server, client)
    }

    /// A server certificate for `names` (`localhost` among them), and a
    /// client that trusts it and speaks `versions`; and the certificate's
    /// size.
    fn setup_with(
        names: Vec<String>,
        versions: &[&'static rustls::SupportedProtocolVersion],
    ) -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>, usize) {
        let cert = rcgen::generate_simple_self_signed(names).unwrap();
        let server =
            httpool::tls::config_from_pem(cert.cert.pem().as_bytes(), cert.key_pair.serialize_pem().as_bytes())
                .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from(cert.cert.der().to_vec())).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        (server, Arc::new(client), cert.cert.der().len())
    }

    type Client = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

    fn connect(addr: std::net::SocketAddr, config: &Arc<rustls::ClientConfig>) -> BufReader<Client> {
        let sock = TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(PATIENCE)).unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(config.clone(), name).unwrap();
        BufReader::new(rustls::StreamOwned::new(conn, sock))
    }

    /// Reads one response with a Content-Length body; returns (head, body).
    fn read_response(conn: &mut BufReader<Client>) -> (String, Vec<u8>) {
        use std::io::BufRead;
        let mut head = String::new();
        let mut line = String::new();
        while line != "\r\n" {
            line.clear();
            conn.read_line(&mut line).unwrap();
            head.push_str(&line);
        }
        let len: usize =
            head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).map_or(0, |v| v.trim().parse().unwrap());
        let mut body = vec![0; len];
        conn.read_exact(&mut body).unwrap();
        (head, body)
    }

    #[test]
    fn serves_https_with_keep_alive_and_parking_between_requests() {
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(2)
            .tls(server_config)
            .spawn(|req: &mut Request| match req.read_body(1 << 20) {
                Ok(body) if !body.is_empty() => Response::bytes(body),
                _ => Response::text(format!("secure {} tls={}", req.path(), req.is_tls())),
            })
            .unwrap();
        let mut conn = connect(server.local_addr(), &client_config);
        for i in 0..3 {
            let req = format!("GET /{i} HTTP/1.1\r\nHost: localhost\r\n\r\n");
            conn.get_mut().write_all(req.as_bytes()).unwrap();
            let (head, body) = read_response(&mut conn);
            assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
            assert_eq!(body, format!("secure /{i} tls=true").as_bytes());
            // Parked between requests: the next one must wake it.
            crate::common::wait_for(&server, "the connection to park", |s| s.parked == 1);
        }
        // Pipelined, and a body bigger than one TLS record.
        let big = vec![b'z'; 40_000];
        let mut req =
            format!("POST /big HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n", big.len()).into_bytes();
        req.extend_from_slice(&big);
        req.extend_from_slice(b"GET /after HTTP/1.1\r\nHost: localhost\r\n\r\n");
        conn.get_mut().write_all(&req).unwrap();
        assert_eq!(read_response(&mut conn).1, big);
        assert_eq!(read_response(&mut conn).1, b"secure /after tls=true");
        assert_eq!(server.stats().accepted, 1);
        assert!(server.shutdown());
    }

    /// A client that offers only ALPN `http/1.0` (as `curl --http1.0`
    /// does over HTTPS) is served HTTP/1.0: the server speaks it, so it
    /// must not refuse the handshake with `no_application_protocol` (RFC
    /// 7301 §3.2), which it did when its ALPN list held `http/1.1` alone.
    /// A client offering both gets `http/1.1`.
    #[test]
    fn a_client_offering_alpn_http_1_0_alone_is_served() {
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .tls(server_config)
            .spawn(|req: &mut Request| Response::text(format!("{} over {}", req.path(), req.version().as_str())))
            .unwrap();
        for (offered, agreed, request) in [
            (vec![b"http/1.0".to_vec()], b"http/1.0".as_slice(), "GET /old HTTP/1.0\r\n\r\n"),
            (
                vec![b"http/1.1".to_vec(), b"http/1.0".to_vec()],
                b"http/1.1",
                "GET /new HTTP/1.1\r\nHost: localhost\r\n\r\n",
            ),
        ] {
            let mut config = (*client_config).clone();
            config.alpn_protocols = offered;
            let mut conn = connect(server.local_addr(), &Arc::new(config));
            conn.get_mut().write_all(request.as_bytes()).expect("the handshake and the request");
            let (head, body) = read_response(&mut conn);
            assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
            assert_eq!(conn.get_ref().conn.alpn_protocol(), Some(agreed));
            let path = request.split(' ').nth(1).unwrap();
            let version = &request[request.find("HTTP/").unwrap()..][..8];
            assert_eq!(String::from_utf8(body).unwrap(), format!("{path} over {version}"));
        }
        assert!(server.shutdown());
    }

    /// A handshake flight larger than the room in the server's socket: the
    /// server sends part of it, parks, and must send the rest once the
    /// client has taken the first part, although the client sends nothing
    /// until the flight is whole (TLS 1.2). Parked watching for reads
    /// alone, it would wait for the client while the client waits for it,
    /// until the head deadline. Loopback sockets start with about 1 MB of
    /// send buffer and a large receive window, so the listener's send
    /// buffer (which its connections inherit) and the client's receive
    /// buffer are made small, and the certificate large (many names).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_handshake_flight_larger_than_the_socket_buffer_is_sent_whole() {
        let names = (0..600).map(|i| format!("name-{i:04}.of-a-large-certificate.localhost"));
        // TLS 1.2: a TLS 1.3 client sends a ChangeCipherSpec as soon as the
        // ServerHello comes, which woke the parked server.
        let (server_config, client_config, cert_len) =
            setup_with(std::iter::once("localhost".to_string()).chain(names).collect(), &[&rustls::version::TLS12]);
        assert!(cert_len > 20_000, "the certificate is {cert_len} bytes");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        rustix::net::sockopt::set_socket_send_buffer_size(&listener, 4096).unwrap();
        let server = Server::from_listener(listener)
            .workers(1)
            .max_workers(1)
            // Far past the client's patience: a stalled handshake fails the
            // test, not the deadline's 408.
            .head_timeout(std::time::Duration::from_secs(600))
            .tls(server_config)
            .spawn(|_: &mut Request| Response::text("whole"))
            .unwrap();
        // The client's receive window small too, before it connects: else
        // its buffer takes the whole flight at once.
        use rustix::net::{AddressFamily, SocketType, sockopt};
        let sock = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
        sockopt::set_socket_recv_buffer_size(&sock, 4096).unwrap();
        rustix::net::connect(&sock, &server.local_addr()).unwrap();
        let sock = TcpStream::from(sock);
        sock.set_read_timeout(Some(PATIENCE)).unwrap();
        let client = rustls::ClientConnection::new(client_config, ServerName::try_from("localhost").unwrap()).unwrap();
        let mut conn = BufReader::new(rustls::StreamOwned::new(client, sock));
        conn.get_mut().write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let (head, body) = read_response(&mut conn);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert_eq!(body, b"whole");
        assert!(server.shutdown());
    }

    /// A handshake, and a chunked body, on the least worker stack
    /// (`worker_stack_size(0)` is raised to `MIN_WORKER_STACK_SIZE`).
    #[test]
    fn serves_https_on_the_least_worker_stack() {
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(1)
            .max_workers(1)
            .worker_stack_size(0)
            .tls(server_config)
            .spawn(|req: &mut Request| Response::bytes(req.read_body(1 << 20).unwrap_or_default()))
            .unwrap();
        let mut conn = connect(server.local_addr(), &client_config);
        let req = b"POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
        conn.get_mut().write_all(req).unwrap();
        let (head, body) = read_response(&mut conn);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert_eq!(body, b"hello");
        assert!(server.shutdown());
    }

    /// Each piece of a TLS record makes the socket readable without giving
    /// the worker a byte of plaintext. A client sending a record of its body
    /// a byte at a time (waiting up to 100 ms for an answer between bytes)
    /// must still meet the body deadline: `408` long before the record is
    /// whole, not a worker held for as long as the client keeps dribbling.
    #[test]
    fn a_tls_record_trickled_a_byte_at_a_time_meets_the_body_deadline() {
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(2)
            .tls(server_config)
            // The handler reads the body (nothing is collected first).
            .body_buffer_bytes(0)
            .body_read_timeout(std::time::Duration::from_millis(300))
            .body_timeout(std::time::Duration::from_millis(600))
            .spawn(|req: &mut Request| match req.read_body(1 << 20) {
                Ok(body) => Response::bytes(body),
                Err(_) => Response::status(400),
            })
            .unwrap();
        let mut conn = connect(server.local_addr(), &client_config);
        // A first exchange completes the handshake and reads the session
        // tickets, so that the next bytes from the server are an answer.
        conn.get_mut().write_all(b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\nok").unwrap();
        assert_eq!(read_response(&mut conn).1, b"ok");
        let head = b"POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n";
        conn.get_mut().write_all(head).unwrap();
        // One record of body, held back and sent by hand.
        let stream = conn.get_mut();
        stream.conn.writer().write_all(b"1e\r\nthirty bytes of chunked body!!\r\n").unwrap();
        let mut record = Vec::new();
        stream.conn.write_tls(&mut record).unwrap();
        stream.sock.set_read_timeout(Some(std::time::Duration::from_millis(100))).unwrap();
        let mut sent = 0;
        for byte in &record[..record.len() - 1] {
            stream.sock.write_all(&[*byte]).unwrap();
            sent += 1;
            if matches!(stream.sock.peek(&mut [0u8; 1]), Ok(n) if n > 0) {
                break;
            }
        }
        assert!(sent < record.len() - 1, "no answer while {} record bytes were trickled", record.len() - 1);
        stream.sock.set_read_timeout(Some(PATIENCE)).unwrap();
        let (head, _) = read_response(&mut conn);
        assert!(head.starts_with("HTTP/1.1 408 "), "{head}");
        assert!(server.shutdown());
    }

    /// A head that stops short over TLS: at the head deadline the monitor
    /// answers `408` (its record flushed before the write side shuts), then
    /// the session ends cleanly: close_notify, the end of stream.
    #[test]
    fn a_tls_head_past_its_deadline_gets_408_then_a_clean_end() {
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(1)
            .tls(server_config)
            .head_timeout(std::time::Duration::from_millis(200))
            .spawn(|_: &mut Request| Response::text("ok"))
            .unwrap();
        let mut conn = connect(server.local_addr(), &client_config);
        // A first exchange completes the handshake.
        conn.get_mut().write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        assert_eq!(read_response(&mut conn).1, b"ok");
        conn.get_mut().write_all(b"GET / HTTP/1.1\r\nHost: local").unwrap();
        let (head, _) = read_response(&mut conn);
        assert!(head.starts_with("HTTP/1.1 408 "), "{head}");
        let mut rest = Vec::new();
        let end = conn.read_to_end(&mut rest);
        assert!(end.is_ok() && rest.is_empty(), "{end:?}, {rest:?}");
        drop(conn);
        assert_eq!(server.stats().timeouts, 1);
        assert!(server.shutdown());
    }

    /// Half of the record that carries the next request on a kept-alive
    /// connection is a request begun, as the first bytes of a plain head
    /// are: the idle deadline does not close the connection under it, and
    /// at the head deadline the client gets `408`, as over TCP. The half
    /// is in rustls, not in the socket, so the monitor's look for a request
    /// there found none, and the connection was closed as idle at the idle
    /// deadline (close_notify, the end of stream): the request was lost
    /// while its record was still arriving.
    #[test]
    fn half_a_record_on_a_kept_alive_tls_connection_is_a_head_begun_not_an_idle_connection() {
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(1)
            .tls(server_config)
            .idle_timeout(std::time::Duration::from_millis(100))
            .head_timeout(std::time::Duration::from_millis(600))
            .spawn(|req: &mut Request| Response::text(req.path().to_string()))
            .unwrap();
        let mut conn = connect(server.local_addr(), &client_config);
        conn.get_ref().sock.set_nodelay(true).unwrap();
        conn.get_mut().write_all(b"GET /warm HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        assert_eq!(read_response(&mut conn).1, b"/warm");
        // The next request's record, half of it sent at once.
        let stream = conn.get_mut();
        stream.conn.writer().write_all(b"GET /next HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let mut record = Vec::new();
        stream.conn.write_tls(&mut record).unwrap();
        stream.sock.write_all(&record[..record.len() / 2]).unwrap();
        // What the server does next: the end of the session, or an answer.
        let mut got = Vec::new();
        let mut buf = [0u8; 512];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => panic!("{e} after {:?}", String::from_utf8_lossy(&got)),
            }
        }
        assert!(got.starts_with(b"HTTP/1.1 408 "), "closed under half a request: {:?}", String::from_utf8_lossy(&got));
        assert!(server.shutdown());
    }

    /// An answer after which the server closes ends the session with
    /// close_notify (RFC 8446 §6.1), whether the close is at once or
    /// lingering: by it a close-delimited body (a stream to an HTTP/1.0
    /// client) is known whole (RFC 9112 §9.8). It was dropped without one.
    #[test]
    fn an_answer_that_closes_ends_the_session_with_close_notify() {
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(1)
            .tls(server_config)
            .spawn(|_: &mut Request| Response::stream(|w| w.write_all(b"streamed")))
            .unwrap();
        for req in [
            &b"GET / HTTP/1.0\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            b"GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n",
        ] {
            let mut conn = connect(server.local_addr(), &client_config);
            conn.get_mut().write_all(req).unwrap();
            let mut all = Vec::new();
            let end = conn.read_to_end(&mut all);
            assert!(end.is_ok(), "{end:?} after {:?}", String::from_utf8_lossy(&all));
            assert!(all.ends_with(b"streamed") || all.ends_with(b"0\r\n\r\n"), "{:?}", String::from_utf8_lossy(&all));
        }
        assert!(server.shutdown());
    }

    /// A close-delimited answer cut short by its body's code ends the
    /// session without close_notify, at once or lingering (a request behind
    /// it): with one, the client took the truncated body for the whole.
    #[test]
    fn a_close_delimited_answer_cut_short_does_not_end_the_session_cleanly() {
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(1)
            .tls(server_config)
            .spawn(|_: &mut Request| {
                Response::stream(|w| {
                    w.write_all(b"partial")?;
                    w.flush()?;
                    Err(std::io::Error::other("backend died"))
                })
            })
            .unwrap();
        for req in [&b"GET /a HTTP/1.0\r\n\r\n"[..], b"GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n"] {
            let mut conn = connect(server.local_addr(), &client_config);
            conn.get_mut().write_all(req).unwrap();
            let mut all = Vec::new();
            let end = conn.read_to_end(&mut all);
            assert!(all.ends_with(b"\r\n\r\npartial"), "{:?}", String::from_utf8_lossy(&all));
            let shown = String::from_utf8_lossy(&all);
            assert_eq!(end.map_err(|e| e.kind()), Err(std::io::ErrorKind::UnexpectedEof), "{shown}");
        }
        assert!(server.shutdown());
    }

    /// A TLS 1.3 key update between requests is taken, and the session
    /// goes on.
    #[test]
    fn a_key_update_between_requests_is_taken() {
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(1)
            .tls(server_config)
            .spawn(|req: &mut Request| Response::text(req.path().to_string()))
            .unwrap();
        let mut conn = connect(server.local_addr(), &client_config);
        conn.get_mut().write_all(b"GET /one HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        assert_eq!(read_response(&mut conn).1, b"/one");
        for i in 0..3 {
            conn.get_mut().conn.refresh_traffic_keys().unwrap();
            let req = format!("GET /k{i} HTTP/1.1\r\nHost: localhost\r\n\r\n");
            conn.get_mut().write_all(req.as_bytes()).unwrap();
            assert_eq!(read_response(&mut conn).1, format!("/k{i}").as_bytes());
        }
        assert!(server.shutdown());
    }

    /// A TLS client slow to read a large answer holds no worker either:
    /// the records it has not taken wait with the parked connection.
    #[test]
    fn a_tls_client_slow_to_read_a_large_answer_holds_no_worker() {
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(1)
            .tls(server_config)
            .write_timeout(std::time::Duration::from_secs(120))
            .spawn(|req: &mut Request| match req.path() {
                "/big" => Response::bytes(vec![b'z'; 32 << 20]),
                _ => Response::text("ok"),
            })
            .unwrap();
        let addr = server.local_addr();
        let mut slow = connect(addr, &client_config);
        slow.get_mut().write_all(b"GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        // The answer has begun (this also completes the handshake).
        let mut first = [0u8; 1];
        slow.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"H");
        let mut other = connect(addr, &client_config);
        other.get_mut().write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        assert_eq!(read_response(&mut other).1, b"ok");
        let (head, body) = read_response(&mut slow);
        assert!(head.starts_with("TTP/1.1 200 OK\r\n"), "{head}");
        assert_eq!(body.len(), 32 << 20);
        assert!(body.iter().all(|&b| b == b'z'));
        assert!(server.shutdown());
    }

    /// Saturated under `Overload::Reject`, a TLS server closes a new client
    /// without an answer: a plaintext `503` written into its handshake would
    /// only be garbage to it.
    #[test]
    fn a_tls_client_refused_for_overload_gets_no_plaintext_503() {
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .max_connections(1)
            .overload(httpool::Overload::Reject { retry_after: std::time::Duration::from_secs(1) })
            .tls(server_config)
            .spawn(|_: &mut Request| Response::text("x"))
            .unwrap();
        // One open connection saturates the server (part of its next head
        // sent: not idle, so not closed to make room).
        let mut held = connect(server.local_addr(), &client_config);
        held.get_mut().write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\n").unwrap();
        assert!(read_response(&mut held).0.starts_with("HTTP/1.1 200"));
        let mut sock = TcpStream::connect(server.local_addr()).unwrap();
        sock.set_read_timeout(Some(PATIENCE)).unwrap();
        // The start of a TLS ClientHello record.
        sock.write_all(&[0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00]).unwrap();
        // Closed (a reset counts: the ClientHello is unread), not left open
        // until the read timeout.
        let mut reply = Vec::new();
        match sock.read_to_end(&mut reply) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("not closed: {e}"),
        }
        assert!(reply.is_empty(), "wrote {:?} into a TLS handshake", String::from_utf8_lossy(&reply));
        assert_eq!(server.stats().rejected, 1);
        drop(held);
        assert!(server.shutdown());
    }

    /// At shutdown a request whose TLS record has partly arrived behind the
    /// one in flight is waited for and served, as over plain TCP. (The
    /// half record did not show as input: the answer in flight said
    /// `Connection: close` and the connection closed under the client,
    /// without close_notify.)
    #[test]
    fn at_shutdown_a_request_whose_tls_record_is_half_here_is_served() {
        use std::sync::{Mutex, mpsc};
        let (server_config, client_config) = setup();
        let (entered_tx, entered) = mpsc::channel::<()>();
        let (release, release_rx) = mpsc::channel::<()>();
        let (entered_tx, release_rx) = (Mutex::new(entered_tx), Mutex::new(release_rx));
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .tls(server_config)
            .spawn(move |req: &mut Request| {
                if req.path() == "/block" {
                    entered_tx.lock().unwrap().send(()).unwrap();
                    let _ = release_rx.lock().unwrap().recv_timeout(PATIENCE);
                }
                Response::text(req.path().to_string())
            })
            .unwrap();
        let mut conn = connect(server.local_addr(), &client_config);
        // Small writes go out at once (not held back until the server
        // acknowledges the last one).
        conn.get_ref().sock.set_nodelay(true).unwrap();
        // A first exchange completes the handshake and reads the tickets.
        conn.get_mut().write_all(b"GET /warm HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        assert_eq!(read_response(&mut conn).1, b"/warm");
        conn.get_mut().write_all(b"GET /block HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        entered.recv_timeout(PATIENCE).unwrap();
        server.signal().shutdown();
        // The next request's record, half of it sent now.
        let stream = conn.get_mut();
        stream.conn.writer().write_all(b"GET /next HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let mut record = Vec::new();
        stream.conn.write_tls(&mut record).unwrap();
        let half = record.len() / 2;
        stream.sock.write_all(&record[..half]).unwrap();
        release.send(()).unwrap();
        let (head, body) = read_response(&mut conn);
        assert_eq!(body, b"/block");
        assert!(!head.contains("Connection: close"), "{head}");
        conn.get_mut().sock.write_all(&record[half..]).unwrap();
        let (head, body) = read_response(&mut conn);
        assert_eq!(body, b"/next");
        assert!(head.contains("Connection: close\r\n"), "{head}");
        assert!(server.join());
    }

    /// A TLS connection whose handshake is done but which has sent no
    /// request yet (a browser's preconnect) is idle: shutdown closes it at
    /// once. (Counting every byte read since the last plaintext as a
    /// request begun held a worker until the end of the drain, then
    /// answered it `408`.)
    #[test]
    fn at_shutdown_a_tls_connection_with_no_request_yet_is_closed_at_once() {
        let (server_config, client_config) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .tls(server_config)
            .shutdown_grace(std::time::Duration::from_secs(6))
            .spawn(|_: &mut Request| Response::text("x"))
            .unwrap();
        let mut conn = connect(server.local_addr(), &client_config);
        let stream = conn.get_mut();
        while stream.conn.is_handshaking() {
            stream.conn.complete_io(&mut stream.sock).unwrap();
        }
        // The server has read the client's last handshake flight.
        crate::common::wait_for(&server, "the connection to park", |s| s.parked == 1);
        let began = std::time::Instant::now();
        assert!(server.shutdown());
        assert!(began.elapsed() < std::time::Duration::from_secs(2), "shutdown took {:?}", began.elapsed());
        let mut rest = Vec::new();
        let _ = conn.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
    }

    /// At shutdown, part of a record that never completes is a head begun:
    /// `408` at the head timeout, even with no limit on the drain. (It was
    /// waited for without limit: the worker, and `join`, never returned.)
    #[test]
    fn at_shutdown_a_tls_record_that_never_completes_gets_408_at_the_head_timeout() {
        use std::sync::{Mutex, mpsc};
        let (server_config, client_config) = setup();
        let (entered_tx, entered) = mpsc::channel::<()>();
        let (release, release_rx) = mpsc::channel::<()>();
        let (entered_tx, release_rx) = (Mutex::new(entered_tx), Mutex::new(release_rx));
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .tls(server_config)
            .shutdown_grace(std::time::Duration::MAX)
            .head_timeout(std::time::Duration::from_secs(1))
            .spawn(move |req: &mut Request| {
                if req.path() == "/block" {
                    entered_tx.lock().unwrap().send(()).unwrap();
                    let _ = release_rx.lock().unwrap().recv_timeout(PATIENCE);
                }
                Response::text(req.path().to_string())
            })
            .unwrap();
        let mut conn = connect(server.local_addr(), &client_config);
        conn.get_ref().sock.set_nodelay(true).unwrap();
        conn.get_mut().write_all(b"GET /block HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        entered.recv_timeout(PATIENCE).unwrap();
        server.signal().shutdown();
        let stream = conn.get_mut();
        stream.conn.writer().write_all(b"GET /next HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let mut record = Vec::new();
        stream.conn.write_tls(&mut record).unwrap();
        stream.sock.write_all(&record[..record.len() / 2]).unwrap();
        release.send(()).unwrap();
        assert_eq!(read_response(&mut conn).1, b"/block");
        let (head, _) = read_response(&mut conn);
        assert!(head.starts_with("HTTP/1.1 408 "), "{head}");
        assert!(server.join());
    }

    /// A server given a TLS configuration on a Unix domain socket must not
    /// serve plaintext: `Server::tls` asks for HTTPS, and a client on that
    /// socket got plain HTTP instead (`is_tls()` false), the configuration
    /// silently ignored. The server refuses to start instead.
    #[test]
    #[cfg(unix)]
    fn tls_on_a_unix_domain_socket_is_refused_not_served_in_plaintext() {
        let unix = crate::common::UnixPath::new("tls-unix");
        let (server_config, _) = setup();
        let started = Server::bind_unix(&unix.path)
            .unwrap()
            .workers(1)
            .tls(server_config)
            .spawn(|req: &mut Request| Response::text(format!("tls={}", req.is_tls())));
        let started = started.map(|server| {
            let (mut writer, mut reader) = unix.open();
            writer.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
            let mut reply = Vec::new();
            let _ = reader.read_to_end(&mut reply);
            assert!(server.shutdown());
            String::from_utf8_lossy(&reply).into_owned()
        });
        assert_eq!(started.map_err(|e| e.kind()), Err(std::io::ErrorKind::InvalidInput));
    }

    #[test]
    fn a_plaintext_client_on_the_tls_port_is_dropped() {
        let (server_config, _) = setup();
        let server = Server::bind("127.0.0.1:0")
            .unwrap()
            .workers(1)
            // Dropped for what it sent, not for a handshake never finished.
            .head_timeout(std::time::Duration::from_secs(600))
            .tls(server_config)
            .spawn(|_: &mut Request| Response::text("x"))
            .unwrap();
        let mut sock = TcpStream::connect(server.local_addr()).unwrap();
        sock.set_read_timeout(Some(PATIENCE)).unwrap();
        sock.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        // Dropped: the stream ends (a reset counts: the request is unread),
        // not left open until the read timeout.
        let mut reply = Vec::new();
        match sock.read_to_end(&mut reply) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("not dropped: {e} (got {:?})", String::from_utf8_lossy(&reply)),
        }
        // Nothing in plaintext: at most a TLS alert record (content type 21).
        assert!(
            reply.is_empty() || reply[0] == 0x15,
            "wrote {:?} to a plaintext client",
            String::from_utf8_lossy(&reply)
        );
        crate::common::wait_for(&server, "the connection closed", |s| s.open == 0);
        let stats = server.stats();
        assert_eq!((stats.requests, stats.timeouts), (0, 0), "{stats:?}");
        assert!(server.shutdown());
    }
}

#[cfg(feature = "http")]
#[test]
fn requests_convert_to_the_http_crate() {
    let server = Server::bind("127.0.0.1:0")
        .unwrap()
        .workers(1)
        .spawn(|req: &mut Request| {
            let head = req.to_http().unwrap();
            let answer = http::Response::builder()
                .status(202)
                .header("X-Seen", format!("{} {} {:?}", head.method(), head.uri(), head.headers()["x-a"]))
                .body(String::from("converted"))
                .unwrap();
            Response::from(answer)
        })
        .unwrap();
    let mut conn = connect(server.local_addr());
    send(&mut conn, b"PATCH /p?q=1 HTTP/1.1\r\nHost: h\r\nX-A: v\r\n\r\n");
    let reply = read_reply(&mut conn, false).unwrap();
    assert_eq!(reply.status, 202);
    assert_eq!(reply.header("x-seen"), Some("PATCH /p?q=1 \"v\""));
    assert_eq!(reply.body, b"converted");
    assert!(server.shutdown());
}
