//! Handler calls that block: the seat let go before them, the verdicts from the
//! monitor's looks and the thread's sleeps, routes seen blocking, answers sent
//! before such a call.

use super::*;

/// A seat whose clock is the test's: a "blocking" handler moves it on by
/// two monitor ticks; hand-overs are counted, and those that may start a
/// thread; what the monitor saw of long calls is `seen`.
#[derive(Clone, Default)]
struct TestSeat {
    ticks: std::sync::Arc<std::sync::atomic::AtomicU64>,
    handed_over: std::sync::Arc<std::sync::atomic::AtomicU64>,
    may_grow: std::sync::Arc<std::sync::atomic::AtomicU64>,
    seen: Option<bool>,
    /// Routes seen asleep, shared with other seats (connections).
    routes: Option<std::sync::Arc<super::super::Routes>>,
    /// The worker thread's sleeps so far, where the test tells them (its
    /// CPU time stays nil).
    sleeps: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

impl Seating for TestSeat {
    fn handler_may_block(&mut self, slept: bool) {
        self.handed_over.fetch_add(1, Ordering::Relaxed);
        self.may_grow.fetch_add(u64::from(slept), Ordering::Relaxed);
    }

    fn ticks(&self) -> &AtomicU64 {
        &self.ticks
    }

    fn seen_since(&self, _: u64) -> Option<bool> {
        self.seen
    }

    fn sleeps_and_cpu(&self) -> Option<(u64, Duration)> {
        self.sleeps.as_ref().map(|n| (n.load(Ordering::Relaxed), Duration::ZERO))
    }

    fn routes_remembered(&self) -> bool {
        self.routes.as_ref().is_some_and(|routes| routes.remembers_any())
    }

    fn route_blocks(&self, method: &str, path: &str) -> bool {
        self.routes.as_ref().is_some_and(|routes| routes.blocks(method, path))
    }

    fn route_ran(&self, method: &str, path: &str, ran: Ran) {
        if let Some(routes) = &self.routes {
            routes.ran(method, path, ran);
        }
    }
}

/// A route whose handler was seen asleep is handed over
/// before it runs on another connection's first call, with a thread at
/// once if none is idle (behind a proxy that opens a connection per
/// request, every call is a first one); another route, or method, is not.
#[test]
fn a_route_seen_asleep_is_handed_over_on_a_new_connections_first_call() {
    let routes = std::sync::Arc::new(super::super::Routes::new());
    // Each request on its own connection, each connection with its seat;
    // `seen`: what the monitor finds of a long call.
    let call = |request: &[u8], seen: Option<bool>| {
        let seat = TestSeat { seen, routes: Some(routes.clone()), ..TestSeat::default() };
        let clock = seat.ticks.clone();
        let handler = move |req: &mut Request<'_>| {
            if req.path() == "/report" {
                clock.fetch_add(2, Ordering::Relaxed);
            }
            Response::text("done")
        };
        let mut s = Served::new(&handler);
        s.seat = Box::new(seat.clone());
        let mut io = Script::new(&[request]);
        io.release();
        s.serve(&mut io);
        assert_eq!(redact_dates(&io.written).matches("HTTP/1.1 200").count(), 1);
        (seat.handed_over.load(Ordering::Relaxed), seat.may_grow.load(Ordering::Relaxed))
    };
    let report = b"GET /report HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    // Not seen asleep: nothing is kept.
    assert_eq!(call(report, None), (0, 0));
    assert_eq!(call(report, None), (0, 0));
    // Seen asleep once: the next connection's call is handed over first.
    assert_eq!(call(report, Some(true)), (0, 0));
    assert_eq!(call(report, None), (1, 1));
    // Another route, or method, is not; unless it shares the slot (the
    // table's keys are random: a collision is allowed, and asked for here).
    for (request, route) in [
        (&b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"[..], ("GET", "/")),
        (&b"POST /report HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"[..], ("POST", "/report")),
    ] {
        let shared = u64::from(routes.share_a_slot(route, ("GET", "/report")));
        assert_eq!(call(request, None), (shared, shared), "{route:?}");
    }
    assert_eq!(call(report, None), (1, 1));
}

/// A call handed over before it ran is not watched by the monitor; the
/// worker tells from its thread's sleeps and CPU time whether it blocked.
/// One that slept (and ran little) keeps its connection's next calls
/// starting a thread for the seat, past the 16 that would otherwise wear
/// the expectation off. One that did not sleep computed, as if seen
/// running: the expectation wears off in 4 calls; the next, not handed
/// over and not watched, runs long and brings it back, for calls that may
/// compute (no thread started for them): 4 handed over in every 5.
#[test]
fn a_handed_over_call_that_slept_counts_as_seen_asleep() {
    for (slept, handed_over, may_grow) in [(true, 40, 40), (false, 32, 4)] {
        let sleeps = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let seat = TestSeat { sleeps: Some(sleeps.clone()), ..TestSeat::default() };
        let clock = seat.ticks.clone();
        // The first call is seen asleep by the monitor; the rest are handed
        // over before they run, and nobody looks.
        let handler = move |_: &mut Request<'_>| {
            clock.fetch_add(2, Ordering::Relaxed);
            sleeps.fetch_add(u64::from(slept), Ordering::Relaxed);
            Response::text("done")
        };
        let mut s = Served::new(&handler);
        let mut first = seat.clone();
        first.seen = Some(true);
        s.seat = Box::new(first);
        let mut io = Script::new(&[b"GET /a HTTP/1.1\r\nHost: a\r\n\r\n".as_slice()]);
        io.release();
        assert_eq!(s.serve(&mut io), Next::Park);
        s.seat = Box::new(seat.clone());
        let mut io = Script::new(&[b"GET /a HTTP/1.1\r\nHost: a\r\n\r\n".repeat(40).as_slice()]);
        io.release();
        assert_eq!(s.serve(&mut io), Next::Park);
        assert_eq!(seat.handed_over.load(Ordering::Relaxed), handed_over, "slept {slept}");
        assert_eq!(seat.may_grow.load(Ordering::Relaxed), may_grow, "slept {slept}");
    }
}

