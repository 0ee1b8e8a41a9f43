#!/usr/bin/env bash
# libportable loads with dlopen into a program that did not link it:
# exactly `python3 -c "import ctypes; ctypes.CDLL('<lib>')"`, then
# dlopen_ctypes.py (a tensor made and read back through ctypes). It failed with
# "cannot allocate memory in static TLS block" while the library's
# initial-exec TLS block was 7 KiB: glibc keeps only ~512 bytes of static TLS
# for libraries loaded late. The block's size is checked too, so growth shows
# here before it breaks a loader that has less room than this one.
# Usage: check_dlopen.sh <path of libportable.so>. Exit 77 (skip) without python3.
set -euo pipefail
lib=$1
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v python3 >/dev/null 2>&1; then
    echo "python3 not found: skipped"
    exit 77
fi
python3 -c "import ctypes; ctypes.CDLL('$lib')"
echo "python3 -c \"import ctypes; ctypes.CDLL('$lib')\": ok"
python3 "$here/dlopen_ctypes.py" "$lib"
if command -v readelf >/dev/null 2>&1; then
    # The TLS program header's MemSiz (6th field), hex.
    size=$(readelf -lW "$lib" | awk '$1 == "TLS" { print $6 }')
    if [ -n "$size" ] && [ $((size)) -gt 128 ]; then
        echo "FAILED: libportable's thread-local block is $((size)) bytes; keep it under 128" \
             "(move big thread-locals to the per-thread heap block, see PT__HOT_TLS in core/runtime/runtime.h)"
        exit 1
    fi
    echo "thread-local block: $((size)) bytes"
fi
