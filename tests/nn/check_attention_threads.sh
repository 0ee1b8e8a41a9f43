#!/bin/sh
# The cpu attention kernels' results at one thread and at two are the same
# bits: test_attention bits hashes a forward + backward's output and
# gradients. Two threads need two cores in this process's affinity; with
# fewer the cpu plugin runs one thread either way, which this says.
#   check_attention_threads.sh path/to/test_attention
set -u
prog=$1
one=$(OMP_NUM_THREADS=1 "$prog" bits) || { echo "one thread: $one"; exit 1; }
two=$(OMP_NUM_THREADS=2 "$prog" bits) || { echo "two threads: $two"; exit 1; }
[ "$(nproc)" -ge 2 ] || echo "note: one core here, so both runs used one thread"
echo "1 thread:  $one"
echo "2 threads: $two"
[ "$one" = "$two" ]
