#!/usr/bin/env bash
# libportable taken by another project with FetchContent, as its users would:
# the source tree as a tarball URL, the consumer's own build type
# (RelWithDebInfo) and compiler (clang when installed, else cc). Checks that
#   - the consumer's CMAKE_BUILD_TYPE is left as it set it, and one that set
#     none does not find libportable's Release written into its cache;
#   - only the library and its plugins (and libportable-dist where MPI is
#     found) are built: no null plugin, tool, simulator, tests, examples or
#     benchmarks;
#   - the build prints no compiler warning (PT_WERROR is off there, so a
#     warning would pass unnoticed otherwise);
#   - outside_app (and dist_app) link and run.
# Usage: check_fetchcontent.sh <source dir> <work dir>; leaves the consumer's
# build in <work dir>/build (app, dist_app) for the caller to run further.
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"
cc=cc
command -v clang >/dev/null && cc=clang

tar -C "$src" --exclude='./build*' --exclude=./.git --exclude='__pycache__' -czf "$work/libportable.tar.gz" .
echo "source tarball: $(du -h "$work/libportable.tar.gz" | cut -f1), compiler: $cc"

CC=$cc cmake -S "$here/outside_app" -B "$work/build" -DPT_FETCH_URL="$work/libportable.tar.gz" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPT_BUILD_CUDA=OFF > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
grep -q '^CMAKE_BUILD_TYPE:STRING=RelWithDebInfo$' "$work/build/CMakeCache.txt" ||
  { echo "FAIL: the consumer's build type was changed: $(grep '^CMAKE_BUILD_TYPE' "$work/build/CMakeCache.txt")"; exit 1; }

targets=$(cmake --build "$work/build" --target help | sed -n 's/^\.\.\. //p')
for want in app portable portable-cpu; do
  grep -qx "$want" <<<"$targets" || { echo "FAIL: no target $want"; exit 1; }
done
unwanted=$(grep -E '^(portable-null|portable-tool|portable-cuda-sim|test_.*|gpu_tour|mlp_digits|cnn_digits|readme_example|bench_.*|fuzz_.*)$' <<<"$targets" || true)
if [[ -n $unwanted ]]; then echo "FAIL: the subproject adds targets nobody asked for:" $unwanted; exit 1; fi
echo "targets: $(grep -E '^(app|dist_app|portable.*)$' <<<"$targets" | tr '\n' ' ')"

cmake --build "$work/build" -j "${PT_INSTALL_TEST_JOBS:-2}" > "$work/build.log" 2>&1 ||
  { tail -50 "$work/build.log"; exit 1; }
if grep -n 'warning:' "$work/build.log"; then echo "FAIL: the consumer's build has warnings (above)"; exit 1; fi
echo "built with no warnings"
if [[ -x $work/build/dist_app ]]; then
  "$work/build/dist_app" || { echo "FAIL: dist_app through FetchContent's portable::dist"; exit 1; }
fi

# A consumer that sets no build type keeps none (its generator's default).
CC=$cc cmake -S "$here/outside_app" -B "$work/build-untyped" -DPT_FETCH_URL="$work/libportable.tar.gz" \
  -DPT_BUILD_CUDA=OFF > "$work/configure-untyped.log" 2>&1 || { cat "$work/configure-untyped.log"; exit 1; }
if ! grep -q '^CMAKE_BUILD_TYPE:STRING=$' "$work/build-untyped/CMakeCache.txt"; then
  echo "FAIL: libportable wrote a build type into the consumer's cache:" \
       "$(grep '^CMAKE_BUILD_TYPE' "$work/build-untyped/CMakeCache.txt")"
  exit 1
fi
echo "FetchContent: ok"
