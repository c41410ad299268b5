"""What the README says, checked against what memdb does, where a reader following it literally
found it stale: the MCP tools it counts and lists, and the time phrases it says ``ask`` ignores."""

from __future__ import annotations

import re
from pathlib import Path

import memdb
from memdb.memory.settings import Settings
from memdb.query import engine
from memdb.surfaces.mcp_server import tool_specs

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _paragraph(start: str) -> str:
    """The README's text from ``start`` to the next blank line, lines joined."""
    at = README.index(start)
    return " ".join(README[at : README.index("\n\n", at)].split())


def test_the_mcp_tools_the_readme_counts_and_lists_are_the_servers() -> None:
    """It said 17 and left out ``record_fact``, so a reader never learnt MCP stores facts."""
    said = _paragraph("- **MCP**: `memdb mcp")
    m = re.search(r"with (\d+) tools \((.*?)\) to ", said)
    assert m, said
    listed = re.findall(r"`(\w+)`", m.group(2))
    served = [s.name for s in tool_specs(Settings())]
    assert int(m.group(1)) == len(served) == len(listed)
    assert sorted(listed) == sorted(served)


def test_the_phrases_the_readme_says_ask_ignores_are_ignored_and_the_offsite_is_searched(tmp_path: Path) -> None:
    """It listed "since the offsite" as ignored, never searched; ``ask`` reads it as an event and,
    where no memory places one, searches "offsite" and labels the answer partial
    (tests/query/test_timephrase.py pins that), as the README now says."""
    said = _paragraph("A phrase that reads as time")
    m = re.search(r"not understood \((.*?)\) is reported as ignored", said)
    assert m, said
    phrases = re.findall(r'"([^"]+)"', m.group(1))
    assert phrases and "since the offsite" not in phrases
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        mem.record("debug", "Deploy of Project X failed", outcome="failure", tags=["deploy"])
        for phrase in phrases:
            r = mem.ask(f"deploy failures {phrase}")
            assert r.interpretation.ignored == (phrase,) and r.found and not r.partial, phrase
            assert f"ignored: '{phrase}'" in r.note
        r = mem.ask("deploy failures since the offsite")
        assert r.interpretation.ignored == () and r.interpretation.unmatched == ("offsite",) and r.found and r.partial
    note = re.search(r"\(`(Partial: [^`]+)`\)", _paragraph("A phrase that reads as time"))
    assert note and note.group(1) in r.note
    assert '"deploy failures since the offsite"' in said


def test_the_readme_says_how_an_empty_answers_counts_are_made() -> None:
    """It said "two kernel calls" after they became one pass, and nothing of the limit past which
    the index keys are read instead, nor what the pure-Python twin's notes cost."""
    said = _paragraph('"N earlier, M later" counts come from')
    assert "two kernel calls" not in said
    assert "`count_outside`" in said and f"past {engine._COUNTED_BYTES >> 10} KiB of a tag's list" in said
    assert "its notes are the C kernel's" in said


def test_the_readme_says_the_archiving_threshold_reads_the_kept_relevance() -> None:
    """A threshold between two levels (3.02) archived an episode scoring above it (3.03, kept
    3.00) and nothing said why."""
    said = _paragraph("3. **traceable forgetting**")
    assert "kept to 1/25 of a point" in said and "3.02 acts as 3.04" in said
