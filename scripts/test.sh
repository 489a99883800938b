#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

# Serial on purpose: the integration tests measure backoff gaps to the millisecond on a 2-core machine.
ctest --test-dir "$BUILD_DIR" --output-on-failure
