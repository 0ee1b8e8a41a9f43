"""The package against an installed copy of the library (`cmake --install`),
named by PORTABLE_LIBRARY: the plugins come from that prefix, not the build tree."""
import os
import shutil
import subprocess

import pytest

from conftest import BUILD, run_python


def test_package_runs_on_an_installed_prefix(tmp_path):
    cmake = shutil.which("cmake")
    if not cmake or not os.path.isfile(os.path.join(BUILD, "cmake_install.cmake")):
        pytest.skip("needs cmake and the build tree")
    prefix = tmp_path / "prefix"
    r = subprocess.run([cmake, "--install", BUILD, "--prefix", str(prefix)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    libs = [p for p in prefix.glob("lib*/libportable.so")]
    assert len(libs) == 1
    code = ("import portable as pt\n"
            "print(pt.library_path)\n"
            "print(next(b['path'] for b in pt.backends() if b['name'] == 'cpu'))\n"
            "print((pt.ones(2, 2) @ pt.ones(2, 2)).sum().item())\n")
    r = run_python(code, {"PORTABLE_LIBRARY": str(libs[0]), "PORTABLE_BACKEND": "cpu"})
    assert r.returncode == 0, r.stderr
    lib, plugin, value = r.stdout.split()
    assert lib == str(libs[0]) and plugin.startswith(str(prefix)) and float(value) == 8.0
    r = run_python("import portable", {"PORTABLE_LIBRARY": str(tmp_path / "missing.so")})
    assert r.returncode != 0 and "cannot load libportable" in r.stderr and "missing.so" in r.stderr
