"""A vendor token glued to a name by "_" or "-" ("x_sk-ant-...", "AWS-AKIA...") is a secret as one
after "=" or a quote is: the test for "not inside a word" read those as letters and kept it raw in
text, tags and error messages. A prefix after a letter or digit stays part of its word."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import memdb
from memdb.memory.layout import GLOBALS
from memdb.memory.sanitize import RegexSanitizer

T0 = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
S = RegexSanitizer()
TOKENS = [
    "sk-ant-api03-abcdefghijklmnopqrstuv",  # short, words only: no random-token reading takes it
    "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1v",
    "AKIAZ3MQX7TQ4BVN2WLP",
    "xoxb-1234567890-abcdefghij",
    "glpat-abcdefghij0123456789",
    "sk_live_" + "a1" * 12,
    "AC" + "0123456789abcdef" * 2,  # Twilio
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dBjftJeZ4CVPmB92K27uhbUJU1p1rwW1gFWFOEjXk",
]


def clean(text: str) -> str:
    return S.sanitize({"t": text})["t"]


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize("glue", ["x_", "MY_KEY_", "x-", "--", "=", "'"])
def test_a_token_glued_by_a_separator_is_a_secret(token: str, glue: str) -> None:
    assert clean(f"used {glue}{token} here") == f"used {glue}<SECRET_1> here"


@pytest.mark.parametrize(
    "text",
    [
        "the task-abcdefghijklmnopqrstuvwxyz list",  # "sk-" ends "task"
        "see disk_live_abcdefghijklmnopqrstuvwx",
        "MAC" + "0123456789abcdef" * 2,
        "-eyJ" * 5000,  # each start fails at the next: linear, not quadratic
        "_AKIA" * 5000,
    ],
)
def test_a_prefix_inside_a_word_stays(text: str) -> None:
    assert clean(text) == text


def test_a_glued_token_never_reaches_disk_nor_a_message(tmp_path: Path) -> None:
    token = TOKENS[0]
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        mem = db.owner("ana")
        ep = mem.record("debug", f"deploy with x_{token}", outcome="success", tags=[f"x_{token}", "ops"])
        assert ep.summary == "deploy with x_<SECRET_1>" and ep.tags == ("x-withheld-secret", "ops")
        with pytest.raises(memdb.errors.ValidationError) as info:
            mem.record("debug", "x", outcome="success", tags=[f"x_{token} " + "y" * 80])
        assert token[3:] not in str(info.value) and "withheld-secret" in str(info.value), str(info.value)
        assert [name for name in GLOBALS if token[3:] in repr(list(db.globals[name].items(())))] == []
