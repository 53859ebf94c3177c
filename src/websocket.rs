//! WebSockets that hold no thread (feature `websocket`): the handler is
//! called on the pool for each message, and between messages the
//! connection parks like an idle keep-alive one. tungstenite's protocol
//! layer reads the frames; a [`Sender`] (`Clone + Send + Sync`) pushes
//! messages from anywhere.
//!
//! ```
//! use httpool::websocket::{self, Message};
//! use httpool::{Request, Response};
//!
//! fn chat(req: &mut Request<'_>) -> Response {
//!     let (sender, resp) = websocket::accept(req, |ws, message| {
//!         if let Message::Text(text) = message {
//!             let _ = ws.send(Message::text(format!("you said: {text}")));
//!         }
//!     });
//!     // Keep the sender (in state, in another thread) to push messages
//!     // later. None: not a handshake, and `resp` tells the client why.
//!     if let Some(sender) = sender {
//!         let _ = sender.send(Message::text("welcome"));
//!     }
//!     resp
//! }
//! # let _ = chat;
//! ```
//!
//! The server answers pings, pings a silent client every
//! [`WebSocket::ping_interval`] and closes one silent for
//! [`WebSocket::idle_timeout`], refuses a message or frame over
//! [`WebSocket::max_message_size`] (close code 1009), queues at most
//! [`WebSocket::queue_limit`] bytes for a client that does not take them
//! (past it the connection is cut and the senders are told), and closes
//! every socket with 1001 at shutdown. [`Response::upgrade`] stays for
//! protocols of your own, on a worker of their own.

