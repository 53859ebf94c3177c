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
//! without httpool (someone pressing Ctrl-C twice means it). Two signals
//! sent so close together that the first has not been delivered when the
//! second comes are one: the system does not queue a signal already
//! pending, and signal-hook's iterator reports a signal once however often
//! it came since the last look. Once the last server watching has stopped,
//! each signal does again what it did before the first server watched it:
//! the default action (the process ends), nothing if it was ignored, the
//! program's own handler if it had one. A signal the process ignored then
//! is not watched at all.
//!
//! On Windows the signals are the console's Ctrl-C and Ctrl-Break events,
//! watched with a console control handler of ours (`SetConsoleCtrlHandler`;
//! the system runs it on a thread of its own, so it may start the shutdown
//! itself). It says it handled the event only while some server watches
//! and has not been told yet: otherwise, a second Ctrl-C while stopping
//! included, the next handler runs, and in the end the system's, which
//! ends the process. (signal-hook's emulation of `SIGINT` over the C
//! runtime's `signal` asks it for the current handler with `SIG_GET`,
//! which Wine's runtime takes for the handler itself: the first Ctrl-C
//! crashed the process.)
//!
//! [`Server::stop_on_signals`]: crate::Server::stop_on_signals

use std::io;
use std::sync::{Mutex, PoisonError};

use crate::shared::Shared;
#[cfg(unix)]
pub(crate) use unix::StopSignals;
#[cfg(windows)]
pub(crate) use windows::StopSignals;

