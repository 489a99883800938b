#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite: every ctest, then the fuzz targets.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

log="$BUILD_DIR/ctest-summary.log"
# Serial on purpose: the integration tests measure backoff gaps to the millisecond on a 2-core machine.
set +e
ctest --test-dir "$BUILD_DIR" --output-on-failure | tee "$log"
ctest_rc=${PIPESTATUS[0]}

# Then fuzz the HTTP/2 decoder for FUZZ_SECONDS (30 by default), the capture-file reader for
# FUZZ_CAPTURE_SECONDS (20), the fault-rule parser for FUZZ_RULE_SECONDS (10), the CONNECT request parser for
# FUZZ_CONNECT_SECONDS (10) and the pcap import's TLS decryption for FUZZ_TLS_SECONDS (10) with clang's libFuzzer
# and sanitizers. Short runs on every test, so a whole run stays
# well inside CI's time; scripts/fuzz.sh runs any of them for longer.
fuzz_runs=5
fuzz_rc=0
FUZZ_SECONDS="${FUZZ_SECONDS:-30}" bash "$ROOT/scripts/fuzz.sh" || fuzz_rc=$((fuzz_rc + 1))
FUZZ_TARGET=capturefile FUZZ_SECONDS="${FUZZ_CAPTURE_SECONDS:-20}" bash "$ROOT/scripts/fuzz.sh" || fuzz_rc=$((fuzz_rc + 1))
FUZZ_TARGET=faultrule FUZZ_SECONDS="${FUZZ_RULE_SECONDS:-10}" bash "$ROOT/scripts/fuzz.sh" || fuzz_rc=$((fuzz_rc + 1))
FUZZ_TARGET=connect FUZZ_SECONDS="${FUZZ_CONNECT_SECONDS:-10}" bash "$ROOT/scripts/fuzz.sh" || fuzz_rc=$((fuzz_rc + 1))
FUZZ_TARGET=tlsdecrypt FUZZ_SECONDS="${FUZZ_TLS_SECONDS:-10}" bash "$ROOT/scripts/fuzz.sh" || fuzz_rc=$((fuzz_rc + 1))
set -e

# One closing line for the whole suite: the ctest tests plus the fuzz runs.
total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -n 1)
failed=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -n 1)
total=${total:-0}
failed=${failed:-$total}
failed=$((failed + fuzz_rc))
echo "tests: $((total + fuzz_runs - failed)) passed, $failed failed"
[ "$ctest_rc" -eq 0 ] && [ "$fuzz_rc" -eq 0 ]
