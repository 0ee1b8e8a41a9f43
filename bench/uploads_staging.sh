#!/usr/bin/env bash
# Staged against synchronous small uploads: mlp_digits and cnn_digits, eager
# and --graph, on one backend, with PORTABLE_STAGED_UPLOADS=on and =off
# alternated round by round in one run, beside what the default chose
# (PORTABLE_LOG=info's line from the plugin, where it says). Each run's
# figure is the median samples/s of its epochs after the first. Prints a
# markdown table: per round, and the median of the rounds' ratios. No
# assertions: numbers are for people.
#
#   bench/uploads_staging.sh [BUILD_DIR] [ROUNDS] [BACKEND]
#   (defaults: build, 6, opencl; epochs: MLP_EPOCHS=8, CNN_EPOCHS=3)
set -uo pipefail
build=${1:-build}
rounds=${2:-6}
backend=${3:-opencl}
mlp_epochs=${MLP_EPOCHS:-8}
cnn_epochs=${CNN_EPOCHS:-3}
export PORTABLE_PLUGIN_PATH=${PORTABLE_PLUGIN_PATH:-$build/lib} PORTABLE_BACKEND=$backend

# rate and median (the samples/s of an example's output, the median of lines)
source "$(dirname "${BASH_SOURCE[0]}")/digits_rates.sh"

chose=$(PORTABLE_LOG=info "$build/examples/mlp_digits" --epochs 1 2>&1 | grep -m1 'small uploads' | sed 's/^portable \[info\]: //')
echo "### Staged against synchronous uploads on $backend ($rounds alternated rounds)"
echo
echo "$(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1 /proc/loadavg)"
echo
[[ -n $chose ]] || chose="no line from the plugin: the core decides by the device type"
echo "The default chose: $chose"
echo
echo "| example, mode, round | synchronous samples/s | staged samples/s | staged vs synchronous |"
echo "|---|---:|---:|---:|"
for example in mlp_digits cnn_digits; do
  epochs=$mlp_epochs
  [[ $example == cnn_digits ]] && epochs=$cnn_epochs
  for mode in eager --graph; do
    args=(--epochs "$epochs")
    [[ $mode == --graph ]] && args+=(--graph)
    ratios=()
    for ((r = 1; r <= rounds; ++r)); do
      off=$(PORTABLE_STAGED_UPLOADS=off "$build/examples/$example" "${args[@]}" 2>/dev/null | rate)
      on=$(PORTABLE_STAGED_UPLOADS=on "$build/examples/$example" "${args[@]}" 2>/dev/null | rate)
      ratio=-
      [[ $off != - && $on != - ]] && ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.2f", a / b }')
      [[ $ratio != - ]] && ratios+=("$ratio")
      echo "| $example $mode, round $r | $off | $on | $ratio |"
    done
    echo "| $example $mode, median of the rounds | | | $(printf '%s\n' "${ratios[@]}" | median) |"
  done
done
