#!/usr/bin/env bash
# Shared by run.sh and test.sh: install the Debian packages rpcscope needs (only those missing), then
# configure once and build incrementally. Source it; it sets ROOT and BUILD_DIR.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${RPCSCOPE_BUILD_DIR:-$ROOT/build}"

# Every package the build, the tests and the GUI use. Debian 12 (bookworm) names.
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev qt6-qpa-plugins libgl-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libprotoc-dev zlib1g-dev
  libnghttp2-dev socat libssl-dev nghttp2-proxy
  libpcap-dev tshark
  fonts-dejavu-core
  clang libclang-rt-14-dev clang-format
  python3 python3-grpcio
  golang-go golang-google-grpc-dev
)

# grpc-js for the tests (tst_tlsconnect): Debian 12 packages Node.js and npm but not @grpc/grpc-js, which the
# test installs with npm into the build tree at the version tests/integration/grpcjsclient pins. A Node.js
# already on the PATH (with its own npm) is used as it is.
command -v node >/dev/null || PACKAGES+=(nodejs)
command -v npm >/dev/null || PACKAGES+=(npm)

# Not needed to build, test or run: a virtual display, a key and click sender and screenshots, for driving a
# real window through a session on a machine without a screen. RPCSCOPE_WINDOW_TOOLS=1 installs them too.
if [ "${RPCSCOPE_WINDOW_TOOLS:-0}" = 1 ]; then
  PACKAGES+=(xvfb xdotool imagemagick)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "rpcscope: installing missing Debian packages: ${missing[*]}"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "rpcscope: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    SUDO=(sudo)
  fi
  "${SUDO[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  # Line tables only (-g1): backtraces keep their function names and lines, and a fresh build on two cores
  # spends far less time writing and linking debug information into the test executables.
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
fi
cmake --build "$BUILD_DIR"
