#!/usr/bin/env bash
# Runs every benchmark this machine can run and writes one markdown report.
#   bench/run.sh [build-dir] > bench/results/<machine>-<date>.md
# Needs a Release build (cmake -S . -B build && cmake --build build) and, for
# the peer columns, scripts/install-deps.sh (NumPy, PyTorch).
set -uo pipefail
build=${1:-build}
echo "# libportable benchmarks — $(date -u +%Y-%m-%d)"
echo
echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores;" \
     "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
echo
"$build"/tools/portable devices | sed 's/^/    /'
echo
for b in "$build"/bench/bench_core "$build"/bench/bench_math "$build"/bench/bench_alloc "$build"/bench/bench_fuse "$build"/bench/opencl/bench_opencl "$build"/bench/bench_mlp \
         "$build"/bench/cuda/bench_cuda; do
  [[ -x "$b" ]] || continue
  echo
  "$b" 2>&1
  rc=$?
  [[ $rc -eq 0 ]] || echo "($(basename "$b") exited $rc: device unavailable or failed)"
done
# Convolutional nets vs PyTorch (one thread pinned, alternating): its own driver.
if [[ -x "$build"/bench/bench_cnn ]]; then
  echo
  bash "$(dirname "$0")"/bench_cnn.sh "$build" 3 2>&1 || echo "(bench_cnn.sh failed)"
fi
# Causal attention forward + backward vs PyTorch (1 and 2 threads, alternating): its own driver.
if [[ -x "$build"/bench/bench_attention ]]; then
  echo
  bash "$(dirname "$0")"/bench_attention.sh "$build" 3 2>&1 | sed 's/^# /## /' || echo "(bench_attention.sh failed)"
fi
# Per-op overhead from Python, the package against PyTorch (needs python3-cffi and torch).
if [[ -f "$build"/python/_cdef.h ]] && /usr/bin/python3 -c "import cffi, torch" 2>/dev/null; then
  echo
  echo '```'
  PORTABLE_LIBRARY="$build"/lib/libportable.so PORTABLE_CDEF="$build"/python/_cdef.h \
    PYTHONPATH="$(dirname "$0")"/../python /usr/bin/python3 "$(dirname "$0")"/python_overhead.py 2>&1 ||
    echo "(python_overhead.py failed)"
  echo '```'
fi
