//! The sockets the server listens on and serves: TCP, Unix domain, and (with
//! the `tls` feature) TLS over TCP. The engine sees only
//! [`Listener`] and [`Stream`].

use std::fmt;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};

use mio::event::Source;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

/// Who is on the other end of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Peer {
    Ip(SocketAddr),
    /// A Unix domain socket client.
    Local,
}

impl Peer {
    pub(crate) fn ip(self) -> Option<SocketAddr> {
        match self {
            Peer::Ip(addr) => Some(addr),
            Peer::Local => None,
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Ip(addr) => addr.fmt(f),
            Peer::Local => f.write_str("unix-socket peer"),
        }
    }
}

/// A listening socket.
#[derive(Debug)]
pub(crate) enum Listener {
    Tcp {
        socket: mio::net::TcpListener,
        /// The kernel hands over a connection only once its first bytes
        /// have arrived (see [`Listener::tcp`]).
        deferred: bool,
    },
    Unix(mio::net::UnixListener),
}

impl Listener {
    /// Non-blocking, and on Linux with `TCP_NODELAY` set once for every
    /// connection it accepts (they inherit it), saving a system call per
    /// connection, and with accepts deferred until the client has sent
    /// something (see [`defer_accept`]). Elsewhere, and on Linux built with
    /// `--cfg httpool_portable` (macOS's paths, tested on Linux CI),
    /// `TCP_NODELAY` is set on each accepted socket and accepts are not
    /// deferred.
    pub(crate) fn tcp(listener: std::net::TcpListener) -> io::Result<Listener> {
        listener.set_nonblocking(true)?;
        no_sigpipe(&listener)?;
        #[cfg(all(target_os = "linux", not(httpool_portable)))]
        rustix::net::sockopt::set_tcp_nodelay(&listener, true)?;
        #[cfg(all(target_os = "linux", not(httpool_portable)))]
        let deferred = defer_accept(&listener).is_ok();
        #[cfg(not(all(target_os = "linux", not(httpool_portable))))]
        let deferred = false;
        Ok(Listener::Tcp { socket: mio::net::TcpListener::from_std(listener), deferred })
    }

    /// Non-blocking, and on Apple systems never raising `SIGPIPE` (see
    /// [`no_sigpipe`]).
    pub(crate) fn unix(listener: std::os::unix::net::UnixListener) -> io::Result<Listener> {
        listener.set_nonblocking(true)?;
        no_sigpipe(&listener)?;
        Ok(Listener::Unix(mio::net::UnixListener::from_std(listener)))
    }

    /// True when an accepted connection has bytes to read already, so that
    /// reading it at once beats waiting for readiness.
    pub(crate) fn delivers_data(&self) -> bool {
        matches!(self, Listener::Tcp { deferred: true, .. })
    }

    pub(crate) fn accept(&self) -> io::Result<(Stream, Peer)> {
        match self {
            Listener::Tcp { socket: l, .. } => {
                let (stream, addr) = l.accept()?;
                // Responses are written whole; small writes (streamed
                // chunks, the tail of a large body) must not wait for ACKs.
                #[cfg(not(all(target_os = "linux", not(httpool_portable))))]
                let _ = stream.set_nodelay(true);
                Ok((Stream::Tcp(stream.into()), Peer::Ip(addr)))
            }
            Listener::Unix(l) => {
                let (stream, _) = l.accept()?;
                Ok((Stream::Unix(stream), Peer::Local))
            }
        }
    }
}

/// Sets `SO_NOSIGPIPE` on Apple systems, where a write to a connection the
/// peer has reset otherwise raises `SIGPIPE` (Linux: std sends with
/// `MSG_NOSIGNAL`), and the default action of that signal ends the process.
/// Rust's `main` ignores it, but a host process (a C program embedding a
/// Rust library, a listener handed over by launchd) may not. Sockets std
/// creates have it set already; one made elsewhere may not. Accepted
/// sockets inherit it from the listener (XNU's `sonewconn` copies it).
#[cfg(target_vendor = "apple")]
fn no_sigpipe(listener: &impl std::os::fd::AsFd) -> io::Result<()> {
    Ok(rustix::net::sockopt::set_socket_nosigpipe(listener, true)?)
}

