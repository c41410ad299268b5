"""The wheel ships every layer package: built from this tree, installed into a fresh venv, and
every subpackage imported there (not from the source tree)."""

from __future__ import annotations

import os
import pkgutil
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

import memdb

ROOT = Path(memdb.__file__).parent.parent


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages([str(ROOT / "memdb")], "memdb.") if not m.name.startswith("memdb._"))


@pytest.mark.slow
def test_the_wheel_installs_every_package_into_a_fresh_venv(tmp_path: Path) -> None:
    src = tmp_path / "src"  # a copy without build artefacts, so the wheel holds what a clean clone builds
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "*.so", "__pycache__", "build", "*.egg-info", ".*cache*"))
    wheels = tmp_path / "wheels"
    # no build isolation: this venv already has setuptools and cffi, and the test must not need the network
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(src)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("memdb_agent-*.whl")  # the distribution name (the import name is memdb)
    fresh = tmp_path / "venv"
    venv.create(fresh, with_pip=True)
    python = fresh / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True, capture_output=True)
    # the dependencies come from this venv's site-packages, on PYTHONPATH (which processes no .pth
    # file, so the editable install of the source tree stays out of reach)
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"], "MEMDB_PURE_PYTHON": ""}
    modules = _modules()
    code = (
        "import importlib, sys, memdb, memdb.native\n"
        f"assert memdb.__file__.startswith({str(fresh)!r}), memdb.__file__\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "assert (__import__('pathlib').Path(memdb.__file__).parent / 'py.typed').exists()\n"
        "from importlib.metadata import version\n"
        "assert version('memdb-agent') == memdb.__version__ != '0.0.0+unknown', memdb.__version__\n"
        "print(memdb.native.AVAILABLE)\n"
    )
    out = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env, check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "True"  # the C scorer was built into the wheel
    assert {"memdb.engine", "memdb.memory", "memdb.lifecycle", "memdb.query", "memdb.governance", "memdb.llm", "memdb.surfaces"} <= set(
        modules
    )
