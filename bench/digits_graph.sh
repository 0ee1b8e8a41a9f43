#!/usr/bin/env bash
# The digits examples eager against --graph: mlp_digits and cnn_digits on
# each backend named, one eager and one --graph run per round, alternated,
# in one run. Each run's figure is the median samples/s of its epochs after
# the first (the first pays the warm-up, the capture and the kernel builds).
# Prints a markdown table: per round, and the median of the rounds' ratios.
# No assertions: numbers are for people.
#
#   bench/digits_graph.sh [BUILD_DIR] [ROUNDS] [BACKENDS]
#   (defaults: build, 3, "cpu opencl"; epochs: MLP_EPOCHS=8, CNN_EPOCHS=4)
set -uo pipefail
build=${1:-build}
rounds=${2:-3}
backends=${3:-cpu opencl}
mlp_epochs=${MLP_EPOCHS:-8}
cnn_epochs=${CNN_EPOCHS:-4}
export PORTABLE_PLUGIN_PATH=${PORTABLE_PLUGIN_PATH:-$build/lib}

# rate and median (the samples/s of an example's output, the median of lines)
source "$(dirname "${BASH_SOURCE[0]}")/digits_rates.sh"

echo "### Training examples, eager against --graph ($rounds alternated rounds)"
echo
echo "$(uname -m), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1 /proc/loadavg)"
echo
echo "| example, device | round | eager samples/s | --graph samples/s | --graph vs eager |"
echo "|---|---:|---:|---:|---:|"
for example in mlp_digits cnn_digits; do
  epochs=$mlp_epochs
  [[ $example == cnn_digits ]] && epochs=$cnn_epochs
  for backend in $backends; do
    ratios=()
    for ((r = 1; r <= rounds; ++r)); do
      eager=$(PORTABLE_BACKEND=$backend "$build/examples/$example" --epochs "$epochs" 2>/dev/null | rate)
      graph=$(PORTABLE_BACKEND=$backend "$build/examples/$example" --epochs "$epochs" --graph 2>/dev/null | rate)
      ratio=-
      [[ $eager != - && $graph != - ]] && ratio=$(awk -v e="$eager" -v g="$graph" 'BEGIN { printf "%.2f", g / e }')
      [[ $ratio != - ]] && ratios+=("$ratio")
      echo "| $example --epochs $epochs, $backend | $r | $eager | $graph | $ratio |"
    done
    echo "| $example --epochs $epochs, $backend | median | | | $(printf '%s\n' "${ratios[@]}" | median) |"
  done
done
