//! Logging through the `log` facade (feature `log`, on by default).
//!
//! Levels: `error` for what the operator must fix (a handler panicked or
//! built an invalid response, waiting for readiness failed); `warn` for pressure the
//! server absorbs (accept errors such as `EMFILE`, workers still busy at
//! the end of the shutdown grace period); `debug` for what clients do
//! (refused requests, timeouts, disconnects). Nothing is logged per
//! successful request. Without the feature these compile to nothing.
//!
//! Text a client chose (a JSON key, a form field, echoed in an error's
//! message) is logged through [`Escaped`], so that it cannot start a line
//! of its own in the log.

use std::fmt::{self, Write as _};

/// Shows a message with its control characters escaped as Rust writes them
/// (a line feed as `\n`, an escape as `\u{1b}`): one message, one line,
/// whatever a client put in it.
pub(crate) struct Escaped<T>(pub(crate) T);

impl<T: fmt::Display> fmt::Display for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        /// Passes what it is written on to `0`, control characters escaped.
        struct Escaping<'a, 'b>(&'a mut fmt::Formatter<'b>);

        impl fmt::Write for Escaping<'_, '_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                for c in s.chars() {
                    if c.is_control() {
                        write!(self.0, "{}", c.escape_default())?;
                    } else {
                        self.0.write_char(c)?;
                    }
                }
                Ok(())
            }
        }

        write!(Escaping(f), "{}", self.0)
    }
}

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

#[cfg(test)]
mod tests {
    use super::Escaped;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        let text = "unknown variant `x\n1.2.3.4 - - [forged]\r\u{1b}[2J`, é\t";
        assert_eq!(Escaped(text).to_string(), "unknown variant `x\\n1.2.3.4 - - [forged]\\r\\u{1b}[2J`, é\\t");
    }
}
