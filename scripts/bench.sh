#!/usr/bin/env bash
# Install what is missing (socat included), build, and run the benchmark: one table of rpcscope against
# direct and socat baselines measured in the same run. About 2 minutes; pass --quick for about 20 s.
# --views runs the swimlane painter's benchmark instead (100,000 calls on a 1920x1080 image; --views --quick).
# --retention feeds a one-hour-equivalent session (1,000,000 calls) under the retention budget
# (--retention --quick: 200,000 calls).
# --rates times the rates strip's counts at 1,000,000 calls.
# --stats measures call statistics: live at 10,000 calls/s and on a file of 1,000,000 calls (--stats --quick).
# --pcap imports an 800 MB pcapng of recorded grpc++ traffic with rpcscope-cli convert (--pcap --quick: 100 MB)
# and prints its peak RSS against the file's size and its time against a plain read; --cli PATH (repeatable)
# compares other builds of rpcscope-cli on the same file.
# --hostile runs rpcscope-cli capture --keep 16 and --keep 256 under each hostile flood (--hostile --quick);
# RPCSCOPE_CLI or --cli PATH picks another rpcscope-cli to measure.
# --burst sends 2,000,000 ingested events (--burst --quick: 200,000) to the real window, offscreen: event-loop
# stalls, SIGINT to exit, peak RSS and events/s applied, against the idle window (--gui PATH: another build).
# --faults compares a relay without fault rules, with rules for other hops only, and with a stream rule that
# matches nothing: unary latency and streaming throughput, with their ratios (--faults --quick).
set -euo pipefail
# Build output goes to stderr, so stdout is the table alone.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" >&2

if [ "${1:-}" = "--retention" ]; then
  shift
  exec "$BUILD_DIR/tests/bench/rpcscope-retentionbench" "$@"
fi
if [ "${1:-}" = "--hostile" ]; then
  shift
  exec "$BUILD_DIR/tests/bench/rpcscope-hostilebench" --cli "${RPCSCOPE_CLI:-$BUILD_DIR/app/rpcscope-cli}" "$@"
fi
if [ "${1:-}" = "--stats" ]; then
  shift
  exec "$BUILD_DIR/tests/bench/rpcscope-statsbench" "$@"
fi
if [ "${1:-}" = "--pcap" ]; then
  shift
  exec "$BUILD_DIR/tests/bench/rpcscope-pcapbench" "$@"
fi
if [ "${1:-}" = "--rates" ]; then
  shift
  exec "$BUILD_DIR/tests/bench/rpcscope-ratebench" "$@"
fi
if [ "${1:-}" = "--burst" ]; then
  shift
  exec "$BUILD_DIR/tests/bench/rpcscope-burstbench" "$@"
fi
if [ "${1:-}" = "--faults" ]; then
  shift
  exec "$BUILD_DIR/tests/bench/rpcscope-faultbench" "$@"
fi
if [ "${1:-}" = "--views" ]; then
  shift
  exec "$BUILD_DIR/tests/bench/rpcscope-viewbench" "$@"
fi
exec "$BUILD_DIR/tests/bench/rpcscope-bench" "$@"
