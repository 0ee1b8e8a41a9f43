#!/usr/bin/env bash
# Every public header compiles alone, first in a translation unit, as C99,
# C11 and C17 and as C++11, C++17 and C++20, with gcc and clang at
# -Wall -Wextra -pedantic -Werror (clang adds -Wreserved-identifier: names
# with a double underscore are reserved in C++). An application includes
# any one of them in whatever language mode it builds in.
# Usage: check_headers.sh <include dir> <dlpack include dir> [compiler...]
#        (default compilers: gcc g++ clang clang++)
set -u
inc="${1:?usage: check_headers.sh <include dir> <dlpack include dir> [compilers]}"
dlpack_inc="${2:?usage: check_headers.sh <include dir> <dlpack include dir> [compilers]}"
shift 2
compilers=("$@")
[[ ${#compilers[@]} -gt 0 ]] || compilers=(gcc g++ clang clang++)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 runs=0
for cc in "${compilers[@]}"; do
  if ! command -v "$cc" >/dev/null; then echo "skip: $cc not installed"; continue; fi
  case "$cc" in
    *++) lang=c++ ext=cpp stds=(c++11 c++17 c++20) ;;
    *) lang=c ext=c stds=(c99 c11 c17) ;;
  esac
  extra=()
  [[ $cc == clang* ]] && extra=(-Wreserved-identifier)
  for h in "$inc"/portable/*.h; do
    name=$(basename "$h")
    printf '#include <portable/%s>\nint pt_header_check_%s;\n' "$name" "${name%.h}" > "$tmp/t.$ext"
    for std in "${stds[@]}"; do
      runs=$((runs + 1))
      if ! out=$("$cc" -x "$lang" -std="$std" -Wall -Wextra -pedantic -Werror "${extra[@]}" \
                 -fsyntax-only -I"$inc" -I"$dlpack_inc" "$tmp/t.$ext" 2>&1); then
        echo "FAIL: $cc -std=$std portable/$name"; echo "$out" | head -20; fail=1
      fi
    done
  done
done
echo "$runs header compilations, $([[ $fail == 0 ]] && echo all clean || echo some failed)"
[[ $runs -gt 0 ]] || exit 77
exit $fail
