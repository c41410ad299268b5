"""The sanitizer's shortcuts for speed change no output: the memo of short texts found clean, and
the scans by character class that stand for regexes (memdb/memory/sanitize/detect.py)."""

from __future__ import annotations

import re
import threading

from hypothesis import given
from hypothesis import strategies as st

import memdb.memory.sanitize.detect as detect
from memdb.memory.sanitize import RegexSanitizer, register_secrets, unregister_secrets

# what clusters and numbers are made of, and what parts them, in any script
_CHARS = st.sampled_from([*"0123456789AZQaz (+).-/:_@#", "\u00e9", "\u0663", "\uff14", "\u4e2d", "\U0001d7ce", "\n", "\t", "+1 ", "PRJ-"])
texts = st.lists(_CHARS, max_size=60).map("".join) | st.text(max_size=60)


@given(texts)
def test_the_cluster_scan_is_the_cluster_regex(text: str) -> None:
    p = detect._Pass(text)
    assert p.clusters == [(m.start(), m.end(), m.group()) for m in detect._CLUSTER.finditer(p.text)]


@given(texts)
def test_the_number_scan_finds_every_run_of_digits(text: str) -> None:
    p = detect._Pass(text)
    found = [m.span() for m in detect._DIGITS_BYTES.finditer(p.ascii.translate(detect._DIGIT_CLASSES))]
    assert found == [m.span() for m in re.finditer("[0-9]+", p.text)]


@given(st.lists(texts, min_size=1, max_size=4))
def test_a_text_read_from_the_memo_reads_as_a_fresh_sanitizer_reads_it(parts: list[str]) -> None:
    warm = RegexSanitizer()
    fields = {f"f{i}": part for i, part in enumerate(parts)}
    first = warm.scan(fields)
    assert warm.scan(fields) == first == RegexSanitizer().scan(fields)


def test_a_repeated_session_is_read_once() -> None:
    """A session's name (and its spaced form) repeats in every capture of the session: the
    detectors read it the first time only."""
    sanitizer = RegexSanitizer()
    seen: list[str] = []

    def counting(p: detect._Pass) -> None:
        seen.append(p.source)

    sanitizer._detectors = sanitizer._unclustered = (counting, *sanitizer._detectors)
    for _ in range(3):
        assert sanitizer.sanitize({"@session": "conv_000123", "summary": "Ran 3 tests."}) == {
            "@session": "conv_000123",
            "summary": "Ran 3 tests.",
        }
    assert seen == ["conv_000123", "Ran 3 tests."]


def test_a_secret_registered_later_is_found_in_a_text_the_memo_holds() -> None:
    sanitizer = RegexSanitizer()
    text = "deploy with Zq81kfPw3xTt"
    assert sanitizer.sanitize({"summary": text}) == {"summary": text}
    register_secrets(["Zq81kfPw3xTt"])
    try:
        assert sanitizer.sanitize({"summary": text}) == {"summary": "deploy with <SECRET_1>"}
    finally:
        unregister_secrets(["Zq81kfPw3xTt"])
    assert sanitizer.sanitize({"summary": text}) == {"summary": text}


def test_a_labelled_value_is_not_taken_from_the_memo() -> None:
    """The memo holds what the text alone reads as: under a label key the same digits are a value."""
    sanitizer = RegexSanitizer()
    assert sanitizer.sanitize({"summary": "4821"}) == {"summary": "4821"}
    assert sanitizer.sanitize({"decisions.0~label:SECRET": "4821"}) == {"decisions.0~label:SECRET": "<SECRET_1>"}


@given(texts)
def test_the_numbers_a_label_may_reach_are_those_after_what_parts_a_label(text: str) -> None:
    """``_detect_labeled`` reads only the numbers after a character not in ``_NO_LABEL_BEFORE``."""
    p = detect._Pass(text)
    found = [m.start() + 1 for m in detect._LABEL_REACH_BYTES.finditer(p.ascii.translate(detect._LABEL_REACH_CLASSES))]
    expected = [m.start() for m in re.finditer("[0-9]+", p.text) if p.text[m.start() - 1 : m.start()] not in detect._NO_LABEL_BEFORE]
    assert [start for start in found if p.text[start - 1] not in detect._NO_LABEL_BEFORE] == expected


def test_a_field_that_held_another_field_s_secret_is_not_remembered() -> None:
    """A summary read clean alone held the value of a password key, replaced after its first read:
    the memo kept the raw summary, the secret in process memory (revU)."""
    from memdb.memory.sanitize.fields import flatten_texts

    sanitizer = RegexSanitizer()
    flat, rebuild = flatten_texts({"summary": "retry with xkcd936q!", "decisions": {"password": "xkcd936q!"}}, "episode")
    assert rebuild(detect.sanitize_fields(sanitizer, flat))["summary"] == "retry with <SECRET_1>"
    assert not [t for t in sanitizer._memo[1] if "xkcd936q" in t]


def test_a_capture_under_secrets_since_changed_remembers_nothing_for_later_ones() -> None:
    """A capture that read the registry before a secret was registered, and ended after another
    capture renewed the memo, added its raw text to the new memo: every later capture of it skipped
    the secret (revU). Its text goes to the memo it began with, discarded by then."""
    secret = "Zq81kfPw3xTt"
    text = f"deploy with {secret}"
    sanitizer = RegexSanitizer()
    read = detect._read
    paused, go = threading.Event(), threading.Event()

    def held(t: str) -> tuple[str, ...]:  # holds the capture between its start and its end
        if t == text and threading.current_thread().name == "capture":
            paused.set()
            go.wait(10)
        return read(t)

    out: list[dict[str, str]] = []
    detect._read = held  # type: ignore[assignment]
    try:
        capture = threading.Thread(target=lambda: out.append(sanitizer.sanitize({"summary": text})), name="capture")
        capture.start()
        assert paused.wait(10)
        register_secrets([secret])
        assert sanitizer.sanitize({"summary": "hello"}) == {"summary": "hello"}  # renews the memo under the new secrets
        go.set()
        capture.join(10)
    finally:
        detect._read = read
    try:
        assert out == [{"summary": text}]  # it began before the secret was known
        assert sanitizer.sanitize({"summary": text}) == {"summary": "deploy with <SECRET_1>"}
    finally:
        unregister_secrets([secret])
