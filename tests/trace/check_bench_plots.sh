#!/bin/bash
# bench/plot_results.py: every ratio table of bench/results has its picture
# right under it, and a --loss-log file (5 "epoch step loss" lines) becomes a
# curve of 5 points in a PNG.
set -u
root=$1
out=$2
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || { echo "skip: python3-matplotlib is not installed"; exit 77; }
fail=0
/usr/bin/python3 "$root/bench/plot_results.py" tables --check "$root"/bench/results/*.md || {
  echo "FAILED: a results table has no picture: run bench/plot_results.py tables bench/results/*.md"; fail=1; }
stats=$(/usr/bin/python3 "$root/bench/plot_results.py" losses "$out" "$root/tests/trace/loss_fixture.txt") ||
  { echo "FAILED: losses exited $?"; fail=1; }
echo "$stats"
grep -qx "loss_fixture.txt: 5 points" <<<"$stats" || { echo "FAILED: 5 points expected"; fail=1; }
[ "$(head -c 8 "$out" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || { echo "FAILED: $out is not a PNG"; fail=1; }
exit $fail
