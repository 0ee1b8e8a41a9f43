#!/usr/bin/env bash
# Runs `conformance --support` (the backend comes from PORTABLE_BACKEND) and
# checks its output is the kind x dtype grid: the header row, then one row
# per op kind whose cells are all yes / no / -. Exit status: 0, 1 on a bad
# grid or a failing run, 77 when the backend is unavailable (CTest: skip).
set -u
conformance=$1
out=$("$conformance" --support)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 77 ] && exit 77
if [ "$rc" -ne 0 ]; then
  echo "check_support_grid: conformance --support exited $rc" >&2
  exit 1
fi
header='| op kind | f32 | f64 | i32 | i64 | u8 | f16 | bf16 |'
if ! grep -qxF -- "$header" <<<"$out"; then
  echo "check_support_grid: no grid header '$header'" >&2
  exit 1
fi
rows=$(grep -A1000 -xF -- "$header" <<<"$out" | tail -n +3 | grep -c '^| ')
bad=$(grep -A1000 -xF -- "$header" <<<"$out" | tail -n +3 | grep '^| ' |
      grep -vcE '^\| [a-z_0-9]+ (\| (yes|no|-) )+\|$')
if [ "$rows" -lt 1 ] || [ "$bad" -ne 0 ]; then
  echo "check_support_grid: $rows rows, $bad with a cell that is not yes / no / -" >&2
  exit 1
fi
echo "check_support_grid: $rows op kinds"
