#!/usr/bin/env bash
# Installs what the build and the tests need on a Debian machine, and
# nothing that is already there: g++ (HLS C-simulation, cgo), libxrt-dev
# and uuid-dev (the XRT binding under -tags xrt), numpy/scipy for
# /usr/bin/python3 (the Python client's tests and dataset loaders), venv
# and wheel (the test that pip-installs the client offline), mypy (the
# client's type check), torch 1.13 for CPU (the client's torch tests:
# DeltaTransfer, the reference sampler; about 150 MB to download, a
# minute to install), zstd (compressed-input tests), and staticcheck
# (make lint).
set -euo pipefail
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in build-essential libxrt-dev uuid-dev python3-numpy python3-scipy python3-venv python3-wheel python3-mypy \
         python3-torch zstd; do
  have_pkg "$p" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "deps: missing Debian packages: ${need[*]} (install them as root with apt-get)" >&2
    exit 1
  fi
  echo "deps: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
gobin="$(go env GOPATH)/bin"
if ! command -v staticcheck >/dev/null && [ ! -x "$gobin/staticcheck" ]; then
  echo "deps: installing staticcheck" >&2
  go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
