//! The locks and condition variables of the engine's core: std's, or
//! under `--cfg httpool_shuttle` the model checker's, whose scheduler then
//! explores the interleavings of the threads that use them (see
//! `shared/model_tests.rs`).

#[cfg(httpool_shuttle)]
pub(crate) use shuttle::sync::{Mutex, MutexGuard};
#[cfg(not(httpool_shuttle))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// shuttle's condition variable, whose waits with a timeout may report a
/// timeout after any wake-up (the scheduler chooses), as a real timeout may
/// fire around a notification. (shuttle's own never times out.)
#[cfg(httpool_shuttle)]
#[derive(Default)]
pub(crate) struct Condvar(shuttle::sync::Condvar);

#[cfg(httpool_shuttle)]
mod model_condvar {
    use std::sync::LockResult;
    use std::time::Duration;

    use shuttle::rand::Rng;

    use super::{Condvar, MutexGuard};

    /// Whether a wait timed out.
    pub(crate) struct Waited(bool);

    impl Waited {
        pub(crate) fn timed_out(&self) -> bool {
            self.0
        }
    }

    impl Condvar {
        pub(crate) fn new() -> Condvar {
            Condvar(shuttle::sync::Condvar::new())
        }

        pub(crate) fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
            self.0.wait(guard)
        }

        pub(crate) fn wait_timeout<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            _timeout: Duration,
        ) -> LockResult<(MutexGuard<'a, T>, Waited)> {
            let guard = self.0.wait(guard).unwrap_or_else(std::sync::PoisonError::into_inner);
            Ok((guard, Waited(shuttle::rand::thread_rng().r#gen::<bool>())))
        }

        pub(crate) fn notify_one(&self) {
            self.0.notify_one();
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}
