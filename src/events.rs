//! Server-sent events that hold no thread: a handler answers with an event
//! stream and keeps its sending half; the connection parks between events,
//! like an idle keep-alive connection, and whichever worker is polling
//! writes the events when they come and the socket can take them.
//!
//! ```
//! use httpool::events::{self, Event};
//! use httpool::{Request, Response};
//!
//! fn subscribe(_req: &mut Request<'_>) -> Response {
//!     let (events, resp) = events::channel();
//!     // Kept anywhere (in state, in another thread), used from any thread.
//!     std::thread::spawn(move || {
//!         for i in 0..3 {
//!             if events.send(&Event::data(format!("tick {i}")).with_id(i.to_string())).is_err() {
//!                 return; // The client went away.
//!             }
//!         }
//!     });
//!     resp
//! }
//! # let _ = subscribe;
//! ```
//!
//! A [`Broadcast`] sends each event to every subscriber, formatting it once.
//!
//! # Bounds
//!
//! Each stream queues at most [`EventStream::queue_limit`] bytes of events
//! the client has not taken yet (64 KiB by default). A client that falls
//! that far behind is cut: its connection closes, its sender's next
//! [`EventSender::send`] fails, and nobody else waits for it. A stream
//! whose client took everything costs its connection a few hundred bytes
//! and no thread. When every sender of a stream is dropped, the server ends
//! the stream (the last chunk of a chunked body; an HTTP/1.0 client's
//! connection closes); at shutdown streams are ended the same way.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

pub use crate::feed::Closed;
use crate::feed::{self, Chunk, Feed, Unstarted};
use crate::request::Request;
use crate::response::{Content, Payload, Response};

/// How long a stream may go without a byte before the server writes a
/// keep-alive comment: proxies and load balancers close connections idle
/// for a minute or so, and a client learns of a dead connection only by
/// a write.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The bytes of events a stream queues for a client that has not taken
/// them, by default ([`EventStream::queue_limit`]).
pub const DEFAULT_QUEUE_LIMIT: usize = 64 * 1024;

/// One event, formatted as the HTML standard's `text/event-stream` says:
/// `event:`, `id:`, `retry:` and one `data:` line per line of data.
///
/// ```
/// use std::time::Duration;
/// use httpool::events::Event;
///
/// let event = Event::data("line one\nline two").with_event("note").with_id("7").with_retry(Duration::from_secs(3));
/// assert_eq!(event.as_bytes(), b"event: note\nid: 7\nretry: 3000\ndata: line one\ndata: line two\n\n");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Event {
    event: Option<String>,
    id: Option<String>,
    retry: Option<u128>,
    data: Option<String>,
    comment: Option<String>,
    /// The event formatted, kept up to date by each builder method.
    bytes: Vec<u8>,
}

impl Event {
    /// An event carrying `data` (each of its lines a `data:` line; a
    /// client joins them with `\n`).
    pub fn data(data: impl Into<String>) -> Event {
        Event::empty().set(|e| e.data = Some(data.into()))
    }

    /// A comment line (`: text`), which clients ignore: a keep-alive, or a
    /// note for someone reading the stream by hand.
    pub fn comment(text: impl Into<String>) -> Event {
        Event::empty().set(|e| e.comment = Some(text.into()))
    }

    /// Only a `retry:` field: how long a client waits before reconnecting.
    pub fn retry(after: Duration) -> Event {
        Event::empty().with_retry(after)
    }

    fn empty() -> Event {
        Event { event: None, id: None, retry: None, data: None, comment: None, bytes: Vec::new() }
    }

    /// The event's type (`event:`; a client's `message` when absent). Line
    /// breaks in it are dropped: a field is one line.
    pub fn with_event(self, name: impl Into<String>) -> Event {
        self.set(|e| e.event = Some(one_line(name.into())))
    }

    /// The event's id (`id:`), which the client sends back as
    /// `Last-Event-ID` when it reconnects ([`last_event_id`]). Line breaks
    /// and NUL characters are dropped: a client ignores an id with a NUL.
    pub fn with_id(self, id: impl Into<String>) -> Event {
        self.set(|e| e.id = Some(one_line(id.into()).replace('\0', "")))
    }

