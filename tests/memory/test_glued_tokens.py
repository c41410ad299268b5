"""A vendor token glued to a name by "_" or "-" ("x_sk-ant-...", "AWS-AKIA...") is a secret as one
after "=" or a quote is: the test for "not inside a word" read those as letters and kept it raw in
text, tags and error messages. A prefix after a letter or digit stays part of its word, and so do
kebab-case names after "_" or "-" that a prefix begins ("locale-sk-slovakia-...", "cache-key-<md5>").
An IPv4 address glued by "_" is an address too."""

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
    "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t",
    "sk-" + "T3BlbkFJ" + "aB3dE6gH9jK2mN5pQ8sT1v",  # one random body, mixed case and digits
    "sk-" + "0123456789abcdef" * 2,
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


@pytest.mark.parametrize(
    "text",
    [
        "see i18n/locale-sk-slovakia-release-2024.json for strings",
        "file messages-sk-translations-v2-final.po was updated",
        "css class btn-sk-2col-layout-responsive-wide applied",
        "x-sk-abcdefghijklmnopqrstuvw",  # one case, no digit: a word
        "redis_key-0123456789abcdef0123456789abcdef expired",
        "cache-key-9e107d9d372bb6826bd81d3542a419d6 missing",
        "bucket logs-s.0123abcd4567ef890123abcd rotated",
    ],
)
def test_a_kebab_case_name_a_prefix_begins_stays(text: str) -> None:
    """A glued "sk-" needs a vendor's shape, not words run on; "key-" and "s." a body no hex id has."""
    assert clean(text) == text


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("mailgun_key-3ax6xnjp29jd6fds4gc373sgvjxteol0", "mailgun_"),
        ("prod-key-0123456789abcdefghijklmnopqrstuv", "prod-"),
        ("vault_s.Ab3dEfGhIjKlMnOpQrStUvWx", "vault_"),
        ("logs-s.ABCdef123456ghiJKL789mno", "logs-"),
    ],
)
def test_a_glued_key_or_vault_token_with_a_random_body_is_a_secret(text: str, name: str) -> None:
    """revH: glued by "_" or "-", a Mailgun "key-" or a Vault "s." token was kept as a name's part."""
    assert clean(f"set {text} now") == f"set {name}<SECRET_1> now"


@pytest.mark.parametrize("text", ["10.20.30.40_", "host_10.20.30.40", "host-10.20.30.40_prod", "203.0.113.9_"])
def test_an_address_glued_by_an_underscore_is_withheld(tmp_path: Path, text: str) -> None:
    address = text.strip("_").removeprefix("host_").removeprefix("host-").removesuffix("_prod")
    assert clean(f"seen at {text} today") == f"seen at {text.replace(address, '<IP_1>')} today"
    with memdb.open(tmp_path / "m", clock=lambda: T0) as db:
        ep = db.owner("ana").record("debug", "x", outcome="success", tags=[text])
        assert "withheld-ip" in ep.tags[0] and address.split(".")[1] not in ep.tags[0]


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
