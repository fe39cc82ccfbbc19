#!/usr/bin/env bash
# build.sh [--test-hooks | --daemon] OUTDIR: builds verbsim's drop-in
# libibverbs.so.1 into OUTDIR. Then run any libibverbs program on the
# simulator with
#   LD_LIBRARY_PATH=OUTDIR program
# Needs Go, a C compiler and the libibverbs headers (Debian: libibverbs-dev).
# --test-hooks builds the test-mode library: the same library plus the test
# hooks of verbsim_test.h at their own version node VERBSIM_TEST_1 (build
# tag verbsim_testhooks), for running the conformance suite through C
# (cverbs). See docs/c-programs.md.
# --daemon builds the C-only library instead (no Go runtime in the
# program), which talks to the per-host daemon, and the verbsim binary it
# starts the daemon from, beside it (docs/daemon.md).
set -euo pipefail
hooks=
daemon=
case "${1:-}" in
--test-hooks) hooks=1; shift ;;
--daemon) daemon=1; shift ;;
esac
if [ $# -ne 1 ]; then
  echo "usage: $0 [--test-hooks | --daemon] OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
cd "$here"
if [ -n "$daemon" ]; then
  ${CC:-cc} -shared -fPIC -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers \
    -DVERBSIM_NICD -I"$here" -fvisibility=hidden \
    glue.c misc.c xrc.c mw.c dm.c nicd/client.c nicd/vs.c nicd/vsqp.c nicd/ring.c \
    -Wl,-soname,libibverbs.so.1 -Wl,--version-script="$here/libibverbs.map" -Wl,-z,now \
    -lpthread -ldl -o "$out/libibverbs.so.1"
  ln -sf libibverbs.so.1 "$out/libibverbs.so"
  (cd "$here/.." && go build -o "$out/verbsim" ./cmd/verbsim)
  exit 0
fi
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
