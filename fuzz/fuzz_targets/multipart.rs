//! `multipart/form-data` bodies: `httpool::fuzz_entry::multipart` asserts
//! that a body read whole, in three pieces and a byte at a time gives the
//! same parts and the same verdict, and nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    httpool::fuzz_entry::multipart(data);
});
