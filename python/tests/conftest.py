"""Shared fixtures: the build tree's programs and the backends to run on.

The suite runs against the build tree (ctest sets PORTABLE_LIBRARY,
PORTABLE_CDEF, PYTHONPATH and PT_BUILD_DIR) or against an installed package
(then the tests that need the build tree's C programs skip, saying so).
"""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("PT_BUILD_DIR", os.path.join(REPO, "build"))


def build_program(rel):
    """Path of a program of the C build tree, or a skip saying it is missing."""
    path = os.path.join(BUILD, rel)
    if not os.access(path, os.X_OK):
        pytest.skip(f"{rel} is not built in {BUILD} (set PT_BUILD_DIR)")
    return path


def backend_available(name):
    import portable
    return any(b["name"] == name and b["available"] for b in portable.backends())


@pytest.fixture(params=["cpu", "opencl"])
def backend_device(request):
    """A device of each backend the suite covers (skips an absent one)."""
    import portable
    if not backend_available(request.param):
        pytest.skip(f"{request.param}: backend unavailable here")
    return portable.device(f"{request.param}:0")


def run_python(code_or_path, env_extra=None, args=(), timeout=300):
    """Runs Python in a child (for a fresh PORTABLE_* environment or a crash check)."""
    env = dict(os.environ)
    env.update(env_extra or {})
    cmd = [sys.executable]
    cmd += [code_or_path] if code_or_path.endswith(".py") else ["-c", code_or_path]
    return subprocess.run(cmd + list(args), env=env, capture_output=True, text=True, timeout=timeout)
