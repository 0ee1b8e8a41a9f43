#!/bin/bash
# `portable trace summary` on a trace whose figures are known: two matmuls
# of 100 and 300 us on the queue, a 2 MB h2d copy taking 500 us (4 GB/s),
# one 1.2 ms synchronize, and the queue busy 900 of its 1000 us; two
# all-reduce spans on a "collectives" row (0.4 ms, 4 MB), which are not
# the queue's and must not change its figures.
set -u
tool=$1
fixture=$2
out=$($tool trace summary "$fixture") || { echo "FAILED: the tool exited $?"; exit 1; }
echo "$out"
fail=0
expect() {
  if ! grep -qF -- "$1" <<<"$out"; then echo "FAILED: no line with: $1"; fail=1; fi
}
expect "| matmul | 2 | 0.400 | 200.00 | 100.0 % |"
expect "| synchronize (pt_device_synchronize) | 1 | 1.200 |"
expect "| h2d | 1 | 2.000 | 0.500 | 4.00 |"
expect "| opencl:0 | 3 | 1.000 | 0.900 | 0.100 | 90.0 % |"
expect "| collectives | all_reduce | 2 | 0.400 | 4.000 |"
# Not a trace: a message and status 1, never a crash.
if $tool trace summary "$0" 2>/dev/null; then echo "FAILED: a shell script passed as a trace"; fail=1; fi
$tool trace 2>/dev/null; [ $? -eq 2 ] || { echo "FAILED: 'portable trace' without a file should exit 2"; fail=1; }
exit $fail
