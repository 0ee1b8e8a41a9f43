#!/usr/bin/env bash
# Installing libportable and building an application against it, as a new
# user would:
#   1. `cmake --install <build> --prefix P` as a non-root user (as root, the
#      script drops to nobody with setpriv): every file lands under P;
#   2. P is moved to P2: nothing may remember P;
#   3. an outside application (outside_app/) is built four ways against P2:
#      plain compiler flags, pkg-config, find_package(portable), and the
#      source tree through FetchContent (clang, RelWithDebInfo, as another
#      project would take it); each runs on cpu and, when the opencl plugin
#      was built, on opencl. Where libportable-dist was built, a second
#      program links it through portable-dist.pc, portable::dist from
#      find_package and portable::dist from FetchContent;
#   4. the installed `P2/bin/portable devices` runs and finds the plugins in
#      P2/lib/portable; the license is installed and named by the .pc files.
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
have_dist=0
pkg-config --exists portable-dist && have_dist=1
echo "libportable-dist: $([[ $have_dist == 1 ]] && echo "built, $(pkg-config --libs portable-dist)" || echo "not built")"
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
if [[ $have_dist == 1 ]]; then
  # shellcheck disable=SC2046
  "$cc" "$here/outside_app/dist_app.c" $(pkg-config --cflags --libs portable-dist) \
    -Wl,-rpath,"$(pkg-config --variable=libdir portable-dist)" -o "$tmp/dist_app_pc"
  "$tmp/dist_app_pc" || { echo "FAIL: dist_app through portable-dist.pc"; exit 1; }
fi

echo "== 3c. find_package(portable)"
components=cpu
[[ $have_dist == 1 ]] && components="cpu;dist"
cmake -S "$here/outside_app" -B "$tmp/b_find" -DCMAKE_PREFIX_PATH="$P" "-DPT_WANT_COMPONENTS=$components" \
  > "$tmp/find.log" || { cat "$tmp/find.log"; exit 1; }
grep "portable 0" "$tmp/find.log"
cmake --build "$tmp/b_find" > "$tmp/find_build.log" || { cat "$tmp/find_build.log"; exit 1; }
run_app find_package "$tmp/b_find/app"
if [[ $have_dist == 1 ]]; then
  "$tmp/b_find/dist_app" || { echo "FAIL: dist_app through find_package's portable::dist"; exit 1; }
fi
# what this copy is not: a later major version, a backend it was not built with
for ask in -DPT_WANT_VERSION=1.0 -DPT_WANT_COMPONENTS=no_such_backend; do
  if cmake -S "$here/outside_app" -B "$tmp/b_refused" -DCMAKE_PREFIX_PATH="$P" "$ask" \
       > "$tmp/refused.log" 2>&1; then
    echo "FAIL: find_package accepted $ask"; exit 1
  fi
  echo "find_package refuses $ask: $(grep -m1 -iE 'version|component|not found' "$tmp/refused.log" | sed 's/^ *//')"
  rm -rf "$tmp/b_refused"
done

echo "== 3d. FetchContent (clang when present, RelWithDebInfo; cuda off to keep it quick)"
"$here/check_fetchcontent.sh" "$src" "$tmp/fetch" || exit 1
run_app FetchContent "$tmp/fetch/build/app"

echo "== 4. the installed portable devices"
"$P/bin/portable" devices > "$tmp/devices.txt" || { cat "$tmp/devices.txt"; exit 1; }
cat "$tmp/devices.txt"
grep -q "cpu .*ok.*($libdir/portable/libportable-cpu.so)" "$tmp/devices.txt" ||
  { echo "FAIL: the installed tool did not load the moved prefix's cpu plugin"; exit 1; }
license=$(pkg-config --variable=license portable)
[[ $license == MIT ]] || { echo "FAIL: portable.pc names license '$license', not MIT"; exit 1; }
if [[ $have_dist == 1 && $(pkg-config --variable=license portable-dist) != MIT ]]; then
  echo "FAIL: portable-dist.pc names no MIT license"; exit 1
fi
lic=$(find "$P" -path '*/doc/*' -name LICENSE -print -quit)
[[ -n $lic ]] && cmp -s "$lic" "$src/LICENSE" ||
  { echo "FAIL: LICENSE is not installed under <prefix>/share/doc"; exit 1; }
echo "license: $license, installed as ${lic#"$P"/}"
echo "install test: ok"
