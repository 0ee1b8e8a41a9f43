#!/usr/bin/env bash
# A digits example trained eagerly and with --graph: every step's loss (the
# --loss-log files, %.9g) and every epoch's mean loss must be the same, bit
# for bit as printed, since the replays run the very ops eager runs, on the
# same batches (one graph per batch shape).
# Usage: check_graph_losses.sh <example binary> <digits.csv.gz> <epochs> <scratch dir>
# PT_GRAPH_CHECK_EPOCHS, where set, replaces <epochs> (a shorter check by
# hand, e.g. on the CUDA simulator).
set -u
exe=$1 data=$2 epochs=${PT_GRAPH_CHECK_EPOCHS:-$3} dir=$4
mkdir -p "$dir"
run() { # mode-name, extra args...
  local name=$1; shift
  "$exe" --data "$data" --epochs "$epochs" --loss-log "$dir/$name.losses" "$@" >"$dir/$name.out" 2>&1
  local rc=$?
  cat "$dir/$name.out"
  if [[ $rc -eq 77 ]]; then echo "skip: the device is not available"; exit 77; fi
  if [[ $rc -ne 0 ]]; then echo "FAILED: $name run exited $rc"; exit 1; fi
}
run eager
run graph --graph
epoch_losses() { sed -n 's/.*\(epoch *[0-9]* *loss [0-9.]*\).*/\1/p' "$1"; }
if ! diff <(epoch_losses "$dir/eager.out") <(epoch_losses "$dir/graph.out"); then
  echo "FAILED: the epoch losses differ between eager and --graph"; exit 1
fi
if ! cmp -s "$dir/eager.losses" "$dir/graph.losses"; then
  diff "$dir/eager.losses" "$dir/graph.losses" | head -20
  echo "FAILED: the step losses differ between eager and --graph"; exit 1
fi
echo "eager and --graph: $(wc -l <"$dir/eager.losses") step losses and $(epoch_losses "$dir/eager.out" | wc -l) epoch losses identical"
