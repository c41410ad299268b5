"""No digits, address or key of a withheld value stay in a stored tag, however the tag writes and
joins its values: capture reads a tag as given and in its normal form, and each form can miss a
value the other finds (a probe found "4111-1111-1111-1111.4111_1111_1111_1111" kept the card
written with "_"). A tag list is a list of tags, never a header and its value."""

from __future__ import annotations

import datetime as dt
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memdb
from memdb.errors import ValidationError
from memdb.memory.layout import GLOBALS
from memdb.memory.sanitize import RegexSanitizer
from memdb.memory.sanitize.fields import tags_as_stored
from memdb.memory.text import normalize_tag

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
KEY = "sk-ant-api03-" + "Qm7TzW2kLp9XvB4nR8sYc3Hd6Jf1Gq5Ua0Ee"
_SANITIZER = RegexSanitizer()


def stored(tag: str) -> str:
    """``tag`` as capture stores it (``Episodes.stored_tags``)."""
    return normalize_tag(tags_as_stored(_SANITIZER.sanitize, [tag]).stored[0])


def held(name: str, db: memdb.Database, raws: list[str]) -> list[str]:
    """The raw values some global of ``db`` holds in a key or a value (in any case: a tag is lower-cased)."""
    text = repr(list(db.globals[name].items(()))).lower()
    return [raw for raw in raws if raw.lower() in text or (raw.isdigit() and raw in re.sub(r"[^0-9]", "", text))]


@pytest.mark.parametrize(
    ("tag", "kept", "raws"),
    [
        ("4111-1111-1111-1111.4111_1111_1111_1111", "withheld-card-withheld-card", ["4111111111111111"]),
        ("..415.555.0100_ -123-45-6789-", "withheld-phone-withheld-ssn", ["4155550100", "123456789"]),
        ("customer 4111-1111-1111-1111 4111_1111_1111_1111", "customer-withheld-card-withheld-card", ["4111111111111111"]),
    ],
)
def test_no_digits_of_a_withheld_value_stay_in_a_tag(tmp_path: Path, tag: str, kept: str, raws: list[str]) -> None:
    """The card was found once in each form and counted as one value, so the form keeping the card
    written with "_" stayed; the phone glued to "_" as given and joined to the SSN in the normal
    form is found with its separators read as spaces."""
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        mem = db.owner("ana")
        ep = mem.record("debug", "x", outcome="success", tags=[tag, "ops"])
        assert ep.tags == (kept, "ops")
        assert mem.recall(tags=[kept]).total == 1
        assert [name for name in GLOBALS if held(name, db, raws)] == []


@pytest.mark.parametrize(
    ("tags", "kept"),
    [
        (["api-key", "billing"], ("api-key", "billing")),
        (["withheld-secret", "deploy"], ("withheld-secret", "deploy")),
        (["DB_PASSWORD", "prod"], ("db-password", "prod")),
        (["--password", "deploy"], ("password", "deploy")),  # no argv either
        (["api-key", KEY], ("api-key", "withheld-secret")),  # a secret is withheld as itself
        ([KEY, "billing"], ("withheld-secret", "billing")),
    ],
)
def test_a_tag_naming_a_secret_hides_no_other_tag(tmp_path: Path, tags: list[str], kept: tuple[str, ...]) -> None:
    """Two tags were read as a header and its value, as ["X-Api-Key", "..."] in a tool's data: the
    second was "withheld-secret" (or, after "withheld-secret", dropped as a repeat)."""
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        mem = db.owner("ana")
        assert mem.record("debug", "x", outcome="success", tags=tags).tags == kept
        assert [name for name in GLOBALS if held(name, db, [KEY[13:]])] == []


def _luhn(body: str) -> str:
    """``body`` and the digit that makes it pass Luhn's check."""
    total = 0
    for i, c in enumerate(reversed(body)):
        d = int(c) * (2 if i % 2 == 0 else 1)
        total += d - 9 if d > 9 else d
    return body + str(-total % 10)


