#!/usr/bin/env bash
# The OpenCL matrix: the conformance suite, the
# cross-backend test and the digits example on each OpenCL implementation this
# machine can run, each alone (its own OCL_ICD_VENDORS folder and its own
# kernel cache folders), then a small-shape conformance subset under Oclgrind
# with its memory, race and API checks. Prints a matrix table and exits 1 if
# anything failed. An implementation that cannot be set up (Intel's wheels
# unreachable, a package absent) is a SKIP row with the reason: never a pass.
#
#   scripts/opencl-matrix.sh [BUILD_DIR]     (default: build)
#
# BUILD_DIR must hold the release build with the OpenCL plugin, conformance,
# cross_backend and mlp_digits (and test_graph_groups and test_ocl_half, run where built).
# Implementations:
#   pocl     Debian's pocl-opencl-icd (LLVM, CPU)
#   intel    Intel's OpenCL CPU runtime from the PyPI wheels intel-opencl-rt,
#            intel-cmplr-lib-rt (libsvml.so) and tbb (libtbb.so.12), fetched
#            once with pip download into $PT_WHEEL_CACHE (default
#            ~/.cache/libportable/wheels, outside the clone) and unpacked next
#            to it; our own .icd names libintelocl.so by absolute path
#   rusticl  Mesa's rusticl on llvmpipe (mesa-opencl-icd): OpenCL 3.0 without
#            fp64, so f64 arithmetic skips there and f64 data movement passes
#   oclgrind the Oclgrind simulator (Debian oclgrind): one small case of every
#            op x dtype (and a transposed one where the suite has it), with
#            PORTABLE_NO_MEMORY_CACHING=1 so that every tensor is a cl_mem of
#            its own and an access past a tensor's end leaves its buffer
#            instead of landing in a neighbour inside a shared segment. Pass 1
#            checks every kernel for out-of-bounds accesses (always on), data
#            races (OCLGRIND_DATA_RACES) and API misuse (OCLGRIND_CHECK_API).
#            Pass 2 adds the uninitialised-value check (OCLGRIND_UNINITIALIZED)
#            on the kernels where Oclgrind 21.10 gives a verdict: the
#            element-wise, comparison, where, fill, copy/cast, gather,
#            one_hot, arange and RNG kernels in f32, f64, i32, i64 and u8. Left
#            out: the reductions (sum, mean, max, argmax, norms, and the
#            channel statistics composed from them; the reduce kernel no
#            longer stops the check, but it flags its local sums in a run of
#            many cases), softmax, attention (a case alone in a process
#            gives no report, forward or backward; in a run of several cases
#            the check flags values the attention kernels compute from their
#            inputs as uninitialised while every value equals the reference:
#            not pinned down, and pass 1 checks them), the fused chains and their eager
#            runs (each reads what the kernel before it wrote; the check flags
#            those reads in ew_exp_tail and ew_tanh_tail, while the values
#            equal the reference and the other implementations': not pinned
#            down, and pass 1 still checks them), the embedding's gradient
#            cases (embedding_sum reads the links embedding_links wrote just
#            before, flagged the same way, and the cases' loss is a sum; the
#            lookups stay in),
#            im2col/col2im (conv2d and its plugin-run kinds, pools), the max-pool kernels, CLBlast's
#            GEMM and the plugin's own f32 product kernels (kernels/gemm.cl,
#            which pass 1 checks), on which it stops with "Unsupported instruction: freeze"
#            (an LLVM instruction newer than it) and computes wrong results;
#            and f16/bf16, whose
#            cases report values as uninitialised once other cases ran in the
#            process but not one per process (not pinned down). Any message
#            in either log, a wrong result, a case that did not run or a
#            crash fails the row. (With the caching allocator on, its
#            uninitialised check also flags every upload at a nonzero buffer
#            offset: it ignores clEnqueueWriteBuffer's offset, which a
#            20-line plain OpenCL program shows.) Then the graph test of
#            independent chains (tests/graph/test_graph_groups.c) and 40
#            seeds of the random graph test (test_graph_random.c) with pass
#            1's checks: the group kernels and chain shapes no conformance
#            case reaches.
# Kernel caches (libportable's, PoCL's, Mesa's) live in
# BUILD_DIR/opencl-matrix/<implementation>/cache: a fresh build directory runs
# cold, a second run warm. (scripts/run-tests.sh gives its release ctest, which
# runs OpenCL on PoCL, the pocl folder, so the pocl row there runs warm.)
# The table also goes to BUILD_DIR/opencl-matrix/matrix.md.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(cd "${1:-build}" && pwd) || { echo "opencl-matrix: no build directory ${1:-build}"; exit 2; }
work=$build/opencl-matrix
mkdir -p "$work"
for prog in tests/conformance tests/cross/cross_backend examples/mlp_digits; do
  # The build's own program first: the build folder also holds the trees
  # that the skeleton test and the GPU rehearsal build of their own.
  found=$build/$prog
  [[ -x $found ]] || found=$(find "$build" -path "*/$prog" -type f -perm -u+x | head -1)
  [[ -n $found ]] || { echo "opencl-matrix: $prog is not built in $build"; exit 2; }
  declare "bin_$(basename "$prog")=$found"
