#!/usr/bin/env bash
# Proves check_backend_layout.sh catches what it is there to catch: run on a
# copy of backends/null and of its built objects, it passes as they are and
# fails, naming the culprit, once each of these is planted in the copy:
#   - a circle of calls: errors.c compiled with one more function, which
#     calls exec.c's null_execute (exec.c already calls errors.c);
#   - a global symbol without the backend's prefix;
#   - a global symbol of plugin.c other than pt_backend_entry;
#   - a source left out of the target (launch.c's object missing);
#   - a missing skeleton file (launch.c);
#   - a source not named by a role, and an exec file of no op family.
# Usage: check_backend_layout_selftest.sh <repository root> <build folder>
set -u
root="${1:?usage: check_backend_layout_selftest.sh <root> <build folder>}"
build="${2:?usage: check_backend_layout_selftest.sh <root> <build folder>}"
lint="$root/tests/lint/check_backend_layout.sh"
objdir="$build/backends/null/CMakeFiles/portable-null.dir"
cc=${CC:-cc}
command -v "$cc" >/dev/null || cc=gcc
[[ -d $objdir ]] || { echo "no objects of the null plugin under $objdir: build portable-null first"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
tobj="$tmp/build/backends/null/CMakeFiles/portable-null.dir"

fresh() {
  rm -rf "$tmp/root" "$tmp/build"
  mkdir -p "$tmp/root/backends" "$tmp/root/include" "$tobj"
  cp -r "$root/backends/null" "$tmp/root/backends/null"
  cp -r "$root/include/portable" "$tmp/root/include/portable"
  cp "$objdir"/*.o "$tobj/"
}

# plant <object name> <C source>: compiles the source as that object (and
# writes it beside the copied sources, where the lint looks for it).
plant() {
  printf '%s\n' "$2" > "$tmp/planted.c"
  cp "$tmp/planted.c" "$tmp/root/backends/null/${1%.o}"
  "$cc" -c -fvisibility=hidden -DPT_BACKEND_NAME='"null"' -I"$root/include" -I"$root/backends/null" \
    -o "$tobj/$1" "$tmp/planted.c" || { echo "FAIL: cannot compile the planted $1 with $cc"; fail=1; return 1; }
}

# expect <what> <0|1> <text the output must contain, or "">
expect() {
  local what=$1 want=$2 text=$3 out rc
  out=$("$lint" "$tmp/root" "$tmp/build" null 2>&1); rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL: $what: the lint exited $rc, expected $want"; echo "$out" | sed 's/^/  /'; fail=1; return
  fi
  if [[ -n $text && $out != *"$text"* ]]; then
    echo "FAIL: $what: the lint's output does not say '$text'"; echo "$out" | sed 's/^/  /'; fail=1; return
  fi
  echo "ok: $what"
}

fresh
expect "the null backend as built passes" 0 "backend layout: ok"

fresh
plant errors.c.o "$(cat "$root/backends/null/errors.c")
pt_status null_planted_back(void);
pt_status null_planted_back(void) { return null_execute(0, (const pt_op *)0); }" &&
  expect "a planted circle of calls fails" 1 "backends/null: a circle of calls between its files:"

fresh
plant device_planted.c.o "int stray_counter(void); int stray_counter(void) { return 1; }" &&
  expect "a symbol without the prefix fails" 1 "backends/null/device_planted.c defines stray_counter, which lacks the backend's prefix null_"

fresh
plant plugin.c.o "$(cat "$root/backends/null/plugin.c")
int null_planted_helper(void); int null_planted_helper(void) { return 1; }" &&
  expect "a helper in plugin.c fails" 1 "backends/null/plugin.c defines null_planted_helper: it holds the vtable and the entry point only"

fresh
rm "$tobj/launch.c.o"
expect "a source left out of the target fails" 1 "backends/null/plugin.c calls null_synchronize, which no object of the plugin defines"

fresh
rm "$tmp/root/backends/null/launch.c"
expect "a missing skeleton file fails" 1 "backends/null: the skeleton's launch.c is missing"

fresh
touch "$tmp/root/backends/null/helpers.c" "$tmp/root/backends/null/exec_misc.c"
expect "a file named by no role fails" 1 "backends/null/helpers.c: not named by a role"
expect "an exec file of no family fails" 1 "backends/null/exec_misc.c: exec files are exec_<family>[_<part>].c"

exit $fail
