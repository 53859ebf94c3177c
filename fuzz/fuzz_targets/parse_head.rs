//! Request-head parsing with the default limits. `httpool::fuzz_entry::parse`
//! itself asserts that the head and every header span lie inside the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    httpool::fuzz_entry::parse(data);
});