use std::fmt;
use std::io::{self, Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tungstenite::error::{CapacityError, Error as WsError, ProtocolError};
use tungstenite::handshake::derive_accept_key;
use tungstenite::protocol::frame::Frame;
use tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tungstenite::protocol::{Role, WebSocketConfig, WebSocketContext};

pub use crate::feed::Closed;
use crate::feed::{self, Chunk, Feed, Session, Unstarted};
use crate::request::Request;
use crate::response::{Content, Payload, Response};
pub use tungstenite::protocol::{CloseFrame, Message};

/// How often a silent client is pinged, by default.
pub const DEFAULT_PING_INTERVAL: Duration = Duration::from_secs(30);

/// How long a client may stay silent (not even answering pings) before it
/// is closed, by default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest message (and frame) a client may send, by default.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 1024 * 1024;

/// The bytes queued for a client that has not taken them past which it is
/// cut, by default.
pub const DEFAULT_QUEUE_LIMIT: usize = 256 * 1024;

/// The read buffer of tungstenite's codec for one connection: a parked
/// connection keeps it, so it is small; a larger message grows it.
const READ_BUFFER: usize = 512;

/// The settings of a WebSocket: build one, then [`WebSocket::accept`].
#[derive(Clone, Copy, Debug)]
pub struct WebSocket {
    ping_interval: Option<Duration>,
    idle_timeout: Duration,
    max_message_size: usize,
    queue_limit: usize,
}

impl Default for WebSocket {
    fn default() -> WebSocket {
        WebSocket::new()
    }
}

impl WebSocket {
    /// The defaults: [`DEFAULT_PING_INTERVAL`], [`DEFAULT_IDLE_TIMEOUT`],
    /// [`DEFAULT_MAX_MESSAGE_SIZE`], [`DEFAULT_QUEUE_LIMIT`].
    pub const fn new() -> WebSocket {
        WebSocket {
            ping_interval: Some(DEFAULT_PING_INTERVAL),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            queue_limit: DEFAULT_QUEUE_LIMIT,
        }
    }

    /// How often a silent client is pinged (`None`: never, and then the
    /// idle timeout is not watched either).
    pub const fn ping_interval(mut self, every: Option<Duration>) -> WebSocket {
        self.ping_interval = every;
        self
    }

    /// How long a client may send nothing (pongs count) before it is closed.
    pub const fn idle_timeout(mut self, after: Duration) -> WebSocket {
        self.idle_timeout = after;
        self
    }

    /// The largest message or frame a client may send; a larger one closes
    /// the connection with 1009.
    pub const fn max_message_size(mut self, bytes: usize) -> WebSocket {
        self.max_message_size = bytes;
        self
    }

    /// The bytes queued for a client that does not take them past which
    /// it is cut.
    pub const fn queue_limit(mut self, bytes: usize) -> WebSocket {
        self.queue_limit = bytes;
        self
    }

    /// Accepts the handshake in `req` (RFC 6455 §4.2): the sending half and
    /// the `101` for the handler to return. `on_message` is called on the
    /// pool for every text or binary message, and for the client's close
    /// (the server answers it). Not a valid handshake: no sender, and the
    /// answer that tells the client what to change (`405` to another method
    /// than `GET`; `426` to a request for no upgrade to WebSocket, or for
    /// another version than 13; `400` without a proper key).
    pub fn accept(
        self,
        req: &Request<'_>,
        on_message: impl FnMut(&Sender, Message) + Send + 'static,
    ) -> (Option<Sender>, Response) {
        let key = match handshake_key(req) {
            Ok(key) => key,
            Err(refused) => return (None, refused.answer()),
        };
        let feed = Arc::new(Feed::new(self.queue_limit, self.ping_interval));
        let sender = Sender { feed: Arc::clone(&feed) };
        let config = WebSocketConfig::default()
            .read_buffer_size(READ_BUFFER)
            .write_buffer_size(0)
            .max_message_size(Some(self.max_message_size))
            .max_frame_size(Some(self.max_message_size));
        let session = Ws {
            ctx: WebSocketContext::new(Role::Server, Some(config)),
            sender: sender.clone(),
            on_message: Box::new(on_message),
            idle_timeout: self.idle_timeout,
            unfinished: 0,
        };
        let resp = Response::status(101)
            .with_body(Content(Payload::Events(Unstarted::new(feed), Some(Box::new(session)))))
            .with_header("upgrade", "websocket")
            .with_header("sec-websocket-accept", derive_accept_key(key.as_bytes()));
        (Some(sender), resp)
    }
}

/// [`WebSocket::new`]`.accept(req, on_message)`.
pub fn accept(
    req: &Request<'_>,
    on_message: impl FnMut(&Sender, Message) + Send + 'static,
) -> (Option<Sender>, Response) {
    WebSocket::new().accept(req, on_message)
}

/// Why a request is no WebSocket handshake.
enum Refused {
    Method,
    NoUpgrade,
    Version,
    Key,
}

impl Refused {
    /// The status that tells the client what to change.
    fn answer(self) -> Response {
        // A 426 names the protocol it requires, in an `Upgrade` field,
        // which goes with the `upgrade` connection option (RFC 9110 §7.8,
        // §15.5.22).
        let required =
            || Response::status(426).with_header("upgrade", "websocket").with_header("connection", "upgrade");
        match self {
            Refused::Method => Response::status(405).with_header("allow", "GET"),
            Refused::NoUpgrade => required(),
            Refused::Version => required().with_header("sec-websocket-version", "13"),
            Refused::Key => Response::status(400),
        }
    }
}

/// The key of a WebSocket handshake.
fn handshake_key<'r>(req: &'r Request<'_>) -> Result<&'r str, Refused> {
    if req.method() != "GET" {
        return Err(Refused::Method);
    }
    if !req.is_upgrade_to("websocket") {
        return Err(Refused::NoUpgrade);
    }
    if req.header("sec-websocket-version") != Some("13") {
        return Err(Refused::Version);
    }
    req.header("sec-websocket-key").filter(|key| is_nonce(key)).ok_or(Refused::Key)
}

/// A WebSocket key: 16 bytes in base64 (RFC 6455 §4.1), 22 characters and
/// `==`, the last character before them carrying no bits past the 16th
/// byte.
fn is_nonce(key: &str) -> bool {
    let is_base64 = |b: &u8| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/';
    match key.as_bytes() {
        [digits @ .., last, b'=', b'='] if digits.len() == 21 => {
            digits.iter().all(is_base64) && matches!(last, b'A' | b'Q' | b'g' | b'w')
        }
        _ => false,
    }
}

/// The sending half of a WebSocket: `Clone + Send + Sync`, used from any
/// thread, in the message handler too.
#[derive(Clone)]
pub struct Sender {
    feed: Arc<Feed>,
}

impl Sender {
    /// Queues `message`; the server writes it when the socket can take it.
    /// A [`Message::Close`] closes the socket (after what was queued
    /// before), as [`Sender::close`] does. Fails once the socket takes no
    /// more ([`Closed`]); the message that puts the queue past its limit
    /// cuts the client.
    pub fn send(&self, message: Message) -> Result<(), Closed> {
        let frame = match message {
            Message::Text(text) => Frame::message(text, OpCode::Data(Data::Text), true),
            Message::Binary(bytes) => Frame::message(bytes, OpCode::Data(Data::Binary), true),
            Message::Ping(bytes) => Frame::ping(bytes),
            Message::Pong(bytes) => Frame::pong(bytes),
            Message::Close(frame) => {
                let (code, reason) = frame.map_or((1000, String::new()), |f| (f.code.into(), f.reason.to_string()));
                return self.close(code, &reason);
            }
            Message::Frame(frame) => frame,
        };
        self.feed.push(Chunk::Owned(encode(frame)))
    }

    /// Closes the socket with `code` and `reason` once what was queued
    /// before is out; the server then waits a moment for the client's
    /// close. Fails when it was closed already.
    pub fn close(&self, code: u16, reason: &str) -> Result<(), Closed> {
        if let Some(closed) = self.feed.closed() {
            return Err(closed);
        }
        self.feed.ask_close(code, reason.to_string());
        Ok(())
    }

    /// Why the socket takes no more messages, once it does not.
    pub fn closed(&self) -> Option<Closed> {
        self.feed.closed()
    }

    /// True once the socket takes no more messages.
    pub fn is_closed(&self) -> bool {
        self.closed().is_some()
    }
}

impl fmt::Debug for Sender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender").field("closed", &self.closed()).finish()
    }
}

