#!/usr/bin/env bash
# The test command: builds libportable twice and runs every test.
#   1. Release build (all backends whose toolkits are present): ctest runs the
#      unit tests and the conformance suite once per backend (cpu, opencl on
#      PoCL or a real device, cuda where a GPU exists; absent ones skip).
#   2. AddressSanitizer + UndefinedBehaviorSanitizer build: the same tests on
#      the cpu backend, and the cuda suites on the CUDA simulator, which runs
#      the cuda plugin's own host code and kernels instrumented (PoCL's JIT
#      and the real CUDA runtime are not).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DPT_SANITIZE=ON \
      -DPT_BUILD_OPENCL=OFF -DPT_BUILD_CUDA=OFF >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE "^(opencl|cuda)$"