done
[[ -n $(find "$build/lib" -name 'libportable-opencl.so*' | head -1) ]] ||
  { echo "opencl-matrix: the OpenCL plugin is not built in $build/lib"; exit 2; }

wheel_cache=${PT_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/libportable/wheels}
# Versions the matrix was last run with (2026-11-23); override to try others.
intel_wheels=(${PT_INTEL_WHEELS:-intel-opencl-rt==2026.2.0 intel-cmplr-lib-rt==2026.2.0 tbb==2023.2.0})

rows=()     # "name|conformance|cross|digits|seconds|note"
failed=0

# ---- Setting up each implementation: prints its environment (NAME=VALUE
# lines) or fails with the reason on stderr ----

setup_pocl() {
  [[ -f /etc/OpenCL/vendors/pocl.icd ]] || { echo "pocl-opencl-icd is not installed" >&2; return 1; }
  mkdir -p "$work/pocl/vendors" && cp /etc/OpenCL/vendors/pocl.icd "$work/pocl/vendors/"
  echo "POCL_CACHE_DIR=$work/pocl/cache/pocl"
}

setup_rusticl() {
  [[ -f /etc/OpenCL/vendors/rusticl.icd ]] ||
    { echo "mesa-opencl-icd (rusticl.icd) is not installed" >&2; return 1; }
  mkdir -p "$work/rusticl/vendors" && cp /etc/OpenCL/vendors/rusticl.icd "$work/rusticl/vendors/"
  echo "RUSTICL_ENABLE=llvmpipe"
  echo "MESA_SHADER_CACHE_DIR=$work/rusticl/cache/mesa"
}

