#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

# Serial on purpose: the integration tests measure backoff gaps to the millisecond on a 2-core machine.
ctest --test-dir "$BUILD_DIR" --output-on-failure

# Then fuzz the HTTP/2 decoder for FUZZ_SECONDS (60 by default) with clang's libFuzzer and sanitizers.
bash "$ROOT/scripts/fuzz.sh"
