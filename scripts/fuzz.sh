#!/usr/bin/env bash
# Fuzz the passive HTTP/2 decoder with libFuzzer (clang, ASan + UBSan + LeakSanitizer) for a bounded time.
#
#   scripts/fuzz.sh              fuzz for FUZZ_SECONDS (default 60; 0 builds only), from tests/fuzz/corpus
#   scripts/fuzz.sh FILE...      run just these inputs once (reproduce a crash)
#
# Builds only the fuzz target, from the decoder's sources, in build-fuzz/ (FUZZ_BUILD_DIR) with clang.
# The committed corpus is copied to a scratch directory, so a run never grows it. Exits non-zero on a crash,
# a leak, a timeout, an out-of-memory or a broken decoder property; the input is then in build-fuzz/artifacts/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"

# clang and its runtimes (libclang_rt.fuzzer, asan, ubsan) are in setup.sh's PACKAGES; setup.sh installs
# what is missing (and builds the project) only when something here is missing.
for p in clang libclang-rt-14-dev cmake ninja-build pkg-config libnghttp2-dev; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    source "$ROOT/scripts/setup.sh"
    break
  fi
done

if [ ! -f "$FUZZ_BUILD_DIR/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$ROOT/tests/fuzz" -B "$FUZZ_BUILD_DIR" -G Ninja >/dev/null
fi
cmake --build "$FUZZ_BUILD_DIR" --target fuzz_h2decoder
FUZZER="$FUZZ_BUILD_DIR/fuzz_h2decoder"
export UBSAN_OPTIONS="print_stacktrace=1:${UBSAN_OPTIONS:-}"

if (($#)); then
  exec "$FUZZER" -rss_limit_mb=2048 -timeout=25 "$@"
fi

if [ "$FUZZ_SECONDS" = 0 ]; then
  echo "fuzz_h2decoder: FUZZ_SECONDS=0, not fuzzing"
  exit 0
fi

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/rpcscope-fuzz.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/corpus" "$FUZZ_BUILD_DIR/artifacts"
cp "$ROOT"/tests/fuzz/corpus/* "$SCRATCH/corpus/"
LOG="$FUZZ_BUILD_DIR/fuzz.log"

echo "fuzz_h2decoder: fuzzing for ${FUZZ_SECONDS}s (log: $LOG)"
rc=0
"$FUZZER" "$SCRATCH/corpus" \
  -max_total_time="$FUZZ_SECONDS" -max_len=16384 -rss_limit_mb=2048 -timeout=25 -detect_leaks=1 \
  -dict="$ROOT/tests/fuzz/h2.dict" -print_final_stats=1 \
  -artifact_prefix="$FUZZ_BUILD_DIR/artifacts/" >"$LOG" 2>&1 || rc=$?

if ((rc != 0)); then
  tail -n 60 "$LOG"
  echo "fuzz_h2decoder: FAILED (exit $rc); the input is in $FUZZ_BUILD_DIR/artifacts/." >&2
  echo "  reproduce: scripts/fuzz.sh $FUZZ_BUILD_DIR/artifacts/<file>; once fixed, add it to tests/fuzz/corpus/" >&2
  exit "$rc"
fi
# libFuzzer's own summary: the seed corpus loaded, the last status line (runs, coverage), the final stats.
grep -E '^#[0-9]+[[:space:]]+INITED|^#[0-9]+[[:space:]]+DONE|^Done [0-9]+ runs|^stat::' "$LOG"
echo "fuzz_h2decoder: no crash, leak or property violation in ${FUZZ_SECONDS}s"
