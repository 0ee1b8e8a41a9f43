#!/usr/bin/env bash
# Convolutional nets, libportable (cpu backend) vs PyTorch (CPU), one thread
# pinned to core 1 (or N threads unpinned), the contenders alternating round
# by round:
#   - one training epoch of examples/cnn_digits.c's net (1438 images, batch 64)
#   - conv2d forward + backward of a [32, 64, 32, 32] input, 64 3x3 filters, pad 1
# Each round runs each side's program once (one warm-up + 5 timed repetitions,
# median); the table shows the median over rounds and the ratio.
#   bench/bench_cnn.sh [build-dir] [rounds] [threads]
# Both sides run their convolutions on oneDNN, whose JIT takes the widest ISA
# the CPU has; ONEDNN_MAX_CPU_ISA=AVX2 caps both (and PORTABLE_CPU_VECMATH=avx2
# libportable's vector math) to compare the AVX2 paths on an AVX-512 host. The
# heading names the ISA each side ran.
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
threads=${3:-1}
here=$(cd "$(dirname "$0")" && pwd)
py=${PT_PYTHON:-/usr/bin/python3}
data="$here/../examples/data/digits.csv.gz"
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=1 PORTABLE_BACKEND=cpu
export PORTABLE_PLUGIN_PATH=${PORTABLE_PLUGIN_PATH:-$build/lib}
pin=(taskset -c 1)
[[ $threads == 1 ]] || pin=()

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

declare -A t c
for r in $(seq "$rounds"); do
  for what in epoch conv; do
    args=("$what"); [[ $what == epoch ]] && args+=(--data "$data")
    out=$("${pin[@]}" "$build"/bench/bench_cnn "${args[@]}")
    t[$what,pt]+="$(awk '{print $2}' <<< "$out") "; c[$what,pt]+="$(awk '{print $6}' <<< "$out") "
    out=$("${pin[@]}" "$py" "$here"/bench_cnn_torch.py "${args[@]}" 2>/dev/null)
    t[$what,torch]+="$(awk '{print $2}' <<< "$out") "; c[$what,torch]+="$(awk '{print $6}' <<< "$out") "
  done
done
torch_version=$("$py" -c 'import torch; print(torch.__version__)')
# The ISA each side's convolutions ran: libportable's from `portable devices`
# (its oneDNN and vector math), PyTorch's from oneDNN's own log of one conv.
# Each part is looked for on its own, so a line that words the others
# differently (a GEMM note, another oneDNN) still names what it can; oneDNN's
# log names the kernel as impl:isa (2.x "jit:avx2", 3.x "brg_conv_fwd:avx512_core").
devices=$("$build"/tools/portable devices 2>/dev/null || true)
vm=$(grep -o -m1 'vecmath [a-z0-9_]*' <<< "$devices" || true)
blas=$(grep -o -m1 'OpenBLAS [0-9.]* [A-Za-z0-9_]*' <<< "$devices" || true)
dnnl=$(grep -o -m1 'oneDNN [0-9.]* [a-z0-9_]*' <<< "$devices" || true)
ours=$(echo "${vm:-vecmath unknown}; ${dnnl:-oneDNN unknown}${blas:+; $blas}")
theirs=$(ONEDNN_VERBOSE=1 "$py" "$here"/bench_cnn_torch.py isa 2>/dev/null | grep -m1 ',convolution,' |
         grep -oE '[a-z_]+:[a-z0-9_]+' | grep -vE '^(src|wei|dst|bia|diff)' | head -1 || true)
where=$([[ $threads == 1 ]] && echo "1 thread pinned" || echo "$threads threads")
echo "## Convolutional nets: libportable (cpu) vs PyTorch $torch_version (CPU), $where, $rounds alternating rounds"
echo
echo "ISA: libportable ${ours}; PyTorch oneDNN ${theirs:-unknown}${ONEDNN_MAX_CPU_ISA:+ (ONEDNN_MAX_CPU_ISA=$ONEDNN_MAX_CPU_ISA)}${PORTABLE_CPU_VECMATH:+ (PORTABLE_CPU_VECMATH=$PORTABLE_CPU_VECMATH)}."
echo
echo "Wall seconds include time other processes held the core (shared machine); CPU seconds do not."
echo
echo "| benchmark | libportable wall s | PyTorch wall s | ratio (wall) | libportable CPU s | PyTorch CPU s | ratio (CPU) |"
echo "|---|---|---|---|---|---|---|"
for what in epoch conv; do
  a=$(tr ' ' '\n' <<< "${t[$what,pt]}" | grep . | median)
  b=$(tr ' ' '\n' <<< "${t[$what,torch]}" | grep . | median)
  ca=$(tr ' ' '\n' <<< "${c[$what,pt]}" | grep . | median)
  cb=$(tr ' ' '\n' <<< "${c[$what,torch]}" | grep . | median)
  label=$([[ $what == epoch ]] && echo "cnn_digits epoch (train, batch 64)" || echo "conv2d fwd+bwd [32,64,32,32] x 64 3x3")
  printf '| %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f |\n' "$label" "$a" "$b" \
    "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')" "$ca" "$cb" "$(awk -v a="$ca" -v b="$cb" 'BEGIN {print a / b}')"
done
