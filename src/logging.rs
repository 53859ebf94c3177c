//! Logging through the `log` facade (feature `log`, on by default).
//!
//! Levels: `error` for what the operator must fix (a handler panicked or
//! built an invalid response, the poller failed); `warn` for pressure the
//! server absorbs (accept errors such as `EMFILE`, workers still busy at
//! the end of the shutdown grace period); `debug` for what clients do
//! (refused requests, timeouts, disconnects). Nothing is logged per
//! successful request. Without the feature these compile to nothing.

macro_rules! error {
    ($($arg:tt)*) => {{
        #[cfg(feature = "log")]
        log::error!($($arg)*);
        #[cfg(not(feature = "log"))]
        if false {
            let _ = format_args!($($arg)*);
        }
    }};
}

macro_rules! warn {
    ($($arg:tt)*) => {{
        #[cfg(feature = "log")]
        log::warn!($($arg)*);
        #[cfg(not(feature = "log"))]
        if false {
            let _ = format_args!($($arg)*);
        }
    }};
}

macro_rules! debug {
    ($($arg:tt)*) => {{
        #[cfg(feature = "log")]
        log::debug!($($arg)*);
        #[cfg(not(feature = "log"))]
        if false {
            let _ = format_args!($($arg)*);
        }
    }};
}
