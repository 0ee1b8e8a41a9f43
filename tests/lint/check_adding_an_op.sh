#!/usr/bin/env bash
# Keeps docs/adding-an-op.md exact:
#   1. every file it names in backquotes (a path with a source extension)
#      exists: a path with a folder at that path, a bare name somewhere in
#      the repository;
#   2. every file outside tests/ and docs/ where the page's example ops
#      appear is named by its path on the page, so a step that a new op needs
#      cannot go missing: RSQRT, the element-wise op added along the page's
#      steps, and SIN, a transcendental with a vectorised cpu row (PT_OP_SIN,
#      PT__G_SIN, pt_sin, X(SIN and X(sin, the kernels and helpers ew_sin and
#      pt_ew_sin, the vecmath names PT_CPU_VM_SIN and sin_f32/sin_f64, a
#      comment naming the kind SIN, the Python method).
# Usage: check_adding_an_op.sh [repository root]. Needs git (the file list is
# git's). Prints every miss and exits 1 when there is one.
set -u
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
cd "$root" || exit 1
doc=docs/adding-an-op.md
[[ -f $doc ]] || { echo "no $doc under $root"; exit 1; }
if ! files=$(git ls-files 2>/dev/null) || [[ -z $files ]]; then
    echo "check_adding_an_op.sh: $root is not a git checkout; skipped"
    exit 77
fi

bad=0
named=$(grep -oE '`[A-Za-z0-9_./-]+\.(c|h|cu|cuh|cl|py|md|sh|txt|cmake)`' "$doc" | tr -d '`' | sort -u)
[[ -n $named ]] || { echo "$doc names no file: update this script"; exit 1; }
for f in $named; do
    if [[ $f == */* ]]; then
        [[ -f $f ]] || { echo "$doc names $f, which does not exist"; bad=1; }
    elif ! grep -qE "(^|/)${f//./\\.}\$" <<<"$files"; then
        echo "$doc names $f, which is nowhere in the repository"
        bad=1
    fi
done

for k in rsqrt sin; do
    K=${k^^}
    pattern="\\bPT_OP_$K\\b|\\bPT__G_$K\\b|\\bpt_$k\\b|X\\($K\\b|X\\($k\\b|\\bew_$k\\b|\\bpt_ew_$k\\b|\\bPT_CPU_VM_$K\\b|\\b${k}_f(32|64)\\b|\\b$K\\b|def $k\\("
    mentions=$(git grep -lE "$pattern" -- . ':!tests' ':!docs')
    [[ -n $mentions ]] || { echo "no file mentions $K: pick another example op in this script"; bad=1; }
    for f in $mentions; do
        grep -qF "\`$f\`" "$doc" || { echo "$f mentions $K but $doc does not name it"; bad=1; }
    done
done
(( bad )) && exit 1
echo "$doc: $(wc -l <<<"$named") files named, all present; every file with RSQRT or SIN named"
