#!/usr/bin/env bash
# Install what is missing, build, and start rpcscope with the built-in lab running retry-basic.
# Extra arguments go to rpcscope (rpcscope --help).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
  echo "rpcscope: no display (DISPLAY is not set); for headless use run: $BUILD_DIR/app/rpcscope-cli run retry-basic --json out.json --png out.png" >&2
  exit 3
fi
exec "$BUILD_DIR/app/rpcscope" "$@"
