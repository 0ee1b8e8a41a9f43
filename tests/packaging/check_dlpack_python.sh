#!/usr/bin/env bash
# Runs dlpack_frameworks.py for one framework with the first Python that has
# it: $PYTHON, python3 on PATH, then /usr/bin/python3 (Debian's
# python3-numpy / python3-torch live there). Exit 77 (skip) with the reason
# when none has it, but 1 in CI (the CI variable set): CI installs both, so a
# missing one is a broken setup, not a reason to skip.
# Usage: check_dlpack_python.sh <libportable.so> numpy|torch
set -u
lib=$1 framework=$2
here=$(cd "$(dirname "$0")" && pwd)
tried=()
for py in ${PYTHON:-} python3 /usr/bin/python3; do
  command -v "$py" >/dev/null 2>&1 || continue
  if "$py" -c "import numpy, $framework" >/dev/null 2>&1; then
    exec "$py" "$here/dlpack_frameworks.py" "$lib" "$framework"
  fi
  tried+=("$py")
done
if [[ -n ${CI:-} ]]; then
  echo "FAIL: $framework is not importable by any of: ${tried[*]:-no python3}, and CI is set" \
       "(scripts/install-deps.sh installs python3-$framework)"
  exit 1
fi
echo "$framework is not importable by any of: ${tried[*]:-no python3}: skipped" \
     "(Debian: apt-get install python3-$framework)"
exit 77
