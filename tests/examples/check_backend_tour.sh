#!/usr/bin/env bash
# Runs the GPU tour (quick sizes) on one backend and checks what a user sees:
#   - backend available: the whole tour runs and prints its timing table,
#     experiment 11's timed pass allocates no pinned memory, and point 13's
#     replayed graph computes eager's bits;
#   - backend unavailable: a clear error naming the backend and the reason,
#     and a non-zero exit (never a crash, never a silent fallback to cpu);
#   - either way, the temporary folder ($TMPDIR) it saves a net in is left
#     as it was found.
# usage: check_backend_tour.sh <build-dir> <backend> [expect-unavailable]
set -uo pipefail
build=$1 backend=$2 expect=${3:-}
tour="$build/examples/gpu_tour"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
out=$(TMPDIR=$scratch PORTABLE_BACKEND=$backend "$tour" --quick 2>&1)
rc=$?
left=$(find "$scratch" -mindepth 1 -name 'portable*')
if [[ -n $left ]]; then echo "FAIL: the tour left behind: $left"; exit 1; fi
if [[ $rc -eq 0 ]]; then
  if [[ "$expect" == expect-unavailable ]]; then
    echo "FAIL: the tour ran although $backend should be unavailable here"; exit 1
  fi
  grep -q "^== Timings" <<<"$out" || { echo "FAIL: tour ended without its timing table"; echo "$out"; exit 1; }
  grep -q "default device $backend:0" <<<"$out" || { echo "FAIL: tour did not run on $backend:0"; echo "$out"; exit 1; }
  # Experiment 11 times overlap, not pinned allocation: its timed pass finds
  # every pinned block in the cache its untimed first pass filled.
  grep -Eq "^  pinned blocks: .*allocated 0$" <<<"$out" ||
    { echo "FAIL: the timed overlapped copies allocated pinned memory (or the line is missing)"; echo "$out"; exit 1; }
  grep -q "replayed == eager bit for bit: yes" <<<"$out" ||
    { echo "FAIL: point 13's replayed graph differs from eager (or the line is missing)"; echo "$out"; exit 1; }
  echo "PASS: tour ran on $backend:0"; exit 0
fi
if [[ $rc -ge 128 ]]; then echo "FAIL: tour crashed (exit $rc)"; echo "$out"; exit 1; fi
grep -q "no device for PORTABLE_BACKEND=$backend: .*backend $backend is unavailable: ." <<<"$out" \
  || { echo "FAIL: exit $rc without a clear reason"; echo "$out"; exit 1; }
if [[ "$expect" == expect-unavailable ]]; then echo "PASS: $backend unavailable, reported: $(tail -1 <<<"$out")"; exit 0; fi
# Unavailable without being expected to be: a skip, with the reason.
echo "SKIP: $(tail -1 <<<"$out")"; exit 77
