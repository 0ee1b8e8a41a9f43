#!/usr/bin/env bash
# The API reference builds with no warning (every public name documented,
# every doc comment readable), and the check has teeth: the same Doxyfile
# over a copy of the headers with one undocumented function added must fail
# and name it.
# Usage: check_docs.sh <doxygen> <Doxyfile> <include dir>
set -uo pipefail
doxygen=$1 doxyfile=$2 include=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Doxygen reads the configuration from stdin with "-"; later lines override.
run() { # <input dir> <output dir>
  { cat "$doxyfile"; echo "INPUT = $1"; echo "STRIP_FROM_PATH = $1"; echo "OUTPUT_DIRECTORY = $2"; } |
    "$doxygen" - > "$2.log" 2>&1
}

mkdir -p "$tmp/out"
if ! run "$include/portable" "$tmp/out" || [[ -s $tmp/out.log ]]; then
  echo "FAIL: the API reference has warnings:"; cat "$tmp/out.log"; exit 1
fi
[[ -f $tmp/out/html/tensor_8h.html ]] || { echo "FAIL: no html/tensor_8h.html was written"; exit 1; }
echo "ok: include/portable is fully documented ($(ls "$tmp/out/html" | wc -l) html files)"

cp -r "$include/portable" "$tmp/probe"
cat > "$tmp/probe/probe.h" <<'PROBE'
/** @file
 * A documented header with one undocumented public function. */
#include "export.h"
PT_API int pt_undocumented_probe(void);
PROBE
mkdir -p "$tmp/probe_out"
if run "$tmp/probe" "$tmp/probe_out"; then
  echo "FAIL: doxygen accepted an undocumented public function"; exit 1
fi
grep -q "pt_undocumented_probe.*not documented" "$tmp/probe_out.log" ||
  { echo "FAIL: the failure does not name the undocumented function:"; cat "$tmp/probe_out.log"; exit 1; }
echo "ok: an undocumented function fails the build: $(grep -m1 pt_undocumented_probe "$tmp/probe_out.log")"
