"""SSNs and NANP phones joined by a bare "-" are each withheld, in text and in a tag: each refused
a "-" and a digit beside it, so "010-01-1000-001-01-0001" ("010-01-1000" + "-" + "001-01-0001")
was kept whole in every reading (piifix's probe)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from test_tag_leaks import held, stored

import memdb
from memdb.memory.layout import GLOBALS
from memdb.memory.sanitize import RegexSanitizer

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
S = RegexSanitizer()


def clean(text: str) -> str:
    return S.sanitize({"t": text})["t"]


JOINED = [
    ("010-01-1000-001-01-0001", "<SSN_1>-<SSN_2>", ["010011000", "001010001"]),
    ("123-45-6789-219-09-9999-078-05-1120", "<SSN_1>-<SSN_2>-<SSN_3>", ["123456789", "219099999", "078051120"]),
    ("415-200-0000-646-555-0100", "<PHONE_1>-<PHONE_2>", ["4152000000", "6465550100"]),
    ("415 200 0000-415 200 0001", "<PHONE_1>-<PHONE_2>", ["4152000000", "4152000001"]),
    ("219-09-9999-415.200.0000", "<SSN_1>-<PHONE_1>", ["219099999", "4152000000"]),
]


@pytest.mark.parametrize(("written", "text", "raws"), JOINED)
def test_ids_joined_by_a_dash_are_each_withheld_in_text_and_tags(tmp_path: Path, written: str, text: str, raws: list[str]) -> None:
    assert clean(f"ids {written} on file") == f"ids {text} on file"
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        mem = db.owner("a")
        ep = mem.record("debug", f"ids {written}", outcome="success", tags=[written, f"ref-{written}"], participants=[written])
        assert ep.summary == f"ids {text}" and ep.participants == (text,)
        assert all("withheld" in tag for tag in ep.tags), ep.tags
        assert [name for name in GLOBALS if held(name, db, raws)] == []


# revK: a run that did not part evenly into ids kept every one of them, and a date joined to an SSN
# kept it (a tag's date is read whole): each is withheld in text, tags and participants alike
UNEVEN = [
    ("01-219-09-9999-078-05-1120", "01-<SSN_1>-<SSN_2>", ["219099999", "078051120"]),
    ("010-01-1000-001-01-0001-01", "<SSN_1>-<SSN_2>-01", ["010011000", "001010001"]),
    ("219-09-9999-078-05-1120-415", "<SSN_1>-<SSN_2>-415", ["219099999", "078051120"]),
    ("(415) 200-0000-219-09-9999", "<PHONE_1>-<SSN_1>", ["4152000000", "219099999"]),
    ("+1-415-200-0000-646-555-0100", "+1-<PHONE_1>-<PHONE_2>", ["4152000000", "6465550100"]),
    ("1985-03-14-219-09-9999", "1985-03-14-<SSN_1>", ["219099999"]),
    ("dob-1985-03-14-219-09-9999", "dob-1985-03-14-<SSN_1>", ["219099999"]),
    ("2024-06-01-123-45-6789", "2024-06-01-<SSN_1>", ["123456789"]),
    ("14.03.1985-415-200-0000", "14.03.1985-<PHONE_1>", ["4152000000"]),
]


@pytest.mark.parametrize(("written", "text", "raws"), UNEVEN)
def test_ids_joined_with_other_groups_or_a_date_are_each_withheld(tmp_path: Path, written: str, text: str, raws: list[str]) -> None:
    assert clean(f"ids {written} on file") == f"ids {text} on file"
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        mem = db.owner("a")
        ep = mem.record("debug", f"ids {written}", outcome="success", tags=[written, f"ref-{written}"], participants=["bob", written])
        assert ep.summary == f"ids {text}"
        assert all("withheld" in tag for tag in ep.tags), ep.tags
        assert "<" in ep.participants[1], ep.participants
        assert [name for name in GLOBALS if held(name, db, raws)] == []


@pytest.mark.parametrize(
    "value", ["1985/03/14/219/09/9999", "dob_1985.03.14_219.09.9999", "1985-03-14 219 09 9999", "14.03.1985/415/200/0000"]
)
def test_a_value_after_a_date_is_withheld_in_a_tag_and_a_participant(tmp_path: Path, value: str) -> None:
    """A tag and a participant are read with their separators as spaces but a date's, kept whole:
    after it, the value's groups read as more of a longer number ("14 219 09 9999")."""
    raws = ["219099999", "4152000000"]
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        ep = db.owner("a").record("debug", "x", outcome="success", tags=[value], participants=[value])
        assert ep.tags[0].startswith("withheld-") and ep.participants[0].startswith("<"), (ep.tags, ep.participants)
        assert [name for name in GLOBALS if held(name, db, raws)] == []


@pytest.mark.parametrize(
    "text",
    [
        "123-45-6789-01",  # a suffix is no second id (as before)
        "415-200-0000-01",
        "built 2024-06-01-1234",
        "from 2024-06-01-2024-06-30 to 01.07.2024-31.07.2024",
        "ISBN 978-3-16-148410-0",
        "PO-2026-000123-000124",
        "from 2024-06-01-2024-06-30",
        "serials 000-12-3456-666-12-3456",  # never-issued SSNs, joined
        "batch sizes 256/512/1024",  # "/" throughout: a list, a ratio or a path as often as a phone
    ],
)
def test_numbers_that_are_no_joined_ids_stay_in_text(text: str) -> None:
    assert clean(text) == text


@pytest.mark.parametrize("tag", ["415/200/0000", "415/555-0132"])
def test_a_tag_withholds_a_phone_parted_by_slashes(tag: str) -> None:
    """Text keeps "415/200/0000" ("256/512/1024" reads the same); a tag is read with its separators
    as spaces too, and a tag is a filter key shown in every listing: it fails closed."""
    assert stored(tag) == "withheld-phone"
