#!/usr/bin/env bash
# run_on_device.sh — build libportable on a GPU machine, run the conformance
# suite and the GPU tour on cuda, run the CUDA benchmarks and PyTorch's, and
# write one results table.
#
# Prerequisites (on the GPU machine):
#   - run from the repository root; $OUT names a folder for the results
#     (default $TMPDIR/portable-gpu-results); everything it writes goes there:
#       results.md       GPU, driver, date, test summary, all tables + ratios
#       build.log ctest.log tour.log bench.log large.log   full logs
#       bench_cuda.json bench_torch.json           raw figures
#   - an NVIDIA GPU with its driver (nvidia-smi), the CUDA toolkit (nvcc;
#     /usr/local/cuda/bin is added to PATH), CMake >= 3.20, a C compiler,
#     python3 with PyTorch (for bench_torch.py; skipped without it)
#   - the build's -dev dependencies: OpenBLAS (cpu backend), cJSON, zlib
#     headers, pkg-config. A machine with no package registry (the lent
#     H100) gets them from a carried, git-ignored .debs/root, prepared on the
#     development machine with
#         apt-get update && tests/gpu/prepare_debs.sh      # -> .debs/root (~40 MB)
#     (apt-get download + dpkg -x of libopenblas0-pthread,
#     libopenblas-pthread-dev, libopenblas-dev, libgfortran5, libquadmath0,
#     libcjson1, libcjson-dev, zlib1g-dev, pkgconf, pkgconf-bin, libpkgconf3)
#     and passed with the device tool's carry [".debs"]. Without OpenBLAS the
#     cpu backend is turned off (-DPT_BUILD_CPU=OFF) and cpu-side
#     measurements are skipped.
#   - time: about 4-6 minutes on 16 cores (fits the tool's 10-minute command);
#     every step has its own timeout, and results.md is written as steps end,
#     so a cut-off run still returns what it measured.
#
# The device tool's command, from a development machine:
#   run(command="bash tests/gpu/run_on_device.sh", carry=[".debs"], timeout_s=600)
# then copy $OUT/results.md to bench/results/cuda-<gpu>-<date>.md.
#
# Environment knobs: BUILD_DIR (default build), JOBS (default nproc),
# QUICK=1 (smaller benchmarks), SKIP_TESTS=1, SKIP_BENCH=1, EXTRA_CMAKE_ARGS
# (e.g. "-DPT_BUILD_NN_TESTS=OFF" while another part does not configure).
set -uo pipefail

OUT=${OUT:-${TMPDIR:-/tmp}/portable-gpu-results}
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 8)}
mkdir -p "$OUT"
RESULTS=$OUT/results.md
export PYTHONUNBUFFERED=1
export PATH=/usr/local/cuda/bin:$PATH
QUICK_FLAG=""
[ "${QUICK:-0}" = 1 ] && QUICK_FLAG=--quick

note() { echo "== $*"; }
section() { printf '\n%s\n\n' "$*" >>"$RESULTS"; }

# ---- Header: machine, driver, date ----
{
  echo "# libportable CUDA results"
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
  if command -v nvidia-smi >/dev/null; then
    echo "| GPU | $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1) |"
    echo "| driver | $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1) |"
  else
    echo "| GPU | nvidia-smi not found |"
  fi
  echo "| nvcc | $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p') |"
  echo "| cmake | $(cmake --version | head -1 | awk '{print $3}') |"
  echo "| PyTorch | $(python3 -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>/dev/null || echo 'not available') |"
  echo "| host | $(nproc) cores, $(uname -r) |"
  echo "| source | $(git rev-parse --short HEAD 2>/dev/null || echo 'unknown commit')$(git diff --quiet 2>/dev/null || echo ' (with local changes)') |"
} >"$RESULTS"