/// How a long handler call counts follows what the monitor saw of it: seen
/// asleep, it blocked, and the seat is let go before the connection's next
/// calls, a thread started for it if none is idle; seen running or waiting
/// for a CPU (a handler that computes), it did not block, and nothing is
/// let go; not seen, it counts as blocking, but the seat is let go to an
/// idle thread only (the monitor starts one if it then finds the worker
/// asleep). (A handler computing 2 ms under 64 connections grew the pool
/// to 86 threads when every long call counted as blocking.)
#[test]
fn a_long_handler_call_counts_as_blocking_as_the_monitor_saw_it() {
    for (seen, handed_over, may_grow) in [(Some(true), 3, 3), (Some(false), 0, 0), (None, 3, 0)] {
        let seat = TestSeat { seen, ..TestSeat::default() };
        let clock = seat.ticks.clone();
        let handler = move |req: &mut Request<'_>| {
            clock.fetch_add(2, Ordering::Relaxed);
            Response::text(req.path().to_string())
        };
        let mut s = Served::new(&handler);
        s.seat = Box::new(seat.clone());
        let mut io = Script::new(&[b"GET /a HTTP/1.1\r\nHost: a\r\n\r\n".repeat(4).as_slice()]);
        io.release();
        assert_eq!(s.serve(&mut io), Next::Park);
        assert_eq!(redact_dates(&io.written).matches("HTTP/1.1 200").count(), 4);
        let counts = (seat.handed_over.load(Ordering::Relaxed), seat.may_grow.load(Ordering::Relaxed));
        assert_eq!(counts, (handed_over, may_grow), "seen {seen:?}");
    }
}

/// A call seen asleep lets the next ones start a thread for the seat, but
/// only for so many calls that nobody looks at: one seen asleep by mistake
/// (a page fault, a lock) must not count for good. Calls seen computing
/// wear the expectation off as quick ones do.
#[test]
fn a_call_seen_asleep_counts_for_the_next_few_calls_only() {
    let mut conn = ConnState::new(None);
    assert_eq!(conn.slow_handler(), Slow::No);
    conn.handler_ran(Ran::Asleep);
    for _ in 0..16 {
        assert_eq!(conn.slow_handler(), Slow::Slept);
        conn.handler_ran(Ran::Long);
    }
    // Still expected to block, as every call ran long; not seen asleep.
    assert_eq!(conn.slow_handler(), Slow::Long);
    conn.handler_ran(Ran::Asleep);
    assert_eq!(conn.slow_handler(), Slow::Slept);
    for _ in 0..4 {
        conn.handler_ran(Ran::Quick);
    }
    assert_eq!(conn.slow_handler(), Slow::No);
}

