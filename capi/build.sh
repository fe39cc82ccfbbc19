#!/usr/bin/env bash
# build.sh OUTDIR: builds verbsim's drop-in libibverbs.so.1 into OUTDIR.
# Then run any libibverbs program on the simulator with
#   LD_LIBRARY_PATH=OUTDIR program
# Needs Go, a C compiler and the libibverbs headers (Debian: libibverbs-dev).
# See docs/c-programs.md.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
cd "$here"
CGO_ENABLED=1 go build -buildmode=c-shared -trimpath \
  -ldflags "-extldflags '-Wl,-soname,libibverbs.so.1 -Wl,--version-script=$here/libibverbs.map -Wl,-z,now'" \
  -o "$out/libibverbs.so.1" .
rm -f "$out/libibverbs.so.h" "$out/libibverbs.so.1.h"
# For linking programs against it: cc ... -L OUTDIR -libverbs
ln -sf libibverbs.so.1 "$out/libibverbs.so"