_SEP = st.sampled_from([" ", "-", ".", "/", "_"])
_CARDS = st.builds(
    lambda head, rest: _luhn((head + rest)[:15]), st.sampled_from(["4", "51", "55"]), st.text("0123456789", min_size=14, max_size=14)
)
_PHONES = st.builds(lambda a, b, c: f"{a}{b}{c:04d}", st.sampled_from(["415", "212", "646"]), st.integers(200, 999), st.integers(0, 9999))
_SSNS = st.builds(lambda a, b, c: f"{a:03d}{b:02d}{c:04d}", st.integers(1, 665), st.integers(1, 99), st.integers(1, 9999))
_GROUPS = {16: (4, 4, 4, 4), 10: (3, 3, 4), 9: (3, 2, 4)}


@st.composite
def _numbers(draw: st.DrawFn) -> tuple[str, str]:
    """A card, a phone or an SSN-like id, as written (groups parted by one separator) and its digits."""
    digits = draw(st.one_of(_CARDS, _PHONES, _SSNS))
    sep = draw(_SEP)
    parts, at = [], 0
    for size in _GROUPS[len(digits)]:
        parts.append(digits[at : at + size])
        at += size
    return sep.join(parts), digits


_EMAILS = st.builds(lambda u, d: f"{u}@{d}.com", st.sampled_from(["ana", "bob.k", "c_lee"]), st.sampled_from(["example", "mail-host"]))
_KEYS = st.sampled_from([KEY, "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4", "AKIAZ3MQX7TQ4BVN2WLP"])
_PIECES = st.one_of(_numbers(), st.builds(lambda t: (t, t), st.one_of(_EMAILS, _KEYS)))
_GLUE = st.sampled_from([" ", ".", "/", "_", " customer ", "_ref_", ". ", " -", "..", "_ ", "-x-", "-"])


def _runs_of(value: str, tag: str) -> list[str]:
    """The runs of seven digits of ``value`` that ``tag`` holds, separators aside."""
    numbers = [re.sub(r"[^0-9]", "", m.group()) for m in re.finditer(r"[0-9](?:[^A-Za-z0-9]*[0-9])*", tag)]
    return [value[i : i + 7] for i in range(len(value) - 6) if any(value[i : i + 7] in n for n in numbers)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECES, min_size=1, max_size=3), st.lists(_GLUE, min_size=4, max_size=4))
def test_a_tag_of_values_keeps_none_of_them(pieces: list[tuple[str, str]], glue: list[str]) -> None:
    tag = (glue[0] + "".join(written + g for (written, _), g in zip(pieces, glue[1:], strict=False))).strip(" ._-/")
    try:
        kept = stored(tag)
    except ValidationError as error:  # too long once its values are markers: refused, named sanitized
        kept = str(error)
    # a value is withheld if it is alone and beside the others in text ("415/200/0000" is no phone,
    # "010 01 1000 001 01 0001" no two SSNs: a run of numbers, in text too)
    spaced = _SANITIZER.sanitize({"t": " ".join(written for written, _ in pieces)})["t"]
    for written, value in pieces:
        if value.isdigit() and not _runs_of(value, stored(written)) and not _runs_of(value, spaced):
            assert not _runs_of(value, kept), (tag, kept)
        else:
            assert normalize_tag(value) not in kept and value.lower() not in kept, (tag, kept)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(_PIECES, min_size=1, max_size=3), st.lists(_GLUE, min_size=4, max_size=4))
def test_values_glued_into_a_tag_and_a_participant_never_reach_disk(tmp_path: Path, pieces: list[tuple[str, str]], glue: list[str]) -> None:
    """What a tag withholds by the rule above, a participant holding the same text withholds too,
    and neither reaches any global, in a key or a value."""
    item = (glue[0] + "".join(written + g for (written, _), g in zip(pieces, glue[1:], strict=False))).strip(" ._-/")
    spaced = _SANITIZER.sanitize({"t": " ".join(written for written, _ in pieces)})["t"]
    withheld = [v for w, v in pieces if not v.isdigit() or (_runs_of(v, stored(w)) == [] and _runs_of(v, spaced) == [])]
    with tempfile.TemporaryDirectory(dir=tmp_path) as where, memdb.open(Path(where) / "m", clock=lambda: T0) as db:
        try:
            db.owner("ana").record("debug", "x", outcome="success", tags=[item, "ops"], participants=["bob", item])
        except ValidationError:  # a tag too long once its values are markers: nothing is written
            pass
        assert [name for name in GLOBALS if held(name, db, withheld)] == [], item
