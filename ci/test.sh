#!/usr/bin/env bash
# The checks every change must pass: formatting, lints, the test suite, docs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --check
cargo clippy --all-targets --all-features -- -D warnings
# No import cycle among the modules under src/ (the test prints any it finds,
# with the line of each import in it); `cargo test` runs it again below.
cargo test --test import_graph
cargo test
cargo test --all-features
# Without the default features (no `log`, no `Router`): lints, and the
# doctests, whose examples gate what they need.
cargo clippy --all-targets --no-default-features -- -D warnings
cargo test --doc --no-default-features
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --all-features
# examples/notes, a crate of its own (SQLite is C): formatting, lints, its
# tests through httpool::test; in the same target directory.
notes=(--manifest-path examples/notes/Cargo.toml)
cargo fmt --check "${notes[@]}"
cargo clippy "${notes[@]}" --target-dir target --all-targets -- -D warnings
cargo test "${notes[@]}" --target-dir target
# Model checks of the engine's core under the shuttle scheduler
# (src/shared/model_tests.rs): thousands of interleavings of park/wake, hand-over,
# spawn and retire; a lost wake-up fails them as a deadlock.
RUSTFLAGS="--cfg httpool_shuttle" CARGO_TARGET_DIR=target/shuttle cargo test --lib shared::model_tests