    /// How long the client waits before reconnecting (`retry:`, in
    /// milliseconds).
    pub fn with_retry(self, after: Duration) -> Event {
        self.set(|e| e.retry = Some(after.as_millis()))
    }

    /// The event as it goes on the wire, ending with its blank line.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn set(mut self, change: impl FnOnce(&mut Event)) -> Event {
        change(&mut self);
        self.bytes = self.format();
        self
    }

    fn format(&self) -> Vec<u8> {
        let mut out = String::new();
        if let Some(comment) = &self.comment {
            for line in lines(comment) {
                out.push_str(": ");
                out.push_str(line);
                out.push('\n');
            }
        }
        if let Some(event) = &self.event {
            out.push_str("event: ");
            out.push_str(event);
            out.push('\n');
        }
        if let Some(id) = &self.id {
            out.push_str("id: ");
            out.push_str(id);
            out.push('\n');
        }
        if let Some(retry) = self.retry {
            out.push_str(&format!("retry: {retry}\n"));
        }
        if let Some(data) = &self.data {
            for line in lines(data) {
                out.push_str("data: ");
                out.push_str(line);
                out.push('\n');
            }
        }
        out.push('\n');
        out.into_bytes()
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Event").field(&String::from_utf8_lossy(&self.bytes)).finish()
    }
}

/// The lines of `text` as the event-stream format splits them: at CRLF,
/// LF or CR. Empty text is one empty line.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let text = rest?;
        match text.find(['\r', '\n']) {
            Some(at) => {
                let skip = if text[at..].starts_with("\r\n") { 2 } else { 1 };
                rest = Some(&text[at + skip..]);
                Some(&text[..at])
            }
            None => {
                rest = None;
                Some(text)
            }
        }
    })
}

fn one_line(text: String) -> String {
    if text.contains(['\r', '\n']) { text.replace(['\r', '\n'], "") } else { text }
}

/// The `Last-Event-ID` a reconnecting client sends: the id of the last
/// event it received, to resume from.
pub fn last_event_id<'r>(req: &'r Request<'_>) -> Option<&'r str> {
    req.header("last-event-id")
}

/// The settings of an event stream: build one, then [`EventStream::open`].
#[derive(Clone, Copy, Debug)]
pub struct EventStream {
    queue_limit: usize,
    keep_alive: Option<Duration>,
}

impl Default for EventStream {
    fn default() -> EventStream {
        EventStream::new()
    }
}

impl EventStream {
    /// A stream with the defaults: [`DEFAULT_QUEUE_LIMIT`],
    /// [`DEFAULT_KEEP_ALIVE`].
    pub const fn new() -> EventStream {
        EventStream { queue_limit: DEFAULT_QUEUE_LIMIT, keep_alive: Some(DEFAULT_KEEP_ALIVE) }
    }

    /// The bytes of events queued for a client that has not taken them
    /// past which it is cut (at least one event is always accepted).
    pub const fn queue_limit(mut self, bytes: usize) -> EventStream {
        self.queue_limit = bytes;
        self
    }

    /// How long the stream may stay silent before the server writes a
    /// keep-alive comment (`None`: never).
    pub const fn keep_alive(mut self, every: Option<Duration>) -> EventStream {
        self.keep_alive = every;
        self
    }

    /// The sending half, and the `200` `text/event-stream` response to
    /// return from the handler (with `Cache-Control: no-cache`). Events
    /// sent before the response goes out are queued.
    pub fn open(self) -> (EventSender, Response) {
        let feed = Arc::new(Feed::new(self.queue_limit, self.keep_alive));
        let resp = Response::status(200)
            .with_body(Content(Payload::Events(Unstarted::new(Arc::clone(&feed)), None)))
            .with_content_type("text/event-stream")
            .with_header("cache-control", "no-cache");
        (EventSender::new(feed), resp)
    }
}

