#!/usr/bin/env bash
# One training step of GPT-2 small (124M parameters, B 4, T 64, f32: forward,
# cross-entropy over 50257 classes, backward, AdamW with lr 1e-4 and no weight
# decay or clipping, as llm.c's train_gpt2.c steps) on the cpu: libportable
# (bench_gpt2, eager, and bench_gpt2 --graph: the step captured once and
# replayed, its element-wise chains such as AdamW's fused), PyTorch
# (bench_gpt2_torch.py, the same model in torch.nn modules) and, where a
# binary is given, llm.c's CPU reference train_gpt2.
#   bench/bench_gpt2.sh [build-dir] [rounds] [threads]
# threads is one count or a quoted list, default "1 2": 1 thread pinned to core 1, 2 threads on cores 0
# and 1. Each round runs every contender once, in an order that rotates round
# by round; each run is 2 warm-up steps + 5 timed ones (median), and the
# table shows the median over rounds. One contender runs at a time (each
# holds about 2-4 GB: weights, gradients and two AdamW moments).
#
# llm.c is not part of this project and nothing here builds it: build it
# yourself from github.com/karpathy/llm.c as its README says, and give
# its path in PT_LLMC_TRAIN_GPT2 (and the flags you used in PT_LLMC_FLAGS,
# shown as its ISA beside the vector registers its code uses). Its main()
# takes no arguments: it trains B 4, T 64 from gpt2_124M.bin and
# dev/data/tinyshakespeare/tiny_shakespeare_{train,val}.bin in its working
# directory, which this script writes into a temporary directory
# (bench_gpt2_torch.py llmc-files: GPT-2-initialised weights in llm.c's
# checkpoint layout, random tokens in its token format). It estimates the
# validation loss (5 forwards) before step 0 and prints "step N: train loss
# L (took X ms)" after each step; the script reads those lines, stops the
# process after the last timed step (before its step-10 validation and its
# sampling), and takes the median of the timed steps' "took" times; its CPU
# time per step is the process's CPU time over those steps (from /proc) over
# their count, and its peak resident set is VmHWM then.
# Each contender's BLAS and threads: OMP_NUM_THREADS and
# OPENBLAS_NUM_THREADS are the thread count for all three; PyTorch takes
# torch.set_num_threads from it.
# PT_PYTHON names the python3 with PyTorch and NumPy (default /usr/bin/python3).
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
read -ra threads_list <<< "${3:-1 2}"
here=$(cd "$(dirname "$0")" && pwd)
py=${PT_PYTHON:-/usr/bin/python3}
llmc=${PT_LLMC_TRAIN_GPT2:-}
export PORTABLE_BACKEND=cpu PORTABLE_PLUGIN_PATH=${PORTABLE_PLUGIN_PATH:-$build/lib}
# PT_BENCH_GPT2_STEPS="warm-up timed" shortens a trial run of this script.
read -r warmup steps <<< "${PT_BENCH_GPT2_STEPS:-2 5}"
contenders=(portable graph torch)
if [[ -n $llmc ]]; then
  [[ -x $llmc ]] || { echo "bench_gpt2.sh: PT_LLMC_TRAIN_GPT2=$llmc is not an executable file" >&2; exit 2; }
  llmc=$(cd "$(dirname "$llmc")" && pwd)/$(basename "$llmc")
  contenders+=(llmc)
  work=$(mktemp -d "${TMPDIR:-/tmp}/bench_gpt2.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  trap 'exit 130' INT TERM
  "$py" "$here"/bench_gpt2_torch.py llmc-files "$work"
fi

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
pin_of() { [[ $1 == 1 ]] && echo 1 || echo "0-$(($1 - 1))"; }

# llm.c's run: its output line in bench_gpt2's format (median "took" ms,
# min, CPU ms per timed step, first and last loss, its parameter count, VmHWM).
run_llmc() {
  local threads=$1 log=$work/log last=$((warmup + steps - 1)) tick c0= c1= hwm=0
  tick=$(getconf CLK_TCK)
  (cd "$work" && OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads \
    exec taskset -c "$(pin_of "$threads")" stdbuf -oL "$llmc") > "$log" 2>&1 &
  local pid=$!
  cpu_of() { awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo; }
  while kill -0 "$pid" 2>/dev/null; do
    if [[ -z $c0 ]] && grep -q "^step $((warmup - 1)):" "$log"; then c0=$(cpu_of); fi
    if grep -q "^step $last:" "$log"; then
      c1=$(cpu_of)
      hwm=$(awk '/^VmHWM:/ {print $2 / 1024}' "/proc/$pid/status" 2>/dev/null || echo 0)
      kill "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.05
  done
  wait "$pid" 2>/dev/null || true
  if ! grep -q "^step $last:" "$log"; then
    echo "bench_gpt2.sh: llm.c stopped before step $last; its output:" >&2
    tail -20 "$log" >&2
    exit 1
  fi
  local took
  took=$(awk -v w="$warmup" -v l="$last" '/^step [0-9]+: train loss/ {n = $2 + 0; if (n >= w && n <= l) {
           t = $0; sub(/.*took /, "", t); print t + 0 } }' "$log")
  local params
  params=$(awk '/^num_parameters:/ {print $2}' "$log")
  awk -v m="$(median <<< "$took")" -v mn="$(sort -g <<< "$took" | head -1)" -v c0="$c0" -v c1="$c1" \
    -v tick="$tick" -v n="$steps" -v p="$params" -v hwm="$hwm" \
    -v l0="$(awk '/^step 0:/ {print $5}' "$log")" -v l1="$(awk -v l="$last" '$2 == l":" {print $5}' "$log")" \
    'BEGIN {printf "ms %.1f min %.1f cpu %.1f loss %s %s params %s rss_peak %.0f\n", m, mn,
            1e3 * (c1 - c0) / tick / n, l0, l1, p, hwm}'
}

