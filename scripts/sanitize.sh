#!/usr/bin/env bash
# Build the whole project with AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer) in build-asan/
# (ASAN_BUILD_DIR) and run the whole test suite there, serially. Extra arguments go to ctest (e.g. -R relay).
#
# Any sanitizer report fails its test: UBSan halts on the first error, ASan and LSan always do. Debian's gRPC,
# absl, protobuf and Qt are not instrumented (their own code is not checked, only our calls into them) and
# nothing from them needs suppressing; if that changes, a suppression file with a reason per entry goes next
# to this script, and our own code is never suppressed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export RPCSCOPE_BUILD_DIR="${ASAN_BUILD_DIR:-$ROOT/build-asan}"
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer"

# setup.sh installs what is missing, configures once and builds. CMake takes CXXFLAGS and LDFLAGS from the
# environment on that first configure only, so a build-asan/ configured some other way is refused here.
if [ -f "$RPCSCOPE_BUILD_DIR/CMakeCache.txt" ] &&
  ! grep -q -- "^CMAKE_CXX_FLAGS:STRING=.*-fsanitize=address" "$RPCSCOPE_BUILD_DIR/CMakeCache.txt"; then
  echo "sanitize.sh: $RPCSCOPE_BUILD_DIR was not configured with sanitizers; remove it and run again" >&2
  exit 1
fi
export CXXFLAGS="$SAN ${CXXFLAGS:-}"
export LDFLAGS="$SAN ${LDFLAGS:-}"
source "$ROOT/scripts/setup.sh"

# Inherited by every test and by the binaries tst_cli starts.
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# Serial on purpose, as in test.sh: the integration tests measure backoff gaps to the millisecond.
ctest --test-dir "$RPCSCOPE_BUILD_DIR" --output-on-failure "$@"
