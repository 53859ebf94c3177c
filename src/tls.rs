//! HTTPS (feature `tls`): rustls over a non-blocking socket.
//!
//! A TLS connection parks like a plain one and keeps its session while
//! parked. Reads hand out the plaintext rustls has already decrypted before
//! touching the socket, so nothing decrypted is left behind when the
//! connection parks.

use std::io::{self, Read, Write};
use std::sync::Arc;

use mio::event::Source;
use mio::{Interest, Registry, Token};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};

use crate::config::FREE_PENDING_BYTES;
use crate::stats::{Budget, Held};

/// Builds a server configuration from a PEM certificate chain (leaf first)
/// and a PEM private key (PKCS#8, PKCS#1 or SEC1), with the ring provider,
/// TLS 1.2 and 1.3, and ALPN `http/1.1` (preferred) and `http/1.0`.
///
/// # Errors
///
/// `InvalidData` when the PEM holds no certificate or key, or rustls refuses
/// them.
///
/// # Examples
///
/// ```no_run
/// # fn main() -> std::io::Result<()> {
/// let config = httpool::tls::config_from_pem(
///     &std::fs::read("cert.pem")?,
///     &std::fs::read("key.pem")?,
/// )?;
/// let server = httpool::Server::bind("0.0.0.0:8443")?.tls(config);
/// # let _ = server;
/// # Ok(())
/// # }
/// ```
pub fn config_from_pem(cert_chain_pem: &[u8], key_pem: &[u8]) -> io::Result<Arc<ServerConfig>> {
    let invalid = |e: &dyn std::fmt::Display| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
    let certs =
        CertificateDer::pem_slice_iter(cert_chain_pem).collect::<Result<Vec<_>, _>>().map_err(|e| invalid(&e))?;
    if certs.is_empty() {
        return Err(invalid(&"no certificate in the PEM input"));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| invalid(&e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(&e))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| invalid(&e))?;
    // Every protocol served, the preferred first: a client that offers
    // `http/1.0` alone (`curl --http1.0`) is served HTTP/1.0 rather than
    // refused with `no_application_protocol`.
    config.alpn_protocols = vec![b"http/1.1".to_vec(), b"http/1.0".to_vec()];
    Ok(Arc::new(config))
}

/// Most encrypted bytes rustls keeps for the socket: one full record.
const TLS_BUFFER_LIMIT: usize = 16 * 1024;

/// How much a handshake's share of `max_pending_head_bytes` grows by at a
/// time: one record.
const HANDSHAKE_STEP: u64 = 16 * 1024;

/// A TLS session over a non-blocking TCP socket.
pub(crate) struct TlsStream {
    sock: mio::net::TcpStream,
    tls: ServerConnection,
    /// Where the bytes read from the socket stand in the client's records:
    /// part of a record rustls holds is input a read that would block does
    /// not show.
    records: RecordCursor,
    /// While the handshake is under way, what it has read and holds of
    /// the server-wide budget; `None` once it is over.
    handshake: Option<Handshake>,
    /// The socket's sending side is shut: records rustls still holds (a
    /// close_notify the full socket had no room for, an answer to the
    /// client's key update) can never go. Reads go on without them: a write
    /// would fail (`EPIPE`) and end a lingering close early, and its drop
    /// would then reset the connection under the answers.
    write_shut: bool,
}

/// Follows the record boundaries in the bytes a client sends (RFC 8446
/// §5.1: a 5-byte header whose last two bytes are the length of what
/// follows). Only lengths are read; rustls judges the records themselves.
#[derive(Debug, Default)]
struct RecordCursor {
    /// Header bytes of the next record received so far (0 to 4).
    header: [u8; 5],
    have: usize,
    /// Bytes of the current record's body still to come.
    left: usize,
}

impl RecordCursor {
    fn advance(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.left > 0 {
                let n = self.left.min(bytes.len());
                self.left -= n;
                bytes = &bytes[n..];
                continue;
            }
            let n = (5 - self.have).min(bytes.len());
            self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have == 5 {
                self.have = 0;
                self.left = usize::from(u16::from_be_bytes([self.header[3], self.header[4]]));
            }
        }
    }

    /// True between a record's first byte and its last.
    fn mid_record(&self) -> bool {
        self.have > 0 || self.left > 0
    }
}

/// The bytes a handshake under way has read from the socket, which bound
/// what rustls holds of it (a handshake message is kept until it is whole,
/// up to 64 KiB), and its share of `max_pending_head_bytes`: none up to
/// [`FREE_PENDING_BYTES`], then all it has read, taken before it is read.
#[derive(Debug)]
struct Handshake {
    budget: Budget,
    read: u64,
    share: Option<Held>,
}

