#!/usr/bin/env bash
# Fuzz with libFuzzer (clang, ASan + UBSan + LeakSanitizer) for a bounded time. FUZZ_TARGET picks the target:
#   h2decoder    (default) the passive HTTP/2 decoder, seeds in tests/fuzz/corpus
#   capturefile  the .rpcscope capture-file reader, and the replay, merge and exports of what it reads,
#                seeds in tests/fuzz/capture-corpus
#   faultrule    the fault-rule parser of capture --fault and its method globs, seeds in
#                tests/fuzz/faultrule-corpus
#   connect      the CONNECT proxy's request parser, seeds in tests/fuzz/connect-corpus
#   tlsdecrypt   the pcap import's TLS decryption (key log, records, handshake), seeds in
#                tests/fuzz/tlsdecrypt-corpus
#
#   scripts/fuzz.sh              fuzz for FUZZ_SECONDS (default 60; 0 builds only), from the target's corpus
#   scripts/fuzz.sh FILE...      run just these inputs once (reproduce a crash)
#
# Builds only the fuzz target, from the sources it tests, in build-fuzz/ (FUZZ_BUILD_DIR) with clang.
# The committed corpus is copied to a scratch directory, so a run never grows it. Exits non-zero on a crash,
# a leak, a timeout, an out-of-memory or a broken property; the input is then in build-fuzz/artifacts/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
FUZZ_TARGET="${FUZZ_TARGET:-h2decoder}"
NEEDS=(clang libclang-rt-14-dev cmake ninja-build pkg-config libnghttp2-dev qt6-base-dev libprotobuf-dev libssl-dev zlib1g-dev
  protobuf-compiler)
case "$FUZZ_TARGET" in
  h2decoder) CORPUS="$ROOT/tests/fuzz/corpus" DICT="$ROOT/tests/fuzz/h2.dict" ;;
  capturefile) CORPUS="$ROOT/tests/fuzz/capture-corpus" DICT="$ROOT/tests/fuzz/capture.dict" ;;
  faultrule) CORPUS="$ROOT/tests/fuzz/faultrule-corpus" DICT="$ROOT/tests/fuzz/faultrule.dict" ;;
  connect) CORPUS="$ROOT/tests/fuzz/connect-corpus" DICT="$ROOT/tests/fuzz/connect.dict" ;;
  tlsdecrypt) CORPUS="$ROOT/tests/fuzz/tlsdecrypt-corpus" DICT="$ROOT/tests/fuzz/tlsdecrypt.dict" ;;
  *)
    echo "fuzz.sh: unknown FUZZ_TARGET '$FUZZ_TARGET' (h2decoder, capturefile, faultrule, connect, tlsdecrypt)" >&2
    exit 2
    ;;
esac
NAME="fuzz_$FUZZ_TARGET"

# clang and its runtimes (libclang_rt.fuzzer, asan, ubsan) are in setup.sh's PACKAGES; setup.sh installs
# what is missing (and builds the project) only when something here is missing.
for p in "${NEEDS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    source "$ROOT/scripts/setup.sh"
    break
  fi
done

if [ ! -f "$FUZZ_BUILD_DIR/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$ROOT/tests/fuzz" -B "$FUZZ_BUILD_DIR" -G Ninja >/dev/null
fi
cmake --build "$FUZZ_BUILD_DIR" --target "$NAME"
FUZZER="$FUZZ_BUILD_DIR/$NAME"
export UBSAN_OPTIONS="print_stacktrace=1:${UBSAN_OPTIONS:-}"

if (($#)); then
  exec "$FUZZER" -rss_limit_mb=2048 -timeout=25 "$@"
fi

if [ "$FUZZ_SECONDS" = 0 ]; then
  echo "$NAME: FUZZ_SECONDS=0, not fuzzing"
  exit 0
fi

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/rpcscope-fuzz.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
mkdir -p "$SCRATCH/corpus" "$FUZZ_BUILD_DIR/artifacts"
cp "$CORPUS"/* "$SCRATCH/corpus/"
LOG="$FUZZ_BUILD_DIR/$NAME.log"

echo "$NAME: fuzzing for ${FUZZ_SECONDS}s (log: $LOG)"
rc=0
"$FUZZER" "$SCRATCH/corpus" \
  -max_total_time="$FUZZ_SECONDS" -max_len=16384 -rss_limit_mb=2048 -timeout=25 -detect_leaks=1 \
  -dict="$DICT" -print_final_stats=1 \
  -artifact_prefix="$FUZZ_BUILD_DIR/artifacts/" >"$LOG" 2>&1 || rc=$?

if ((rc != 0)); then
  tail -n 60 "$LOG"
  echo "$NAME: FAILED (exit $rc); the input is in $FUZZ_BUILD_DIR/artifacts/." >&2
  echo "  reproduce: FUZZ_TARGET=$FUZZ_TARGET scripts/fuzz.sh $FUZZ_BUILD_DIR/artifacts/<file>; once fixed, add it to" \
    "${CORPUS#"$ROOT"/}/" >&2
  exit "$rc"
fi
# libFuzzer's own summary: the seed corpus loaded, the last status line (runs, coverage), the final stats.
grep -E '^#[0-9]+[[:space:]]+INITED|^#[0-9]+[[:space:]]+DONE|^Done [0-9]+ runs|^stat::' "$LOG"
echo "$NAME: no crash, leak or property violation in ${FUZZ_SECONDS}s"
