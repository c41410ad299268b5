"""A tag that holds personal data or a secret is kept as a fixed marker of its kind
("withheld-email"), never as its record's placeholder number: "email-1" was a different person in
each record, and a filter by it joined strangers' memories as if about one (a false association)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import memdb
from memdb.memory.layout import GLOBALS
from memdb.memory.sanitize.fields import marked_tag, tag_marker

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("tag", "kept"),
    [
        ("bob@example.com", "withheld-email"),
        ("+1 415 555 0199", "withheld-phone"),
        ("4111 1111 1111 1111", "withheld-card"),
        ("4111/1111/1111/1111", "withheld-card"),
        ("10.1.2.3", "withheld-ip"),
        ("AKIAZ3MQX7TQ4BVN2WLP", "withheld-secret"),
        ("customer bob@example.com", "customer-withheld-email"),  # what is no value stays
    ],
)
def test_a_tag_of_personal_data_is_kept_as_the_marker_of_its_kind(tmp_path: Path, tag: str, kept: str) -> None:
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        ep = db.owner("ana").record("debug", "x", outcome="success", tags=[tag, "ops"])
        assert ep.tags == (kept, "ops")


def test_different_people_s_tags_share_a_marker_and_no_number(tmp_path: Path) -> None:
    """Two addresses in one record are one marker (tags are a set); in two records, the same
    marker, which says only that an address was withheld, where "email-1" read as one person."""
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        mem = db.owner("ana")
        both = mem.record("debug", "wrote to both", outcome="success", tags=["bob@example.com", "carol@example.org"])
        other = mem.record("debug", "wrote to dan", outcome="success", tags=["dan@example.net"])
        assert both.tags == other.tags == ("withheld-email",)
        assert not mem.recall(tags=["email-1"]).found and not mem.recall(tags=["email-2"]).found
        assert mem.recall(tags=["withheld-email"]).total == 2  # asked for as such, the marker still filters
        assert mem.get(both.id).tags == ("withheld-email",)


def test_a_lesson_s_tags_are_kept_as_capture_keeps_them(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        entry = db.owner("ana").save_lesson("Call the customer before the invoice run", tags=["bob@example.com", "billing"])
        assert entry.tags == ("withheld-email", "billing")


def test_the_marker_of_a_placeholder_and_of_another_sanitizer_s_mark() -> None:
    assert tag_marker("<EMAIL_3>") == "withheld-email" and tag_marker("<GOV_ID_1>") == "withheld-gov-id"
    assert tag_marker("[REDACTED]") == "withheld"
    assert marked_tag("Project X", "Project X") == "Project X"  # nothing withheld: as given
    assert marked_tag("project x", "Project X") == "project x"  # a sanitizer that folds case withheld nothing
    assert marked_tag("[EMAIL-1]", "bob@example.com") == "withheld"  # a custom mark may carry its own number
    assert marked_tag("<email_1>", "bob@example.com") == "withheld-email"  # a placeholder lower-cased: still its kind
    assert tag_marker("<gov_id_2>") == "withheld-gov-id"


class _LowerCasing:
    """A custom sanitizer that lower-cases memdb's result: it withholds values, as placeholders
    written in lower case ("<email_1>")."""

    def __init__(self) -> None:
        self.inner = memdb.RegexSanitizer()

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        return {k: v.lower() for k, v in self.inner.sanitize(texts).items()}


def test_a_sanitizer_that_lower_cases_keeps_the_markers_of_kinds(tmp_path: Path) -> None:
    """Its placeholders were read as a custom mark, so every tag holding a value was a bare
    "withheld"; read in any case, they keep their kind's marker as memdb's own do. A card found
    only in the normal form stays withheld beside an address found only as given (its kinds read
    case-sensitively, the tag kept "4111-1111-1111-1111-withheld-email")."""
    given = ["bob@example.com", "Customer 4111/1111/1111/1111", "4111_1111_1111_1111", "4111_1111_1111_1111 ana@example.com", "Project X"]
    kept = ("withheld-email", "customer-withheld-card", "withheld-card", "withheld-email-withheld-card", "project-x")
    with memdb.open(tmp_path / "own", clock=lambda: T0) as db:
        assert db.owner("ana").record("debug", "x", outcome="success", tags=given).tags == kept
    with memdb.open(tmp_path / "lower", sanitizer=_LowerCasing(), clock=lambda: T0) as db:
        mem = db.owner("ana")
        assert mem.record("debug", "x", outcome="success", tags=given).tags == kept
        assert mem.recall(tags=["withheld-card"]).total == 1  # the marker filters, as memdb's own does
        holding = [
            name for name in GLOBALS for raw in ("4111", "anaexample", "bobexample") if raw in repr(list(db.globals[name].items(())))
        ]
        assert holding == []


def test_a_bad_tag_of_a_card_number_is_never_echoed(tmp_path: Path) -> None:
    """A tag too long to keep, "4111_1111_1111_1111..." (a card number once its "_" are "-", as
    capture reads it), was echoed whole by every error naming it: by record (as the list given
    too), recall, history, erase and configure."""
    bad = "4111_1111_1111_1111" + "x" * 200
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        mem = db.owner("ana")
        calls = (
            lambda: mem.record("debug", "deploy", outcome="success", tags=[bad], ts=T0),
            lambda: mem.recall(tags=[bad]),
            lambda: mem.history(tags=[bad]),
            lambda: mem.erase(tags=[bad], reason="asked"),
            lambda: db.configure(tag_weights={bad: 1.0}),
        )
        for call in calls:
            with pytest.raises(memdb.errors.MemdbError) as info:
                call()
            assert "<CARD_1>" in str(info.value) and not re.search(r"\d{4}", str(info.value)), str(info.value)
        assert mem.count() == 0


def test_a_tag_holding_a_value_in_each_form_keeps_neither(tmp_path: Path) -> None:
    """A card written with "_" is found only in the tag's normal form, an address only as given:
    "4111_1111_1111_1111 ana@example.com" was kept as "4111-1111-1111-1111-withheld-email", the card
    on disk; now the markers of both, and a filter by the same words finds nothing and says why."""
    both = "4111_1111_1111_1111 ana@example.com"
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "x", outcome="success", tags=[both, "customer 4111_1111_1111_1111", "ops"])
        assert ep.tags == ("withheld-email-withheld-card", "customer-withheld-card", "ops")
        answer = mem.recall(tags=[both])
        assert not answer.found and not re.search(r"\d{4}|anaexample", str(answer.interpretation))
        holding = [name for name in GLOBALS for raw in ("4111", "anaexample") if raw in repr(list(db.globals[name].items(())))]
        assert holding == []


@pytest.mark.parametrize(
    ("tag", "kept"),
    [
        ("customer 4111-1111-1111-1111", "customer-withheld-card"),
        ("vendor 4111-1111-1111-1111", "vendor-withheld-card"),
        ("call +1 415-555-0132 back", "call-withheld-phone-back"),
        ("acct DE89 3704 0044 0532 0130 00 berlin", "acct-withheld-iban-berlin"),
    ],
)
def test_a_value_found_in_both_forms_keeps_the_tag_s_words(tmp_path: Path, tag: str, kept: str) -> None:
    """A dashed card or a phone is found as given and in the normal form alike: the tag keeps its
    other words (revD: the first rule for two forms kept the markers alone, so a customer's and a
    vendor's card tags were one tag, joining their memories)."""
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        assert db.owner("ana").record("debug", "x", outcome="success", tags=[tag]).tags == (kept,)


@pytest.mark.parametrize("tags", ["4111_1111_1111_1111", {"4111_1111_1111_1111": 1}])
def test_tags_that_are_no_list_are_never_echoed_raw(tmp_path: Path, tags: Any) -> None:
    """pydantic's "Input should be a valid list" showed the value sanitized as text only, where a
    card written with "_" is found in a tag's normal form (revD)."""
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        mem = db.owner("ana")
        for call in (
            lambda: mem.record("debug", "x", outcome="success", tags=tags),
            lambda: mem.import_episodes([{"kind": "debug", "summary": "x", "outcome": "success", "tags": tags}], source="test"),
        ):
            with pytest.raises(memdb.errors.ValidationError) as info:
                call()
            assert "tags=" in str(info.value) and not re.search(r"\d{4}", str(info.value)), str(info.value)
        assert mem.count() == 0


@pytest.mark.parametrize("typed", ["<EMAIL_1>", "customer <PHONE_2>"])
def test_a_placeholder_typed_as_a_tag_is_its_kind_marker_and_a_filter_by_it_matches_nothing(tmp_path: Path, typed: str) -> None:
    """A tag given as a placeholder passed the sanitizer unchanged and was kept as "email-1", the
    form the marker rule ended: two unrelated records joined by it, and a filter by "<EMAIL_1>"
    said it left the tag out but searched "email-1" (revS)."""
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        a = mem.record("debug", "first", outcome="success", tags=[typed], ts=T0)
        b = mem.record("debug", "second", outcome="success", tags=["bob@example.com"], ts=T0)
        marker = {"<EMAIL_1>": "withheld-email"}.get(typed, "customer-withheld-phone")
        assert a.tags == (marker,)
        assert b.tags == ("withheld-email",)
        answer = mem.recall(tags=[typed], now=T0)
        assert list(answer) == [] and "personal data or a secret" in answer.note


@pytest.mark.parametrize(("typed", "kept"), [("<step_2>", "step-2"), ("<Table_12>", "table-12"), ("<v_1>", "v-1")])
def test_a_tag_in_angle_brackets_not_in_memdbs_placeholder_shape_is_its_own_text(tmp_path: Path, typed: str, kept: str) -> None:
    """Only memdb's own shape typed as a tag is read as a placeholder: "<step_2>" became
    "withheld-step", joining "<step_1>" and "<step_3>" and found by none of them (revQ)."""
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "first", outcome="success", tags=[typed], ts=T0)
        assert ep.tags == (kept,)
        assert [m.id for m in mem.recall(tags=[typed], now=T0)] == [ep.id]
