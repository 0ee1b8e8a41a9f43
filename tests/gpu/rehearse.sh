#!/usr/bin/env bash
# rehearse.sh MODE WORK — runs tests/gpu/run_on_device.sh on this machine as
# the GPU machine would run it, so the script cannot rot between GPU runs
# (ctest -L gpu_script).
#
#   MODE sim       the CUDA simulator's plugin in place of the real one: the
#                  script must pass every step it can run and reach its last
#                  step, each step's section present in results.md
#   MODE as-built  the plugin as built, reusing the sim run's build: on this
#                  machine (no GPU) cuda is not ok, so the script must stop
#                  at the gate with a non-zero status and the loader's view
#
# The GPU machine has no Debian -dev packages: only the carried .debs count
# (tests/gpu/prepare_debs.sh, downloaded once into WORK/.debs or taken from
# ~/.cache/libportable/gpu-debs). Here the host's copies of those -dev
# packages' files are hidden in a private mount namespace (an empty file bound
# over each; unshare needs CAP_SYS_ADMIN, which CI's root has); where that is
# refused, by configuration instead (CMake ignores /usr, pkg-config reads
# only the unpacked .pc files), which the script's output says.
set -uo pipefail
{ # one block, read whole before it runs (safe to edit during a run)
mode=${1:?usage: rehearse.sh sim|as-built WORK}
work=${2:?usage: rehearse.sh sim|as-built WORK}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
out=$work/out-$mode

# ---- The carried packages, downloaded once ----
cache=${XDG_CACHE_HOME:-$HOME/.cache}/libportable/gpu-debs
want=$("$root/tests/gpu/prepare_debs.sh" --list | sort)
have() { [ -d "$1/pkgs" ] && [ "$(ls "$1/pkgs" | sed 's/_.*//' | sort)" = "$want" ]; }
if ! have "$work/.debs"; then
  if have "$cache"; then rm -rf "$work/.debs"; mkdir -p "$work/.debs"; cp -r "$cache/pkgs" "$work/.debs/"
  else
    "$root/tests/gpu/prepare_debs.sh" "$work/.debs" >/dev/null ||
      { apt-get update -qq >/dev/null 2>&1 && "$root/tests/gpu/prepare_debs.sh" "$work/.debs" >/dev/null; } ||
      { echo "rehearse: cannot download the carried packages (apt-get download)"; exit 1; }
    mkdir -p "$cache" && rm -rf "$cache/pkgs" && cp -r "$work/.debs/pkgs" "$cache/"
  fi
fi

# ---- What the GPU machine lacks: the host's files of those packages ----
# Every regular file the carried development packages installed here
# (headers, .pc files, CMake configs, pkg-config itself). Not the runtime
# libraries: Debian's NumPy and PyTorch here load OpenBLAS, SLEEF, cJSON and
# the ICD loader, and the script's runs find the carried copies first anyway
# (its library path and the build's RUNPATH point into the unpacked tree).
hidden=$work/hidden-files
: >"$hidden"
for p in $want; do
  case "$p" in *-dev | *-headers | pkgconf | pkgconf-bin | libpkgconf3) ;; *) continue ;; esac
  [ "$p" = zlib1g-dev ] && continue
  dpkg -L "$p" 2>/dev/null | while read -r f; do [ -f "$f" ] && [ ! -L "$f" ] && echo "$f"; done
done >>"$hidden"
# What the build would take from the host though the GPU machine has it not
# and nothing carries it: Open MPI (no libportable-dist there). Its -dev
# files only.
for p in libopenmpi-dev; do
  dpkg -L "$p" 2>/dev/null | while read -r f; do [ -f "$f" ] && [ ! -L "$f" ] && echo "$f"; done
done >>"$hidden"
# zlib1g-dev: only its headers and .pc (libz itself is everywhere).
dpkg -L zlib1g-dev 2>/dev/null | grep -E '\.(h|pc)$' >>"$hidden"

run_script() {
  rm -rf "$out"
  env PT_GPU_REHEARSAL="$mode" DEBS_DIR="$work/.debs" BUILD_DIR="$work/build" OUT="$out" \
    PT_GPU_CMAKE_ARGS="${PT_GPU_CMAKE_ARGS:-}" bash "$root/tests/gpu/run_on_device.sh" >"$work/run-$mode.log" 2>&1
}
hide_and_run() {
  while read -r f; do mount --bind /dev/null "$f" || exit 90; done <"$hidden"
  # A hidden header must really be empty now.
  f=$(head -1 "$hidden"); [ -z "$f" ] || [ ! -s "$f" ] || exit 90
  run_script
}
export -f run_script hide_and_run
export work out mode root hidden
how="private mount namespace ($(wc -l <"$hidden") host files hidden)"
if unshare --mount --propagation private true 2>/dev/null; then
  unshare --mount --propagation private bash -c hide_and_run
  rc=$?
  if [ $rc = 90 ]; then how=""; fi
else
  how=""
fi
if [ -z "$how" ]; then
  how="configuration only (no mount namespace here): CMake ignores /usr, pkg-config reads only the carried .pc files"
  PT_GPU_CMAKE_ARGS="-DCMAKE_IGNORE_PREFIX_PATH=/usr" run_script
  rc=$?
fi
echo "rehearse ($mode): host packages hidden by $how; script exit $rc; $(grep -c . "$work/run-$mode.log") lines of output"

