#!/usr/bin/env bash
# Downloads the Debian 12 packages that tests/gpu/run_on_device.sh builds
# with into DEST/pkgs (default .debs/pkgs), on a development machine with the
# Debian package registry, not on the GPU machine.
#
# The GPU machine has CUDA, CMake, ninja and PyTorch but no package registry,
# and may lack what the cpu and opencl plugins and the core link: OpenBLAS,
# SLEEF, cJSON, zlib's headers, pkg-config, the OpenCL ICD loader and
# headers, CLBlast, oneDNN (the cpu plugin's convolutions, and its f32
# products where OpenBLAS does not know the CPU). The .deb files stay compressed (about 20 MB, well under
# the 64 MiB the device tool carries with the working tree); the script
# unpacks them there (dpkg-deb -x, or tests/gpu/unpack_deb.py where dpkg is
# missing), nothing is installed. DEST must be git-ignored: .debs is.
#
# Usage, from the repository root:
#   apt-get update && tests/gpu/prepare_debs.sh            # -> .debs/pkgs
#   tests/gpu/prepare_debs.sh /tmp/debs                    # -> /tmp/debs/pkgs
# then run the device command with carry [".debs"].
set -euo pipefail
dest=${1:-.debs}
# Keep in step with what tests/gpu/rehearse.sh hides from the host.
pkgs=(libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libgfortran5 libquadmath0
      libcjson1 libcjson-dev zlib1g-dev pkgconf pkgconf-bin libpkgconf3
      libsleef3 libsleef-dev
      ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers opencl-headers
      libclblast1 libclblast-dev
      libdnnl2 libdnnl-dev)
if [[ "${1:-}" == "--list" ]]; then printf '%s\n' "${pkgs[@]}"; exit 0; fi
mkdir -p "$dest/pkgs.tmp"
if ! (cd "$dest/pkgs.tmp" && apt-get download -qq "${pkgs[@]}"); then
  echo "prepare_debs: apt-get download failed; run 'apt-get update' first" >&2
  rm -rf "$dest/pkgs.tmp"
  exit 1
fi
rm -rf "$dest/pkgs"
mv "$dest/pkgs.tmp" "$dest/pkgs"
# cffi (compiled) and pycparser for the Python package's step: the GPU
# machine's python3 (/opt/torch/.venv, CPython 3.12) has neither. From PyPI.
rm -rf "$dest/wheels"
if ! python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
       --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d "$dest/wheels" cffi pycparser; then
  echo "prepare_debs: pip download of cffi and pycparser failed: the Python step will say so" >&2
fi
du -sh "$dest/pkgs"
echo "prepare_debs: ready in $dest/pkgs; carry \"$(basename "$dest")\" with the device command"
