#!/usr/bin/env bash
# Tracing off vs a libportable from before tracing existed: bench_trace run
# against each library in turn, round by round (LD_LIBRARY_PATH picks the
# library; each finds its own cpu plugin beside it), best of each.
#   bench/trace_overhead.sh <build> <old-build> [rounds]
# <old-build> is a Release build of the commit before tracing (core and cpu).
set -euo pipefail
build=$1
old=$2
rounds=${3:-5}
unset PORTABLE_PLUGIN_PATH PORTABLE_TRACE
ns() { awk -F'|' '/^\| off /{gsub(/ /,"",$3); print $3}'; }
best_new=1e30; best_old=1e30
for ((r = 0; r < rounds; r++)); do
  n=$(LD_LIBRARY_PATH=$build/lib "$build"/bench/bench_trace 3 | ns)
  o=$(LD_LIBRARY_PATH=$old/lib "$build"/bench/bench_trace 3 | ns)
  echo "round $r: with tracing compiled in, off: $n ns; before: $o ns" >&2
  best_new=$(awk -v a="$best_new" -v b="$n" 'BEGIN{print (b < a) ? b : a}')
  best_old=$(awk -v a="$best_old" -v b="$o" 'BEGIN{print (b < a) ? b : a}')
done
echo "| libportable | ns per pt_add + pt_release (10 f32, cpu), best of $rounds |"
echo "|---|---:|"
echo "| before tracing | $best_old |"
echo "| tracing compiled in, off | $best_new |"
awk -v a="$best_new" -v b="$best_old" 'BEGIN{printf "| ratio (off / before) | %.3f |\n", a / b}'