# ---- What must be true of the run ----
res=$out/results.md
bad=0
check() { if ! eval "$2"; then echo "FAIL: $1"; bad=1; else echo "ok: $1"; fi; }
check "results.md written" '[ -s "$res" ]'
check "logs packed into one archive" '[ -s "$out/logs.tar.gz" ]'
check "at most 6 files under OUT" '[ "$(find "$out" -type f | wc -l)" -le 6 ]'
if [ "$mode" = sim ]; then
  check "script exit status 0" '[ $rc = 0 ]'
  for s in "Dependencies" "Build (" "Gate: portable devices" "Suites on cuda:0" "GPU tour, full sizes" \
           "Fused chains on cuda:0" "cnn_digits --dtype bf16" "gpt_train on cuda:0" "Benchmarks" "Graph replay against eager" "Attention, fused and composed" "compute-sanitizer" "OpenCL through the NVIDIA driver" \
           "The chapter's experiments" "The Python package on cuda:0" "The cpu backend against PyTorch and NumPy" "Targets" "Summary"; do
    check "section '$s' present" 'grep -q "^## $s" "$res"'
  done
  check "nothing failed" 'grep -q "^Nothing failed" "$res"'
  check "nothing cut for time" '! grep -q "Cut for time" "$res"'
  check "the gate saw cuda ok" 'grep -Eq "^ +cuda +ok, [1-9]" "$res"'
  check "every suite passed (the two CNN trainings: registered, trained by ctest's cudasim twins)" \
    '[ "$(grep -c "| passed |" "$res")" -ge 25 ] && [ "$(grep -c "| registered; trained by ctest as" "$res")" = 2 ]'
  check "the transformer and GPT suites ran on cuda" \
    'grep -q "^| gpt_torch_oracle_cuda | passed" "$res" && grep -q "^| gpt_graph_cuda | passed" "$res"'
  check "the attention suites ran on the fused kernels" \
    'grep -q "^attention_conformance_cuda: attention ran fused in f64" "$res" && grep -q "^attention_torch_oracle_cuda: attention ran on the device.s fused kinds (ATTENTION_BACKWARD reached" "$res"'
  check "bench_attention_device timed cuda:0 fused and composed" \
    'grep -Eq "^\| cuda:0 \| fused \| 1 \| 2 \| 128 \| 64 \| [0-9.]+ \| [0-9.]+ \|" "$res" && grep -Eq "^\| cuda:0 \| composed \| 1 \| 2 \| 128 \| 64 \|" "$res"'
  check "training resumed from saved optimizer state on cuda" 'grep -q "^| nn_optim_resume_cuda | passed" "$res"'
  check "the embedding suites ran on cuda" \
    'grep -q "^| embedding_conformance_cuda | passed" "$res" && grep -q "^| embedding_torch_oracle_cuda | passed" "$res"'
  check "the graph suites ran on cuda" 'grep -q "^| graph_cuda | passed" "$res" && grep -q "^| graph_mlp_digits_cuda | passed" "$res"'
  check "graph_cuda replayed its graphs as CUDA graphs, graph_cuda_graphs_off op by op" \
    'grep -Eq "^graph_cuda: graphs replayed as one command buffer, kernel list or CUDA graph: [1-9][0-9]*, as command buffers or kernel lists around ops queued one at a time: [0-9]+, op by op by the plugin.s choice: 0" "$res" && grep -q "^| graph_cuda_graphs_off | passed" "$res"'
  check "fused chains ran as generated kernels on cuda" \
    'grep -Eq "^Generated kernels compiled: [1-9][0-9]* \(.*(simulator|nvrtc)" "$res"'
  check "fused chains with a reduction ran as one generated kernel on cuda" \
    'grep -Eq "^Generated kernels ending in a reduction \(sum, mean, max\): [1-9]" "$res"'
  check "bench_graph measured cuda:0 eager and replayed" 'grep -Eq "^\| cuda:0 \| 64 \| [0-9.]+ \| [0-9.]+ \|" "$res"'
  check "bench_graph's cuda:0 row is a CUDA-graph replay" 'grep -Eq "^\| cuda:0 \| 64 \|.*\| CUDA graph \|" "$res"'
  check "carried packages were used" 'grep -q "carried packages unpacked" "$res"'
  check "bench_cuda ran libportable's side of the bf16 GEMM and the sum" \
    'grep -q "^| [0-9]* | BF16 | [0-9.]* | - |" "$res" && grep -q "^### Full reduction" "$res"'
  check "bench_opencl wrote its figures" '[ -s "$out/bench_opencl.json" ]'
  check "the CLBlast parameter search measured CLBlast's defaults" \
    'grep -q "^### CLBlast Xgemm parameters tried" "$res" && grep -q "^| CLBlast.s defaults (first) | [0-9]" "$res"'
  check "the cpu ISA step compared the CNN and the vector math with their peers" \
    'grep -q "^| cnn_digits epoch (train, batch 64) | [0-9]" "$res" && grep -q "^| tanh | [0-9]" "$res"'
  check "the cpu ISA step timed one thread against two" \
    'grep -Eq "^\| conv2d fwd\+bwd \[32,64,32,32\] x 64 3x3 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$" "$res" && grep -q "^Median of the round medians: 1 thread" "$res"'
  check "the targets list the 3 us host-time row" 'grep -q "<= 3 us of host time per op (500 ops" "$res"'
  check "the chapter's timed async copies found their pinned blocks cached" \
    'grep -q "the timed async loop took [1-9][0-9]* pinned blocks from the cache and allocated 0)" "$res"'
else
  check "script exit status non-zero" '[ $rc != 0 ]'
  check "stopped at the gate" 'grep -q "FAILED: gate" "$res"'
  check "the loader's view printed" 'grep -q "The loader.s view of" "$res"'
  check "no suite ran after the gate" '! grep -q "^## Suites" "$res"'
fi
if [ $bad != 0 ]; then
  echo "---- results.md"; cat "$res" 2>/dev/null
  echo "---- last lines of the script's output"; tail -30 "$work/run-$mode.log"
fi
exit $bad
}
