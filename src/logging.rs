//! Logging through the `log` facade (feature `log`, on by default).
//!
//! Levels: `error` for what the operator must fix (a handler panicked or
//! built an invalid response, waiting for readiness failed); `warn` for pressure the
//! server absorbs (accept errors such as `EMFILE`, workers still busy at
//! the end of the shutdown grace period); `debug` for what clients do
//! (refused requests, timeouts, disconnects). Nothing is logged per
//! successful request. Without the feature these compile to nothing.

/// Logs at `$level` with the feature; without it, type-checks the format
/// arguments (so nothing is unused) and compiles to nothing.
macro_rules! log_at {
    ($level:ident, $($arg:tt)*) => {{
        #[cfg(feature = "log")]
        log::$level!($($arg)*);
        #[cfg(not(feature = "log"))]
        if false {
            let _ = format_args!($($arg)*);
        }
    }};
}

macro_rules! error {
    ($($arg:tt)*) => { log_at!(error, $($arg)*) };
}

macro_rules! warn {
    ($($arg:tt)*) => { log_at!(warn, $($arg)*) };
}

macro_rules! debug {
    ($($arg:tt)*) => { log_at!(debug, $($arg)*) };
}
