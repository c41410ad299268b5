"""The label reach rule (``_held_after_labels``) in one pass (revP): each item scanned back to the
list's start for the labels reaching it, and each item kept compared its form with every one before
it, so a label and 2,000 tags took 13 s to sanitize and 4,000 participants 54 s, before the model
refused the list for its length. The rule reads each item once now, with the same output as the
scan back (kept below as the reference), and capture refuses a list longer than the model allows
before the sanitizer reads it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_participant_secrets import PARTICIPANT_LABELS
from test_tag_secret_values import LABELS

import memdb
from memdb.errors import ValidationError
from memdb.memory.models import EpisodeInput
from memdb.memory.sanitize import PLACEHOLDER, RegexSanitizer
from memdb.memory.sanitize.fields import _LABEL_REACH, _LIST_RULES, _SECRET_MARKER, _held_after_labels, _ListRule

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
RULES = {"tags": _LIST_RULES[("tags",)], "participants": _LIST_RULES[("participants",)]}


def held_by_scanning_back(items: Sequence[Any], rule: _ListRule) -> set[int]:
    """The rule as it was written before revP (883306c), quadratic: the reference."""
    held: set[int] = set()
    forms: dict[int, str] = {}

    def form(j: int) -> str:
        if j not in forms:
            forms[j] = rule.form(items[j]) if isinstance(items[j], str) else repr(items[j])
        return forms[j]

    def ends_a_reach(j: int) -> bool:
        if j in held or (isinstance(items[j], str) and PLACEHOLDER.fullmatch(items[j])) or form(j) == _SECRET_MARKER:
            return False
        return all(form(k) != form(j) for k in range(j))

    for i in range(1, len(items)):
        item = items[i]
        if isinstance(item, str) and rule.plain(item):
            continue
        afters, kept = [], 0
        for j in range(i - 1, -1, -1):
            if isinstance(items[j], str) and (after := rule.after(items[j])) is not None:
                afters.append(after)
            kept += ends_a_reach(j)
            if kept >= _LABEL_REACH:
                break
        if afters and not (isinstance(item, str) and all(after(item) for after in afters)):
            held.add(i)
    return held


_ORDINARY = ["deploy", "reset", "Reset", "RESET", "prod", "ops", "k8s", "v2", "bob", "Bob", "Alice", "Jean-Luc Picard", "gpt-4o"]
_WITHHELD = ["withheld-secret", "Withheld-Secret", "withheld-email", "<EMAIL_1>", "<SECRET_1>", "<SECRET_2>", "<email_1>"]
_SECRETS = ["hunter2", "Zk3qP9xL2m", "4821", "zkqpxlmnvb", "bob@example.com", "219-09-9999", "P@ss", "pass word", "password 2"]
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_ITEM = st.one_of(
    st.sampled_from(sorted({*LABELS, *PARTICIPANT_LABELS, "auth", "cookie", "Token", "pin:"})),
    st.sampled_from(_ORDINARY),
    st.sampled_from(_WITHHELD),
    st.sampled_from(_SECRETS),
    st.text(_ALNUM, min_size=1, max_size=12),
    st.sampled_from([4821, None, 2.5, ["x"]]),  # no str: refused later, read by its repr here
)


@st.composite
def _lists(draw: st.DrawFn) -> list[Any]:
    """Lists of labels, ordinary items, secrets and withheld values, with repeats of earlier items."""
    items: list[Any] = []
    for _ in range(draw(st.integers(0, 24))):
        items.append(draw(st.sampled_from(items)) if items and draw(st.integers(0, 3)) == 0 else draw(_ITEM))
    return items


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=_lists(), people=st.booleans())
def test_one_pass_holds_what_scanning_back_held(items: list[Any], people: bool) -> None:
    rule = RULES["participants" if people else "tags"]
    assert _held_after_labels(items, rule) == held_by_scanning_back(items, rule), items


@pytest.mark.parametrize(
    "items",
    [
        ["password", "bob", "hunter2"],
        ["password", "reset", "k8s"],
        ["pin", "visa", "prod", "ops", "4821"],  # three kept: the reach ends
        ["password", "bob@example.com", "hunter2", "ops", "reset", "zkqpxlmnvb"],
        ["password", "withheld-secret", "hunter2", "reset", "reset", "reset", "Zk3qP9xL2m"],  # a repeat ends none
        ["api-key", "<SECRET_1>", "prod", "api-key", "prod", "v2"],
        ["bob", "token", "gpt-4o", "Token:", "gpt-4o", "Alice", "4821", 4821],
    ],
)
def test_one_pass_holds_what_scanning_back_held_in_the_known_cases(items: list[Any]) -> None:
    for rule in RULES.values():
        assert _held_after_labels(items, rule) == held_by_scanning_back(items, rule)


class _Counted:
    """A list rule whose every call is counted, the checks its labels name included (each check
    the same object for the same label, as the rule's own are)."""

    def __init__(self, rule: _ListRule) -> None:
        self.calls = 0
        self.checks: dict[Callable[[str], bool], Callable[[str], bool]] = {}
        self.rule = _ListRule(self._count(rule.plain), self._after(rule.after), self._count(rule.form))

    def _count(self, f: Callable[[str], Any]) -> Callable[[str], Any]:
        def counted(item: str) -> Any:
            self.calls += 1
            return f(item)

        return counted

    def _after(self, after: Callable[[str], Callable[[str], bool] | None]) -> Callable[[str], Callable[[str], bool] | None]:
        def counted(label: str) -> Callable[[str], bool] | None:
            self.calls += 1
            check = after(label)
            if check is None:
                return None
            return self.checks.setdefault(check, self._count(check))

        return counted


@pytest.mark.parametrize("field", ["tags", "participants"])
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda n: ["password"] + [f"x{i}y" for i in range(n)], id="a-label-then-values-it-holds"),
        pytest.param(lambda n: [f"u{i}" for i in range(n)], id="no-label"),
        pytest.param(lambda n: [item for i in range(n // 2) for item in ("password", f"x{i}y")], id="labels-repeated"),
        pytest.param(lambda n: ["password"] + ["withheld-secret", "<SECRET_1>"] * (n // 2), id="nothing-ends-the-reach"),
    ],
)
def test_the_rule_reads_each_item_a_bounded_number_of_times(field: str, make: Callable[[int], list[str]]) -> None:
    """A linear bound on the rule's calls: scanning back made ~n²/2 for 2,000 items."""
    for n in (200, 2000):
        items = make(n)
        counted = _Counted(RULES[field])
        held = _held_after_labels(items, counted.rule)
        assert counted.calls <= 6 * len(items), (n, counted.calls)
        if n == 200:
            assert held == held_by_scanning_back(items, RULES[field])


class _CountingSanitizer:
    """The built-in sanitizer, counting the calls that reach it."""

    def __init__(self) -> None:
        self.calls = 0
        self._inner = RegexSanitizer()

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        self.calls += 1
        return self._inner.sanitize(texts)


def _cap(field: str) -> int:
    """The model's own cap, the one source of the number."""
    return next(m.max_length for m in EpisodeInput.model_fields[field].metadata if getattr(m, "max_length", None) is not None)


@pytest.mark.parametrize("field", ["tags", "participants"])
def test_a_list_longer_than_the_model_allows_is_refused_before_it_is_sanitized(tmp_path: Path, field: str) -> None:
    sanitizer = _CountingSanitizer()
    with memdb.open(tmp_path / "m", sanitizer=sanitizer, clock=lambda: T0) as db:
        mem = db.owner("ana")
        many = ["password"] + [f"hunter{i}x" for i in range(9_999)]
        with pytest.raises(ValidationError, match=rf"^episode: {field}: 10000 given, more than the {_cap(field)} an episode holds") as err:
            mem.record("debug", "x", outcome="success", **{field: many})
        assert "hunter" not in str(err.value) and "password" not in str(err.value)
        with pytest.raises(ValidationError, match=rf"^import item 0: {field}: 10000 given"):
            mem.import_episodes([{"kind": "debug", "summary": "x", "outcome": "success", field: tuple(many)}], source="t")
        with pytest.raises(ValidationError, match=rf"^episode: {field}: {_cap(field) + 1} given"):
            mem.record("debug", "x", outcome="success", **{field: [f"t{i}" for i in range(_cap(field) + 1)]})
        assert sanitizer.calls == 0 and mem.count() == 0
        ep = mem.record("debug", "x", outcome="success", **{field: [f"t{i}" for i in range(_cap(field))]})
        assert len(getattr(ep, field)) == _cap(field)
