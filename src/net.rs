//! The sockets the server listens on and serves: TCP, Unix domain, and (with
//! the `tls` feature) TLS over TCP. The engine sees only
//! [`Listener`] and [`Stream`].

use std::fmt;
use std::io::{self, Read, Write};
use std::net::SocketAddr;

use mio::event::Source;
use mio::{Interest, Registry, Token};

use crate::sys::{self, ListenerWatch, TcpConn};

/// Who is on the other end of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Peer {
    Ip(SocketAddr),
    /// A Unix domain socket client.
    #[cfg(unix)]
    Local,
}

impl Peer {
    pub(crate) fn ip(self) -> Option<SocketAddr> {
        match self {
            Peer::Ip(addr) => Some(addr),
            #[cfg(unix)]
            Peer::Local => None,
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Ip(addr) => addr.fmt(f),
            #[cfg(unix)]
            Peer::Local => f.write_str("unix-socket peer"),
        }
    }
}

/// A listening socket.
#[derive(Debug)]
pub(crate) enum Listener {
    Tcp {
        socket: mio::net::TcpListener,
        /// How the platform set it up (see [`sys::set_up_tcp_listener`]).
        setup: sys::ListenerSetup,
    },
    #[cfg(unix)]
    Unix {
        /// Its file, when the server bound it: held only to be dropped,
        /// removed before the socket closes (fields drop in order), so
        /// that no server can take the path over between the two.
        _file: Option<SocketFile>,
        socket: mio::net::UnixListener,
    },
}

impl Listener {
    /// Non-blocking, with the options of [`sys::set_up_tcp_listener`].
    pub(crate) fn tcp(listener: std::net::TcpListener) -> io::Result<Listener> {
        let setup = sys::set_up_tcp_listener(&listener)?;
        Ok(Listener::Tcp { socket: mio::net::TcpListener::from_std(listener), setup })
    }

    /// Non-blocking, and on Apple systems never raising `SIGPIPE`.
    /// `file`: the socket's file, removed when the listener closes.
    #[cfg(unix)]
    pub(crate) fn unix(listener: std::os::unix::net::UnixListener, file: Option<SocketFile>) -> io::Result<Listener> {
        sys::set_up_unix_listener(&listener)?;
        Ok(Listener::Unix { _file: file, socket: mio::net::UnixListener::from_std(listener) })
    }

    /// True when an accepted connection has bytes to read already, so that
    /// reading it at once beats waiting for readiness.
    pub(crate) fn delivers_data(&self) -> bool {
        matches!(self, Listener::Tcp { setup: sys::ListenerSetup { deferred: true, .. }, .. })
    }

    /// What one seat registers to hear of new connections.
    pub(crate) fn watch(&self) -> io::Result<ListenerWatch> {
        match self {
            Listener::Tcp { socket, .. } => ListenerWatch::tcp(socket),
            #[cfg(unix)]
            Listener::Unix { socket, .. } => ListenerWatch::unix(socket),
        }
    }

    pub(crate) fn accept(&self) -> io::Result<(Stream, Peer)> {
        match self {
            Listener::Tcp { socket: l, setup } => {
                let (stream, addr) = l.accept()?;
                let stream = TcpConn::accepted(stream);
                // Responses are written whole; small writes (streamed
                // chunks, the tail of a large body) must not wait for ACKs.
                if !setup.nodelay_inherited {
                    let _ = stream.set_nodelay(true);
                }
                Ok((Stream::Tcp(stream), Peer::Ip(addr)))
            }
            #[cfg(unix)]
            Listener::Unix { socket, .. } => {
                let (stream, _) = socket.accept()?;
                Ok((Stream::Unix(stream), Peer::Local))
            }
        }
    }
}

/// The file of a Unix domain socket the server bound: removed when the
/// server is done with it (dropped), unless another socket took its path
/// in the meantime.
#[cfg(unix)]
#[derive(Debug)]
pub(crate) struct SocketFile {
    path: std::path::PathBuf,
    /// Device and inode: the file bound, not whatever has its path later.
    id: (u64, u64),
}