#[cfg(not(target_vendor = "apple"))]
fn no_sigpipe(_: &impl std::os::fd::AsFd) -> io::Result<()> {
    Ok(())
}

/// How long the kernel holds a silent new connection back: after this it
/// hands it over anyway, and the head deadline applies as usual.
#[cfg(all(target_os = "linux", not(httpool_portable)))]
const DEFER_ACCEPT_SECS: libc::c_int = 1;

/// Sets `TCP_DEFER_ACCEPT` (tcp(7)): the kernel completes the handshake but
/// queues the connection for `accept` only when its first bytes arrive (or
/// [`DEFER_ACCEPT_SECS`] pass). A new connection then needs no readiness
/// registration and no wake-up before its first read, which measured 22.7
/// against 30.1 µs of server CPU per connection without keep-alive
/// (`wrk -t2 -c64`, 2 cores) and 1.17× the requests per second. A
/// connection that never sends costs no slot, no descriptor and no timer
/// until the kernel lets it through.
///
/// Neither std (unstable `tcp_deferaccept`) nor rustix wraps this option,
/// hence `unsafe` (one of two blocks in the crate; the other is in `pool.rs`).
#[cfg(all(target_os = "linux", not(httpool_portable)))]
#[allow(unsafe_code)]
fn defer_accept(listener: &std::net::TcpListener) -> io::Result<()> {
    let secs = DEFER_ACCEPT_SECS;
    // SAFETY: setsockopt(2) reads exactly `optlen` bytes from `optval`,
    // which points at `secs`, a live `c_int` on this stack frame of that
    // size; the descriptor is the listener's own, open while it is borrowed.
    // The call writes no memory of ours.
    let rc = unsafe {
        libc::setsockopt(
            listener.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&raw const secs).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

impl AsRawFd for Listener {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Listener::Tcp { socket, .. } => socket.as_raw_fd(),
            Listener::Unix(l) => l.as_raw_fd(),
        }
    }
}

/// A connection's socket. Plain TCP is kept as a std socket (registered
/// with its seat through its descriptor) so that `io::copy` from a file can
/// use `sendfile`.
pub(crate) enum Stream {
    Tcp(std::net::TcpStream),
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
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Write),
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Write),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.shutdown_write(),
        };
    }
}

/// Calls `$body` with `$s` bound to the inner socket of any variant.
macro_rules! each {
    ($stream:expr, $s:ident => $body:expr) => {
        match $stream {
            Stream::Tcp($s) => $body,
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

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        each!(self, s => s.as_raw_fd())
    }
}

impl Source for Stream {
    fn register(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => SourceFd(&s.as_raw_fd()).register(registry, token, interests),
            Stream::Unix(s) => s.register(registry, token, interests),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.register(registry, token, interests),
        }
    }

    fn reregister(&mut self, registry: &Registry, token: Token, interests: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => SourceFd(&s.as_raw_fd()).reregister(registry, token, interests),
            Stream::Unix(s) => s.reregister(registry, token, interests),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.reregister(registry, token, interests),
        }
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => SourceFd(&s.as_raw_fd()).deregister(registry),
            Stream::Unix(s) => s.deregister(registry),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.deregister(registry),
        }
    }
}

#[cfg(test)]
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

    /// Not under `--cfg httpool_portable`, which takes macOS's path.
    #[test]
    fn tcp_listeners_defer_accepts_on_linux() {
        let listener = Listener::tcp(std::net::TcpListener::bind("127.0.0.1:0").unwrap()).unwrap();
        assert_eq!(listener.delivers_data(), cfg!(all(target_os = "linux", not(httpool_portable))));
    }
}