impl Handshake {
    /// How many bytes may be read now (at least one), the share grown
    /// first when it is used up; `None` when the budget has no room.
    fn room(&mut self) -> Option<u64> {
        let allowed = self.share.as_ref().map_or(FREE_PENDING_BYTES as u64, Held::bytes);
        if self.read < allowed {
            return Some(allowed - self.read);
        }
        let wanted = allowed.max(self.read) + HANDSHAKE_STEP;
        match &mut self.share {
            Some(held) => self.budget.grow(held, wanted).then_some(())?,
            None => self.share = Some(self.budget.take(wanted)?),
        }
        Some(wanted - self.read)
    }
}

/// The socket, as rustls reads it: every byte read moves the cursor, and
/// during the handshake counts against its share of the budget.
struct Counted<'a> {
    sock: &'a mut mio::net::TcpStream,
    records: &'a mut RecordCursor,
    handshake: &'a mut Option<Handshake>,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let buf = match self.handshake.as_mut().map(Handshake::room) {
            None => buf,
            Some(Some(room)) => {
                let room = usize::try_from(room).unwrap_or(usize::MAX);
                let end = buf.len().min(room);
                &mut buf[..end]
            }
            Some(None) => return Err(io::Error::other("TLS handshake past the server-wide max_pending_head_bytes")),
        };
        let n = self.sock.read(buf)?;
        self.records.advance(&buf[..n]);
        if let Some(handshake) = self.handshake {
            handshake.read += n as u64;
        }
        Ok(n)
    }
}

impl TlsStream {
    /// A session over `sock`, whose handshake draws on `budget` past
    /// [`FREE_PENDING_BYTES`].
    pub(crate) fn new(sock: mio::net::TcpStream, config: Arc<ServerConfig>, budget: Budget) -> io::Result<TlsStream> {
        let mut tls = ServerConnection::new(config).map_err(io::Error::other)?;
        // rustls keeps encrypted records the socket did not take (64 KiB by
        // default), and a write it took counts as sent: those bytes are held
        // for a slow reader outside `max_unsent_bytes`. One record's worth
        // keeps that per-connection remainder small; the rest of an answer
        // waits in the connection's counted `Unsent`.
        tls.set_buffer_limit(Some(TLS_BUFFER_LIMIT));
        let handshake = Some(Handshake { budget, read: 0, share: None });
        Ok(TlsStream { sock, tls, records: RecordCursor::default(), handshake, write_shut: false })
    }

    /// True when the client has sent part of a record: a request (or a
    /// handshake message) is on its way although a read would block.
    pub(crate) fn input_begun(&self) -> bool {
        self.records.mid_record()
    }

    /// Copies bytes (records) waiting in the socket without taking them.
    pub(crate) fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.sock.peek(buf)
    }

    /// Writes the records rustls holds; `WouldBlock` when the socket is full.
    fn write_records(&mut self) -> io::Result<()> {
        while self.tls.wants_write() && !self.write_shut {
            if self.tls.write_tls(&mut self.sock)? == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
        }
        Ok(())
    }

    /// Sends `close_notify` (lost if the socket has no room for it), then
    /// half-closes the socket.
    pub(crate) fn shutdown_write(&mut self) -> io::Result<()> {
        self.close_notify();
        self.shutdown_write_torn()
    }

    /// Half-closes the socket without `close_notify`: the session ends
    /// truncated, as an answer cut short must (RFC 9112 §9.8).
    pub(crate) fn shutdown_write_torn(&mut self) -> io::Result<()> {
        self.write_shut = true;
        self.sock.shutdown(std::net::Shutdown::Write)
    }

    /// Sends `close_notify` (best effort: a full socket keeps it).
    pub(crate) fn close_notify(&mut self) {
        self.tls.send_close_notify();
        let _ = self.write_records();
    }
}

/// Best effort: a full socket leaves records for the next write or flush.
fn tolerate_full(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
        other => other,
    }
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.tls.reader().read(buf) {
                Ok(n) => return Ok(n),
                // The peer closed the socket without close_notify: treat as
                // end of stream; HTTP framing tells complete from cut short.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            // Handshake messages and alerts go out before we wait for more.
            tolerate_full(self.write_records())?;
            let mut sock = Counted { sock: &mut self.sock, records: &mut self.records, handshake: &mut self.handshake };
            if self.tls.read_tls(&mut sock)? == 0 {
                return Ok(0);
            }
            if let Err(e) = self.tls.process_new_packets() {
                let _ = self.write_records();
                return Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
            if self.handshake.is_some() && !self.tls.is_handshaking() {
                // Its share goes back.
                self.handshake = None;
            }
        }
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.write_shut {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        self.write_records()?;
        let n = self.tls.writer().write(buf)?;
        tolerate_full(self.write_records())?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_records()
    }
}

impl Source for TlsStream {
    fn register(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        self.sock.register(registry, token, interests)
    }

