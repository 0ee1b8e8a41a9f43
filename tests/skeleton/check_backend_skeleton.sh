#!/usr/bin/env bash
# A new backend is `cp -r backends/null backends/<name>` plus one entry in
# PT_BACKENDS (docs/backends.md). This proves it, on a scratch copy of the
# project: the source tree is links to the real one, except backends/, where
# the null folder is copied under a new name, and the top CMakeLists.txt,
# whose PT_BACKENDS list gains that name and nothing else. It then
# configures with every other plugin off, builds only libportable, the new
# plugin and the conformance program, and runs the suite on the new backend:
# the run must name the device <name>:0, skip every op case with the
# backend's own "<name>: <op> is not implemented" reason and fail nothing
# (backends/null/check_conformance.cmake). The plugin must land in
# <build>/lib as libportable-<name>.so and export pt_backend_entry only.
# The suite also needs the cpu backend (its reference data goes through
# cpu:0): it comes from the plugin folder of the build that runs the test.
#
# Usage: check_backend_skeleton.sh <repository root> <scratch folder> <name> <cpu plugin folder>
#                                  [cmake option...]
# (ctest passes the compiler and its launcher, so a ccache run is fast).
set -u
root="${1:?usage: check_backend_skeleton.sh <root> <scratch> <name> <cpu plugin folder> [cmake option...]}"
scratch="${2:?usage: check_backend_skeleton.sh <root> <scratch> <name> <cpu plugin folder> [cmake option...]}"
name="${3:?usage: check_backend_skeleton.sh <root> <scratch> <name> <cpu plugin folder> [cmake option...]}"
others="${4:?usage: check_backend_skeleton.sh <root> <scratch> <name> <cpu plugin folder> [cmake option...]}"
shift 4
root=$(cd "$root" && pwd)
fail() { echo "backend_skeleton: $*"; exit 1; }
[[ $name =~ ^[a-z][a-z0-9]*$ ]] || fail "'$name' is not a backend name (lower-case letters and digits)"
[[ -e $root/backends/$name ]] && fail "backends/$name exists already; pick another name"

rm -rf "$scratch/src"
mkdir -p "$scratch/src/backends" "$scratch/build" || fail "cannot make $scratch"
src="$scratch/src"
# Everything at the top but backends/, the top CMakeLists.txt and build
# trees (a folder holding CMakeCache.txt) is a link to the real tree.
for entry in "$root"/* "$root"/.[!.]*; do
  base=${entry##*/}
  [[ -e $entry ]] || continue
  case $base in backends|CMakeLists.txt|.git) continue ;; esac
  [[ -f $entry/CMakeCache.txt ]] && continue
  [[ $entry == "$scratch" || $scratch == "$entry"/* ]] && continue
  ln -s "$entry" "$src/$base"
done
for b in "$root"/backends/*; do ln -s "$b" "$src/backends/${b##*/}"; done

# The two steps a new backend takes.
cp -r "$root/backends/null" "$src/backends/$name" || fail "cp -r backends/null failed"
sed -E "s/^set\(PT_BACKENDS ([^)]*)\)/set(PT_BACKENDS \1 $name)/" "$root/CMakeLists.txt" > "$src/CMakeLists.txt"
grep -qE "^set\(PT_BACKENDS .* $name\)" "$src/CMakeLists.txt" ||
  fail "no 'set(PT_BACKENDS ...)' line in the top CMakeLists.txt to add $name to"
diff "$root/CMakeLists.txt" "$src/CMakeLists.txt" | sed 's/^/  /'

echo "== configure (only libportable, the $name plugin and the tests' programs)"
cmake -S "$src" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release \
  -DPT_BUILD_CPU=OFF -DPT_BUILD_OPENCL=OFF -DPT_BUILD_CUDA=OFF -DPT_BUILD_NULL=OFF \
  -DPT_BUILD_CUDA_SIM=OFF -DPT_BUILD_DIST=OFF -DPT_BUILD_EXAMPLES=OFF -DPT_BUILD_DOCS=OFF \
  -DPT_BUILD_NN_TESTS=OFF -DPT_BUILD_TESTS=ON "$@" > "$scratch/configure.log" 2>&1 ||
  { tail -40 "$scratch/configure.log"; fail "configure failed ($scratch/configure.log)"; }
echo "== build portable-$name conformance"
cmake --build "$scratch/build" -j2 --target "portable-$name" conformance > "$scratch/build.log" 2>&1 ||
  { tail -40 "$scratch/build.log"; fail "build failed ($scratch/build.log)"; }

plugin="$scratch/build/lib/libportable-$name.so"
[[ -f $plugin ]] || fail "no $plugin: a backend of the list is built into <build>/lib"
if command -v nm >/dev/null; then
  exports=$(nm -D --defined-only "$plugin" | awk '$2 == "T" {print $3}' | tr '\n' ' ')
  [[ $exports == "pt_backend_entry " ]] || fail "$plugin exports '$exports', not pt_backend_entry alone"
fi

echo "== conformance on $name"
PORTABLE_BACKEND=$name PORTABLE_PLUGIN_PATH="$scratch/build/lib:$others" \
  cmake -DCONFORMANCE="$scratch/build/tests/conformance" -DBACKEND="$name" \
        -P "$src/backends/$name/check_conformance.cmake" > "$scratch/conformance.log" 2>&1
rc=$?
grep -E "conformance\($name:0\)|conformance $name:|FAIL" "$scratch/conformance.log" | head -20
[[ $rc -eq 0 ]] || { tail -20 "$scratch/conformance.log"; fail "the conformance check failed ($scratch/conformance.log)"; }
echo "backend_skeleton: ok (cp -r backends/null backends/$name + one PT_BACKENDS entry builds, loads and skips every op)"
