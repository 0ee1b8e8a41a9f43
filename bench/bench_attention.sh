#!/usr/bin/env bash
# Causal self-attention forward + backward (B 1, H 12, D 64, f32) on the cpu:
# libportable's fused kernel, libportable composed (PORTABLE_CPU_ATTENTION=
# composed: matmul, softmax, where) and PyTorch (softmax(q k^T scale + causal
# mask) v written in torch, autograd's backward; 1.13 has no fused kernel).
#   bench/bench_attention.sh [build-dir] [rounds]
# One thread pinned to core 1, then two threads on cores 0 and 1. Each round
# runs every contender once per T, in an order that rotates round by round;
# each run is one warm-up + 5 timed passes (median), and the table shows the
# median over rounds. Then one pass each at T = 4096 for the peak memory.
# Each contender's BLAS: libportable's plugin runs OpenBLAS single-threaded
# under its own OpenMP team; PyTorch gets OPENBLAS_NUM_THREADS = its thread
# count, since its batched products thread inside BLAS.
# Both sides' OpenMP runtime is libgomp, whose idle threads spin before they
# sleep: on a machine whose cores other work holds, two threads lose whole
# time slices waiting for each other. OMP_WAIT_POLICY=passive in the caller's
# environment (both sides read it) shows the runs without that spinning.
# PT_PYTHON names the python3 with PyTorch (default /usr/bin/python3).
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
py=${PT_PYTHON:-/usr/bin/python3}
export PORTABLE_BACKEND=cpu PORTABLE_PLUGIN_PATH=${PORTABLE_PLUGIN_PATH:-$build/lib}
contenders=(fused composed torch)
sizes=(256 1024)

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

# run CONTENDER THREADS ARGS...: one program run, its output line.
run() {
  local who=$1 threads=$2; shift 2
  local pin=(taskset -c 1)
  [[ $threads == 1 ]] || pin=(taskset -c 0,1)
  case $who in
    fused) OMP_NUM_THREADS=$threads "${pin[@]}" "$build"/bench/bench_attention "$@" ;;
    composed) PORTABLE_CPU_ATTENTION=composed OMP_NUM_THREADS=$threads "${pin[@]}" "$build"/bench/bench_attention "$@" ;;
    torch) OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "${pin[@]}" "$py" "$here"/bench_attention_torch.py "$@" ;;
  esac
}

# What each contender ran on: libportable's platform line (its OpenBLAS
# kernels, its vector math, oneDNN where it took the f32 products), PyTorch's
# ATen capability and BLAS library.
devices=$("$build"/tools/portable devices 2>/dev/null || true)
blas=$(grep -o -m1 'OpenBLAS [0-9.]* [A-Za-z0-9_]*' <<< "$devices" || true)
vm=$(grep -o -m1 'vecmath [a-z0-9_]*' <<< "$devices" || true)
gemm=$(grep -o -m1 'f32 GEMM oneDNN[^;]*' <<< "$devices" || true)
theirs=$("$py" "$here"/bench_attention_torch.py isa 2>/dev/null || echo "torch unknown")
core=$("$py" -c 'import ctypes; l = ctypes.CDLL("libopenblas.so.0"); l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())' 2>/dev/null || echo unknown)
model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
flags=$(grep -m1 -ow -E 'avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')

echo "# Causal attention forward + backward on the cpu: libportable vs PyTorch"
echo
echo "Host: $model, $(nproc) cores (${flags% }); load average before: $(cut -d' ' -f1-3 /proc/loadavg);" \
     "OpenMP wait policy ${OMP_WAIT_POLICY:-as the runtime sets it (libgomp: spin, then sleep)}."
echo
echo "ISA: libportable ${blas:-OpenBLAS unknown} kernels${gemm:+ ($gemm)}, ${vm:-vecmath unknown}; PyTorch ${theirs} (OpenBLAS core ${core})."
for threads in 1 2; do
  declare -A wall=() cpu=()
  for r in $(seq "$rounds"); do
    for t in "${sizes[@]}"; do
      for k in 0 1 2; do
        who=${contenders[$(((r + k) % 3))]}
        out=$(run "$who" "$threads" time "$t")
        wall[$who,$t]+="$(awk '{print $2}' <<< "$out") "
        cpu[$who,$t]+="$(awk '{print $6}' <<< "$out") "
      done
    done
  done
  where=$([[ $threads == 1 ]] && echo "1 thread pinned to core 1" || echo "2 threads on cores 0 and 1")
  echo
  echo "## B 1, H 12, D 64, causal, f32, forward + backward: $where, median of $rounds alternated rounds"
  echo
  echo "Wall ms include time other processes held the cores (shared machine); CPU ms do not."
  echo
  echo "| T | fused ms | composed ms | PyTorch ms | fused / PyTorch | composed / PyTorch | fused CPU ms | PyTorch CPU ms | fused / PyTorch (CPU) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  for t in "${sizes[@]}"; do
    declare -A m=() c=()
    for who in "${contenders[@]}"; do
      m[$who]=$(tr ' ' '\n' <<< "${wall[$who,$t]}" | grep . | median)
      c[$who]=$(tr ' ' '\n' <<< "${cpu[$who,$t]}" | grep . | median)
    done
    printf '| %s | %.1f | %.1f | %.1f | %s | %s | %.1f | %.1f | %s |\n' "$t" "${m[fused]}" "${m[composed]}" \
      "${m[torch]}" "$(ratio "${m[fused]}" "${m[torch]}")" "$(ratio "${m[composed]}" "${m[torch]}")" \
      "${c[fused]}" "${c[torch]}" "$(ratio "${c[fused]}" "${c[torch]}")"
  done
done

echo
echo "## Peak memory, T = 4096 (B 1, H 12, D 64, causal, f32), one forward + backward, 1 thread"
echo
echo "Resident set of the process (VmRSS) after the inputs are made, its peak (ru_maxrss) after the pass, and"
echo "the growth between; libportable's allocator peak (pt_memory_stats) beside. One head's [T, T] scores"
echo "are 64 MiB, all 12 heads' 768 MiB."
echo
echo "| contender | RSS before MiB | peak RSS MiB | grown MiB | allocator peak MiB |"
echo "|---|---:|---:|---:|---:|"
for who in "${contenders[@]}"; do
  out=$(run "$who" 1 memory 4096)
  before=$(awk '{print $2}' <<< "$out"); peak=$(awk '{print $4}' <<< "$out"); dev=$(awk '{print $6}' <<< "$out")
  label=$(case $who in fused) echo "libportable fused" ;; composed) echo "libportable composed" ;; torch) echo "PyTorch" ;; esac)
  [[ -n $dev ]] && dev=$(printf '%.0f' "$dev") || dev=-
  printf '| %s | %.0f | %.0f | %.0f | %s |\n' "$label" "$before" "$peak" \
    "$(awk -v a="$peak" -v b="$before" 'BEGIN {print a - b}')" "$dev"
done
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
