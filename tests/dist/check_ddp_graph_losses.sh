#!/usr/bin/env bash
# ddp_digits trained eagerly and with --graph (forward and backward one
# graph per batch shape, the gradients averaged eagerly between it and the
# optimizer step's graph): every epoch's mean loss and the test accuracy
# must be the same as printed (%.4f, %.2f), on every rank's behalf (rank 0
# prints what all ranks averaged).
# Usage: check_ddp_graph_losses.sh <mpiexec> <ddp_digits> <epochs> <scratch dir>
set -u
mpiexec=$1 exe=$2 epochs=$3 dir=$4
mkdir -p "$dir"
run() { # mode-name, extra args...
  local name=$1; shift
  timeout 300 "$mpiexec" --oversubscribe -np 2 "$exe" --epochs "$epochs" "$@" >"$dir/$name.out" 2>&1
  local rc=$?
  cat "$dir/$name.out"
  if [[ $rc -ne 0 ]]; then echo "FAILED: $name run exited $rc"; exit 1; fi
}
run eager
run graph --graph
grep -q "^--graph: forward+backward replayed from" "$dir/graph.out" ||
  { echo "FAILED: --graph did not replay its graphs (or did not say so)"; exit 1; }
results() { grep -E "^(epoch [0-9]+ +loss|test accuracy)" "$1"; }
if [[ $(results "$dir/eager.out" | wc -l) -ne $((epochs + 1)) ]]; then
  echo "FAILED: the eager run printed no $epochs epoch losses and accuracy"; exit 1
fi
if ! diff <(results "$dir/eager.out") <(results "$dir/graph.out"); then
  echo "FAILED: the losses or the accuracy differ between eager DDP and --graph"; exit 1
fi
echo "eager DDP and --graph: $epochs epoch losses and the test accuracy identical"
