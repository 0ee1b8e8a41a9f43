#!/usr/bin/env bash
# gpt_train on the backend PORTABLE_BACKEND names, with a tiny model on the
# King James text (the build's kjv.txt). One check per call:
#   train   100 steps: the final val loss is below the unigram's; saved,
#           reloaded on the cpu with the same val loss (the example checks),
#           and --load --steps 0 gives that val loss again
#   graph   20 steps eagerly and with --graph: the same step losses (bit for
#           bit on the cpu; 1e-5 relative elsewhere, where a fused chain
#           with a reduction may sum in its own order)
#   bf16    100 steps with --dtype bf16: below the unigram's val loss; with
#           a fifth argument "quick" (the CUDA simulator, whose kernels run
#           slowly here), 30 steps that must run, reload and learn (the last
#           val loss below the first); "quick" draws no sample in any check
#   errors  a missing text, bad options and a prompt outside the
#           vocabulary: exit 2 with a message saying what to do
# Usage: check_gpt_train.sh <gpt_train> <text> <scratch dir> <check> [quick]
# Exit: 0 pass, 1 fail, 77 the backend or the text is not available here.
set -u
exe=$1 text=$2 dir=$3 check=$4 quick=${5:-}
mkdir -p "$dir"
# On the simulator ("quick") no sample is drawn: its 60 forward passes one
# character at a time cost as much as half a check's steps, and the other
# backends' runs of the same checks sample.
sample=60; [[ $quick == quick ]] && sample=0
tiny=(--text "$text" --batch 32 --context 16 --layers 1 --heads 2 --width 64 --lr 1e-2 --seed 3 --sample $sample)
if [[ $check != errors && ! -r $text ]]; then
  echo "skip: no text at $text (install bible-kjv, whose reader writes it at build time)"; exit 77
fi

run() { # name, args...: the run's output in $dir/name.out; exits on failure
  local name=$1; shift
  "$exe" "$@" >"$dir/$name.out" 2>&1
  local rc=$?
  cat "$dir/$name.out"
  if [[ $rc -eq 77 ]]; then echo "skip: the device is not available"; exit 77; fi
  if [[ $rc -ne 0 ]]; then echo "FAILED: the $name run exited $rc"; exit 1; fi
}
below_unigram() { # name: the final val loss must be under the unigram's
  local line
  line=$(grep -o 'final val loss [0-9.]* against the unigram.s [0-9.]*' "$dir/$1.out")
  read -r val uni < <(echo "$line" | awk '{print $4, $8}')
  if [[ -z $line ]] || ! awk -v v="$val" -v u="$uni" 'BEGIN { exit !(v < u) }'; then
    echo "FAILED: $1: the val loss ${val:-?} is not below the unigram's ${uni:-?}"; exit 1
  fi
  echo "$1: val loss $val below the unigram's $uni"
}

case $check in
train)
  run train "${tiny[@]}" --steps 100 --eval-every 50 --save "$dir/gpt.safetensors"
  below_unigram train
  trained=$(sed -n 's/.*(trained model: \([0-9.]*\)).*/\1/p' "$dir/train.out")
  run load "${tiny[@]}" --steps 0 --load "$dir/gpt.safetensors"
  loaded=$(sed -n 's/^val loss \([0-9.]*\) (no training)$/\1/p' "$dir/load.out")
  if [[ -z $trained || "$trained" != "$loaded" ]]; then
    echo "FAILED: --load gives val loss '${loaded}', the trained model had '${trained}'"; exit 1
  fi
  echo "--load: val loss $loaded, the trained model's" ;;
graph)
  run eager "${tiny[@]}" --steps 20 --eval-every 10 --loss-log "$dir/eager.losses"
  run graph "${tiny[@]}" --steps 20 --eval-every 10 --loss-log "$dir/graph.losses" --graph
  if [[ $(wc -l <"$dir/eager.losses") -ne 20 ]]; then echo "FAILED: expected 20 step losses"; exit 1; fi
  if [[ ${PORTABLE_BACKEND:-} == cpu* ]]; then
    if ! cmp -s "$dir/eager.losses" "$dir/graph.losses"; then
      diff "$dir/eager.losses" "$dir/graph.losses" | head -20
      echo "FAILED: the step losses differ between eager and --graph"; exit 1
    fi
    echo "eager and --graph: 20 step losses identical"
  else
    python3 "$(dirname "$0")/compare_loss_curves.py" --rtol 1e-5 "$dir/eager.losses" "$dir/graph.losses" || {
      echo "FAILED: the step losses of eager and --graph differ by more than 1e-5"; exit 1; }
  fi ;;
bf16)
  if [[ $quick == quick ]]; then
    run bf16 "${tiny[@]}" --steps 30 --eval-every 10 --dtype bf16
  else
    run bf16 "${tiny[@]}" --steps 100 --eval-every 50 --dtype bf16
  fi
  grep -q 'bf16 compute (f32 master weights)' "$dir/bf16.out" || { echo "FAILED: not a bf16 run"; exit 1; }
  if [[ $quick != quick ]]; then below_unigram bf16; exit 0; fi
  read -r first last < <(sed -n 's/^step .* val loss \([0-9.]*\) .*/\1/p' "$dir/bf16.out" | sed -n '1p;$p' | paste -sd' ')
  if [[ -z ${last:-} ]] || ! awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f) }'; then
    echo "FAILED: bf16: the val loss went from ${first:-?} to ${last:-?}"; exit 1
  fi
  echo "bf16: val loss $first -> $last" ;;
errors)
  expect() { # name, message pattern, args...: exit 2 and the message on stderr
    local name=$1 pattern=$2; shift 2
    "$exe" "$@" >"$dir/$name.out" 2>"$dir/$name.err"
    local rc=$?
    if [[ $rc -ne 2 ]] || ! grep -q -- "$pattern" "$dir/$name.err"; then
      cat "$dir/$name.err"; echo "FAILED: $name: exit $rc (want 2) or no '$pattern' in the message"; exit 1
    fi
    echo "$name: exit 2: $(head -1 "$dir/$name.err")"
  }
  expect missing-text "$dir/no-such.txt: No such file.*" --text "$dir/no-such.txt"
  expect missing-text-hint "apt-get install bible-kjv" --text "$dir/no-such.txt"
  expect bad-option "unrecognized option '--nonsense'" --nonsense
  expect bad-steps "--steps 'ten' is not a whole number" --steps ten
  expect bad-heads "--heads 3 does not divide --width 64" --heads 3 --width 64
  expect bad-dtype "--dtype 'f64' is not one of f32, bf16" --dtype f64
  expect bad-lr "--lr '-1' is not a positive number" --lr -1
  expect usage "usage: .*gpt_train" --batch 0
  printf 'abcabcabc%.0s' {1..20} >"$dir/abc.txt"
  expect bad-prompt "has 'X', which .* never uses" --text "$dir/abc.txt" --context 4 --prompt aXb
  expect short-text "too short" --text "$dir/abc.txt" --context 100
  echo "every error exits 2 with its message" ;;
*) echo "usage: check_gpt_train.sh <gpt_train> <text> <dir> train|graph|bf16|errors"; exit 2 ;;
esac
