#!/usr/bin/env bash
# f64 on an OpenCL device without fp64 (PORTABLE_OPENCL_FP64=0 makes PoCL
# pose as one): data movement runs by element size (fills, copies of views,
# where, gather, cat/stack must PASS, and casts to and from f64, converted
# through the host), arithmetic is a SKIP naming the
# missing cl_khr_fp64, and nothing fails.
#   check_no_fp64.sh <conformance program>
set -uo pipefail
out=$(PORTABLE_OPENCL_FP64=0 "$1" f64 2>&1)
rc=$?
echo "$out" | tail -1
[[ $rc -eq 77 ]] && { echo "$out" | head -3; exit 77; }
fail=0
summary=$(echo "$out" | grep -E '^conformance\(opencl:[0-9]+\): [0-9]+ passed, 0 failed, [0-9]+ skipped$') ||
  { echo "check_no_fp64: failures, or no summary line:"; echo "$out" | grep '^FAIL' | head -20; fail=1; }
moves=$(echo "$out" | grep -cE '^PASS (transpose|narrow|permute|expand|zeros|ones|full|where|gather|cat|stack)[^ ]* f64')
if [[ $moves -lt 40 ]]; then
  echo "check_no_fp64: only $moves data-movement f64 cases passed (expected >= 40): f64 storage is not moved by size"
  echo "$out" | grep -E '^SKIP (transpose|narrow|zeros|where)[^ ]* f64' | head -5
  fail=1
fi
# Casts to and from f64 convert through the host there (backends/opencl/exec_elementwise_host_cast.c).
casts=$(echo "$out" | grep -cE '^PASS cast (f64->(f32|i32|i64|u8)|(f32|i32|i64|u8)->f64) ')
if [[ $casts -lt 30 ]]; then
  echo "check_no_fp64: only $casts casts to or from f64 passed (expected >= 30): no host conversion"
  echo "$out" | grep -E '^(SKIP|FAIL) cast' | head -5
  fail=1
fi
if ! grep -qE '^SKIP add f64 .*lacks cl_khr_fp64' <<<"$out"; then
  echo "check_no_fp64: f64 arithmetic was not refused with the cl_khr_fp64 reason (is PORTABLE_OPENCL_FP64=0 honoured?)"
  fail=1
fi
[[ $fail -eq 0 ]] && echo "check_no_fp64: $moves data-movement and $casts f64 cast cases passed without fp64; arithmetic skipped"
exit $fail