#[cfg(unix)]
impl SocketFile {
    /// Binds `path`. A socket file there that nothing listens on (left by
    /// a server that is gone) is replaced; anything else there fails with
    /// `AddrInUse`, as the bind does.
    pub(crate) fn bind(path: &std::path::Path) -> io::Result<(std::os::unix::net::UnixListener, SocketFile)> {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::net::UnixListener;

        let listener = match UnixListener::bind(path) {
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && SocketFile::is_stale(path) => {
                debug!("{}: replacing a socket file nothing listens on", path.display());
                std::fs::remove_file(path)?;
                UnixListener::bind(path)?
            }
            bound => bound?,
        };
        let meta = std::fs::symlink_metadata(path)?;
        // Absolute: the process may change its directory meanwhile.
        let path = std::path::absolute(path)?;
        Ok((listener, SocketFile { path, id: (meta.dev(), meta.ino()) }))
    }

    /// True when `path` is a socket and connecting to it is refused: no
    /// process listens on it. (The connection is non-blocking: on Linux a
    /// live listener with a full backlog answers `EAGAIN`, and neither
    /// holds the bind nor looks stale. macOS and the BSDs refuse a
    /// connection to a full backlog: there it looks stale.)
    fn is_stale(path: &std::path::Path) -> bool {
        use std::os::unix::fs::FileTypeExt;

        let socket = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
        socket && matches!(mio::net::UnixStream::connect(path), Err(e) if e.kind() == io::ErrorKind::ConnectionRefused)
    }
}

#[cfg(unix)]
impl Drop for SocketFile {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;

        let ours = std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.id);
        if !ours {
            return;
        }
        if let Err(e) = std::fs::remove_file(&self.path) {
            warn!("{}: removing the socket file failed: {e}", self.path.display());
        }
    }
}

/// A connection's socket.
pub(crate) enum Stream {
    Tcp(TcpConn),
    #[cfg(unix)]
    Unix(mio::net::UnixStream),
    #[cfg(feature = "tls")]
    Tls(Box<crate::tls::TlsStream>),
}

impl Stream {
    /// See [`Transport::holds_input`](crate::io::Transport::holds_input).
    pub(crate) fn holds_input(&self) -> bool {
        #[cfg(feature = "tls")]
        if let Stream::Tls(_) = self {
            return true;
        }
        false
    }

    /// See [`Transport::input_begun`](crate::io::Transport::input_begun).
    pub(crate) fn input_begun(&self) -> bool {
        #[cfg(feature = "tls")]
        if let Stream::Tls(tls) = self {
            return tls.input_begun();
        }
        false
    }

    /// True when bytes the client sent wait in the socket, unread (a
    /// peek; nothing is taken). A Unix domain socket is peeked on Linux
    /// and macOS only (`sys::peek`); elsewhere it reports none.
    pub(crate) fn has_pending_input(&self) -> bool {
        let mut byte = [0u8; 1];
        let peeked = match self {
            Stream::Tcp(s) => s.peek(&mut byte),
            #[cfg(unix)]
            Stream::Unix(s) => sys::peek(s, &mut byte),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.peek(&mut byte),
        };
        matches!(peeked, Ok(n) if n > 0)
    }

    /// True for a Unix domain socket.
    pub(crate) fn is_unix(&self) -> bool {
        #[cfg(unix)]
        if let Stream::Unix(_) = self {
            return true;
        }
        false
    }

    /// True for a TLS stream.
    pub(crate) fn is_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        if let Stream::Tls(_) = self {
            return true;
        }
        false
    }

    /// Half-closes the sending side (the peer reads end of stream).
    pub(crate) fn shutdown_write(&mut self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown_write(),
            #[cfg(unix)]
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Write),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.shutdown_write(),
        };
    }

    /// Half-closes the sending side after an answer cut short: over TLS
    /// without close_notify (see [`crate::io::Transport::shutdown_write_torn`]).
    pub(crate) fn shutdown_write_torn(&mut self) {
        match self {
            #[cfg(feature = "tls")]
            Stream::Tls(s) => {
                let _ = s.shutdown_write_torn();
            }
            _ => self.shutdown_write(),
        }
    }

    /// Over TLS, sends close_notify before the stream is dropped (best
    /// effort: a full socket loses it); nothing on other streams.
    pub(crate) fn close_notify(&mut self) {
        #[cfg(feature = "tls")]
        if let Stream::Tls(s) = self {
            s.close_notify();
        }
    }
}