    fn reregister(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        self.sock.reregister(registry, token, interests)
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        self.sock.deregister(registry)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::sync::{Arc, mpsc};

    use super::{Handshake, RecordCursor, TlsStream};
    use crate::stats::Counters;

    /// A handshake reads its free allowance without a share, then takes
    /// one a record at a time before it reads, counting all it has read;
    /// with the budget spent it may read nothing more, and its share goes
    /// back with it.
    #[test]
    fn a_handshake_reads_its_allowance_free_then_takes_shares_before_it_reads() {
        const KIB: u64 = 1024;
        let counters = Counters::default();
        let pending = || counters.snapshot(0, 0, 0, Default::default(), 0).pending_head_bytes;
        let mut handshake = Handshake { budget: counters.pending_heads(40 * KIB), read: 0, share: None };
        assert_eq!((handshake.room(), pending()), (Some(4 * KIB), 0));
        handshake.read = 3 * KIB;
        assert_eq!((handshake.room(), pending()), (Some(KIB), 0));
        handshake.read = 4 * KIB;
        assert_eq!((handshake.room(), pending()), (Some(16 * KIB), 20 * KIB));
        handshake.read = 20 * KIB;
        assert_eq!((handshake.room(), pending()), (Some(16 * KIB), 36 * KIB));
        handshake.read = 36 * KIB;
        assert_eq!((handshake.room(), pending()), (None, 36 * KIB), "a share of 52 KiB is past the budget");
        drop(handshake);
        assert_eq!(pending(), 0);
    }

    /// After the write side shuts with close_notify still in the session
    /// (the client reads nothing, the socket is full), reads go on: a
    /// lingering close reads what the client still sends. The read used to
    /// try the held record first and fail (`EPIPE`), which ended the linger
    /// and reset the connection under the answer.
    #[test]
    fn reads_go_on_after_the_write_side_shuts_with_records_held() {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let server_config =
            super::config_from_pem(cert.cert.pem().as_bytes(), cert.key_pair.serialize_pem().as_bytes()).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.cert.der().clone()).unwrap();
        let client_config = Arc::new(
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth(),
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (go_on, told) = mpsc::channel::<()>();
        let (sent, sent_rx) = mpsc::channel::<()>();
        let client = std::thread::spawn(move || {
            let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
            let conn = rustls::ClientConnection::new(client_config, name).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, std::net::TcpStream::connect(addr).unwrap());
            tls.write_all(b"first").unwrap();
            told.recv().unwrap();
            // Sent while the server's answer fills the socket, unread.
            tls.write_all(b"second").unwrap();
            sent.send(()).unwrap();
            let _ = told.recv();
        });
        let (sock, _) = listener.accept().unwrap();
        let unbounded = crate::stats::Counters::default().pending_heads(u64::MAX);
        let handle = sock.try_clone().unwrap();
        // Blocking through the handshake and the first bytes.
        let mut server = TlsStream::new(mio::net::TcpStream::from_std(sock), server_config, unbounded).unwrap();
        let mut buf = [0u8; 64];
        let n = server.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"first");
        handle.set_nonblocking(true).unwrap();
        go_on.send(()).unwrap();
        sent_rx.recv().unwrap();
        let answer = [b'a'; 16 * 1024];
        while server.write(&answer).is_ok() {}
        server.shutdown_write().unwrap();
        assert!(server.tls.wants_write(), "close_notify went: the socket was not full");
        let read = server.read(&mut buf);
        assert_eq!(read.as_ref().map(|&n| &buf[..n]).map_err(std::io::Error::kind), Ok(&b"second"[..]));
        assert_eq!(server.write(b"x").map_err(|e| e.kind()), Err(std::io::ErrorKind::BrokenPipe));
        drop(go_on);
        client.join().unwrap();
    }

    /// Records split anywhere, headers included, and a record of length 0.
    #[test]
    fn the_record_cursor_finds_every_boundary_however_the_bytes_are_split() {
        let mut bytes = vec![23, 3, 3, 0, 4, b'a', b'b', b'c', b'd'];
        bytes.extend_from_slice(&[21, 3, 3, 0, 0]);
        bytes.extend_from_slice(&[23, 3, 3, 1, 0]);
        bytes.extend(std::iter::repeat_n(b'x', 256));
        let ends = [9, 14, bytes.len()];
        for split in 1..=bytes.len() {
            let mut cursor = RecordCursor::default();
            let mut at = 0;
            for piece in bytes.chunks(split) {
                cursor.advance(piece);
                at += piece.len();
                assert_eq!(cursor.mid_record(), !ends.contains(&at), "split {split}, at {at}");
            }
        }
        let mut cursor = RecordCursor::default();
        for (i, &b) in bytes.iter().enumerate() {
            cursor.advance(&[b]);
            assert_eq!(cursor.mid_record(), !ends.contains(&(i + 1)), "byte {i}");
        }
    }
}