/// [`EventStream::new`]`.open()`: an event stream with the default
/// settings.
pub fn channel() -> (EventSender, Response) {
    EventStream::new().open()
}

/// The sending half of an event stream: `Clone + Send + Sync`, used from any
/// thread. The stream ends when every clone is dropped.
pub struct EventSender {
    feed: Arc<Feed>,
}

impl EventSender {
    fn new(feed: Arc<Feed>) -> EventSender {
        EventSender { feed }
    }

    /// Queues `event` for the client; the server writes it when the socket
    /// can take it. Fails once the stream can take no more ([`Closed`]);
    /// the event that puts the queue past its limit cuts the client.
    pub fn send(&self, event: &Event) -> Result<(), Closed> {
        self.feed.push(Chunk::Owned(event.as_bytes().to_vec()))
    }

    /// Why the stream takes no more events, once it does not.
    pub fn closed(&self) -> Option<Closed> {
        self.feed.closed()
    }

    /// True once the stream takes no more events.
    pub fn is_closed(&self) -> bool {
        self.closed().is_some()
    }
}

impl Clone for EventSender {
    fn clone(&self) -> EventSender {
        self.feed.add_sender();
        EventSender::new(Arc::clone(&self.feed))
    }
}

impl Drop for EventSender {
    fn drop(&mut self) {
        self.feed.drop_sender();
    }
}

impl fmt::Debug for EventSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSender").field("closed", &self.closed()).finish()
    }
}

/// One event stream per subscriber, each event formatted once and shared by
/// all their queues. A subscriber that falls behind is cut (see the
/// [module](self) docs) without slowing the others; one that went away is
/// dropped at the next send.
///
/// ```
/// use std::sync::Arc;
/// use httpool::events::{Broadcast, Event};
///
/// let news = Arc::new(Broadcast::new());
/// // In a handler: `return news.subscribe();`
/// let resp = news.subscribe();
/// assert_eq!(news.send(&Event::data("hello")), 1);
/// # let _ = resp;
/// ```
pub struct Broadcast {
    settings: EventStream,
    subscribers: Mutex<Vec<EventSender>>,
}

impl Default for Broadcast {
    fn default() -> Broadcast {
        Broadcast::new()
    }
}

impl Broadcast {
    /// A broadcast whose streams have the default settings.
    pub fn new() -> Broadcast {
        Broadcast::with(EventStream::new())
    }

    /// A broadcast whose streams have `settings`.
    pub fn with(settings: EventStream) -> Broadcast {
        Broadcast { settings, subscribers: Mutex::new(Vec::new()) }
    }

    /// A new subscriber: the response for the handler to return.
    pub fn subscribe(&self) -> Response {
        self.join().1
    }

    /// A new subscriber, with a sender of its own as well (to send it what
    /// it missed since its `Last-Event-ID`, say), and the response.
    pub fn join(&self) -> (EventSender, Response) {
        let (sender, resp) = self.settings.open();
        self.list().push(sender.clone());
        (sender, resp)
    }

    /// Sends `event` to every subscriber; returns how many took it.
    pub fn send(&self, event: &Event) -> usize {
        feed::broadcast(self.list(), Arc::from(event.as_bytes()), |sender| &sender.feed)
    }

    /// The subscribers at the last send (and those who joined since).
    pub fn subscribers(&self) -> usize {
        self.list().len()
    }

