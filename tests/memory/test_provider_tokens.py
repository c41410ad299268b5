"""Provider credentials a privacy probe found stored in clear: each shape (after detect-secrets'
plugins and gitleaks' rules, named in detect.py) is replaced, and a near miss of it is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

import memdb
import memdb.memory.sanitize.detect as detect
from memdb.memory.sanitize import RegexSanitizer

S = RegexSanitizer()


def clean(text: str) -> str:
    return S.sanitize({"t": text})["t"]


# (name, a well-formed credential, what of it stays readable, a near miss that is no credential)
SHAPES = [
    (
        "sendgrid",
        "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",
        "",
        "SG.short.parts",
    ),
    ("mailchimp", "0123456789abcdef0123456789abcdef-us12", "", "0123456789abcdef0123456789abcdef-usa"),
    ("mailgun", "key-3ax6xnjp29jd6fds4gc373sgvjxteol0", "", "key-d41d8cd98f00b204e9800998ecf8427e"),  # an MD5 after "key-"
    ("square oauth secret", "sq0csp-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefg", "", "sq0csp-short"),
    ("square access token", "sq0atp-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7O", "", "sq0atp-tooShort1"),
    ("square EAAA token", "EAAA" + "lB3fX9kQ2mN7pR4sT8vW1yZ5aC6dE0gH3jK7mP2qS9uV4xY8zB1cD5fG6hJ0kL3n", "", "EAAA" + "a" * 60),
    ("google oauth client secret", "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", "", "GOCSPX-short"),
    ("vault service token", "hvs.CAESIJlU8z8Jk8k3lQv0f3GxYz1aBcDeFgHiJkLmNoPqRsTuVwXyZ", "", "hvs.short"),
    ("vault legacy token", "s.Bhk2Jx9Qw7LmN4pR8tV1yZ3c", "", "s.getAttributeNamesListXyz"),  # a method name: no digit
    (
        "digitalocean",
        "dop_v1_4c9f3b8e2a1d7f6e5c4b3a2918171615141312111009080706050403020100ab",
        "",
        "dop_v1_" + "4c9f3b8e" * 4,  # 32 hex digits: too short
    ),
    ("shopify access token", "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", "", "shpat_1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c"),
    ("shopify shared secret", "shpss_" + "ab12" * 8, "", "shpss_" + "gh12" * 8),  # not hex
    ("telegram bot token", "1234567890:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "", "12:30:AAH is a note"),
    (
        "discord webhook",
        "https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOpQrStUvWx",
        "https://discord.com/api/webhooks/",
        "https://discord.com/api/webhooks/docs",
    ),
    (
        "age secret key",
        "AGE-SECRET-KEY-1QQPQZRSXYZ8N2J5K7L9M3P4Q6R8S0T2U4V6W8X0Y2Z4A6B8C0D2E4F6",
        "",
        "AGE-SECRET-KEY-1",
    ),
    (
        "putty private key",
        "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nPrivate-Lines: 14\nAAAAB3NzaC1yc2EAAAABJQ\nPrivate-MAC: 8f3a2b",
        "",
        "PuTTY-User-Key-File format docs",
    ),
]


@pytest.mark.parametrize(("name", "token", "kept", "near"), SHAPES, ids=[s[0] for s in SHAPES])
def test_a_provider_credential_is_a_secret(name: str, token: str, kept: str, near: str) -> None:
    assert clean(f"used {token} for the deploy") == f"used {kept}<SECRET_1> for the deploy"


@pytest.mark.parametrize(("name", "token", "kept", "near"), SHAPES, ids=[s[0] for s in SHAPES])
def test_a_near_miss_of_a_provider_credential_stays(name: str, token: str, kept: str, near: str) -> None:
    assert clean(f"see {near} here") == f"see {near} here"


def test_a_putty_key_cut_short_is_replaced_to_the_end() -> None:
    assert clean("key: PuTTY-User-Key-File-3: ssh-ed25519 Private-Lines: 1 AAAAC3Nza") == "key: <SECRET_1>"


@pytest.mark.parametrize("token", [t for _, t, *_ in SHAPES])
def test_every_new_shape_is_behind_the_hints(token: str) -> None:
    """The prefilters name each shape by a literal: a shape they miss would never be looked for."""
    assert detect._MAYBE_PII.search(token) is not None
    assert detect._TOKEN_HINT.search(token) is not None


@pytest.mark.parametrize("text", ["x" + "SG." * 5000, "s." * 8000, ":AA" * 5000, "-us1" * 5000, "PuTTY-User-Key-File-2:" * 2000])
def test_new_shapes_stay_linear_on_repetitive_input(text: str) -> None:
    clean(text)  # seconds if quadratic; the suite's time shows it


def test_provider_credentials_never_reach_disk(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        for _, token, _, _ in SHAPES:
            mem.record("debug", "deploy", outcome="success", content=f"used {token} for the deploy")
    raw = b"".join(p.read_bytes() for p in (tmp_path / "db").rglob("*") if p.is_file())
    secrets = [t.rsplit("/", 1)[-1] if "webhooks" in t else t.splitlines()[-1] if "PuTTY" in t else t for _, t, _, _ in SHAPES]
    assert [s for s in secrets if s.encode() in raw] == []
