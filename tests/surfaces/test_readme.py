"""The README's first Python snippet, run as is in an empty directory, shows a real answer."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_snippet_finds_what_it_just_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    snippet = blocks[0]
    assert 'memdb.open("./mem")' in snippet and "mem.ask(" in snippet
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(snippet, str(README), "exec"), {"__name__": "readme"})
    printed = out.getvalue()
    assert printed.startswith("True window today"), printed
    assert printed.splitlines()[1].startswith("Recent memories")  # the answer, not "Nothing today"
    assert "debug/failure [project-x, deploy]: Deploy of Project X failed: migration held a lock" in printed
    assert "Nothing" not in printed and "1 past attempt (1 failure)" in printed
    assert (tmp_path / "mem" / "data.mdb").exists()


def test_the_readme_names_every_command() -> None:
    import argparse

    from memdb.cli import build_parser

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## The `memdb` command") : text.index("## Globals")]
    assert "`memdb --help`" in section
    missing = [name for name in sub.choices if not re.search(rf"`{re.escape(name)}[ `]", section)]
    assert missing == []