# ---- Dependencies from the carried .debs/root ----
CMAKE_EXTRA=()
RUN_LD=${LD_LIBRARY_PATH:-}
DEBROOT=$PWD/.debs/root
if [ -d "$DEBROOT/usr" ]; then
  note "using carried packages in $DEBROOT"
  multi=$DEBROOT/usr/lib/x86_64-linux-gnu
  # dpkg -x keeps absolute paths (/usr/...) in .pc and CMake config files:
  # point them into the unpacked tree (idempotent).
  find "$DEBROOT" \( -name '*.pc' -o -name '*Config.cmake' -o -name '*.cmake' \) -type f -print0 |
    xargs -0 -r sed -i -E "s#([= (\"'])/usr/#\\1$DEBROOT/usr/#g"
  # Debian's alternatives symlinks are not in the packages; nor is zlib's
  # runtime, whose dev symlink is absolute.
  ln -sf openblas-pthread/libopenblas.so.0 "$multi/libopenblas.so.0"
  ln -sf openblas-pthread/libopenblas.so "$multi/libopenblas.so"
  mkdir -p "$DEBROOT/usr/include"
  for h in cblas.h openblas_config.h f77blas.h; do
    ln -sf "x86_64-linux-gnu/openblas-pthread/$h" "$DEBROOT/usr/include/$h"
  done
  if [ ! -e "$multi/libz.so" ]; then
    sysz=$(ldconfig -p 2>/dev/null | awk '/libz\.so\.1 .*x86-64/ {print $NF; exit}')
    [ -n "$sysz" ] && ln -sf "$sysz" "$multi/libz.so"
  fi
  if ! command -v pkg-config >/dev/null && [ -x "$DEBROOT/usr/bin/pkgconf" ]; then
    # A pkg-config for CMake's FindPkgConfig, finding its own libpkgconf.
    shim=$(mktemp -d)
    printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$multi" "$DEBROOT/usr/bin/pkgconf" >"$shim/pkg-config"
    chmod +x "$shim/pkg-config"
    export PATH=$shim:$PATH
  fi
  # Name the pkg-config to use: CMake would otherwise pick the unpacked
  # pkgconf under CMAKE_PREFIX_PATH, which cannot find its libpkgconf.
  command -v pkg-config >/dev/null && CMAKE_EXTRA+=("-DPKG_CONFIG_EXECUTABLE=$(command -v pkg-config)")
  export PKG_CONFIG_PATH=$multi/pkgconfig:$multi/openblas-pthread/pkgconfig:$DEBROOT/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  CMAKE_EXTRA+=("-DCMAKE_PREFIX_PATH=$DEBROOT/usr;$multi/openblas-pthread;$multi/cmake"
                "-DCMAKE_INCLUDE_PATH=$DEBROOT/usr/include;$DEBROOT/usr/include/x86_64-linux-gnu/openblas-pthread"
                "-DCMAKE_LIBRARY_PATH=$multi;$multi/openblas-pthread"
                "-DZLIB_ROOT=$DEBROOT/usr"
                "-DCMAKE_BUILD_RPATH=$multi;$multi/openblas-pthread")
  RUN_LD=$multi:$multi/openblas-pthread${RUN_LD:+:$RUN_LD}
fi

have_openblas() {
  ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so' && return 0
  [ -e "$DEBROOT/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so" ] && return 0
  return 1
}
if have_openblas; then CPU=ON; else
  CPU=OFF
  note "OpenBLAS not found: building without the cpu backend"
fi

# ---- Configure and build ----
GEN=()
# Ninja for a fresh build folder; an existing one keeps its generator.
[ ! -e "$BUILD_DIR/CMakeCache.txt" ] && command -v ninja >/dev/null && GEN=(-G Ninja)
note "configure + build ($BUILD_DIR, $JOBS jobs)"
build_ok=1
{
  timeout 120 cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DPT_WERROR=ON \
    -DPT_BUILD_OPENCL=OFF -DPT_BUILD_CPU=$CPU -DPT_BUILD_CUDA=ON "${CMAKE_EXTRA[@]}" ${EXTRA_CMAKE_ARGS:-} &&
  timeout 360 cmake --build "$BUILD_DIR" -j "$JOBS"
} >"$OUT/build.log" 2>&1 || build_ok=0
section "## Build"
if [ $build_ok = 1 ]; then
  echo "Configured with PT_BUILD_OPENCL=OFF PT_BUILD_CPU=$CPU PT_BUILD_CUDA=ON: build OK." >>"$RESULTS"
else
  { echo "Build FAILED (PT_BUILD_CPU=$CPU); last lines of build.log:"; echo; echo '```'
    tail -40 "$OUT/build.log"; echo '```'; } >>"$RESULTS"
fi
[ -e "$BUILD_DIR/lib/libportable-cuda.so" ] || { echo "libportable-cuda.so was not built" >>"$RESULTS"; }

run_env() { env LD_LIBRARY_PATH="$RUN_LD" PORTABLE_BACKEND=cuda "$@"; }

# ---- What the library sees ----
# Executables live in their source-named build folders (build/examples/gpu_tour);
# an older layout put them in build/bin.
find_exe() { for p in "$@"; do [ -x "$p" ] && { echo "$p"; return 0; }; done; return 1; }
TOOL=$(find_exe "$BUILD_DIR/tools/portable" "$BUILD_DIR/bin/portable")
TOUR=$(find_exe "$BUILD_DIR/examples/gpu_tour" "$BUILD_DIR/bin/gpu_tour")
if [ -n "$TOOL" ]; then
  section "## portable devices"
  { echo '```'; run_env timeout 60 "$TOOL" devices 2>&1; echo '```'; } >>"$RESULTS"
fi

# ---- Conformance suite on cuda ----
if [ "${SKIP_TESTS:-0}" != 1 ] && [ $build_ok = 1 ]; then
  note "ctest with PORTABLE_BACKEND=cuda"
  run_env timeout 300 ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 240 -j 4 \
    >"$OUT/ctest.log" 2>&1
  rc=$?
  section "## Tests (ctest, PORTABLE_BACKEND=cuda), exit status $rc"
  { echo '```'; grep -E "tests passed|tests failed|Test +#|\*\*\*|Skipped|Not Run" "$OUT/ctest.log" | tail -60; echo '```'; } >>"$RESULTS"
fi