/// A script whose written bytes the handler can see as they go out.
struct Watched {
    io: Script,
    wire: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl std::io::Read for Watched {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.io.read(buf)
    }
}

impl std::io::Write for Watched {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.io.write(buf)?;
        self.wire.lock().unwrap().extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Transport for Watched {
    fn wait(&mut self, ready: crate::io::Ready, timeout: Duration) -> std::io::Result<()> {
        self.io.wait(ready, timeout)
    }
}

#[test]
fn an_answer_ready_before_a_handler_expected_to_block_goes_out_first() {
    let seat = TestSeat::default();
    let clock = seat.ticks.clone();
    let wire = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (seen, answered_before_slow) = (wire.clone(), std::sync::Arc::new(std::sync::Mutex::new(Vec::new())));
    let record = answered_before_slow.clone();
    let handler = move |req: &mut Request<'_>| {
        if req.path() == "/slow" {
            let out = seen.lock().unwrap();
            record.lock().unwrap().push(String::from_utf8_lossy(&out).matches("HTTP/1.1 200").count());
            // It blocks: the monitor's clock moves on by two ticks.
            clock.fetch_add(2, Ordering::Relaxed);
        }
        Response::text(req.path().to_string())
    };
    let mut s = Served::new(&handler);
    s.seat = Box::new(seat.clone());
    let get = |p: &str| format!("GET {p} HTTP/1.1\r\nHost: a\r\n\r\n");
    let pipelined = format!("{}{}{}", get("/fast"), get("/slow"), get("/fast"));
    let mut io = Watched { io: Script::new(&[get("/slow").as_bytes(), pipelined.as_bytes()]), wire };
    while io.io.release() {
        assert_eq!(s.serve(&mut io), Next::Park);
    }
    // After the first /slow blocked, the next calls on the connection were
    // expected to block: the worker let its seat go before each, and the
    // /fast answer queued before the second /slow went out before it ran.
    assert_eq!(*answered_before_slow.lock().unwrap(), [0, 2]);
    assert_eq!(seat.handed_over.load(Ordering::Relaxed), 3);
    assert_eq!(redact_dates(&io.io.written).matches("HTTP/1.1 200").count(), 4);
    // A connection whose handlers stop blocking stops being expected to.
    let mut quick = Script::new(&[get("/fast").repeat(8).as_bytes()]);
    quick.release();
    assert_eq!(s.serve(&mut quick), Next::Park);
    assert_eq!(seat.handed_over.load(Ordering::Relaxed), 6, "three more calls were expected to block, then none");
}