setup_intel() {
  mkdir -p "$wheel_cache"
  local spec missing=()
  for spec in "${intel_wheels[@]}"; do
    local name=${spec%%==*} version=${spec#*==}
    compgen -G "$wheel_cache/${name//-/_}-${version}-*.whl" >/dev/null || missing+=("$spec")
  done
  if ((${#missing[@]})); then
    echo "opencl-matrix: fetching ${missing[*]} into $wheel_cache" >&2
    timeout 900 python3 -m pip download --quiet --no-deps --only-binary=:all: \
        --dest "$wheel_cache" "${missing[@]}" >&2 ||
      { echo "pip download ${missing[*]} failed (PyPI unreachable?)" >&2; return 1; }
  fi
  # One folder per set of versions, no spaces in its name: the runtime fails
  # to load its own back end (CL_DEVICE_NOT_AVAILABLE) from a path with spaces.
  local joined
  joined=$(IFS=_; echo "${intel_wheels[*]}")
  local unpacked=$wheel_cache/../intel-opencl-rt/${joined//==/-}
  if [[ ! -f $unpacked/.complete ]]; then
    rm -rf "$unpacked" && mkdir -p "$unpacked"
    for spec in "${intel_wheels[@]}"; do
      local name=${spec%%==*} version=${spec#*==}
      python3 -m zipfile -e "$(compgen -G "$wheel_cache/${name//-/_}-${version}-*.whl" | head -1)" \
          "$unpacked" || { echo "cannot unpack the $spec wheel" >&2; return 1; }
    done
    touch "$unpacked/.complete"
  fi
  unpacked=$(cd "$unpacked" && pwd)
  local ocl svml tbb
  ocl=$(find "$unpacked" -name libintelocl.so | head -1)
  svml=$(find "$unpacked" -name libsvml.so | head -1)
  tbb=$(find "$unpacked" -name libtbb.so.12 | head -1)
  [[ -n $ocl && -n $svml && -n $tbb ]] ||
    { echo "the wheels lack libintelocl.so, libsvml.so or libtbb.so.12" >&2; return 1; }
  mkdir -p "$work/intel/vendors" && echo "$ocl" >"$work/intel/vendors/intel-cpu.icd"
  echo "LD_LIBRARY_PATH=$(dirname "$svml"):$(dirname "$tbb")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

setup_oclgrind() {
  local icd=/usr/lib/oclgrind/liboclgrind-rt-icd.so
  [[ -f $icd ]] || { echo "oclgrind is not installed" >&2; return 1; }
  mkdir -p "$work/oclgrind/vendors" && echo "$icd" >"$work/oclgrind/vendors/oclgrind.icd"
  echo "OCLGRIND_DATA_RACES=1"
  echo "OCLGRIND_CHECK_API=1"
}

# Runs "$@" in implementation $impl's environment (the lines in $env_lines).
in_env() {
  local -a vars=("OCL_ICD_VENDORS=$work/$impl/vendors" "XDG_CACHE_HOME=$work/$impl/cache"
                 "PORTABLE_BACKEND=opencl" "PORTABLE_PLUGIN_PATH=$build/lib")
  local line
  while IFS= read -r line; do [[ -n $line ]] && vars+=("$line"); done <<<"$env_lines"
  env "${vars[@]}" "$@"
}

# "P passed, F failed, S skipped" from a conformance log, or "no summary".
conformance_counts() {
  local summary
  summary=$(grep -E '^conformance\(opencl:0\): [0-9]+ passed' "$1" | tail -1)
  if [[ -z $summary ]]; then echo "no summary (crashed?)"; return; fi
  echo "${summary#*: }"
}

run_implementation() {
  impl=$1
  local t0=$SECONDS log=$work/$impl
  env_lines=$(setup_"$impl" 2>"$log.setup") || {
    rows+=("$impl|SKIP: $(tail -1 "$log.setup")|-|-|$((SECONDS - t0))|")
    echo "== $impl: skipped: $(tail -1 "$log.setup")"; return; }
  mkdir -p "$work/$impl/cache"
  echo "== $impl: conformance"
  in_env "$bin_conformance" >"$log.conformance.txt" 2>&1
  local rc=$? conf cross digits
  if [[ $rc -eq 77 ]]; then
    rows+=("$impl|SKIP: $(grep -m1 'unavailable' "$log.conformance.txt")|-|-|$((SECONDS - t0))|")
    echo "== $impl: skipped (no device)"; return
  fi
  conf=$(conformance_counts "$log.conformance.txt")
  if [[ $rc -ne 0 || $conf != *" 0 failed"* ]]; then
    failed=1; conf+=" (exit status $rc)"; grep '^FAIL' "$log.conformance.txt" | head -20
  fi
  echo "== $impl: cross-backend"
  if in_env "$bin_cross_backend" opencl:0 >"$log.cross.txt" 2>&1; then cross=passed
  else cross="FAILED (rc $?)"; failed=1; tail -5 "$log.cross.txt"; fi
  # a graph's independent chains as group kernels: replays equal eager,
  # and exactly the independent chains grouped
  if [[ -x $build/tests/graph/test_graph_groups ]]; then
    if in_env env PORTABLE_LOG=info PT_TEST_GROUPS=opencl "$build/tests/graph/test_graph_groups" \
         >"$log.groups.txt" 2>&1; then cross+=", graph groups passed"
    else cross+=", graph groups FAILED (rc $?)"; failed=1; tail -5 "$log.groups.txt"; fi
  fi
  # float -> f16 in kernels: half.h's bits on ~1.7M floats, eager and fused;
  # PoCL and Intel's runtime must take the compiler's conversion on a host
  # with F16C (rusticl's NaNs differ, so it keeps half.h's arithmetic)
  if [[ -x $build/tests/test_ocl_half ]]; then
    local want=
    [[ ($impl == pocl || $impl == intel) && $(uname -m) == x86_64 ]] && grep -qw f16c /proc/cpuinfo && want=native
    if in_env env PORTABLE_LOG=info ${want:+PT_TEST_HALF_PATH=$want} "$build/tests/test_ocl_half" \
         >"$log.half.txt" 2>&1; then cross+=", f16 casts passed ($(grep -oE 'kernels: [a-z]+' "$log.half.txt" | cut -d' ' -f2))"
    else cross+=", f16 casts FAILED (rc $?)"; failed=1; tail -5 "$log.half.txt"; fi
  fi
  echo "== $impl: digits example"
  if in_env "$bin_mlp_digits" --data "$root/examples/data/digits.csv.gz" \
       --save "$work/$impl/mlp_digits.safetensors" >"$log.digits.txt" 2>&1; then digits=passed
  else digits="FAILED (rc $?)"; failed=1; tail -5 "$log.digits.txt"; fi
  local acc
  acc=$(grep -oE 'test accuracy on [^ ]+: [0-9.]+%' "$log.digits.txt" | head -1 | grep -oE '[0-9.]+%$')
  rows+=("$impl|$conf|$cross|$digits${acc:+ ($acc)}|$((SECONDS - t0))|")
}

# One small case per op x dtype (and its transposed variant where the suite
# has one), picked from a full conformance log: shapes of at most 64.
pick_small_cases() {
  python3 - "$1" <<'EOF'
import re, sys
dtypes = {"f32", "f64", "i32", "i64", "u8", "f16", "bf16"}
first, strided = {}, {}
for line in open(sys.argv[1]):
    # A PASS line is the case's name; a SKIP line adds ": reason". Names
    # can hold ": " themselves (where's "c ? a : b"), so only SKIP lines
    # are cut at one.
    m = re.match(r"^(PASS|SKIP) (.*?)(: .*)?$", line.rstrip("\n"))
    if not m:
        continue
    name = line.rstrip("\n")[5:] if m.group(1) == "PASS" else m.group(2)
    words = name.split(" ")
    dt = next((w for w in words[1:] if w in dtypes or re.fullmatch(r"\w+->\w+", w)), None)
    if dt is None:
        continue
    key = (words[0], dt)
    nums = [int(x) for x in re.findall(r"\d+", name.split(" ", 1)[1])]
    first.setdefault(key, None)
    if not nums or max(nums) > 64 or max(nums) < 2:
        continue
    if first[key] is None:
        first[key] = name
    if "]T" in name:
        strided.setdefault(key, name)
for key, name in first.items():
    if name:
        print(name)
    if key in strided and strided[key] != name:
        print(strided[key])
EOF
}

run_oclgrind() {
  impl=oclgrind
  local t0=$SECONDS log=$work/oclgrind source=$1
  env_lines=$(setup_oclgrind 2>"$log.setup") || {
    rows+=("oclgrind|SKIP: $(tail -1 "$log.setup")|-|-|0|"); echo "== oclgrind: skipped"; return; }
  if [[ ! -s $source ]]; then
    rows+=("oclgrind|SKIP: no full conformance log to pick cases from|-|-|0|"); return
  fi
  mkdir -p "$work/oclgrind/cache"
  pick_small_cases "$source" >"$log.cases-all.txt"
  # Pass 2's cases: the kernels where the uninitialised-value check works
  # (the header says which and why).
  grep -vE '^(sum|mean|max|argmax|norm|norm_dims|channel_stats|attention|fused|softmax|log_softmax|matmul|conv2d|conv2d_direct|conv2d_backward_data|conv2d_backward_weight|im2col|col2im|avg_pool2d|max_pool2d|max_pool2d_window|max_pool2d_indices|max_unpool2d|error) ' \
    "$log.cases-all.txt" | grep -vE '^embedding .*(grad|graph|twice)' | grep -v 'f16' >"$log.cases-uninit.txt"
  local n_all n_uninit pass=0 fail=0 skip=0 reports=0 part
  n_all=$(wc -l <"$log.cases-all.txt"); n_uninit=$(wc -l <"$log.cases-uninit.txt")
  echo "== oclgrind: $n_all small cases, then $n_uninit with the uninitialised-value check"
  local base_env=$env_lines$'\n'"PORTABLE_NO_MEMORY_CACHING=1"
  for part in all uninit; do
    rm -f "$log.$part.log"
    env_lines=$base_env$'\n'"OCLGRIND_LOG=$log.$part.log"
    [[ $part == uninit ]] && env_lines+=$'\n'"OCLGRIND_UNINITIALIZED=1"
    in_env "$bin_conformance" --cases "$log.cases-$part.txt" >"$log.$part.txt" 2>&1
    local rc=$? summary p f s
    summary=$(grep -E '^conformance\(opencl:0\): ' "$log.$part.txt" | tail -1)
    read -r p f s < <(echo "$summary" | grep -oE '[0-9]+ (passed|failed|skipped)' | grep -oE '^[0-9]+' | tr '\n' ' ')
    pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0})); skip=$((skip + ${s:-0}))
    grep '^FAIL' "$log.$part.txt" | head -20
    local ran=$((${p:-0} + ${f:-0} + ${s:-0})) picked
    picked=$(wc -l <"$log.cases-$part.txt")
    if [[ $rc -ne 0 || -z $summary || $ran -ne $picked ]]; then
      fail=$((fail + 1))
      echo "oclgrind ($part): exit status $rc, $ran of $picked cases ran"; tail -5 "$log.$part.txt"
    fi
    if [[ -s $log.$part.log ]]; then
      reports=$((reports + $(grep -c '^[^[:space:]]' "$log.$part.log")))
      echo "oclgrind ($part) reported:"; head -40 "$log.$part.log"
    fi
  done
  # The group kernels the OpenCL plugin writes for a graph's independent
  # chains, which no conformance case reaches (each runs one chain), with
  # pass 1's checks and the test's own check that exactly the independent
  # chains were grouped.
  local groups_note=""
  if [[ -x $build/tests/graph/test_graph_groups ]]; then
    rm -f "$log.groups.log"
    env_lines=$base_env$'\n'"OCLGRIND_LOG=$log.groups.log"$'\n'"PORTABLE_LOG=info"$'\n'"PT_TEST_GROUPS=opencl"
    if ! in_env "$build/tests/graph/test_graph_groups" >"$log.groups.txt" 2>&1; then
      fail=$((fail + 1))
      echo "oclgrind (groups): test_graph_groups failed"; tail -5 "$log.groups.txt"
    fi
    if [[ -s $log.groups.log ]]; then
      reports=$((reports + $(grep -c '^[^[:space:]]' "$log.groups.log")))
      echo "oclgrind (groups) reported:"; head -40 "$log.groups.log"
    fi
    groups_note=" + the graph group kernels"
  fi
  # Random captured programs (tests/graph/test_graph_random.c): the fused
  # chains, groups and reductions of shapes no case names, replays held to
  # eager runs bit for bit, with pass 1's checks.
  if [[ -x $build/tests/graph/test_graph_random ]]; then
    rm -f "$log.random.log"
    env_lines=$base_env$'\n'"OCLGRIND_LOG=$log.random.log"
    if ! in_env "$build/tests/graph/test_graph_random" 40 1 >"$log.random.txt" 2>&1; then
      fail=$((fail + 1))
      echo "oclgrind (random graphs): test_graph_random failed"; tail -5 "$log.random.txt"
    fi
    if [[ -s $log.random.log ]]; then
      reports=$((reports + $(grep -c '^[^[:space:]]' "$log.random.log")))
      echo "oclgrind (random graphs) reported:"; head -40 "$log.random.log"
    fi
    groups_note+=" and 40 random graphs"
  fi
  ((fail || reports)) && failed=1
  rows+=("oclgrind|$pass passed, $fail failed, $skip skipped, $reports Oclgrind reports|-|-|$((SECONDS - t0))|$n_all cases + $n_uninit with --uninitialized$groups_note")
}

for impl in ${PT_OPENCL_MATRIX:-pocl intel rusticl}; do
  [[ $impl == oclgrind ]] || run_implementation "$impl"
done
case " ${PT_OPENCL_MATRIX:-oclgrind} " in
  *" oclgrind "*)
    # Cases picked from the first implementation's full run that completed.
    src=""
    for impl in pocl intel rusticl; do
      [[ -s $work/$impl.conformance.txt ]] && grep -q '^PASS' "$work/$impl.conformance.txt" &&
        { src=$work/$impl.conformance.txt; break; }
    done
    run_oclgrind "$src" ;;
esac

{
  echo "| implementation | conformance | cross-backend | digits example | seconds |"
  echo "|---|---|---|---|---:|"
  for r in "${rows[@]}"; do
    IFS='|' read -r name conf cross digits secs note <<<"$r"
    echo "| $name${note:+ ($note)} | $conf | $cross | $digits | $secs |"
  done
} >"$work/matrix.md"
echo
echo "OpenCL matrix (logs in $work):"
cat "$work/matrix.md"
exit $failed