#[cfg(unix)]
mod unix {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, OnceLock};
    use std::thread::{self, JoinHandle};

    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::iterator::{Handle, Signals};

    use super::*;
    use crate::sys::{self, Disposition};

    /// The signals that stop a server.
    const STOP: [i32; 2] = [SIGINT, SIGTERM];

    /// How many servers watch the signals, and the flag of the action that
    /// takes the signals' default one while none does. Signal-hook keeps its
    /// handler installed after its last action is unregistered, and runs the
    /// handler it replaced only when that was a function: a signal whose
    /// action was the default would be ignored from then on.
    static WATCHERS: Mutex<Watchers> = Mutex::new(Watchers { count: 0, none: None });

    struct Watchers {
        count: usize,
        /// True while no server watches.
        none: Option<Arc<AtomicBool>>,
    }

    /// The signals' dispositions before the first server watched them: what
    /// the process goes back to once none does.
    fn prior() -> &'static [(i32, Disposition)] {
        static PRIOR: OnceLock<Vec<(i32, Disposition)>> = OnceLock::new();
        PRIOR.get_or_init(|| {
            STOP.iter()
                .map(|&signal| {
                    let disposition = sys::disposition(signal).unwrap_or_else(|e| {
                        warn!("signal {signal}: its action could not be read ({e}); taken as the default");
                        Disposition::Default
                    });
                    (signal, disposition)
                })
                .collect()
        })
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
                // A signal ignored or handled by the program before needs
                // nothing: signal-hook's handler stands aside (or runs the
                // program's).
                for &(signal, _) in prior().iter().filter(|(_, d)| *d == Disposition::Default) {
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
        /// Starts watching: the first signal calls `stop.stop()`. A
        /// signal the process ignored before the first server watched is
        /// not watched (a background job of a shell ignores SIGINT: the
        /// terminal's Ctrl-C is not for it).
        pub(crate) fn watch(stop: Arc<Shared>) -> io::Result<StopSignals> {
            let mut watchers = Watchers::lock();
            let watched = prior().iter().filter(|(_, d)| *d != Disposition::Ignored).map(|&(signal, _)| signal);
            // Watching before the default action stands aside: a signal in
            // between ends the process, as it would have a moment earlier,
            // rather than be lost.
            let mut signals = Signals::new(watched)?;
            watchers.started();
            let handle = signals.handle();
            let thread = thread::Builder::new().name("httpool-signals".into()).spawn(move || {
                let mut stopping = false;
                for signal in signals.forever() {
                    if stopping {
                        warn!("signal {signal} again while stopping: ending the process");
                        let _ = signal_hook::low_level::emulate_default_handler(signal);
                    }
                    warn!("signal {signal}: stopping gracefully (send it again to end the process at once)");
                    stop.stop();
                    stopping = true;
                }
            });
            match thread {
                Ok(thread) => Ok(StopSignals { handle, thread: Some(thread) }),
                Err(e) => {
                    watchers.ended();
                    handle.close();
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
}

/// The console handler, for the server's tests to call as the system would.
#[cfg(all(test, windows))]
pub(crate) use windows::on_console_event;

#[cfg(windows)]
mod windows {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, MutexGuard, OnceLock};

    use windows_sys::Win32::Foundation::{FALSE, TRUE};
    use windows_sys::Win32::System::Console::{CTRL_BREAK_EVENT, CTRL_C_EVENT, SetConsoleCtrlHandler};
    use windows_sys::core::BOOL;

    use super::*;

    /// The servers watching the console's Ctrl-C, and whether each was
    /// told to stop already.
    static WATCHERS: Mutex<Vec<Watcher>> = Mutex::new(Vec::new());

    struct Watcher {
        id: u64,
        stop: Arc<Shared>,
        told: bool,
    }

    fn watchers() -> MutexGuard<'static, Vec<Watcher>> {
        WATCHERS.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Watches Ctrl-C and Ctrl-Break for one server, until dropped.
    pub(crate) struct StopSignals {
        id: u64,
    }

    impl StopSignals {
        /// Starts watching: the first Ctrl-C calls `stop.stop()`.
        pub(crate) fn watch(stop: Arc<Shared>) -> io::Result<StopSignals> {
            // Tried once; its failure is every watch's.
            static INSTALLED: OnceLock<Result<(), Option<i32>>> = OnceLock::new();
            static NEXT: AtomicU64 = AtomicU64::new(0);
            if let Err(code) = INSTALLED.get_or_init(|| install().map_err(|e| e.raw_os_error())) {
                return Err(
                    code.map_or_else(|| io::Error::other("SetConsoleCtrlHandler failed"), io::Error::from_raw_os_error)
                );
            }
            let id = NEXT.fetch_add(1, Ordering::Relaxed);
            watchers().push(Watcher { id, stop, told: false });
            Ok(StopSignals { id })
        }
    }

    impl Drop for StopSignals {
        fn drop(&mut self) {
            watchers().retain(|w| w.id != self.id);
        }
    }

    /// Adds [`on_console_event`] to the process's console control handlers,
    /// once; it stays (it passes every event on while no server watches).
    ///
    /// Neither std nor a crate that lets other handlers be wraps
    /// `SetConsoleCtrlHandler` (`ctrlc` takes the one handler it allows per
    /// process), hence `unsafe`.
    #[allow(unsafe_code)]
    fn install() -> io::Result<()> {
        // SAFETY: the handler is a plain function that lives as long as the
        // process, of the signature the system calls (`PHANDLER_ROUTINE`);
        // the call only adds it to the process's list of handlers.
        let added = unsafe { SetConsoleCtrlHandler(Some(on_console_event), TRUE) };
        if added == FALSE { Err(io::Error::last_os_error()) } else { Ok(()) }
    }

    /// Run by the system, on a thread of its own, for each console event:
    /// Ctrl-C and Ctrl-Break stop every watching server not told yet, and
    /// are handled; any other event, or one with nobody left to tell, is
    /// passed on (in the end to the system's handler, which ends the
    /// process). A Ctrl-C handled here does not reach the handlers the
    /// program added before the first server started watching (Windows
    /// calls them in turn until one handles the event; passing it on would
    /// end the process): a program with its own turns `stop_on_signals`
    /// off and stops the server itself.
    pub(crate) extern "system" fn on_console_event(event: u32) -> BOOL {
        if event != CTRL_C_EVENT && event != CTRL_BREAK_EVENT {
            return FALSE;
        }
        let mut watchers = watchers();
        let mut told = FALSE;
        for watcher in watchers.iter_mut().filter(|w| !w.told) {
            watcher.told = true;
            watcher.stop.stop();
            told = TRUE;
        }
        if told == TRUE {
            warn!("Ctrl-C: stopping gracefully (press it again to end the process at once)");
        } else if !watchers.is_empty() {
            warn!("Ctrl-C again while stopping: ending the process");
        }
        told
    }
}