/// Calls `$body` with `$s` bound to the inner socket of any variant.
macro_rules! each {
    ($stream:expr, $s:ident => $body:expr) => {
        match $stream {
            Stream::Tcp($s) => $body,
            #[cfg(unix)]
            Stream::Unix($s) => $body,
            #[cfg(feature = "tls")]
            Stream::Tls($s) => $body,
        }
    };
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        each!(self, s => s.read(buf))
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        each!(self, s => s.write(buf))
    }

    /// For TLS: sends the records rustls still holds (`WouldBlock` when the
    /// socket is full). Plain sockets hold nothing back.
    fn flush(&mut self) -> io::Result<()> {
        each!(self, s => s.flush())
    }
}

impl Source for Stream {
    fn register(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        each!(self, s => s.register(registry, token, interests))
    }

    fn reregister(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        each!(self, s => s.reregister(registry, token, interests))
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        each!(self, s => s.deregister(registry))
    }
}

/// Our end of a loopback connection, as the listener hands it over, and
/// the client's end (for the tests of the modules that take a `Stream`).
#[cfg(test)]
pub(crate) fn socket_pair() -> (Stream, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let theirs = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (ours, _) = listener.accept().unwrap();
    ours.set_nonblocking(true).unwrap();
    (Stream::Tcp(TcpConn::accepted(mio::net::TcpStream::from_std(ours))), theirs)
}

#[cfg(test)]
// Windows without TLS has one kind of listener and of stream.
#[allow(irrefutable_let_patterns)]
mod tests {
    use super::*;

    #[test]
    fn accepted_tcp_connections_have_nodelay() {
        let listener = Listener::tcp(std::net::TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
        let Listener::Tcp { socket: inner, .. } = &listener else { unreachable!() };
        let mut client = std::net::TcpStream::connect(inner.local_addr().unwrap()).unwrap();
        // A deferred accept waits for the client's first bytes.
        client.write_all(b"G").unwrap();
        let (stream, _) = loop {
            match listener.accept() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                other => break other.unwrap(),
            }
        };
        let Stream::Tcp(stream) = stream else { unreachable!() };
        assert!(stream.nodelay().unwrap());
    }

    /// A listener made without `SO_NOSIGPIPE` (as one from another process
    /// may be) gets it, and so do the connections it accepts.
    #[cfg(target_vendor = "apple")]
    #[test]
    fn apple_listeners_and_their_connections_never_raise_sigpipe() {
        use rustix::net::sockopt::{set_socket_nosigpipe, socket_nosigpipe};
        let bare = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        set_socket_nosigpipe(&bare, false).unwrap();
        let listener = Listener::tcp(bare).unwrap();
        let Listener::Tcp { socket: inner, .. } = &listener else { unreachable!() };
        assert!(socket_nosigpipe(inner).unwrap());
        let _client = std::net::TcpStream::connect(inner.local_addr().unwrap()).unwrap();
        let (stream, _) = loop {
            match listener.accept() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                other => break other.unwrap(),
            }
        };
        let Stream::Tcp(stream) = stream else { unreachable!() };
        assert!(socket_nosigpipe(&stream).unwrap());
    }

    /// A listen backlog set again takes effect (Linux; macOS counts the
    /// backlog differently, Windows keeps the first one).
    #[test]
    #[cfg(target_os = "linux")]
    fn the_listen_backlog_can_be_changed_on_a_listening_socket() {
        use std::net::TcpStream;
        use std::time::Duration;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // Linux holds one more than the backlog; nobody accepts here.
        sys::set_backlog(&listener, 1).unwrap();
        let held: Vec<_> = (0..2).map(|_| TcpStream::connect(addr).unwrap()).collect();
        // The next handshake is dropped (and retried only a second later).
        assert!(TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err());
        sys::set_backlog(&listener, 16).unwrap();
        let more = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
        drop((held, more));
    }

    /// Linux only, and not under `--cfg httpool_portable` (which takes
    /// macOS's path); everywhere else a listener delivers no data.
    #[test]
    fn tcp_listeners_defer_accepts_on_linux() {
        let listener = Listener::tcp(std::net::TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
        assert_eq!(listener.delivers_data(), cfg!(all(target_os = "linux", not(httpool_portable))));
    }
}
