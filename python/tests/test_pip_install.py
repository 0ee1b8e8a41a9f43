"""`pip install .` into a fresh virtual environment, then the README's line:
the wheel carries libportable.so, its plugins and the declarations, and works
with nothing of the build tree around. Needs PyPI (pip's build isolation
fetches scikit-build-core, the venv cffi and NumPy)."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO


def test_pip_install_into_a_fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"no venv module here (python3-venv): {r.stderr.strip()[-200:]}")
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PORTABLE_", "PYTHON", "PT_"))}
    # The CUDA plugin is left out to keep the check short (the wheel has it
    # wherever nvcc is); the build directory is this test's own.
    args = [py, "-m", "pip", "install", "-q", REPO, f"--config-settings=build-dir={tmp_path / 'build'}",
            "--config-settings=cmake.define.PT_BUILD_CUDA=OFF"]
    if shutil.which("ccache"):
        args.append("--config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache")
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1500)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]

    smoke = ("import portable, numpy as np\n"
             "print(portable.try_gpu())\n"
             "assert portable.library_path.startswith(portable.__path__[0]), portable.library_path\n"
             "x = portable.ones(2, 3) + 1\n"
             "assert np.from_dlpack(x).sum() == 12 and portable.from_dlpack(np.ones(3, np.float32)).sum().item() == 3\n"
             "assert any(b['name'] == 'cpu' and b['available'] for b in portable.backends())\n")
    r = subprocess.run([py, "-c", smoke], capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0].split(":")[0] in ("cpu", "cuda", "opencl")
    r = subprocess.run([py, "-m", "portable", "devices"], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert r.returncode == 0 and "cpu:0" in r.stdout, r.stdout + r.stderr
