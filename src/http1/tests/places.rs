//! Places among the workers for bodies that hold one while written
//! (`max_streaming_workers`).

use super::*;

/// What became of a body's own code: run, dropped.
#[derive(Clone, Default)]
struct Told {
    ran: Arc<std::sync::atomic::AtomicBool>,
    dropped: Arc<std::sync::atomic::AtomicBool>,
}

impl Told {
    fn ran(&self) -> bool {
        self.ran.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn dropped(&self) -> bool {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A reader of `ok`, or a stream's closure writing it, that tells whether
/// it ran and was dropped.
struct Telling(Told, bool);

impl Read for Telling {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.ran.store(true, std::sync::atomic::Ordering::Relaxed);
        let n = match std::mem::replace(&mut self.1, true) {
            false => 2.min(buf.len()),
            true => 0,
        };
        buf[..n].copy_from_slice(&b"ok"[..n]);
        Ok(n)
    }
}

impl Drop for Telling {
    fn drop(&mut self) {
        self.0.dropped.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A stream (`/stream`) or a reader (`/reader`) whose code tells `told`.
fn telling(told: &Told) -> impl Fn(&mut Request<'_>) -> Response + use<> {
    let told = told.clone();
    move |req: &mut Request<'_>| {
        let tell = Telling(told.clone(), false);
        match req.path() {
            "/reader" => Response::reader(tell, None),
            _ => Response::stream(move |out| {
                let mut tell = tell;
                std::io::copy(&mut tell, out).map(drop)
            }),
        }
    }
}

/// Every place for a streaming worker taken (`Server::max_streaming_workers`):
/// an answer whose body would hold the worker while it is written (a
/// stream's closure, a reader) is not sent. The client gets `503` with
/// `Retry-After` and the connection closes (the requests pipelined behind
/// it are not served); the closure or reader is dropped, never run.
#[test]
fn a_body_that_would_hold_the_worker_with_no_place_left_is_a_503() {
    for path in ["/stream", "/reader"] {
        let told = Told::default();
        let handler = telling(&told);
        let mut s = Served::new(&handler);
        let request = format!("GET {path} HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n");
        let mut io = Script::new(&[request.as_bytes()]);
        io.streaming_full = true;
        let ended = s.run(&mut io, None);
        assert_eq!(redact_dates(&io.written), BUSY, "{path}");
        assert!(ended.closed, "{path}");
        assert!(!told.ran() && told.dropped(), "{path}");
        assert_eq!(s.counters.snapshot(0, 0, 0, Default::default(), 0).rejected, 1, "{path}");
    }
}

/// With a place free, a streamed body takes it while it is written and
/// gives it back before the connection goes on: the next request on it
/// is served as any.
#[test]
fn a_streamed_body_gives_its_place_back_when_written() {
    for path in ["/stream", "/reader"] {
        let told = Told::default();
        let handler = telling(&told);
        let mut s = Served::new(&handler);
        let request = format!("GET {path} HTTP/1.1\r\nHost: a\r\n\r\n");
        let mut io = Script::new(&[request.as_bytes()]);
        s.run(&mut io, None);
        let wire = redact_dates(&io.written);
        assert!(wire.ends_with("\r\n\r\n2\r\nok\r\n0\r\n\r\n"), "{path}: {wire}");
        assert!(told.ran() && told.dropped() && !io.streaming_held, "{path}");
    }
}

/// Answers that hold no worker while they are written need no place, and
/// go out with every one taken: a body in memory, however large, or a
/// file (both park with what the client has not taken), and a stream or
/// reader with no body to write (to a `HEAD`: its code never runs).
#[test]
fn answers_that_hold_no_worker_need_no_place() {
    let path = std::env::temp_dir().join(format!("httpool-conn-no-place-{}", std::process::id()));
    std::fs::write(&path, b"file").unwrap();
    let file_path = path.clone();
    let told = Told::default();
    let streams = telling(&told);
    let handler = move |req: &mut Request<'_>| match req.path() {
        "/large" => Response::bytes(vec![b'x'; 4 * INLINE_BODY]),
        "/file" => Response::file(std::fs::File::open(&file_path).unwrap(), 4),
        _ => streams.handle(req),
    };
    let cases = [
        ("GET /large", format!("Content-Length: {}\r\n", 4 * INLINE_BODY)),
        ("GET /file", "Content-Length: 4\r\n".to_string()),
        ("HEAD /stream", String::new()),
        ("HEAD /reader", String::new()),
    ];
    for (line, framing) in cases {
        let mut s = Served::new(&handler);
        let request = format!("{line} HTTP/1.1\r\nHost: a\r\n\r\n");
        let mut io = Script::new(&[request.as_bytes()]);
        io.streaming_full = true;
        s.run(&mut io, None);
        let wire = redact_dates(&io.written);
        assert!(wire.starts_with("HTTP/1.1 200 OK\r\n") && wire.contains(&framing), "{line}: {wire}");
    }
    assert!(!told.ran());
    let _ = std::fs::remove_file(&path);
}
