"""Names of secrets a privacy probe found missed: "password" in other languages, and the
``<NAME>_KEY`` variables of providers and signing schemes; in text labels and in decisions keys."""

from __future__ import annotations

from pathlib import Path

import pytest

import memdb
from memdb.memory.sanitize import RegexSanitizer, is_secret_key, sanitize_fields
from memdb.memory.sanitize.fields import flatten_texts

S = RegexSanitizer()


def clean(text: str) -> str:
    return S.sanitize({"t": text})["t"]


def decisions(raw: dict[str, object]) -> object:
    flat, rebuild = flatten_texts({"decisions": raw})
    return rebuild(sanitize_fields(S, flat))["decisions"]


FOREIGN_PASSWORD_LABELS = [
    "Passwort: Hunter2Pass",
    "Kennwort=Hunter2Pass",
    "DB-Passwort: Hunter2Pass",
    "contraseña: Hunter2Pass",
    "contrasena=Hunter2Pass",
    "mot de passe : Hunter2Pass",
    "mot_de_passe=Hunter2Pass",
    "senha=Hunter2Pass",
    "palavra-passe: Hunter2Pass",
    "пароль: Hunter2Pass",
    "ПАРОЛЬ: Hunter2Pass",
    "密码：Hunter2Pass",  # a full-width colon, as Chinese input writes it
    "我的密码: Hunter2Pass",
    "パスワード: Hunter2Pass",
    "비밀번호: Hunter2Pass",
    "wachtwoord: Hunter2Pass",
    "lösenord: Hunter2Pass",
    "hasło: Hunter2Pass",
    "HASŁO: Hunter2Pass",
    "parola: Hunter2Pass",
    "heslo: Hunter2Pass",
    "salasana: Hunter2Pass",
    "şifre: Hunter2Pass",
]


@pytest.mark.parametrize("text", FOREIGN_PASSWORD_LABELS)
def test_a_password_labelled_in_another_language_is_a_secret(text: str) -> None:
    out = clean(text)
    assert "Hunter2Pass" not in out and out.endswith("<SECRET_1>")
    assert out[: -len("<SECRET_1>")] == text[: -len("Hunter2Pass")]  # the label stays


@pytest.mark.parametrize(
    "key", ["Passwort", "kennwort", "contraseña", "contrasen\u0303a", "mot_de_passe", "senha", "пароль", "密码", "パスワード", "hasło"]
)
def test_a_password_keyed_in_another_language_is_a_secret(key: str) -> None:
    assert is_secret_key(key)
    assert decisions({key: "Hunter2Pass", "n": "kept"}) == {key: "<SECRET_1>", "n": "kept"}


@pytest.mark.parametrize(
    "key",
    [
        "OPENAI_KEY", "ANTHROPIC_KEY", "STRIPE_KEY", "SENDGRID_KEY", "JWT_KEY", "HMAC_KEY", "FERNET_KEY", "APP_KEY",
        "LICENSE_KEY", "CLIENT_KEY", "ACME_KEY", "MY_SERVICE_KEY", "openai_key", "stripe-key", "X-Stripe-Key", "stripeKey",
        "myStripeKey", "jwtKey", "appKey", "session_key",
    ],
)  # fmt: skip
def test_named_keys(key: str) -> None:
    """A provider's or a scheme's key in any case, and any upper-case NAME_KEY variable."""
    assert is_secret_key(key)
    assert clean(f"{key}=Zq9vLm2Xw8Rt") == f"{key}=<SECRET_1>"
    assert decisions({"env": {key: "Zq9vLm2Xw8Rt"}}) == {"env": {key: "<SECRET_1>"}}


@pytest.mark.parametrize(
    "key",
    [
        "primary_key", "PRIMARY_KEY", "sort_key", "SORT_KEY", "cache_key", "CACHE_KEY", "partition_key", "foreign_key",
        "idempotency_key", "IDEMPOTENCY_KEY", "s3_key", "S3_OBJECT_KEY", "object_key", "PUBLIC_KEY", "VAPID_PUBLIC_KEY",
        "STRIPE_PUBLISHABLE_KEY", "RECAPTCHA_SITE_KEY", "hotkey", "monkey", "hockey", "keyboard", "key", "KEY", "turkey",
        "primaryKey", "sortKey",
    ],
)  # fmt: skip
def test_keys_of_data_stay_ordinary(key: str) -> None:
    """A dict field naming a key of data (primary_key: the id column) keeps its value: in lower or
    mixed case only a known provider or scheme makes a NAME_KEY secret, and in capitals a word of
    data (PRIMARY, SORT, CACHE, PUBLIC...) keeps it ordinary."""
    assert not is_secret_key(key)
    assert clean(f"{key}: user_id") == f"{key}: user_id"
    assert decisions({key: "user_id"}) == {key: "user_id"}


def test_foreign_password_words_are_no_secret_inside_other_words() -> None:
    assert clean("Passwortlänge: 12") == "Passwortlänge: 12"
    assert not is_secret_key("senha_hint") and not is_secret_key("password_hint")


def test_foreign_passwords_and_named_keys_never_reach_disk(tmp_path: Path) -> None:
    """The probe's repro: through capture to the LMDB file."""
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        for text in FOREIGN_PASSWORD_LABELS:
            mem.record("debug", "login", outcome="success", content=text)
        mem.record("debug", "login", outcome="success", decisions={"Passwort": "Hunter2Pass", "пароль": "Hunter2Pass"})
        mem.record_tool_call("s1", "env", {"env": {"STRIPE_KEY": "Zq9vLm2Xw8Rt", "OPENAI_KEY": "Zq9vLm2Xw8Rt"}})
        mem.record("debug", "x", outcome="success", content="export HMAC_KEY=Zq9vLm2Xw8Rt")
    raw = b"".join(p.read_bytes() for p in (tmp_path / "db").rglob("*") if p.is_file())
    assert b"Hunter2Pass" not in raw and b"Zq9vLm2Xw8Rt" not in raw
