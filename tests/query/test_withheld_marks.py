"""A custom sanitizer may mark a value any way ("[REDACTED]"), not as memdb's <KIND_n>: what it
wrote in place of a value of a question or a text is withheld as memdb's placeholders are, never
searched as words, or "redacted" matched every memory it had redacted (a review's find)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import pytest
from query_times import NOW, at

import memdb
from memdb.errors import NoSearchableWordsError
from memdb.query.plan import sanitized, unsearched

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)


class _Redacting:
    def __init__(self, mark: str = "[REDACTED]") -> None:
        self.mark = mark

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        return {k: re.sub(r"[\w.]+@[\w.]+\w", self.mark, v) for k, v in texts.items()}


def test_a_custom_sanitizer_s_mark_is_withheld(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "own", sanitizer=_Redacting(), clock=lambda: NOW) as db:
        mem = db.owner("ana")
        mem.record("debug", "sent the invoice to ana@corp.com", outcome="success", tags=["billing"], ts=at(29))
        mem.record("debug", "password reset mail to bob@corp.com bounced", outcome="failure", tags=["auth"], ts=at(28))
        mem.record("debug", "deploy of the web app", outcome="success", ts=at(27))
        recalled = mem.recall(text="zed@quill.org")
        assert recalled.memories == [] and recalled.interpretation.withheld == ("[REDACTED]",)
        with pytest.raises(NoSearchableWordsError):
            mem.history(text="zed@quill.org")
        asked = mem.ask("what bounced for zed@quill.org?")
        assert [h.episode.summary for h in asked.memories] == ["password reset mail to [REDACTED] bounced"]
        assert asked.interpretation.withheld == ("[REDACTED]",) and "redacted" not in asked.interpretation.words
        assert not mem.ask("zed@quill.org").found


@pytest.mark.parametrize(
    ("text", "mark", "clean", "searched"),
    [
        ("mail zed@quill.org now", "[REDACTED]", "mail [REDACTED] now", "mail   now"),
        ("mailto:zed@quill.org, then", "[REDACTED]", "mailto:[REDACTED], then", "mailto: , then"),
        ("mail zed@quill.org now", "[REDACTED EMAIL]", "mail [REDACTED EMAIL] now", "mail   now"),
        ("mail zed@quill.org now", "xxx", "mail xxx now", "mail   now"),
    ],
)
def test_the_mark_is_what_the_sanitizer_wrote_in_place_of_a_value(text: str, mark: str, clean: str, searched: str) -> None:
    got, withheld = sanitized(_Redacting(mark), text, "text")
    assert (got, withheld) == (clean, (mark,))
    assert unsearched(got, withheld) == searched


class _Folding:
    """Lower-cases and folds width, as a normalising sanitizer might: no value is withheld."""

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        return {k: v.lower() for k, v in texts.items()}


def test_a_change_of_case_is_no_mark_and_a_mark_inside_a_word_is_searched() -> None:
    assert sanitized(_Folding(), "Deploy the API", "text") == ("deploy the api", ())
    assert unsearched("boxxx and xxx", ("xxx",)) == "boxxx and  "
    assert sanitized(memdb.RegexSanitizer(), "mail zed@quill.org now", "text")[1] == ("<EMAIL_1>",)


def test_a_long_text_s_marks_are_withheld_without_lining_it_up() -> None:
    """Past 2,000 pieces the pieces are not lined up (quadratic: a final read's find, 15 s for a
    10k-character question of addresses): the words new to the text are its marks."""
    text = " ".join(f"u{i}@ex.org and" for i in range(1_200))
    clean, withheld = sanitized(_Redacting(), text, "text")
    assert withheld == ("[REDACTED]",) and unsearched(clean, withheld).split() == ["and"] * 1_200


def test_the_reading_names_a_custom_mark_as_written(tmp_path: Path) -> None:
    """README: the reading names what the sanitizer wrote. Read with the rest, "a secret: [EMAIL]"
    was taken for a labelled secret and shown as <SECRET_1> (a final read's find)."""
    with memdb.open(tmp_path / "own", sanitizer=_Redacting("[EMAIL]"), clock=lambda: NOW) as db:
        mem = db.owner("ana")
        mem.record("debug", "the invoice run finished", outcome="success", ts=at(29))
        r = mem.ask("invoice for dana@example.org")
        assert "left out as personal data or a secret: [EMAIL]" in str(r.interpretation) and "<SECRET_" not in r.note
