#!/usr/bin/env bash
# The CUDA plugin's graceful absence, one scenario per process, on the CUDA
# simulator (backends/cuda/sim): what `portable devices` shows and what a
# program asking for cuda is told. Each unusable case must load the plugin,
# report zero usable devices with the reason, and never crash.
# usage: check_admission.sh <build-dir>
set -uo pipefail
build=$1
tool="$build/tools/portable"
driver_dir="$build/cudasim/driver"
failed=0
# The simulator's plugin, found before the real one.
export PORTABLE_PLUGIN_PATH="$build/cudasim:$build/lib"

# scenario <title> <expected regex in the cuda line> <env...>
scenario() {
  local title=$1 want=$2
  shift 2
  local out rc
  out=$(env -u LD_LIBRARY_PATH "$@" PORTABLE_BACKEND=cuda "$tool" devices 2>&1)
  rc=$?
  if [[ $rc -ge 128 ]]; then
    echo "FAIL: $title: portable devices crashed (exit $rc)"; echo "$out"; failed=1; return
  fi
  local line
  line=$(grep -E '^  cuda ' <<<"$out")
  if grep -qE -- "$want" <<<"$line"; then
    echo "PASS: $title: ${line#  }"
  else
    echo "FAIL: $title: expected /$want/ in the cuda line"; echo "$out"; failed=1
  fi
}

# The simulator, like the real runtime, finds the driver by loading
# libcuda.so.1: on a machine with a real driver that always works.
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  echo "SKIP: no driver: this machine has a real libcuda.so.1"
else
  scenario "no driver" \
    "unavailable: 0 devices: CUDA driver not found \(libcuda.so.1 missing\).*cudaErrorInsufficientDriver.*PORTABLE_BACKEND=cpu"
fi
scenario "a driver, no device" \
  "unavailable: 0 devices: cudaGetDeviceCount returned cudaErrorNoDevice" \
  LD_LIBRARY_PATH="$driver_dir" PTCU_SIM_DEVICES=0
# Contexts are made on a device's first use, not at admission: a device
# whose context fails is listed, and every call on it (device_info first of
# all, which `portable devices` makes) fails with the reason.
scenario_rows() {
  local title=$1 want=$2
  shift 2
  local out rc
  out=$(env -u LD_LIBRARY_PATH "$@" PORTABLE_BACKEND=cuda "$tool" devices 2>&1)
  rc=$?
  if [[ $rc -lt 128 ]] && grep -qE -- "$want" <<<"$out"; then
    echo "PASS: $title: $(grep -E -- "$want" <<<"$out" | head -1)"
  else
    echo "FAIL: $title (exit $rc): expected /$want/"; echo "$out"; failed=1
  fi
}
scenario "one of two devices fails to initialise: both listed" \
  "ok, 2 devices " \
  LD_LIBRARY_PATH="$driver_dir" PTCU_SIM_DEVICES=2 PTCU_SIM_FAIL_CONTEXT=1
scenario_rows "one of two devices fails to initialise: its first use says why" \
  "^\| cuda:1 +\| error: pt_device_info: cuda:1: .*CUDA device 1 could not be brought up: .*context creation failed: cudaErrorDevicesUnavailable" \
  LD_LIBRARY_PATH="$driver_dir" PTCU_SIM_DEVICES=2 PTCU_SIM_FAIL_CONTEXT=1
scenario_rows "one of two devices fails to initialise: the other works" \
  "^\| cuda:0 +\| libportable CUDA simulator" \
  LD_LIBRARY_PATH="$driver_dir" PTCU_SIM_DEVICES=2 PTCU_SIM_FAIL_CONTEXT=1
scenario_rows "every device fails to initialise" \
  "^\| cuda:0 +\| error: .*CUDA device 0 could not be brought up: .*context creation failed: cudaErrorDevicesUnavailable" \
  LD_LIBRARY_PATH="$driver_dir" PTCU_SIM_DEVICES=2 PTCU_SIM_FAIL_CONTEXT=0,1
scenario "a GPU too old for the compiled kernels" \
  "unavailable: 0 devices: 1 CUDA device found but none could be used: .*compute capability 7.5 .*cudaErrorNoKernelImageForDevice.*rebuild with -DPT_CUDA_ARCHITECTURES=75-real" \
  LD_LIBRARY_PATH="$driver_dir" PTCU_SIM_DEVICES=1 PTCU_SIM_COMPUTE_CAPABILITY=75
scenario "two working devices" \
  "ok, 2 devices" \
  LD_LIBRARY_PATH="$driver_dir" PTCU_SIM_DEVICES=2

# A program that asks for cuda where none works gets the reason and exit 1.
out=$(env LD_LIBRARY_PATH="$driver_dir" PTCU_SIM_DEVICES=0 PORTABLE_BACKEND=cuda "$build/examples/gpu_tour" --quick 2>&1)
rc=$?
if [[ $rc -eq 1 ]] && grep -q "backend cuda is unavailable: 0 devices: cudaGetDeviceCount returned cudaErrorNoDevice" <<<"$out"; then
  echo "PASS: gpu_tour without a device exits 1 with the reason"
else
  echo "FAIL: gpu_tour without a device: exit $rc"; echo "$out"; failed=1
fi
exit $failed
