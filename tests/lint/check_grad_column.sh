#!/usr/bin/env bash
# The op table's grad column (include/portable/op_table.h) says which kinds
# autograd differentiates; this keeps it the truth:
#   1. every kind with grad 1 (core/ops/tape.h makes each one a PT__G_<KIND>
#      saving what its saves column says) has a rule in core/autograd/rules.c,
#      and a kind with grad 0 has none and saves NONE;
#   2. no PT__GRAD_OPS row (the ops made of views or of several kinds:
#      reshape, cat, ...) is named like a kind, and each has its rule.
# Usage: check_grad_column.sh [repository root]. Prints every mismatch and
# exits 1 when there is one.
set -u
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
table="$root/include/portable/op_table.h"
tape="$root/core/ops/tape.h"
rules="$root/core/autograd/rules.c"

# KIND grad saves, one per line, from the rows
# X(KIND, "name", FAMILY, arity, DTYPES, RESULT, grad, saves).
kinds=$(sed -n 's/^ *X(\([A-Z0-9_]*\), *"[a-z0-9_]*", *[A-Z]*, *[0-9], *[A-Z]*, *[A-Z0-9]*, *\([01]\), *\([A-Z0-9_]*\)).*/\1 \2 \3/p' "$table")
# Rows of PT__GRAD_OPS and of the rules table.
grad_ops=$(sed -n '/^#define PT__GRAD_OPS(X)/,/^$/s/^ *X(\([A-Z0-9_]*\),.*/\1/p' "$tape")
rule_rows=$(sed -n 's/^ *\[PT__G_\([A-Z0-9_]*\)\] *= *{"[a-z0-9_]*", *backward_[a-z0-9_]*}.*/\1/p' "$rules")
n_kinds=$(wc -l <<<"$kinds")
if (( n_kinds < 40 )) || [[ -z $grad_ops || -z $rule_rows ]]; then
    echo "check_grad_column.sh: read $n_kinds kinds, $(wc -w <<<"$grad_ops") PT__GRAD_OPS rows and" \
         "$(wc -w <<<"$rule_rows") rules; the files' layout changed: update this script"
    exit 1
fi

bad=0
has() { grep -qxF -- "$2" <<<"$1"; }
while read -r kind grad saves; do
    if [[ $grad == 1 ]]; then
        has "$rule_rows" "$kind" || { echo "$kind: grad 1 in op_table.h but no [PT__G_$kind] rule in core/autograd/rules.c"; bad=1; }
    else
        has "$rule_rows" "$kind" && { echo "$kind: grad 0 in op_table.h but core/autograd/rules.c has a rule for it: set grad to 1"; bad=1; }
        [[ $saves == NONE ]] || { echo "$kind: grad 0 in op_table.h but saves $saves: nothing to save"; bad=1; }
    fi
    has "$grad_ops" "$kind" && { echo "$kind: a kind of op_table.h in PT__GRAD_OPS (core/ops/tape.h): its row's grad column says it"; bad=1; }
done <<<"$kinds"
for name in $grad_ops; do
    has "$rule_rows" "$name" || { echo "$name: a PT__GRAD_OPS row without a rule in core/autograd/rules.c"; bad=1; }
done
(( bad )) && exit 1
echo "grad column: $(grep -c ' 1 ' <<<"$kinds") differentiable kinds of $n_kinds, each with its rule;" \
     "$(wc -w <<<"$grad_ops") other ops with theirs"
