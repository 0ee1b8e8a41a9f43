#!/usr/bin/env bash
# Prepares .debs/root for tests/gpu/run_on_device.sh, on a development machine
# (Debian 12, with the Debian package registry), not on the GPU machine.
#
# The GPU machine has CUDA, CMake and PyTorch but no package registry and none
# of the -dev packages the build wants (OpenBLAS for the cpu backend, cJSON and
# zlib headers for the core, pkg-config). This downloads those packages and
# unpacks them (dpkg -x, nothing installed) into DEST/root, which travels with
# the device tool's `carry` (DEST must be git-ignored: .debs is, by the root
# .gitignore). Static archives and unused libraries are removed so the tree
# stays well under the 64 MiB the tool carries.
#
# Usage, from the repository root:
#   tests/gpu/prepare_debs.sh            # -> .debs/root
#   tests/gpu/prepare_debs.sh /tmp/debs  # -> /tmp/debs/root
# then run the device command with carry [".debs"].
set -euo pipefail
dest=${1:-.debs}
pkgs=(libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libgfortran5 libquadmath0
      libcjson1 libcjson-dev zlib1g-dev pkgconf pkgconf-bin libpkgconf3)
mkdir -p "$dest/download"
rm -rf "$dest/root"
mkdir -p "$dest/root"
if ! (cd "$dest/download" && apt-get download "${pkgs[@]}"); then
  echo "prepare_debs: apt-get download failed; run 'apt-get update' first" >&2
  exit 1
fi
for f in "$dest"/download/*.deb; do dpkg -x "$f" "$dest/root"; done
rm -rf "$dest/download" "$dest/root/usr/share/doc" "$dest/root/usr/share/man" "$dest/root/usr/share/lintian"
find "$dest/root" -name '*.a' -delete
rm -f "$dest"/root/usr/lib/x86_64-linux-gnu/openblas-pthread/liblapack* \
      "$dest"/root/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas*
du -sh "$dest/root"
echo "prepare_debs: ready in $dest/root; carry \"$(basename "$dest")\" with the device command"
