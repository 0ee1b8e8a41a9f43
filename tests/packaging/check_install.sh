#!/usr/bin/env bash
# Installing libportable and building an application against it, as a new
# user would (issue 11):
#   1. `cmake --install <build> --prefix P` as a non-root user (as root, the
#      script drops to nobody with setpriv): every file lands under P;
#   2. P is moved to P2: nothing may remember P;
#   3. an outside application (outside_app/) is built four ways against P2:
#      plain compiler flags, pkg-config, find_package(portable), and the
#      source tree through add_subdirectory; each runs on cpu and, when the
#      opencl plugin was built, on opencl;
#   4. the installed `P2/bin/portable devices` runs and finds the plugins in
#      P2/lib/portable.
# Usage: check_install.sh <build dir> <source dir>. CC (default cc) compiles.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

if [[ $(id -u) == 0 && -z ${PT_INSTALL_TEST_DROPPED:-} ]]; then
  if ! command -v setpriv >/dev/null; then
    echo "running as root and setpriv is missing: cannot test a non-root install; skipped"
    exit 77
  fi
  # cmake --install writes <build>/install_manifest.txt: the one file in the
  # build tree the unprivileged install needs to write.
  touch "$build/install_manifest.txt"
  chmod 666 "$build/install_manifest.txt"
  echo "running as root: the rest runs as nobody"
  exec setpriv --reuid=65534 --regid=65534 --clear-groups \
    env PT_INSTALL_TEST_DROPPED=1 HOME=/tmp "$0" "$@"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp XDG_CACHE_HOME=$tmp/cache POCL_CACHE_DIR=$tmp/pocl
unset PORTABLE_PLUGIN_PATH PORTABLE_BACKEND LD_LIBRARY_PATH
cc=${CC:-cc}
echo "== as $(id -un) (uid $(id -u))"

echo "== 1. install into a fresh prefix"
cmake --install "$build" --prefix "$tmp/first" > "$tmp/install.log"
outside=$(grep -v "^$tmp/first/" "$build/install_manifest.txt" || true)
if [[ -n $outside ]]; then echo "FAIL: installed outside the prefix:"; echo "$outside"; exit 1; fi
echo "$(wc -l < "$build/install_manifest.txt") files, all under the prefix"

echo "== 2. move the prefix"
mv "$tmp/first" "$tmp/moved"
P=$tmp/moved
if grep -rlF "$tmp/first" "$P" 2>/dev/null; then echo "FAIL: the files above name the old prefix"; exit 1; fi
libdir=$(dirname "$(find "$P" -name 'libportable.so' -print -quit)")
export PKG_CONFIG_PATH=$libdir/pkgconfig
backends=$(pkg-config --variable=backends portable)
echo "backends built: $backends"
run_devices=(cpu)
[[ " $backends " == *" opencl "* ]] && run_devices+=(opencl)

run_app() { # <label> <executable>
  for dev in "${run_devices[@]}"; do
    "$2" "$dev" || { echo "FAIL: $1 on $dev"; exit 1; }
  done
}

echo "== 3a. compiler flags"
"$cc" "$here/outside_app/app.c" -I"$P/include" -L"$libdir" -lportable -Wl,-rpath,"$libdir" \
  -o "$tmp/app_flags"
run_app flags "$tmp/app_flags"

echo "== 3b. pkg-config: $(pkg-config --cflags --libs portable)"
# shellcheck disable=SC2046
"$cc" "$here/outside_app/app.c" $(pkg-config --cflags --libs portable) \
  -Wl,-rpath,"$(pkg-config --variable=libdir portable)" -o "$tmp/app_pc"
run_app pkg-config "$tmp/app_pc"

echo "== 3c. find_package(portable)"
cmake -S "$here/outside_app" -B "$tmp/b_find" -DCMAKE_PREFIX_PATH="$P" > "$tmp/find.log" ||
  { cat "$tmp/find.log"; exit 1; }
grep "portable 0" "$tmp/find.log"
cmake --build "$tmp/b_find" > "$tmp/find_build.log" || { cat "$tmp/find_build.log"; exit 1; }
run_app find_package "$tmp/b_find/app"
# what this copy is not: a later major version, a backend it was not built with
for ask in -DPT_WANT_VERSION=1.0 -DPT_WANT_COMPONENTS=no_such_backend; do
  if cmake -S "$here/outside_app" -B "$tmp/b_refused" -DCMAKE_PREFIX_PATH="$P" "$ask" \
       > "$tmp/refused.log" 2>&1; then
    echo "FAIL: find_package accepted $ask"; exit 1
  fi
  echo "find_package refuses $ask: $(grep -m1 -iE 'version|component|not found' "$tmp/refused.log" | sed 's/^ *//')"
  rm -rf "$tmp/b_refused"
done

echo "== 3d. add_subdirectory (the source tree; cuda off to keep it quick)"
cmake -S "$here/outside_app" -B "$tmp/b_sub" -DPT_SOURCE_DIR="$src" -DCMAKE_BUILD_TYPE=Release \
  -DPT_BUILD_CUDA=OFF -DPT_BUILD_NULL=OFF > "$tmp/sub.log" || { cat "$tmp/sub.log"; exit 1; }
cmake --build "$tmp/b_sub" -j "${PT_INSTALL_TEST_JOBS:-2}" > "$tmp/sub_build.log" ||
  { tail -50 "$tmp/sub_build.log"; exit 1; }
run_app add_subdirectory "$tmp/b_sub/app"

echo "== 4. the installed portable devices"
"$P/bin/portable" devices > "$tmp/devices.txt" || { cat "$tmp/devices.txt"; exit 1; }
cat "$tmp/devices.txt"
grep -q "cpu .*ok.*($libdir/portable/libportable-cpu.so)" "$tmp/devices.txt" ||
  { echo "FAIL: the installed tool did not load the moved prefix's cpu plugin"; exit 1; }
echo "install test: ok"
