//! Stopping on SIGINT and SIGTERM ([`Server::stop_on_signals`]): the edge
//! between the process's signals and a server's graceful shutdown.
//!
//! No code of ours runs in a signal handler: signal-hook's handler only
//! wakes a thread of ours (`httpool-signals`), which starts the shutdown as
//! any thread may. Signal-hook lets several handlers share a signal and
//! keeps one the program had already installed, so several servers, or a
//! server and the program's own handler, can watch the same signals.
//!
//! The first signal starts a graceful shutdown; a second one, while the
//! server is still stopping, ends the process as the signal would have
//! without httpool (someone pressing Ctrl-C twice means it). Once the last
//! server watching has stopped, the signals end the process again (a
//! handler left registered with no action would make it ignore them).
//!
//! [`Server::stop_on_signals`]: crate::Server::stop_on_signals

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, JoinHandle};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};

use crate::server::ShutdownSignal;

/// The signals that stop a server.
const STOP: [i32; 2] = [SIGINT, SIGTERM];

/// How many servers watch the signals, and the flag of the action that
/// takes the signals' default one while none does (registered when the
/// first watch ends; signal-hook keeps its handler installed after its last
/// action is unregistered, and a handler with nothing to do would make the
/// process ignore them).
static WATCHERS: Mutex<Watchers> = Mutex::new(Watchers { count: 0, none: None });

struct Watchers {
    count: usize,
    /// True while no server watches.
    none: Option<Arc<AtomicBool>>,
}

impl Watchers {
    fn lock() -> std::sync::MutexGuard<'static, Watchers> {
        WATCHERS.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn started(&mut self) {
        self.count += 1;
        if let Some(none) = &self.none {
            none.store(false, Ordering::Release);
        }
    }

    fn ended(&mut self) {
        self.count -= 1;
        if self.count > 0 {
            return;
        }
        let none = self.none.get_or_insert_with(|| {
            let none = Arc::new(AtomicBool::new(true));
            for signal in STOP {
                if let Err(e) = signal_hook::flag::register_conditional_default(signal, none.clone()) {
                    warn!("signal {signal}: its default action could not be restored: {e}");
                }
            }
            none
        });
        none.store(true, Ordering::Release);
    }
}

/// Watches SIGINT and SIGTERM for one server, until dropped.
pub(crate) struct StopSignals {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl StopSignals {
    /// Starts watching: the first signal calls `stop.shutdown()`.
    pub(crate) fn watch(stop: ShutdownSignal) -> io::Result<StopSignals> {
        let mut watchers = Watchers::lock();
        // Counted first: the default action must stand aside before our
        // handler can see a signal.
        watchers.started();
        let mut signals = match Signals::new(STOP) {
            Ok(signals) => signals,
            Err(e) => {
                watchers.ended();
                return Err(e);
            }
        };
        let handle = signals.handle();
        let thread = thread::Builder::new().name("httpool-signals".into()).spawn(move || {
            let mut stopping = false;
            for signal in signals.forever() {
                if stopping {
                    warn!("signal {signal} again while stopping: ending the process");
                    let _ = signal_hook::low_level::emulate_default_handler(signal);
                }
                warn!("signal {signal}: stopping gracefully (send it again to end the process at once)");
                stop.shutdown();
                stopping = true;
            }
        });
        match thread {
            Ok(thread) => Ok(StopSignals { handle, thread: Some(thread) }),
            Err(e) => {
                handle.close();
                watchers.ended();
                Err(e)
            }
        }
    }
}

impl Drop for StopSignals {
    /// Called once the server has stopped. The default action comes back
    /// (when no other server watches) before this watch ends, so no signal
    /// falls between the two unheeded.
    fn drop(&mut self) {
        Watchers::lock().ended();
        self.handle.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