    fn list(&self) -> MutexGuard<'_, Vec<EventSender>> {
        self.subscribers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Broadcast {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Broadcast").field("subscribers", &self.subscribers()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed::{Notify, Taken};

    #[test]
    fn events_are_formatted_as_the_html_standard_says() {
        assert_eq!(Event::data("hi").as_bytes(), b"data: hi\n\n");
        assert_eq!(Event::data("").as_bytes(), b"data: \n\n");
        assert_eq!(Event::data("a\r\nb\rc\nd").as_bytes(), b"data: a\ndata: b\ndata: c\ndata: d\n\n");
        assert_eq!(Event::data("a\n").as_bytes(), b"data: a\ndata: \n\n");
        assert_eq!(Event::comment("ping").as_bytes(), b": ping\n\n");
        assert_eq!(Event::retry(Duration::from_millis(1500)).as_bytes(), b"retry: 1500\n\n");
        let named = Event::data("x").with_event("up\ndate").with_id("1\r\n2\0");
        assert_eq!(named.as_bytes(), b"event: update\nid: 12\ndata: x\n\n");
    }

    #[derive(Default)]
    struct Counted(Mutex<Vec<usize>>);

    impl Notify for Counted {
        fn notify(&self, token: usize) {
            self.0.lock().unwrap().push(token);
        }
    }

    fn attached(limit: usize) -> (EventSender, Arc<Feed>, Arc<Counted>) {
        let (sender, resp) = EventStream::new().queue_limit(limit).open();
        let Payload::Events(unstarted, _) = resp.body else { panic!("not an event stream") };
        let feed = unstarted.start();
        let told = Arc::new(Counted::default());
        let server: Arc<dyn Notify> = told.clone();
        feed.attach(Arc::downgrade(&server), 7);
        (sender, feed, told)
    }

    #[test]
    fn a_parked_stream_is_woken_once_by_the_first_event_and_not_again_until_it_parks_again() {
        let (sender, feed, told) = attached(1024);
        assert!(feed.arm());
        sender.send(&Event::data("a")).unwrap();
        sender.send(&Event::data("b")).unwrap();
        assert_eq!(*told.0.lock().unwrap(), [7]);
        // Not armed while something is queued.
        assert!(!feed.arm());
        let mut out = Vec::new();
        assert!(matches!(feed.take(&mut out, true), Taken::Some));
        assert_eq!(out, b"12\r\ndata: a\n\ndata: b\n\n\r\n");
        assert!(matches!(feed.take(&mut out, true), Taken::Nothing));
        assert!(feed.arm());
        drop(sender);
        assert_eq!(*told.0.lock().unwrap(), [7, 7]);
        assert!(matches!(feed.take(&mut out, true), Taken::Ended));
        assert!(!feed.arm());
    }

    #[test]
    fn a_client_that_falls_behind_is_cut_and_its_sender_told() {
        let (sender, feed, told) = attached(30);
        assert!(feed.arm());
        sender.send(&Event::data("0123456789")).unwrap();
        // One event past the limit is always taken alone...
        let big = Event::data("x".repeat(100));
        assert_eq!(sender.send(&big), Err(Closed::FellBehind));
        assert_eq!(sender.closed(), Some(Closed::FellBehind));
        assert!(matches!(feed.take(&mut Vec::new(), false), Taken::Cut));
        assert_eq!(*told.0.lock().unwrap(), [7]);
        // ...even a large one, on an empty queue.
        let (sender, _feed, _told) = attached(30);
        sender.send(&big).unwrap();
    }

    #[test]
    fn a_closed_stream_refuses_events_and_wakes_nobody() {
        let (sender, feed, told) = attached(1024);
        assert!(feed.arm());
        feed.close(Closed::Gone);
        assert_eq!(sender.send(&Event::data("a")), Err(Closed::Gone));
        assert!(sender.is_closed());
        drop(sender);
        assert!(told.0.lock().unwrap().is_empty());
    }

    #[test]
    fn a_broadcast_formats_once_and_drops_subscribers_that_went_away() {
        let news = Broadcast::with(EventStream::new().queue_limit(64));
        let first = news.subscribe();
        let second = news.subscribe();
        assert_eq!(news.send(&Event::data("hello")), 2);
        let Payload::Events(feed, _) = &first.body else { panic!("not an event stream") };
        let feed = feed.feed();
        feed.close(Closed::Gone);
        assert_eq!(news.send(&Event::data("again")), 1);
        assert_eq!(news.subscribers(), 1);
        let Payload::Events(feed, _) = &second.body else { panic!("not an event stream") };
        let feed = feed.feed();
        let mut out = Vec::new();
        assert!(matches!(feed.take(&mut out, false), Taken::Some));
        assert_eq!(out, b"data: hello\n\ndata: again\n\n");
    }
}