# run CONTENDER THREADS: one program run, its output line.
run() {
  local who=$1 threads=$2 pin
  pin=$(pin_of "$threads")
  case $who in
    portable) OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads taskset -c "$pin" \
                "$build"/bench/bench_gpt2 "$warmup" "$steps" ;;
    graph) OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads taskset -c "$pin" \
             "$build"/bench/bench_gpt2 --graph "$((warmup > 2 ? warmup : 2))" "$steps" ;;
    torch) OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads taskset -c "$pin" \
             "$py" "$here"/bench_gpt2_torch.py time "$warmup" "$steps" ;;
    llmc) run_llmc "$threads" ;;
  esac
}

# What each contender ran on: libportable's platform line (its OpenBLAS
# kernels, its vector math, oneDNN where it took the f32 products), PyTorch's
# ATen capability and BLAS library, llm.c's build flags and the widest
# vector registers its code uses.
devices=$("$build"/tools/portable devices 2>/dev/null || true)
platform=$(grep -m1 'platform:' <<< "$devices" | sed 's/^.*platform: *//' || true)
theirs=$("$py" "$here"/bench_gpt2_torch.py isa 2>/dev/null || echo "torch unknown")
model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
flags=$(grep -m1 -ow -E 'avx512f|avx2|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')
if [[ -n $llmc ]]; then
  regs=$(objdump -d --no-show-raw-insn "$llmc" 2>/dev/null | grep -oE '%[xyz]mm' | sort | uniq -c |
         awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}' || true)
  llmc_isa="llm.c built with ${PT_LLMC_FLAGS:-flags not given (set PT_LLMC_FLAGS)}; its code uses ${regs:-unknown} registers"
fi

echo "# GPT-2 small training step on the cpu: libportable vs PyTorch${llmc:+ vs llm.c}"
echo
echo "Host: $model, $(nproc) cores (${flags% }); load average before: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "ISA: libportable ${platform:-unknown}; PyTorch ${theirs}${llmc:+; $llmc_isa}."
[[ -n $llmc ]] || echo "
llm.c: no binary given (PT_LLMC_TRAIN_GPT2), so its columns are left out; see the top of this script."
for threads in "${threads_list[@]}"; do
  declare -A wall=() cpu=() rss=() loss=()
  n=${#contenders[@]}
  for r in $(seq "$rounds"); do
    for k in $(seq 0 $((n - 1))); do
      who=${contenders[$(((r + k) % n))]}
      out=$(run "$who" "$threads")
      wall[$who]+="$(awk '{print $2}' <<< "$out") "
      cpu[$who]+="$(awk '{print $6}' <<< "$out") "
      rss[$who]+="$(awk '{print $13}' <<< "$out") "
      loss[$who]="$(awk '{print $8 " -> " $9}' <<< "$out")"
    done
  done
  where=$([[ $threads == 1 ]] && echo "1 thread pinned to core 1" || echo "$threads threads on cores $(pin_of "$threads")")
  echo
  echo "## GPT-2 small (124M), B 4, T 64, f32, one AdamW step: $where, median of $rounds alternated rounds"
  echo
  echo "Wall ms include time other processes held the cores (shared machine); CPU ms do not."
  echo "Loss: first warm-up step -> last timed step of the last round (the same batch every step;"
  echo "llm.c reads a new batch of random tokens each step, so its loss stays near ln 50257 = 10.8)."
  echo
  echo "| contender | ms / step | CPU ms / step | vs PyTorch (wall) | vs PyTorch (CPU) | peak RSS MiB | loss |"
  echo "|---|---:|---:|---:|---:|---:|---|"
  declare -A m=() c=() p=()
  for who in "${contenders[@]}"; do
    m[$who]=$(tr ' ' '\n' <<< "${wall[$who]}" | grep . | median)
    c[$who]=$(tr ' ' '\n' <<< "${cpu[$who]}" | grep . | median)
    p[$who]=$(tr ' ' '\n' <<< "${rss[$who]}" | grep . | sort -g | tail -1)
  done
  for who in "${contenders[@]}"; do
    label=$(case $who in portable) echo "libportable (eager)" ;; graph) echo "libportable (graph replay)" ;; torch) echo "PyTorch $(awk '{print $2}' <<< "$theirs")" ;;
                         llmc) echo "llm.c train_gpt2" ;; esac)
    printf '| %s | %.0f | %.0f | %s | %s | %.0f | %s |\n' "$label" "${m[$who]}" "${c[$who]}" \
      "$(ratio "${m[$who]}" "${m[torch]}")" "$(ratio "${c[$who]}" "${c[torch]}")" "${p[$who]}" "${loss[$who]}"
  done
  echo
  for who in portable graph; do
    what=$([[ $who == portable ]] && echo eager || echo "graph replay")
    echo "libportable ($what) / PyTorch: $(ratio "${m[$who]}" "${m[torch]}") wall, $(ratio "${c[$who]}" "${c[torch]}") CPU."
    if [[ -n $llmc ]]; then
      echo "libportable ($what) / llm.c: $(ratio "${m[$who]}" "${m[llmc]}") wall, $(ratio "${c[$who]}" "${c[llmc]}") CPU."
    fi
  done
  unset wall cpu rss loss m c p
done
echo
echo "Load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
