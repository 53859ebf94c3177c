#!/usr/bin/env bash
# Checks what Linux CI cannot run: clippy for macOS (x86_64-apple-darwin:
# every cfg(target_vendor = "apple") path, tests and all features included).
# It needs the target's rust std (rustup target add x86_64-apple-darwin);
# without it, it is skipped with a message. Windows is built and tested
# under Wine by ci/windows.sh.
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

