#!/usr/bin/env bash
# A replay with tracing off against a library from before replays were
# traced (and before graphs kept their inputs' storage): bench_graph run
# against each library in turn, round by round (LD_LIBRARY_PATH picks the
# library; each finds its own cpu plugin beside it), best round of each, for
# the cpu row: eager µs per op (the eager path gained one test per operand
# while capturing) and replayed µs per op (one test of the trace flag per
# replay).
#   bench/graph_trace_overhead.sh <build> <old-build> [rounds] [chain length]
# <old-build> is a Release build of the older commit (core and cpu plugin).
set -euo pipefail
build=$1
old=$2
rounds=${3:-5}
chain=${4:-64}
unset PORTABLE_PLUGIN_PATH PORTABLE_TRACE
# columns of the cpu row: | device | chain | eager | replay | ...
col() { awk -F'|' -v c="$1" '/^\| cpu/{gsub(/ /,"",$c); print $c}'; }
min() { awk -v a="$1" -v b="$2" 'BEGIN{print (b < a) ? b : a}'; }
be_new=1e30; br_new=1e30; be_old=1e30; br_old=1e30
for ((r = 0; r < rounds; r++)); do
  n=$(LD_LIBRARY_PATH=$build/lib PORTABLE_BACKEND=cpu "$build"/bench/bench_graph 3 "$chain")
  o=$(LD_LIBRARY_PATH=$old/lib PORTABLE_BACKEND=cpu "$build"/bench/bench_graph 3 "$chain")
  echo "round $r: new eager $(col 4 <<<"$n") replay $(col 5 <<<"$n"); old eager $(col 4 <<<"$o") replay $(col 5 <<<"$o") (µs/op)" >&2
  be_new=$(min "$be_new" "$(col 4 <<<"$n")"); br_new=$(min "$br_new" "$(col 5 <<<"$n")")
  be_old=$(min "$be_old" "$(col 4 <<<"$o")"); br_old=$(min "$br_old" "$(col 5 <<<"$o")")
done
echo "| libportable (cpu, chain of $chain 10-element ops, best of $rounds) | eager µs/op | replay µs/op |"
echo "|---|---:|---:|"
echo "| before | $be_old | $br_old |"
echo "| now (tracing off) | $be_new | $br_new |"
awk -v a="$be_new" -v b="$be_old" -v c="$br_new" -v d="$br_old" \
  'BEGIN{printf "| ratio (now / before) | %.3f | %.3f |\n", a / b, c / d}'
# Instructions per replayed op (perf stat, user space), where perf may count:
# bench_graph --replays 200000 minus --replays 0, divided by the ops.
if perf stat -x, -e instructions:u true >/dev/null 2>&1; then
  inst() { # lib-dir replays
    LD_LIBRARY_PATH=$1 perf stat -x, -e instructions:u "$build"/bench/bench_graph --replays "$2" "$chain" 2>&1 \
      >/dev/null | awk -F, '/instructions/{print $1}'
  }
  per_op() { awk -v a="$(inst "$1" 200000)" -v b="$(inst "$1" 0)" -v n="$chain" 'BEGIN{printf "%.1f", (a - b) / 200000 / n}'; }
  echo
  echo "| libportable (cpu) | instructions per replayed op |"
  echo "|---|---:|"
  echo "| before | $(per_op "$old/lib") |"
  echo "| now (tracing off) | $(per_op "$build/lib") |"
fi
