#!/usr/bin/env bash
# CLBlast tuning overrides (backends/opencl/device_tuning.c) are loaded at
# device init: an entry from PORTABLE_OPENCL_TUNING for every device ("*")
# must be applied by CLBlastOverrideParameters, bad entries must be refused
# with a warning naming why, and matmul must still pass with the override.
# The override is a small valid Xgemm configuration; the suite's larger
# matmul cases run CLBlast's indirect Xgemm with it.
#   check_clblast_tuning.sh <conformance program>
set -uo pipefail
tune=$(mktemp)
trap 'rm -f "$tune"' EXIT
cat >"$tune" <<'TUNE'
# not a kernel CLBlast knows
*|NoSuchKernel|32|A=1
# Xgemm without its full parameter set
*|Xgemm|32|KWG=16
*|Xgemm|32|GEMMK=0,KREG=1,KWG=16,KWI=2,MDIMA=8,MDIMC=8,MWG=32,NDIMB=8,NDIMC=8,NWG=32,SA=0,SB=0,STRM=0,STRN=0,VWM=1,VWN=1
TUNE
out=$(PORTABLE_LOG=info PORTABLE_OPENCL_TUNING=$tune "$1" matmul 2>&1)
rc=$?
echo "$out" | tail -1
[[ $rc -eq 77 ]] && exit 77
fail=0
[[ $rc -eq 0 ]] || { echo "check_clblast_tuning: matmul failed with the override:"; echo "$out" | grep '^FAIL' | head; fail=1; }
grep -qE "CLBlast tuning for .* Xgemm \(32-bit\) applied from $tune:5: 16 parameters" <<<"$out" ||
  { echo "check_clblast_tuning: the Xgemm override was not applied"; echo "$out" | grep -i tuning; fail=1; }
grep -qE "NoSuchKernel .*refused .*unknown kernel name" <<<"$out" ||
  { echo "check_clblast_tuning: an unknown kernel was not refused with its reason"; fail=1; }
grep -qE "Xgemm .*from $tune:4 refused .*incomplete" <<<"$out" ||
  { echo "check_clblast_tuning: an incomplete parameter set was not refused with its reason"; fail=1; }
[[ $fail -eq 0 ]] && echo "check_clblast_tuning: override applied, bad entries refused, matmul passes"
exit $fail
