//! The work-queue hop between the poller and the workers:
//! `crossbeam-channel` (what the first engine used) vs `flume`, both
//! `bounded(1024)`. The seat engine has no such hop; the numbers are kept
//! as the record of why crossbeam-channel was the one kept.
//!
//! Same shape as the engine: one producer (the poller) sends a ~120-byte
//! struct by value (like `lot::Conn`) and two consumer threads (workers)
//! receive.
//!
//! - `queue_throughput/*`: the producer sends `BATCH` messages as fast as the
//!   queue takes them; the time ends when the consumers have received all of
//!   them. Reported per message (criterion's throughput).
//! - `queue_pingpong/*`: the producer sends one message and waits for a
//!   consumer's reply on a `bounded(1)` channel of the same library: a wake-up
//!   of a blocked worker and back, as when a parked connection becomes
//!   readable on an idle server.
//!
//! ```sh
//! cargo bench --bench queue -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const DEPTH: usize = 1024;
const CONSUMERS: usize = 2;
const BATCH: u64 = 10_000;

/// About the size of the engine's `Conn` (socket, peer address, buffer,
/// offsets, deadline, counters).
#[derive(Clone, Copy)]
struct Msg {
    id: u64,
    payload: [u64; 14],
}

const _: () = assert!(std::mem::size_of::<Msg>() == 120);

fn msg(id: u64) -> Msg {
    Msg { id, payload: [id; 14] }
}

/// The two channel flavours, behind the three operations the benches use.
trait Flavour {
    type Tx<T: Send + 'static>: Send + Clone + 'static;
    type Rx<T: Send + 'static>: Send + Clone + 'static;
    fn bounded<T: Send + 'static>(n: usize) -> (Self::Tx<T>, Self::Rx<T>);
    fn send<T: Send + 'static>(tx: &Self::Tx<T>, v: T);
    fn recv<T: Send + 'static>(rx: &Self::Rx<T>) -> Option<T>;
}

struct Crossbeam;
impl Flavour for Crossbeam {
    type Tx<T: Send + 'static> = crossbeam_channel::Sender<T>;
    type Rx<T: Send + 'static> = crossbeam_channel::Receiver<T>;
    fn bounded<T: Send + 'static>(n: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        crossbeam_channel::bounded(n)
    }
    fn send<T: Send + 'static>(tx: &Self::Tx<T>, v: T) {
        assert!(tx.send(v).is_ok(), "consumers gone");
    }
    fn recv<T: Send + 'static>(rx: &Self::Rx<T>) -> Option<T> {
        rx.recv().ok()
    }
}

struct Flume;
impl Flavour for Flume {
    type Tx<T: Send + 'static> = flume::Sender<T>;
    type Rx<T: Send + 'static> = flume::Receiver<T>;
    fn bounded<T: Send + 'static>(n: usize) -> (Self::Tx<T>, Self::Rx<T>) {
        flume::bounded(n)
    }
    fn send<T: Send + 'static>(tx: &Self::Tx<T>, v: T) {
        assert!(tx.send(v).is_ok(), "consumers gone");
    }
    fn recv<T: Send + 'static>(rx: &Self::Rx<T>) -> Option<T> {
        rx.recv().ok()
    }
}

/// Sends `iters × BATCH` messages to `CONSUMERS` threads; returns the time
/// until the last one was received.
struct Batches<F: Flavour> {
    tx: Option<F::Tx<Msg>>,
    received: Arc<AtomicU64>,
    target: Arc<AtomicU64>,
    done: std::sync::mpsc::Receiver<()>,
    sent: u64,
    threads: Vec<JoinHandle<()>>,
}

impl<F: Flavour> Batches<F> {
    fn new() -> Self {
        let (tx, rx) = F::bounded::<Msg>(DEPTH);
        let received = Arc::new(AtomicU64::new(0));
        let target = Arc::new(AtomicU64::new(u64::MAX));
        let (done_tx, done) = std::sync::mpsc::channel();
        let threads = (0..CONSUMERS)
            .map(|_| {
                let (rx, received, target, done_tx) = (rx.clone(), received.clone(), target.clone(), done_tx.clone());
                thread::spawn(move || {
                    while let Some(m) = F::recv(&rx) {
                        black_box(m.payload[13] ^ m.id);
                        let n = received.fetch_add(1, Ordering::AcqRel) + 1;
                        if n == target.load(Ordering::Acquire) {
                            done_tx.send(()).expect("bench alive");
                        }
                    }
                })
            })
            .collect();
        Self { tx: Some(tx), received, target, done, sent: 0, threads }
    }

    fn run(&mut self, iters: u64) -> Duration {
        let tx = self.tx.as_ref().expect("open");
        let total = iters * BATCH;
        self.target.store(self.sent + total, Ordering::Release);
        let start = Instant::now();
        for i in 0..total {
            F::send(tx, msg(i));
        }
        self.sent += total;
        self.done.recv().expect("consumers alive");
        let elapsed = start.elapsed();
        debug_assert_eq!(self.received.load(Ordering::Acquire), self.sent);
        elapsed
    }
}

impl<F: Flavour> Drop for Batches<F> {
    fn drop(&mut self) {
        drop(self.tx.take());
        for t in self.threads.drain(..) {
            t.join().expect("consumer panicked");
        }
    }
}

fn throughput(c: &mut Criterion) {
    let mut g = c.benchmark_group("queue_throughput");
    g.throughput(Throughput::Elements(BATCH));
    {
        let mut q = Batches::<Crossbeam>::new();
        g.bench_function("crossbeam_bounded1024_1p2c", |b| b.iter_custom(|n| q.run(n)));
    }
    {
        let mut q = Batches::<Flume>::new();
        g.bench_function("flume_bounded1024_1p2c", |b| b.iter_custom(|n| q.run(n)));
    }
    g.finish();
}

/// One message out, one reply back; `CONSUMERS` threads wait on the queue.
fn pingpong_bench<F: Flavour>(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>, name: &str) {
    let (tx, rx) = F::bounded::<Msg>(DEPTH);
    let (reply_tx, reply_rx) = F::bounded::<u64>(1);
    let threads: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let (rx, reply_tx) = (rx.clone(), reply_tx.clone());
            thread::spawn(move || {
                while let Some(m) = F::recv(&rx) {
                    F::send(&reply_tx, black_box(m).id);
                }
            })
        })
        .collect();
    drop(rx);
    let mut id = 0u64;
    g.bench_function(name, |b| {
        b.iter(|| {
            id += 1;
            F::send(&tx, msg(id));
            let back = F::recv(&reply_rx).expect("reply");
            debug_assert_eq!(back, id);
        })
    });
    drop(tx);
    for t in threads {
        t.join().expect("consumer panicked");
    }
}

fn pingpong(c: &mut Criterion) {
    let mut g = c.benchmark_group("queue_pingpong");
    g.throughput(Throughput::Elements(1));
    pingpong_bench::<Crossbeam>(&mut g, "crossbeam_bounded1024_2c");
    pingpong_bench::<Flume>(&mut g, "flume_bounded1024_2c");
    g.finish();
}

criterion_group!(benches, throughput, pingpong);
criterion_main!(benches);
