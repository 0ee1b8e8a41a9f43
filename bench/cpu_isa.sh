#!/usr/bin/env bash
# The cpu backend on this host's widest vector ISA and again capped at AVX2,
# in one run, each against its peers measured beside it: the convolutional
# nets against PyTorch (bench_cnn.sh) and the transcendental ops against
# NumPy and PyTorch (bench_math). Users have both ISAs; on an AVX-512 host
# this shows both paths of every contender on the same cores:
#   - AVX-512: as found (oneDNN's JIT, libportable's vector math, NumPy's
#     dispatch and PyTorch's ATen each take the widest they support);
#   - AVX2: ONEDNN_MAX_CPU_ISA=AVX2 (caps libportable's oneDNN and
#     PyTorch's), OPENBLAS_CORETYPE=Haswell (OpenBLAS's AVX2 kernels, for
#     every contender that links it: the cpu plugin's own Winograd runs its
#     products there), PORTABLE_CPU_VECMATH=avx2, NPY_DISABLE_CPU_FEATURES
#     (the AVX-512 targets NumPy dispatches) and ATEN_CPU_CAPABILITY=avx2.
# A host without AVX-512 runs the first pass only and says so.
#   bench/cpu_isa.sh [build-dir] [rounds]
# PT_PYTHON names the python3 with NumPy and PyTorch (default /usr/bin/python3).
set -uo pipefail
build=${1:-build}
rounds=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
export PT_PYTHON=${PT_PYTHON:-/usr/bin/python3}
passes=(native)
if grep -qw avx512f /proc/cpuinfo; then passes+=(avx2); fi
model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "# The cpu backend on each vector ISA of this host"
echo
echo "Host: $model, $(nproc) cores; flags: $(grep -m1 -ow -E 'avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
[[ ${#passes[@]} == 1 ]] && echo "(no AVX-512 on this host: one pass, as found)"
# NumPy's AVX-512 targets as this NumPy dispatches them: a name it does not
# dispatch (AVX512_KNL on most builds, new groups such as X86_V4 in later
# NumPy) can make it disregard the whole variable, leaving it on AVX-512.
npy_avx512=$("$PT_PYTHON" -c "
try:
    import numpy._core._multiarray_umath as m
except ImportError:
    import numpy.core._multiarray_umath as m
print(' '.join(f for f in m.__cpu_dispatch__ if f.startswith(('AVX512', 'X86_V4'))))" 2>/dev/null || true)
status=0
for pass in "${passes[@]}"; do
  envs=()
  if [[ $pass == avx2 ]]; then
    envs=(ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell PORTABLE_CPU_VECMATH=avx2 ATEN_CPU_CAPABILITY=avx2
          "NPY_DISABLE_CPU_FEATURES=$npy_avx512")
    echo; echo "## Capped at AVX2"
  else
    echo; echo "## As found (widest ISA)"
  fi
  echo
  env "${envs[@]}" bash "$here/bench_cnn.sh" "$build" "$rounds" 1 || status=1
  echo
  env "${envs[@]}" "$build/bench/bench_math" --rounds $((2 * rounds + 1)) || status=1
done

# One thread against two on two cores of their own, alternated round by
# round (widest ISA): the convolution benchmark and the MLP epoch.
if [[ $(nproc) -ge 2 ]]; then
  echo; echo "## One thread against two (cores 0 and 1; wall seconds, median of $((rounds + 1)) alternated rounds)"
  echo
  median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
  one="" two=""
  for r in $(seq $((rounds + 1))); do
    one+="$(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PORTABLE_BACKEND=cpu taskset -c 1 "$build"/bench/bench_cnn conv | awk '{print $2}') "
    two+="$(OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=1 PORTABLE_BACKEND=cpu taskset -c 0,1 "$build"/bench/bench_cnn conv | awk '{print $2}') "
  done
  a=$(tr ' ' '\n' <<< "$one" | grep . | median); b=$(tr ' ' '\n' <<< "$two" | grep . | median)
  echo "| benchmark | 1 thread s | 2 threads s | speed-up |"
  echo "|---|---:|---:|---:|"
  printf '| conv2d fwd+bwd [32,64,32,32] x 64 3x3 | %.4f | %.4f | %.2f |\n' "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {print a / b}')"
  echo
  PORTABLE_BACKEND=cpu taskset -c 0,1 bash "$here/mlp_threads.sh" "$build" $((rounds + 1)) | tail -1 || status=1
fi
exit $status