# ---- The plugin's RUNPATH, the pinned cache, tensors above 2^32 elements ----
if [ -e "$BUILD_DIR/lib/libportable-cuda.so" ]; then
  section "## libportable-cuda.so dynamic section (RUNPATH to the CUDA toolkit)"
  { echo '```'; readelf -d "$BUILD_DIR/lib/libportable-cuda.so" | grep -E "RUNPATH|RPATH|NEEDED"; echo '```'; } >>"$RESULTS"
fi
if [ -s "$OUT/ctest.log" ] && grep -q -- "-- pinned cache:" "$OUT/ctest.log"; then
  section "## Pinned host-block cache (cuda_runtime test)"
  { echo '```'; grep -- "-- pinned cache:" "$OUT/ctest.log"; echo '```'; } >>"$RESULTS"
fi
LARGE=$(find_exe "$BUILD_DIR/tests/test_large_tensors" "$BUILD_DIR/bin/test_large_tensors")
if [ "${SKIP_TESTS:-0}" != 1 ] && [ -n "$LARGE" ]; then
  note "tensors above 2^32 elements on cuda:0"
  run_env timeout 300 "$LARGE" cuda:0 >"$OUT/large.log" 2>&1
  rc=$?
  section "## Tensors above 2^32 elements (u8, ~4.3 GB, cuda:0), exit status $rc (77: skipped)"
  { echo '```'; cat "$OUT/large.log"; echo '```'; } >>"$RESULTS"
fi

# ---- GPU tour ----
if [ -n "$TOUR" ]; then
  note "gpu_tour on cuda"
  run_env timeout 120 "$TOUR" >"$OUT/tour.log" 2>&1
  rc=$?
  section "## GPU tour (PORTABLE_BACKEND=cuda), exit status $rc"
  { echo '```'; tail -80 "$OUT/tour.log"; echo '```'; } >>"$RESULTS"
else
  section "## GPU tour"
  echo "$BUILD_DIR/examples/gpu_tour was not built." >>"$RESULTS"
fi

# ---- Benchmarks ----
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  BENCH=$(find_exe "$BUILD_DIR/bench/cuda/bench_cuda" "$BUILD_DIR/bin/bench_cuda")
  if [ -z "$BENCH" ] && [ -e "$BUILD_DIR/lib/libportable.so" ]; then
    # bench/CMakeLists.txt may not add_subdirectory(cuda) yet: build it by hand.
    note "building bench_cuda directly"
    cc -O2 -std=c11 -Iinclude -I/usr/local/cuda/include bench/cuda/bench_cuda.c -o "$BUILD_DIR/bench_cuda" \
      -L"$BUILD_DIR/lib" -lportable -L/usr/local/cuda/lib64 -lcudart -lcublas -lm \
      -Wl,-rpath,"$PWD/$BUILD_DIR/lib:/usr/local/cuda/lib64" >>"$OUT/build.log" 2>&1 && BENCH=$BUILD_DIR/bench_cuda
  fi
  : >"$OUT/bench.log"
  section "## Benchmarks"
  if [ -n "$BENCH" ] && [ -x "$BENCH" ]; then
    note "bench_cuda"
    run_env timeout 240 "$BENCH" $QUICK_FLAG --json "$OUT/bench_cuda.json" >"$OUT/bench_cuda.md" 2>>"$OUT/bench.log"
    rc=$?
    echo "bench_cuda exit status $rc" >>"$OUT/bench.log"
    [ $rc = 0 ] || { echo "bench_cuda exit status $rc:"; echo; echo '```'; tail -5 "$OUT/bench.log"; echo '```'; } >>"$RESULTS"
  else
    echo "bench_cuda could not be built (see build.log)." >>"$RESULTS"
  fi
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    note "bench_torch.py"
    timeout 240 python3 bench/cuda/bench_torch.py $QUICK_FLAG --json "$OUT/bench_torch.json" \
      >"$OUT/bench_torch.md" 2>>"$OUT/bench.log"
    rc=$?
    echo "bench_torch exit status $rc" >>"$OUT/bench.log"
    [ $rc = 0 ] || echo "bench_torch.py exit status $rc (see bench.log)." >>"$RESULTS"
  else
    echo "PyTorch with CUDA is not available: no PyTorch column." >>"$RESULTS"
  fi
  if [ -s "$OUT/bench_cuda.json" ]; then
    python3 bench/cuda/combine_results.py "$OUT/bench_cuda.json" "$OUT/bench_torch.json" >>"$RESULTS" 2>>"$OUT/bench.log"
  fi
  for f in bench_cuda.md bench_torch.md; do
    if [ -s "$OUT/$f" ]; then
      section "### Full output: ${f%.md}"
      sed 's/^# /#### /; s/^## /#### /' "$OUT/$f" >>"$RESULTS"
    fi
    # fold into bench.log: the device tool brings back at most 8 files
    if [ -e "$OUT/$f" ]; then { echo "---- $f"; cat "$OUT/$f"; } >>"$OUT/bench.log"; rm -f "$OUT/$f"; fi
  done
fi

note "done: $RESULTS"
cat "$RESULTS"
