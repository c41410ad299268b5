"""``python -m benchmarks.bench_flush`` as a newcomer runs it: ``--help`` printed no usage but
started the 200,000-episode build (minutes of both cores, about 1 GB in /tmp), and a SIGTERM
(``timeout``) left its 0.5 GB build directory behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(*args: str, tmp: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)}  # mkdtemp builds under tmp
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bench_flush", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finished(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Its output once it exits; killed after a minute (the old ``--help`` ran for minutes)."""
    try:
        return proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_help_prints_usage_and_builds_nothing(tmp_path: Path) -> None:
    proc = _bench("--help", tmp=tmp_path)
    out, err = _finished(proc)
    assert proc.returncode == 0, err
    assert out.startswith("usage: python -m benchmarks.bench_flush") and "--n N" in out and "--rounds ROUNDS" in out
    assert list(tmp_path.iterdir()) == []  # no build directory was made


def test_an_unknown_argument_is_a_usage_error(tmp_path: Path) -> None:
    proc = _bench("--sizes", "1000", tmp=tmp_path)
    _, err = _finished(proc)
    assert proc.returncode == 2 and "unrecognized arguments: --sizes 1000" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [["--n", "100"], ["--rounds", "0"]])
def test_sizes_it_cannot_run_are_refused_before_building(tmp_path: Path, argv: list[str]) -> None:
    proc = _bench(*argv, tmp=tmp_path)
    _, err = _finished(proc)
    assert proc.returncode == 2 and f"{argv[0]} {argv[1]}:" in err
    assert list(tmp_path.iterdir()) == []


def test_sigterm_removes_the_build_directory(tmp_path: Path) -> None:
    """Many rounds of a small build, so it is timing (the directory whole) when the signal comes."""
    proc = _bench("--n", "300", "--rounds", "1000000", tmp=tmp_path)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # "built 300 episodes ...", once both sides are built
        assert line.startswith("built 300 episodes"), line
        built = [p for p in tmp_path.iterdir() if p.name.startswith("memdb-bench-flush-")]
        assert len(built) == 1 and (built[0] / "memdb").is_dir() and (built[0] / "sqlite.db").is_file()
        proc.send_signal(signal.SIGTERM)
    finally:
        _finished(proc)
    assert proc.returncode == 128 + signal.SIGTERM
    assert list(tmp_path.iterdir()) == []
