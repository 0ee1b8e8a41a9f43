#!/usr/bin/env bash
# Proves check_core_layers.sh catches what it is there to catch: run on a
# copy of core/ and of the built objects, it passes as they are and fails,
# naming the culprit, once each of these is planted in the copy:
#   - an upward call the compiler cannot see (an object of the runtime
#     layer, compiled with its own declaration of pt_contiguous, an ops
#     function);
#   - an upward include (a tensor header including portable/ops.h);
#   - the umbrella header included in the core;
#   - a backend's name in a string literal of core/*.c (and not in a
#     comment).
# Usage: check_core_layers_selftest.sh <repository root> <core object folder>
set -u
root="${1:?usage: check_core_layers_selftest.sh <root> <core object folder>}"
objdir="${2:?usage: check_core_layers_selftest.sh <root> <core object folder>}"
lint="$root/tests/lint/check_core_layers.sh"
cc=${CC:-cc}
command -v "$cc" >/dev/null || cc=gcc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

fresh() {
  rm -rf "$tmp/root" "$tmp/objs"
  mkdir -p "$tmp/root/tests/lint"
  cp -r "$root/core" "$tmp/root/core"
  cp -r "$objdir" "$tmp/objs"
}

# expect <what> <0|1> <text the output must contain, or "">
expect() {
  local what=$1 want=$2 text=$3 out rc
  out=$("$lint" "$tmp/root" "$tmp/objs" 2>&1); rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL: $what: the lint exited $rc, expected $want"; echo "$out" | sed 's/^/  /'; fail=1; return
  fi
  if [[ -n $text && $out != *"$text"* ]]; then
    echo "FAIL: $what: the lint's output does not say '$text'"; echo "$out" | sed 's/^/  /'; fail=1; return
  fi
  echo "ok: $what"
}

fresh
expect "the core as built passes" 0 "calls downwards only"

fresh
printf 'extern void *pt_contiguous(void *x);\nvoid *pt__planted_up(void) { return pt_contiguous((void *)0); }\n' > "$tmp/planted.c"
if "$cc" -c -o "$tmp/objs/runtime/planted_up.c.o" "$tmp/planted.c"; then
  expect "a planted upward call fails" 1 "core/runtime/planted_up.c (runtime) calls pt_contiguous, defined in the later layer ops"
else
  echo "FAIL: cannot compile the planted object with $cc"; fail=1
fi

fresh
printf '#include "portable/ops.h"\n' > "$tmp/root/core/tensor/planted.h"
expect "a planted upward include fails" 1 "core/tensor/planted.h (tensor) includes \"portable/ops.h\", the public header of the later layer ops"

fresh
printf '#include "portable/portable.h"\n' > "$tmp/root/core/nn/planted.h"
expect "the umbrella header fails" 1 "core/nn/planted.h includes \"portable/portable.h\", which the core never includes"

fresh
printf '/* a comment may say cuda */\nstatic const char *planted = "opencl:0";\n' > "$tmp/root/core/runtime/planted.c"
expect "a backend name in a string fails" 1 "core/runtime/planted.c names a backend in a string"
printf '/* a comment may say cuda and opencl */\nstatic const char *planted = "cpu";\n' > "$tmp/root/core/runtime/planted.c"
expect "a backend name in a comment passes" 0 ""

exit $fail
