#!/usr/bin/env bash
# cnn_digits in mixed precision: trained with 16-bit compute and
# f32 master weights (--dtype bf16, f16), its test accuracy must be within
# 1 percentage point of the f32 run's, on the backend PORTABLE_BACKEND names.
#   check_cnn_mixed_precision.sh CNN_DIGITS DATA EPOCHS DTYPE...
# Each run also checks its own >= 98% and the reload on the cpu (its exit
# status). Exit: 0 all within a point, 1 a run failed or is off by more,
# 77 the backend is not available here.
set -uo pipefail
exe=$1 data=$2 epochs=$3
shift 3

# Prints the run's test accuracy in percent; the run's output goes to stderr.
accuracy() {
  local out rc
  out=$("$exe" --data "$data" --epochs "$epochs" --dtype "$1" 2>&1)
  rc=$?
  printf '%s\n' "$out" >&2
  [[ $rc -eq 0 ]] || return $rc
  printf '%s\n' "$out" | sed -n 's/^test accuracy on .*: \([0-9.]*\)% (.*/\1/p'
}

f32=$(accuracy f32)
rc=$?
if [[ $rc -eq 77 ]]; then echo "SKIP: the backend is not available here"; exit 77; fi
if [[ $rc -ne 0 || -z $f32 ]]; then echo "FAILED: the f32 run (exit $rc)"; exit 1; fi
status=0
for dtype in "$@"; do
  acc=$(accuracy "$dtype")
  rc=$?
  if [[ $rc -ne 0 || -z $acc ]]; then
    echo "FAILED: the $dtype run (exit $rc)"
    status=1
    continue
  fi
  if awk -v a="$acc" -v b="$f32" 'BEGIN { d = a - b; exit !(d <= 1 && d >= -1) }'; then
    echo "ok: $dtype compute $acc% vs f32 $f32% (within 1 point)"
  else
    echo "FAILED: $dtype compute $acc% vs f32 $f32%: more than 1 point apart"
    status=1
  fi
done
exit $status
