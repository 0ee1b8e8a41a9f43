#!/usr/bin/env bash
# The digits MLP epoch with 1 and with 2 threads, alternated round by round
# in one run: more threads must never be slower.
#   bench/mlp_threads.sh [build-dir] [rounds]
# Prints a markdown table of each round's median epoch, then the median of
# those medians per thread count. Numbers only; nothing is asserted.
set -euo pipefail
build=${1:-build}
rounds=${2:-6}
declare -a one two
echo "| round | 1 thread: median epoch ms | 2 threads: median epoch ms |"
echo "|---:|---:|---:|"
for r in $(seq 1 "$rounds"); do
  a=$(OMP_NUM_THREADS=1 "$build"/bench/bench_mlp --no-torch --epochs 20 | awk '/^libportable/ {print $3}')
  b=$(OMP_NUM_THREADS=2 "$build"/bench/bench_mlp --no-torch --epochs 20 | awk '/^libportable/ {print $3}')
  one+=("$a"); two+=("$b")
  echo "| $r | $a | $b |"
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo
echo "Median of the round medians: 1 thread $(median "${one[@]}") ms, 2 threads $(median "${two[@]}") ms."
