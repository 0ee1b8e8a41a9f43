#!/bin/bash
# scripts/render_trace.py draws every span of a trace with known contents:
# 4 host spans, 3 device spans and 2 spans on a "collectives" row on
# opencl:0, and writes a PNG.
set -u
root=$1
out=$2
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || { echo "skip: python3-matplotlib is not installed"; exit 77; }
stats=$(/usr/bin/python3 "$root/scripts/render_trace.py" "$root/tests/trace/summary_fixture.json" "$out" --stats) ||
  { echo "FAILED: render_trace.py exited $?"; exit 1; }
echo "$stats"
fail=0
grep -qx "opencl:0 host 4" <<<"$stats" || { echo "FAILED: 4 host spans expected"; fail=1; }
grep -qx "opencl:0 queue 3" <<<"$stats" || { echo "FAILED: 3 queue spans expected"; fail=1; }
grep -qx "opencl:0 collectives 2" <<<"$stats" || { echo "FAILED: 2 collectives spans expected"; fail=1; }
[ "$(head -c 8 "$out" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || { echo "FAILED: $out is not a PNG"; fail=1; }
exit $fail
