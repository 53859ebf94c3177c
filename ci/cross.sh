#!/usr/bin/env bash
# Checks what Linux CI cannot run: clippy for macOS (x86_64-apple-darwin:
# every cfg(target_vendor = "apple") path, tests and all features included),
# and that a Windows build stops with the crate's one error and nothing else.
# Each needs its target's rust std (rustup target add TARGET); a target
# without it is skipped with a message.
set -euo pipefail
cd "$(dirname "$0")/.."

installed=$(rustup target list --installed 2>/dev/null || true)
has_std() { grep -qx "$1" <<<"$installed"; }

mac=x86_64-apple-darwin
if has_std "$mac"; then
    # ring (a dev-dependency, and the tls feature) compiles C for the target,
    # and there is no Apple SDK here: clang with no system headers (ring's
    # RING_CORE_NOSTDLIBINC) and stubs for the two SDK headers it still
    # includes. Clippy links and runs nothing built for the target.
    if ! command -v clang >/dev/null || ! command -v llvm-ar >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang llvm >/dev/null
    fi
    # A fixed place, so that ring's build is not redone on every run.
    stubs="${CARGO_TARGET_DIR:-target}/apple-sdk-stubs"
    mkdir -p "$stubs"
    printf '#define TARGET_OS_MAC 1\n#define TARGET_OS_OSX 1\n#define TARGET_OS_IPHONE 0\n' \
        >"$stubs/TargetConditionals.h"
    printf '#include <stddef.h>\nvoid *malloc(size_t);\nvoid free(void *);\nint posix_memalign(void **, size_t, size_t);\n' \
        >"$stubs/stdlib.h"
    stubs=$(cd "$stubs" && pwd)
    echo "== clippy for $mac"
    CC_x86_64_apple_darwin=clang AR_x86_64_apple_darwin=llvm-ar \
        CFLAGS_x86_64_apple_darwin="-nostdlibinc -DRING_CORE_NOSTDLIBINC=1 -I$stubs" \
        cargo clippy --target "$mac" --all-targets --all-features -- -D warnings
else
    echo "cross: no rust std for $mac (rustup target add $mac): macOS clippy skipped" >&2
fi

win=x86_64-pc-windows-gnu
if has_std "$win"; then
    echo "== cargo check for $win (must stop with the crate's one error)"
    if out=$(cargo check --target "$win" 2>&1); then
        echo "cross: the $win build succeeded; it must stop with the crate's error" >&2
        exit 1
    fi
    if ! grep -q '^error: httpool supports Linux and macOS' <<<"$out" ||
        ! grep -q 'due to 1 previous error' <<<"$out"; then
        echo "$out" >&2
        echo "cross: the $win build must fail with the crate's one error and no other" >&2
        exit 1
    fi
    grep '^error: httpool' <<<"$out"
else
    echo "cross: no rust std for $win (rustup target add $win): Windows check skipped" >&2
fi