fn encode(frame: Frame) -> Vec<u8> {
    let mut out = Vec::with_capacity(frame.len());
    // Into a vector: nothing fails.
    let _ = frame.format(&mut out);
    out
}

/// One message to many sockets, its frame made once and shared by their
/// queues. A socket that falls behind is cut without slowing the others;
/// one that closed is dropped at the next send.
#[derive(Default)]
pub struct Broadcast {
    senders: Mutex<Vec<Sender>>,
}

impl Broadcast {
    /// A broadcast to nobody yet.
    pub fn new() -> Broadcast {
        Broadcast::default()
    }

    /// Adds a socket.
    pub fn add(&self, sender: Sender) {
        self.list().push(sender);
    }

    /// Sends `message` (text or binary) to every socket; returns how many
    /// took it.
    pub fn send(&self, message: &Message) -> usize {
        let frame = match message {
            Message::Text(text) => Frame::message(text.clone(), OpCode::Data(Data::Text), true),
            Message::Binary(bytes) => Frame::message(bytes.clone(), OpCode::Data(Data::Binary), true),
            _ => return self.list().iter().filter(|s| s.send(message.clone()).is_ok()).count(),
        };
        feed::broadcast(self.list(), encode(frame).into(), |sender| &sender.feed)
    }

    /// The sockets at the last send (and those added since).
    pub fn len(&self) -> usize {
        self.list().len()
    }

    /// True when there is no socket.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn list(&self) -> MutexGuard<'_, Vec<Sender>> {
        self.senders.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Broadcast {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Broadcast").field("sockets", &self.len()).finish()
    }
}

/// A WebSocket on its parked connection: tungstenite's protocol state and
/// the application's handler.
/// The application's handler of a socket's messages.
type OnMessage = Box<dyn FnMut(&Sender, Message) + Send>;