/// Answers queued on a connection go out before a call on a route seen
/// blocking on another connection: the call is handed over before it runs,
/// and the client should not wait for it to have the earlier answers.
#[test]
fn an_answer_ready_before_a_call_on_a_route_seen_blocking_goes_out_first() {
    let routes = std::sync::Arc::new(super::super::Routes::new());
    let wire = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let answered_before_report = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let get = |p: &str| format!("GET {p} HTTP/1.1\r\nHost: a\r\n\r\n");
    // Each connection with its own seat and state; `seen`: what the
    // monitor finds of a long call.
    let connection = |requests: String, seen: Option<bool>| {
        let seat = TestSeat { seen, routes: Some(routes.clone()), ..TestSeat::default() };
        let (clock, on_wire, record) = (seat.ticks.clone(), wire.clone(), answered_before_report.clone());
        let handler = move |req: &mut Request<'_>| {
            if req.path() == "/report" {
                let out = on_wire.lock().unwrap();
                record.lock().unwrap().push(String::from_utf8_lossy(&out).matches("HTTP/1.1 200").count());
                clock.fetch_add(2, Ordering::Relaxed);
            }
            Response::text(req.path().to_string())
        };
        wire.lock().unwrap().clear();
        let mut s = Served::new(&handler);
        s.seat = Box::new(seat.clone());
        let mut io = Watched { io: Script::new(&[requests.as_bytes()]), wire: wire.clone() };
        io.io.release();
        assert_eq!(s.serve(&mut io), Next::Park);
        assert_eq!(redact_dates(&io.io.written).matches("HTTP/1.1 200").count(), requests.matches("GET").count());
        seat.handed_over.load(Ordering::Relaxed)
    };
    // Before the route was seen blocking, the pipelined answers wait.
    assert_eq!(connection(format!("{}{}", get("/fast"), get("/report")), None), 0);
    // One connection's call is seen asleep: the route is remembered.
    assert_eq!(connection(get("/report"), Some(true)), 0);
    // On another connection, the /fast answer goes out before /report
    // runs; /report is handed over, and so is the call after it (this
    // connection's last call blocked).
    assert_eq!(connection(format!("{}{}{}", get("/fast"), get("/report"), get("/fast")), None), 2);
    assert_eq!(*answered_before_report.lock().unwrap(), [0, 0, 1]);
}

/// A seat with places for calls expected to block: it refuses one while
/// `refuse` is set (unless the request was given one), and counts those
/// taken and given back.
#[derive(Clone, Default)]
struct Places {
    ticks: std::sync::Arc<AtomicU64>,
    refuse: std::sync::Arc<std::sync::atomic::AtomicBool>,
    route_blocks: std::sync::Arc<std::sync::atomic::AtomicBool>,
    taken: std::sync::Arc<AtomicU64>,
    given_back: std::sync::Arc<AtomicU64>,
    placed: bool,
}

impl Seating for Places {
    fn handler_may_block(&mut self, _: bool) {}

    fn ticks(&self) -> &AtomicU64 {
        &self.ticks
    }

    fn routes_remembered(&self) -> bool {
        true
    }

    fn route_blocks(&self, _: &str, _: &str) -> bool {
        self.route_blocks.load(Ordering::Relaxed)
    }

    fn admit_blocking(&mut self, given: bool) -> bool {
        self.placed = given || !self.refuse.load(Ordering::Relaxed);
        self.taken.fetch_add(u64::from(self.placed), Ordering::Relaxed);
        self.placed
    }

    fn blocking_done(&mut self) {
        if std::mem::take(&mut self.placed) {
            self.given_back.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A request to a route expected to block, refused a place, waits without
/// its handler running or an answer; given a place, it runs with it even
/// if the route is no longer expected to block (else the place would never
/// be given back), and gives it back once, after the call.
#[test]
fn a_request_waits_for_a_place_and_uses_the_one_it_is_given() {
    let calls = std::sync::Arc::new(AtomicU64::new(0));
    let counted = calls.clone();
    let handler = move |_: &mut Request<'_>| {
        counted.fetch_add(1, Ordering::Relaxed);
        Response::text("done")
    };
    let seat = Places::default();
    seat.refuse.store(true, Ordering::Relaxed);
    seat.route_blocks.store(true, Ordering::Relaxed);
    let mut s = Served::new(&handler);
    s.seat = Box::new(seat.clone());
    let mut io = Script::new(&[b"GET /db HTTP/1.1\r\nHost: a\r\n\r\n"]);
    io.release();
    assert_eq!(s.serve(&mut io), Next::WaitForPlace);
    assert!(io.written.is_empty());
    assert_eq!(calls.load(Ordering::Relaxed), 0);
    assert_eq!(seat.taken.load(Ordering::Relaxed), 0);
    // A call that ended gave it its place; the route's mark wore off since.
    s.conn.admitted();
    seat.route_blocks.store(false, Ordering::Relaxed);
    assert_eq!(s.serve(&mut io), Next::Park);
    assert_eq!(redact_dates(&io.written).matches("HTTP/1.1 200").count(), 1);
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    assert_eq!((seat.taken.load(Ordering::Relaxed), seat.given_back.load(Ordering::Relaxed)), (1, 1));
    assert!(!s.conn.waits_for_place());
}
