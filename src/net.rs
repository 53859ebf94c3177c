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
    Tcp(mio::net::TcpListener),
    Unix(mio::net::UnixListener),
}

impl Listener {
    /// Non-blocking, and on Linux with `TCP_NODELAY` set once for every
    /// connection it accepts (they inherit it), saving a system call per
    /// connection.
    pub(crate) fn tcp(listener: std::net::TcpListener) -> io::Result<Listener> {
        listener.set_nonblocking(true)?;
        #[cfg(target_os = "linux")]
        rustix::net::sockopt::set_tcp_nodelay(&listener, true)?;
        Ok(Listener::Tcp(mio::net::TcpListener::from_std(listener)))
    }

    pub(crate) fn accept(&self) -> io::Result<(Stream, Peer)> {
        match self {
            Listener::Tcp(l) => {
                let (stream, addr) = l.accept()?;
                // Responses are written whole; small writes (streamed
                // chunks, the tail of a large body) must not wait for ACKs.
                #[cfg(not(target_os = "linux"))]
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

impl AsRawFd for Listener {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
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
        let Listener::Tcp(inner) = &listener else { unreachable!() };
        let _client = std::net::TcpStream::connect(inner.local_addr().unwrap()).unwrap();
        let (stream, _) = loop {
            match listener.accept() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                other => break other.unwrap(),
            }
        };
        let Stream::Tcp(stream) = stream else { unreachable!() };
        assert!(stream.nodelay().unwrap());
    }
}
