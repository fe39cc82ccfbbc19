#!/usr/bin/env bash
# build.sh [--test-hooks] OUTDIR: builds verbsim's drop-in libibverbs.so.1
# into OUTDIR. Then run any libibverbs program on the simulator with
#   LD_LIBRARY_PATH=OUTDIR program
# Needs Go, a C compiler and the libibverbs headers (Debian: libibverbs-dev).
# --test-hooks builds the test-mode library: the same library plus the test
# hooks of verbsim_test.h at their own version node VERBSIM_TEST_1 (build
# tag verbsim_testhooks), for running the conformance suite through C
# (cverbs). See docs/c-programs.md.
set -euo pipefail
hooks=
if [ "${1:-}" = "--test-hooks" ]; then
  hooks=1
  shift
fi
if [ $# -ne 1 ]; then
  echo "usage: $0 [--test-hooks] OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
cd "$here"
map=$here/libibverbs.map
tags=()
if [ -n "$hooks" ]; then
  # One version script: the production one with the hooks' node added.
  map=$(mktemp)
  trap 'rm -f "$map"' EXIT
  cat "$here/libibverbs.map" "$here/testhooks.map" >"$map"
  tags=(-tags verbsim_testhooks)
fi
CGO_ENABLED=1 go build -buildmode=c-shared -trimpath "${tags[@]}" \
  -ldflags "-extldflags '-Wl,-soname,libibverbs.so.1 -Wl,--version-script=$map -Wl,-z,now'" \
  -o "$out/libibverbs.so.1" .
rm -f "$out/libibverbs.so.h" "$out/libibverbs.so.1.h"
# For linking programs against it: cc ... -L OUTDIR -libverbs
ln -sf libibverbs.so.1 "$out/libibverbs.so"
