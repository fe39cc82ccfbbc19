#!/usr/bin/env bash
# instr-compare.sh OLD_REV NEW_REV [BENCH_REGEXP] [PKG]
#
# Compares the instructions per operation of one Go benchmark at two
# commits, counted by valgrind's callgrind. Instruction counts do not depend
# on how busy the machine is, so the comparison holds on a loaded 2-core CI
# box where ns/op swings by 2x. Each binary runs the benchmark at N and 2N
# iterations; the difference divided by N is the cost of one operation,
# with start-up and the benchmark's set-up cancelled out.
#
# Example: scripts/instr-compare.sh 67cd288 HEAD '^BenchmarkRCSend64$' ./sim
set -euo pipefail
old=${1:?old revision} new=${2:?new revision}
bench=${3:-'^BenchmarkRCSend64$'} pkg=${4:-./sim} n=${N:-20000}
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 2; }
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
build() { # rev out
  git -C "$root" worktree add -q --detach "$work/src-$2" "$1"
  (cd "$work/src-$2" && go test -c -o "$work/$2.test" "$pkg")
  git -C "$root" worktree remove --force "$work/src-$2"
}
count() { # binary iterations
  # asyncpreemptoff: callgrind cannot follow Go's preemption signals.
  # cpu.rdtscp=off: valgrind 3.19 raises SIGILL on the runtime's RDTSCP on
  # some hosts (the run dies part way, and its count is short).
  GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOMAXPROCS=1 valgrind --tool=callgrind \
    --callgrind-out-file=/dev/null "$1" -test.run '^$' -test.bench "$bench" \
    -test.benchtime "${2}x" -test.count 1 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
build "$old" old; build "$new" new
for b in old new; do
  a=$(count "$work/$b.test" "$n"); c=$(count "$work/$b.test" $((2 * n)))
  eval "per_$b=$(( (c - a) / n ))"
done
echo "instructions/op  old ($old): $per_old  new ($new): $per_new"
awk -v o="$per_old" -v n="$per_new" 'BEGIN { printf "new/old = %.3f\n", n / o }'