struct Ws {
    ctx: WebSocketContext,
    sender: Sender,
    on_message: OnMessage,
    idle_timeout: Duration,
    /// Bytes read since the last whole frame, as near as one input tells:
    /// what tungstenite holds of a message on its way.
    unfinished: usize,
}

/// What tungstenite reads from and writes to: the bytes the connection
/// read, then "would block"; what it writes is appended for the connection
/// to send.
struct Pipe<'a> {
    input: &'a [u8],
    out: &'a mut Vec<u8>,
}

impl Read for Pipe<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.input.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = self.input.read(buf)?;
        Ok(n)
    }
}

impl Write for Pipe<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Ws {
    /// Calls the application; what it sent in answer goes out next, before
    /// anything the session writes after the message (a close's answer).
    /// A panic there closes the socket (1011) as the client's protocol
    /// error does.
    fn deliver(&mut self, message: Message, out: &mut Vec<u8>) -> bool {
        let (sender, on_message) = (&self.sender, &mut self.on_message);
        let called = catch_unwind(AssertUnwindSafe(|| on_message(sender, message)));
        if called.is_err() {
            error!("WebSocket message handler panicked; closing with 1011");
        }
        self.sender.feed.take_queued(out);
        called.is_ok()
    }

    fn close_with(&mut self, code: CloseCode, reason: &str, pipe: &mut Pipe<'_>) {
        let frame = CloseFrame { code, reason: reason.into() };
        let _ = self.ctx.close(pipe, Some(frame));
    }
}

impl Session for Ws {
    fn input(&mut self, input: &[u8], out: &mut Vec<u8>) -> Option<usize> {
        let mut pipe = Pipe { input, out };
        let mut whole = false;
        loop {
            match self.ctx.read(&mut pipe) {
                Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => whole = true,
                Ok(close @ Message::Close(_)) => {
                    // tungstenite answers the close; the connection then ends.
                    self.deliver(close, pipe.out);
                    let _ = self.ctx.flush(&mut pipe);
                    return None;
                }
                Ok(message) => {
                    whole = true;
                    if !self.deliver(message, pipe.out) {
                        self.close_with(CloseCode::Error, "", &mut pipe);
                        return None;
                    }
                }
                Err(WsError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Pongs and close answers queued while reading go out.
                    let _ = self.ctx.flush(&mut pipe);
                    self.unfinished = if whole { 0 } else { self.unfinished.saturating_add(input.len()) };
                    return Some(self.unfinished);
                }
                Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => return None,
                Err(WsError::Capacity(CapacityError::MessageTooLong { .. })) => {
                    debug!("WebSocket message past max_message_size; closing with 1009");
                    self.close_with(CloseCode::Size, "message too big", &mut pipe);
                    return None;
                }
                Err(WsError::Utf8(_)) => {
                    debug!("WebSocket text not UTF-8; closing with 1007");
                    self.close_with(CloseCode::Invalid, "", &mut pipe);
                    return None;
                }
                Err(WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake)) => return None,
                Err(e) => {
                    debug!("WebSocket protocol error: {e}; closing with 1002");
                    self.close_with(CloseCode::Protocol, "", &mut pipe);
                    return None;
                }
            }
        }
    }

    fn silent(&mut self, silent: Duration, out: &mut Vec<u8>) -> bool {
        let mut pipe = Pipe { input: &[], out };
        if silent >= self.idle_timeout {
            self.close_with(CloseCode::Away, "idle", &mut pipe);
            return false;
        }
        let _ = self.ctx.write(&mut pipe, Message::Ping(Default::default()));
        let _ = self.ctx.flush(&mut pipe);
        true
    }

    fn close(&mut self, code: u16, reason: &str, out: &mut Vec<u8>) {
        let mut pipe = Pipe { input: &[], out };
        self.close_with(CloseCode::from(code), reason, &mut pipe);
    }
}
