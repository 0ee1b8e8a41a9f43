#!/usr/bin/env bash
# Installs the Debian 12 packages libportable builds and tests with, skipping
# those already present. Usage: scripts/install-deps.sh
# (--bench, once needed for the benchmarks' peers, is accepted and changes
# nothing: NumPy and PyTorch are installed anyway, as the tests use them as
# oracles.)
set -euo pipefail

packages=(build-essential cmake pkg-config zlib1g-dev libcjson-dev libopenblas-dev libsleef-dev libdnnl-dev
          ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libclblast-dev python3-numpy)
# clang and its sanitizer and libFuzzer runtimes: the ThreadSanitizer build and the fuzz
# targets (tests/fuzz) in scripts/run-tests.sh
packages+=(clang libclang-rt-14-dev)
# The Python package (python/, pyproject.toml): cffi and its parser for the
# bindings, pytest and PyTorch for its tests (the chapter and DLPack checks
# compare with PyTorch), venv and ninja for the `pip install .` check
packages+=(python3-cffi python3-pytest python3-torch python3-venv ninja-build)
# Open MPI: libportable-dist (dist/) and its tests under mpirun
packages+=(libopenmpi-dev openmpi-bin)
# More OpenCL implementations for scripts/opencl-matrix.sh: Mesa rusticl (no
# fp64) and the Oclgrind simulator (Intel's CPU runtime comes from PyPI there)
packages+=(mesa-opencl-icd oclgrind)
# (python3-torch, above, is also the oracle of the CNN tests and DLPack's
# other side, which fail in CI without it, and a peer in the benchmarks.)
# Doxygen: the API reference (docs/api), built with undocumented names as errors
packages+=(doxygen)
# matplotlib: scripts/render_trace.py (trace timelines) and bench/plot_results.py
packages+=(python3-matplotlib)
# The King James Bible (public domain) and its reader, `bible`, with which the build
# writes the plain text examples/gpt_train learns from (examples/data/README)
packages+=(bible-kjv bible-kjv-text)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
