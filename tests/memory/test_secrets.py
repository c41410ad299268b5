"""Secrets: token shapes, URL credentials, key-aware redaction (text, JSON in JSON, decisions
keys), and what error messages may show of a value. ``test_sanitize.py`` has the PII kinds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

import memdb
from memdb.memory.sanitize import SECRET_FIELD, RegexSanitizer, is_secret_key, sanitize_fields, shown
from memdb.memory.sanitize.fields import flatten_texts
from memdb.memory.sanitize.messages import redacted

S = RegexSanitizer()


def clean(text: str) -> str:
    return S.sanitize({"t": text})["t"]


# --- token shapes (ported from gitleaks and detect-secrets; the source is named in detect.py) --------

TOKENS = [
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",  # Stripe's documentation key shape
    "rk_live_51H8abcdefGHIJKLmnopQRSTuv",
    "sk_test_" + "a1B2c3D4" * 3,
    "sk_prod_" + "Z9y8X7w6" * 12,
    "glpat-" + "xY9_zW8-vU7tS6rQ5pO4",
    "gldt-" + "AbCdEfGhIjKlMnOpQrSt",
    "glrt-" + "t1_" + "AbCdEfGhIjKlMnOpQrStUvWxYz",
    "glcbt-" + "64_" + "aBcDeFgHiJkLmNoPqRsT",
    "npm_" + "abcdefghijklmnopqrstuvwxyz0123456789",
    "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",  # gitleaks' sample
    "api_org_" + "jCBaQngSHiHDRYOcsMcifUcysGyaiybUWz",
    "AC" + "0123456789abcdef" * 2,  # Twilio account SID
    "SK" + "fedcba9876543210" * 2,  # Twilio API key
    "xapp-1-A052FGTS2DL-5171572773297-610b6a11f4b7eb819e87b767d80e6575",
    "pypi-AgEIcHlwaS5vcmcCJDU3OTM5NDM4LWJiYjQtNDQ0Ni1iMDI2LTgzZDM3MjQyZTk0MgACKlszLCJlYjc",
]


@pytest.mark.parametrize("token", TOKENS)
def test_token_shapes_are_secrets(token: str) -> None:
    assert clean(f"use {token} now") == "use <SECRET_1> now"
    assert clean(f'"{token}",') == '"<SECRET_1>",'


def test_slack_webhook_path_is_the_secret_the_host_stays() -> None:
    url = "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
    assert clean(f"post to {url} daily") == "post to https://hooks.slack.com/<SECRET_1> daily"
    assert clean("hooks.slack.com/workflows/T0AB12CD3/A0123456789/123456789012345678/abcDEF") == "hooks.slack.com/<SECRET_1>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic <SECRET_1>"),
        ("curl -H 'Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=='", "curl -H 'Authorization: Basic <SECRET_1>'"),
        ('{"Authorization": "Basic YWxhZGRpbjpvcGVuc2VzYW1l"}', '{"Authorization": "Basic <SECRET_1>"}'),
        ("sent Basic YWxhZGRpbjpvcGVuc2VzYW1l to it", "sent Basic <SECRET_1> to it"),  # decodes to user:password
        ("Proxy-Authorization: basic Zm9vYmFyYmF6cXV4", "Proxy-Authorization: basic <SECRET_1>"),  # a header: any base64
        ("Authorization: Bearer abc", "Authorization: Bearer <SECRET_1>"),  # short, but in the header
        ("Authorization: Digest username=ana", "Authorization: Digest <SECRET_1>"),
    ],
)
def test_http_authorization(text: str, expected: str) -> None:
    assert clean(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0044 20 7946 0960", "<PHONE_1>"),
        ("call 00 44 20 7946 0960 now", "call <PHONE_1> now"),
        ("0049 30 12345678", "<PHONE_1>"),
        ("0044-20-7946-0960", "<PHONE_1>"),
        ("4012.8888.8888.1881", "<CARD_1>"),
        ("card 4111.1111.1111.1111.", "card <CARD_1>."),
    ],
)
def test_international_prefix_and_dotted_cards(text: str, expected: str) -> None:
    assert clean(text) == expected


def test_00_and_plus_forms_of_one_number_share_a_placeholder() -> None:
    assert clean("0044 20 7946 0958 or +44 20 7946 0958") == "<PHONE_1> or <PHONE_1>"


# --- URL credentials ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgres://admin:Hunter2pw@localhost/app", "postgres://admin:<SECRET_1>@localhost/app"),
        ("redis://:pw@cache:6379/0", "redis://:<SECRET_1>@cache:6379/0"),
        ("postgresql://admin:Hunter2pw@db.example.com:5432/app", "postgresql://admin:<SECRET_1>@db.example.com:5432/app"),
        ("mongodb+srv://ana:p%40ss:w0rd@cluster0.mongodb.net/db", "mongodb+srv://ana:<SECRET_1>@cluster0.mongodb.net/db"),
        ("amqp://guest:guest@rabbit:5672/", "amqp://guest:<SECRET_1>@rabbit:5672/"),
        ("ftp://u:p@s@host", "ftp://u:<SECRET_1>@host"),  # an unescaped @ in the password: the last one ends it
        ('"url": "https://bot:t0ken@internal/x", "n": 1', '"url": "https://bot:<SECRET_1>@internal/x", "n": 1'),
    ],
)
def test_url_credentials_for_any_host(url: str, expected: str) -> None:
    assert clean(url) == expected


@pytest.mark.parametrize(
    "text",
    [
        "http://localhost:8080/path?q=1",
        "https://medium.com/@ana/post",
        "ssh://git@localhost:22/org/repo.git",
        "https://host:443/a:b@c",  # the @ is in the path
        "see https:// for more",
        "://:@",
    ],
)
def test_urls_without_credentials_are_left_alone(text: str) -> None:
    assert clean(text) == text


# --- key-aware redaction -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "password", "PASSWORD", "passwd", "pwd", "passphrase", "secret", "token", "api_key", "apikey", "api-key",
        "API Key", "client_secret", "aws_secret_access_key", "DB_PASSWORD", "X-Api-Key", "private_key", "privateKey",
        "accessToken", "auth_token", "Authorization", "credentials", "Cookie", "secret_key", " password ",
    ],
)  # fmt: skip
def test_secret_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key", ["max_tokens", "tokenizer", "password_hint", "author", "keyboard", "primary_key", "token_count", "user", "secret_name", ""]
)
def test_ordinary_keys(key: str) -> None:
    assert not is_secret_key(key)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"password": "xkcd936q"}', '{"password": "<SECRET_1>"}'),
        ('{"DB_PASSWORD": "p4ss"}', '{"DB_PASSWORD": "<SECRET_1>"}'),
        ("X-Api-Key: abcdef123", "X-Api-Key: <SECRET_1>"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = <SECRET_1>"),
        ('{"password": 12345}', '{"password": <SECRET_1>}'),  # the closing brace is not the value's
        ('{"password": ["a", "b"], "n": 1}', '{"password": <SECRET_1>, "n": 1}'),  # a list, whole
        ('{"credentials": {"user": "ana", "pw": "x"}}', '{"credentials": <SECRET_1>}'),  # an object, whole
        ('{"password": "ab\\"cd"}', '{"password": "<SECRET_1>"}'),  # an escaped quote inside the value
        ("password: 'unterminated", "password: '<SECRET_1>"),
        ('{"body": "{\\"api_key\\": \\"abc123xyz\\"}"}', '{"body": "{\\"api_key\\": \\"<SECRET_1>\\"}"}'),
    ],
)
def test_values_under_secret_keys_in_text(text: str, expected: str) -> None:
    assert clean(text) == expected


def test_json_nested_in_json_strings_at_any_depth() -> None:
    inner = {"api_key": "abc123xyz", "client_secret": "s3cr3t-value", "q": "kept"}
    once = json.dumps({"body": json.dumps(inner)})
    twice = json.dumps({"wrapped": json.dumps({"body": json.dumps(inner)})})
    for text in (once, twice):
        out = clean(text)
        assert "abc123xyz" not in out and "s3cr3t-value" not in out and "kept" in out
        assert json.loads(out)  # still JSON


def test_decisions_key_and_value_split_across_a_dict() -> None:
    raw = {
        "summary": "deploy",
        "decisions": {
            "password": "xkcd936q", "DB_PASSWORD": "pa55 word", "X-Api-Key": "k", "api_key": 1234, "pin": 1234,
            "client_secret": {"old": "s1", "ana@example.com": ["s2", 7.5]}, "token": None, "secret": True, "ok": "fine",
        },
    }  # fmt: skip
    flat, rebuild = flatten_texts(raw)
    out = rebuild(sanitize_fields(S, flat))["decisions"]
    assert out == {
        "password": "<SECRET_1>", "DB_PASSWORD": "<SECRET_2>", "X-Api-Key": "<SECRET_3>", "api_key": "<SECRET_4>",
        "pin": "<SECRET_4>",  # a label, as in "pin 1234"; the same 1234 as api_key's, the same number
        "client_secret": {"old": "<SECRET_5>", "<EMAIL_1>": ["<SECRET_6>", "<SECRET_7>"]}, "token": None, "secret": True,
        "ok": "fine",
    }  # fmt: skip


class Identity:
    """A sanitizer that knows nothing of secret keys (a custom one written before them)."""

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        return dict(texts)


def test_a_sanitizer_that_ignores_secret_fields_is_overruled() -> None:
    flat, rebuild = flatten_texts({"summary": "<SECRET_2> known", "decisions": {"password": "xkcd936q", "pwd": "xkcd936q", "n": "a"}})
    out = rebuild(sanitize_fields(Identity(), flat))
    assert out["decisions"] == {"password": "<SECRET_3>", "pwd": "<SECRET_3>", "n": "a"}  # after the <SECRET_2> already there


def test_a_secret_known_from_its_key_is_replaced_in_every_field() -> None:
    out = S.sanitize({"summary": "retried with xkcd936q; xkcd936qq is another", f"{SECRET_FIELD}d.0": "xkcd936q"})
    assert out == {"summary": "retried with <SECRET_1>; xkcd936qq is another", f"{SECRET_FIELD}d.0": "<SECRET_1>"}
    url = S.sanitize({"a": "postgres://app:Hunter2pw@localhost/db", "b": "the password is Hunter2pw"})
    assert url == {"a": "postgres://app:<SECRET_1>@localhost/db", "b": "the password is <SECRET_1>"}


def test_a_plain_word_under_a_secret_key_does_not_blank_the_word_elsewhere() -> None:
    assert S.sanitize({"a": "auth: swordfish", "b": "the swordfish swam"}) == {"a": "auth: <SECRET_1>", "b": "the swordfish swam"}


def test_secret_fields_are_idempotent_and_blank_values_stay() -> None:
    texts = {f"{SECRET_FIELD}a": "<SECRET_4>", f"{SECRET_FIELD}b": "", f"{SECRET_FIELD}c": "  ", f"{SECRET_FIELD}d": "x"}
    assert S.sanitize(texts) == {**texts, f"{SECRET_FIELD}d": "<SECRET_5>"}


# --- what is left alone --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "hf_requiredCharacteristicTypesForDisplayMetadata",  # gitleaks' false positives
        "&hf_servingcellpriorityparametersdescription_h_prio",
        "hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",  # a placeholder in docs: one case only
        "npm_config_cache and npm_package_version",
        "task_test_abcdefghijklmnopqrstuvwxyz0123",  # "sk_test_" inside a word
        "sk_test_fixtures",
        "glpat-short",
        "SKU 12345 and ACME 32",
        "ACCOUNT_abcdefabcdefabcdefabcdefabcdefab",
        "AC" + "abcdef" * 6,  # 32+ hex letters without a digit: not a real SID
        "a basic understanding of the system",
        "Basic plan costs 10 dollars; BASIC is a language",
        "the hooks.slack.com docs",
        "latency 345.678901234567 ms",
        "version 1.2.3.4.5.6.7.8.9",
        "1234.5678.9012.3456.7890.12",
        "password_hint: dog and author: Ana",
        "0044",
        "tokens: 5, max_tokens: 1024",
    ],
)
def test_false_positives_of_new_shapes_are_left_alone(text: str) -> None:
    assert clean(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "x" + "glpat-" * 3000,
        "hf_" * 5000,
        "://" * 5000,
        "a://" + "b:c@" * 3000,
        "Basic " * 3000,
        '{"password": "' + '\\"' * 3000,
        '{"password": ' + "[" * 3000,
        "AC" * 5000,
    ],
)
def test_new_shapes_stay_linear_on_repetitive_input(text: str) -> None:
    clean(text)  # seconds if quadratic; the suite's time shows it


# --- error messages ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("ana@example.com", "'<EMAIL_1>'"),
        (["4111 1111 1111 1111"], "['<CARD_1>']"),
        ({"password": "xkcd936q"}, "{'password': '<SECRET_1>'}"),
        ("ok", "'ok'"),
        pytest.param(10**5000, "<int>", id="int-without-repr"),
        ("a" * 200, "'" + "a" * 76 + "..."),
        ("ana@example.com\n", "'<EMAIL_1>\\n'"),
    ],
)
def test_shown_is_sanitized_and_short(value: object, expected: str) -> None:
    assert shown(value) == expected


def test_shown_never_raises() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert shown(Broken()) == "<Broken>"
    assert redacted("decisions.4111 1111 1111 1111") == "decisions.<CARD_1>"


@pytest.mark.parametrize("token", [*TOKENS, "hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"])
def test_every_token_shape_is_behind_the_hints(token: str) -> None:
    """The prefilters name each shape by its rarest character; a shape they miss would never be looked for."""
    import memdb.memory.sanitize.detect as detect

    assert detect._MAYBE_PII.search(token) is not None
    assert detect._TOKEN_HINT.search(token) is not None or (token[:2] in ("AC", "SK"))  # Twilio: a digit is its hint


# --- owner names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("owner", "kinds"),
    [
        ("ana.secret1@example.com", "EMAIL"),
        ("+1 415 555 0132", "PHONE"),
        ("user-4111111111111111", "CARD"),
        ("10.0.0.1", "IP"),
        ("token=abc123", "SECRET"),
        # read as a session's or a tag's name is, with its separators as spaces too (revS)
        ("4111_1111_1111_1111", "CARD"),
        ("bob_4111_1111_1111_1111", "CARD"),
        ("415_200_0000", "PHONE"),
        ("10.0.0.1_4111_1111_1111_1111", "CARD, IP"),  # each form holds one value raw (revQ)
        ("pin_1234_10.1.1.1", "IP"),
    ],
)
def test_an_owner_name_that_looks_like_personal_data_is_refused_without_echoing_it(owner: str, kinds: str) -> None:
    from memdb.errors import ValidationError
    from memdb.memory.models import check_owner

    with pytest.raises(ValidationError, match=rf"looks like personal data \({kinds}\); use an opaque id") as info:
        check_owner(owner)
    said = str(info.value)
    assert owner not in said and not any(raw in said for raw in ("1111", "0000", "1234", "10.0", "10.1"))


def test_a_team_or_reviewer_named_by_personal_data_with_underscores_is_refused_without_echoing_it(tmp_path: Path) -> None:
    import memdb
    from memdb.errors import ConfigError, ValidationError

    with memdb.open(tmp_path / "db") as db:
        with pytest.raises(ConfigError, match=r"team \(not shown\): looks like personal data") as info:
            db.configure(teams={"bob_4111_1111_1111_1111": ["ana"]})
        assert "1111" not in str(info.value)
        lesson = db.owner("ana").save_lesson("Renew certificates a week early", tags=["deploy"])
        with pytest.raises(ValidationError, match=r"by \(not shown\): looks like personal data") as err:
            db.approve(lesson.id, by="415_200_0000")
        assert "0000" not in str(err.value)


@pytest.mark.parametrize("owner", ["ana\udc80", "\ud800", "x\udfffy"])
def test_an_owner_name_with_a_lone_surrogate_is_refused(owner: str) -> None:
    from memdb.errors import ValidationError
    from memdb.memory.models import check_owner

    with pytest.raises(ValidationError, match="not valid Unicode"):
        check_owner(owner)


@pytest.mark.parametrize("owner", ["ana", "team-search", "bot:planner/v2", "Zoë", "ana 2026-07-01", "用户"])
def test_ordinary_owner_names_pass(owner: str) -> None:
    from memdb.memory.models import check_owner

    assert check_owner(owner) == owner


def test_other_owner_errors_show_the_name_sanitized() -> None:
    from memdb.errors import ValidationError
    from memdb.memory.models import check_owner

    for bad in ("ana@example.com\n", " ana@example.com", "ana@example.com" + "x" * 80):
        with pytest.raises(ValidationError) as info:
            check_owner(bad)
        assert "ana@example.com" not in str(info.value)


# --- the audit log -----------------------------------------------------------------------------------


class FailsOn:
    """The built-in sanitizer, except that it raises on a text holding ``marker``."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.inner = RegexSanitizer()

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        if any(self.marker in t for t in texts.values()):
            raise RuntimeError("sanitizer down")
        return self.inner.sanitize(texts)


def test_audit_reasons_and_sources_are_sanitized_ids_and_hashes_kept(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "a") as db:
        mem = db.owner("ana")
        report = mem.import_episodes([{"kind": "exchange", "summary": "hi"}], source="export sent by ana@example.com")
        ep = mem.record("exchange", "bye")
        mem.delete(ep.id, reason="erasure request from ana@example.com, card 4111 1111 1111 1111")
        mem.erase(ids=report.ids, reason="password=xkcd936q was in it")
        audit = mem.audit()
    assert [a["action"] for a in audit] == ["import", "delete", "erase"]
    assert audit[0]["source"] == "export sent by <EMAIL_1>"
    assert audit[1]["reason"] == "erasure request from <EMAIL_1>, card <CARD_1>"
    assert audit[1]["episodes"] == [ep.id] and len(audit[1]["hashes"][0]) == 64
    assert audit[2]["reason"] == "password=<SECRET_1> was in it"


def test_audit_keeps_ids_and_hashes_exactly(tmp_path: Path) -> None:
    digest = "a4111111111111111" + "0" * 47  # a digit run a sanitizer would read as a card
    fields = {"content_hash": digest, "hashes": [digest], "episode": "x", "why": {"note": ["ana@example.com", 3]}}
    with memdb.open(tmp_path / "h") as db:
        assert db.episodes.audit.clean("erase", fields) == {**fields, "why": {"note": ["<EMAIL_1>", 3]}}


@pytest.mark.parametrize("path", ["erase", "delete", "import"])
def test_an_audit_field_the_sanitizer_cannot_take_refuses_the_operation(tmp_path: Path, path: str) -> None:
    from memdb.errors import SanitizerError

    with memdb.open(tmp_path / "f", sanitizer=FailsOn("BOOM")) as db:
        mem = db.owner("ana")
        ep = mem.record("exchange", "kept")
        with pytest.raises(SanitizerError, match="nothing written") as info:
            if path == "erase":
                mem.erase(ids=[ep.id], reason="BOOM ana@example.com")
            elif path == "delete":
                mem.delete(ep.id, reason="BOOM ana@example.com")
            else:
                mem.import_episodes([{"kind": "exchange", "summary": "new"}], source="BOOM ana@example.com")
        assert "ana@example.com" not in str(info.value)
        assert mem.count() == 1 and mem.get(ep.id).summary == "kept"
        assert mem.audit() == []


# --- PostgreSQL URLs in messages ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "postgresql://admin:Hunter2pw@db.internal:5432/app?sslmode=require&password=qq1234&sslpassword=zz99",
            "postgresql://admin:***@db.internal:5432/app?sslmode=require&password=***&sslpassword=***",
        ),
        ("postgres://:pw@h1:5432,h2:5433/app", "postgres://:***@h1:5432,h2:5433/app"),
        ("postgresql:///app?host=/run/pg&password=sekrit&options=-c%20x", "postgresql:///app?host=/run/pg&password=***&options=***"),
        ("postgres://ana@localhost/app", "postgres://ana@localhost/app"),
        ("postgres://a:b@[::1/app", "postgres://***"),  # does not parse: masked whole
    ],
)
def test_postgres_urls_are_masked_for_messages(url: str, expected: str) -> None:
    from memdb.engine.postgres import redact_url

    assert redact_url(url) == expected


def test_a_postgres_store_error_never_shows_the_password() -> None:
    pytest.importorskip("psycopg")
    from memdb.engine.postgres import PostgresStore
    from memdb.errors import StoreError

    with pytest.raises(StoreError, match="cannot connect") as info:
        PostgresStore("postgresql://memdb:Hunter2pw@127.0.0.1:1/postgres?password=qq1234&sslpassword=zz99zz", connect_timeout=1)
    for secret in ("Hunter2pw", "qq1234", "zz99zz"):
        assert secret not in str(info.value)


def test_a_team_member_is_an_owner_name_checked_as_owners_are(tmp_path: Path) -> None:
    from memdb.errors import ConfigError

    with memdb.open(tmp_path / "t") as db:
        with pytest.raises(ConfigError, match=r"member: owner '<EMAIL_1>': looks like personal data") as info:
            db.configure(teams={"core": ["ana", "ana.lopez@example.com"]})
        assert "ana.lopez" not in str(info.value)
        assert db.configure(teams={"core": ["ana", "bob"]}).teams == {"core": ["ana", "bob"]}


def test_a_team_name_that_looks_like_personal_data_is_refused(tmp_path: Path) -> None:
    """A team name is a key of the shared entries and the agendas (``^KNS``, ``^KNC``): checked
    as its members are, or an address as a team name was stored raw and survived compact()."""
    from memdb.errors import ConfigError

    path = tmp_path / "t"
    with memdb.open(path) as db:
        for team, placeholder in (("team.lead@example.com", "<EMAIL_1>"), ("+442079460958", "<PHONE_1>")):
            with pytest.raises(ConfigError, match=f"team '{placeholder}': looks like personal data") as info:
                db.configure(teams={team: ["ana"]})
            assert team not in str(info.value)
        assert db.settings.teams == {}  # nothing saved
        assert db.configure(teams={"platform": ["ana"]}).teams == {"platform": ["ana"]}
        db.compact()
    assert b"team.lead" not in _disk(path) and b"2079460958" not in _disk(path)


def test_settings_saved_before_a_check_still_load(tmp_path: Path) -> None:
    """A team named after its mailing list, saved before team names were checked, made every
    read of the settings refuse the database, configure() included: a check holds what is set
    now, never what was saved (a review's find)."""
    path = tmp_path / "old"
    with memdb.open(path) as db:
        db.owner("ana").record("debug", "deploy failed", outcome="failure")
        saved = {**db.settings.model_dump(mode="json"), "teams": {"platform-team@acme.com": ["ana"]},
                 "session_kinds": {"tool:support@acme.com": "debug"}}  # fmt: skip
        db.globals["META"].set(("settings",), saved)  # as an older memdb saved it
    with memdb.open(path) as db:
        assert db.settings.teams == {"platform-team@acme.com": ["ana"]} and db.owner("ana").recall().total == 1
        assert db.configure(lessons_per_day=4).lessons_per_day == 4  # another field changes
        assert db.configure(teams={"platform": ["ana"]}).teams == {"platform": ["ana"]}  # and the name is replaced


# --- tool payloads and error paths (a helper's audit of the bytes on disk, 2026-12-06) -----------------


def _disk(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.iterdir() if p.is_file())


def test_a_tool_payload_s_strings_are_sanitized_as_written_not_as_json_text(tmp_path: Path) -> None:
    """Sanitized as one JSON text, a line break was the two characters ``\\n``, and an address, a
    phone number or a token right after one ("n10.20.30.40") reached disk raw."""
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        call = mem.record_tool_call(
            "s1", "http", {"body": "host list:\n10.20.30.40", "to": "call\n+44 20 7946 0958", "nan": float("nan"), "big": 2**70}
        )
        mem.record_tool_result(call.id, {"out": "key\r\nsk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv", "rows": [["ok", "ana@example.com"]]})
        text = mem.record_tool_call("s1", "shell", "ssh\n10.1.2.3")
        stored = mem.get(call.id)
        assert json.loads(stored.content) == {"big": str(2**70), "body": "host list:\n<IP_1>", "nan": "nan", "to": "call\n<PHONE_1>"}
        assert json.loads(stored.result or "") == {"out": "key\r\n<SECRET_1>", "rows": [["ok", "<EMAIL_1>"]]}
        assert text.content == "ssh\n<IP_1>"
    raw = _disk(tmp_path / "db")
    for secret in (b"10.20.30.40", b"7946", b"Ab3dEf6h", b"ana@example", b"10.1.2.3"):
        assert secret not in raw


def test_a_tool_input_of_one_number_is_read_as_text(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        assert db.owner("ana").record_tool_call("s1", "calc", 5).content == "5"


@pytest.mark.parametrize("key", ["192.168.1.10", "2001:db8::8a2e:370:7334", "(415) 555-0132", "020 7946 0958"])
def test_an_error_naming_a_decisions_path_sanitizes_each_key(tmp_path: Path, key: str) -> None:
    """A path joined with dots (``decisions.192.168.1.10``) hid the address from the sanitizer."""
    with memdb.open(tmp_path / "db") as db, pytest.raises(memdb.errors.ValidationError) as caught:
        db.owner("ana").record("debug", "x", outcome="failure", decisions={"ok": {key: float("nan")}})
    assert key not in str(caught.value) and "decisions.ok.<" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('password := "Hunt3rQx77"', 'password := "<SECRET_1>"'),
        ("'password' => 'Hunt3rQx77'", "'password' => '<SECRET_1>'"),
        ("DB_PASSWORD=Tr0ub4dor&3xKq9Zw", "DB_PASSWORD=<SECRET_1>"),
        ("password=Xk9;mQ7zLp2, then", "password=<SECRET_1>, then"),
        ("https://x.test/cb?token=abc123&page=2", "https://x.test/cb?token=<SECRET_1>&page=2"),  # the next parameter stays
        ("SMTP_PASS=Hunt3rQx77 smtpPass=Hunt3rQx78", "SMTP_PASS=<SECRET_1> smtpPass=<SECRET_2>"),
        ("creds: a1b2c3 pw: d4e5f6", "creds: <SECRET_1> pw: <SECRET_2>"),
        ("passwords: Hunt3rQx77", "passwords: <SECRET_1>"),
        ("SECRET_KEY_BASE=abc123def", "SECRET_KEY_BASE=<SECRET_1>"),
        ("AccountName=acct;AccountKey=Zm9vYmFy==;EndpointSuffix=x", "AccountName=acct;AccountKey=<SECRET_1>;EndpointSuffix=x"),
        ("c?sv=2021&sig=Hunt3r%2Fabc&se=2026", "c?sv=2021&sig=<SECRET_1>&se=2026"),
        ("<password>Hunt3rQx77</password>", "<password><SECRET_1></password>"),
        ('<add key="ApiKey" value="Hunt3rQx77"/>', '<add key="ApiKey" value="<SECRET_1>"/>'),
        ('{"name":"DB_PASSWORD","value":"Hunt3rQx77"}', '{"name":"DB_PASSWORD","value":"<SECRET_1>"}'),
        ("curl -u admin:Hunt3rQx77 https://x", "curl -u admin:<SECRET_1> https://x"),
        ("mysql -uroot -pHunt3rQx77 db", "mysql -uroot -p<SECRET_1> db"),
        ("mysql -u root -pMyToken prod_db", "mysql -u root -p<SECRET_1> prod_db"),  # the database stays
        ("https://example.com/search?q=foo%40bar.com&x=1", "https://example.com/search?q=<EMAIL_1>&x=1"),
        ("http://[::1]:8080/users/@me", "http://[<IP_1>]:8080/users/@me"),
        ("app --password Hunt3rQx77 --verbose", "app --password <SECRET_1> --verbose"),
        ("plink -pw Hunt3rQx77 host", "plink -pw <SECRET_1> host"),
        ("whsec_Hunt3rQx77abcdefghijklmnopqrstu", "<SECRET_1>"),
        ("AKIAIOSFODNN7EXAMPLE,wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "<SECRET_1>,<SECRET_2>"),
        ("mysql://root:Xq7?kd93Lz@localhost/app", "mysql://root:<SECRET_1>@localhost/app"),
        ("redis://:p/ss99Xz@cache:6379/0", "redis://:<SECRET_1>@cache:6379/0"),
        ('{"body": "key\\n10.20.30.40"}', '{"body": "key\\n<IP_1>"}'),  # JSON text holding a line break
    ],
)
def test_secrets_the_audit_found(text: str, expected: str) -> None:
    assert clean(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Token: see the runbook",
        "the password: it is in the vault",
        "auth: enabled",
        "authorization: required",
        "bypass: hunter2",  # "pass" ends another word
        "Tests pass: 120",  # a word of its own after a space: prose
        '{"sig": "(text: str) -> Tree"}',  # "sig" is a secret only as a URL's parameter
        "pg_dump --no-password appdb",
        "ansible --ask-pass site.yml",
        "docker run -u 1000:1000 img",
        "https://example.com?next=mailto:x",
        "compass=north",
        "max_tokens: 1024",
        "https://host:8080/users/@ana",  # a port and a path before an "@"
        "mkdir -p build",
        "git commit --author ana",
    ],
)
def test_prose_after_a_label_and_look_alike_keys_stay(text: str) -> None:
    assert clean(text) == text


def test_pairs_naming_a_secret_hold_one() -> None:
    env = [{"name": "DB_PASSWORD", "value": "Hunt3rQx77"}, {"name": "REGION", "value": "eu"}]
    raw = {"decisions": {"env": env, "h": [["X-Api-Key", "k1"]]}}
    flat, rebuild = flatten_texts(raw)
    assert rebuild(sanitize_fields(S, flat))["decisions"] == {
        "env": [{"name": "DB_PASSWORD", "value": "<SECRET_1>"}, {"name": "REGION", "value": "eu"}],
        "h": [["X-Api-Key", "<SECRET_2>"]],
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("docker login -u ci -p Dk3rPass99 registry.example.com", "docker login -u ci -p <SECRET_1> registry.example.com"),
        ("sudo podman login -p hunter quay.io", "sudo podman login -p <SECRET_1> quay.io"),
        ("sshpass -p Ssh9Pass77 ssh root@host", "sshpass -p <SECRET_1> ssh root@host"),
        ("sshpass -phunter ssh host", "sshpass -p<SECRET_1> ssh host"),
        ("redis-cli -h cache -a Red1sPass5 ping", "redis-cli -h cache -a <SECRET_1> ping"),
        ("ldapsearch -x -w hunter -b dc=x", "ldapsearch -x -w <SECRET_1> -b dc=x"),
        ("mongo -u admin -p hunter", "mongo -u admin -p <SECRET_1>"),
        (
            "https://b.s3.amazonaws.com/r.pdf?X-Amz-Signature=9f86d0818&X-Amz-Date=2026",
            "https://b.s3.amazonaws.com/r.pdf?X-Amz-Signature=<SECRET_1>&X-Amz-Date=2026",
        ),
        # and where "-p" is a port, a mapping or a patch, it stays
        ("ssh -p 22 host; psql -p 5432 -U me; docker run -p 8080:80 img; git log -p", None),
    ],
)
def test_a_command_s_own_password_option_is_a_secret(text: str, expected: str | None) -> None:
    """ "docker login -p", "sshpass -p", "redis-cli -a" kept the password (only --password, -pw,
    curl -u and mysql -p were known): a privacy audit's find. Each command's own option, in a
    command string and in a tool's argv alike."""
    assert clean(text) == (expected or text)


@pytest.mark.parametrize(
    ("argv", "secret"),
    [
        (["docker", "login", "-u", "ci", "-p", "Dk3rPass99", "registry.example.com"], 5),
        (["/usr/bin/sshpass", "-p", "Ssh9Pass77", "ssh", "root@host"], 2),
        (["sshpass", "-pSsh9Pass77", "ssh", "host"], 1),
        (["redis-cli", "-h", "cache", "-a", "Red1sPass5", "ping"], 4),
        (["docker", "run", "-p", "8080:80", "img"], None),  # a port mapping
        (["ssh", "-p", "2222", "host"], None),
    ],
)
def test_a_command_s_own_password_option_in_an_argv_is_a_secret(argv: list[str], secret: int | None) -> None:
    flat, rebuild = flatten_texts({"content": {"argv": argv}})
    kept = rebuild(sanitize_fields(S, flat))["content"]["argv"]
    assert [i for i, (a, k) in enumerate(zip(argv, kept, strict=True)) if a != k] == ([] if secret is None else [secret])


# A command's password given as one string and as an argv: both forms keep it out, the rest stays
COMMAND_PASSWORDS = [
    (["openssl", "rsa", "-in", "k.pem", "-passin", "pass:Pw7secret"], 5),
    (["openssl", "pkcs12", "-export", "-passout", "pass:Pw7secret"], 4),
    (["az", "login", "-u", "me", "-p", "Pw9secret"], 5),
    (["az", "login", "--service-principal", "-u", "app", "-p", "Pw9secret", "--tenant", "t"], 6),
    (["htpasswd", "-b", "f", "me", "PwAsecret"], 4),
    (["htpasswd", "-bc", "/etc/nginx/.htpasswd", "me", "PwAsecret"], 4),
    (["htpasswd", "-nb", "me", "PwAsecret"], 3),
    (["htpasswd", "-B", "-C", "12", "-b", "f", "me", "PwAsecret"], 7),
    (["htpasswd", "-c", "f", "me"], None),  # asks for the password
    (["openssl", "rsa", "-passin", "env:KEY_PW"], None),  # names where the password is
    (["az", "vm", "create", "-n", "vm1", "-p", "22"], None),  # no login: not its password
]


@pytest.mark.parametrize(("argv", "secret"), COMMAND_PASSWORDS)
def test_a_command_line_password_is_a_secret_as_a_string_and_as_an_argv(argv: list[str], secret: int | None) -> None:
    """openssl's "-passin pass:X" was kept in a string (the argv form knew it), "az login -p X"
    and "htpasswd -b FILE USER X" in both: a privacy probe's find."""
    flat, rebuild = flatten_texts({"content": {"argv": argv, "cmd": " ".join(argv)}})
    kept = rebuild(sanitize_fields(S, flat))["content"]
    changed = [i for i, (a, k) in enumerate(zip(argv, kept["argv"], strict=True)) if a != k]
    assert changed == ([] if secret is None else [secret])
    if secret is None:
        assert kept["cmd"] == " ".join(argv)
    else:
        assert "secret" not in kept["cmd"] and kept["cmd"].split()[:secret] == argv[:secret]


def test_a_quoted_htpasswd_password_is_replaced_inside_its_quotes() -> None:
    assert clean("htpasswd -b f me 'two words'; echo ok") == "htpasswd -b f me '<SECRET_1>'; echo ok"


@pytest.mark.parametrize(
    "text",
    [
        "%40" * 10000,
        "a%40" * 5000,
        "htpasswd -b " * 3000,
        "-passin pass:" * 3000,
        "password=a&" * 3000,
        "-u a:" * 5000,
        "mysql " * 5000 + "-p",
        'key="pw" value="' * 3000,
        "01." * 9000,
    ],
)
def test_the_audit_s_shapes_stay_linear_on_repetitive_input(text: str) -> None:
    clean(text)  # "%40" * 10000 took 8 s before the local part was bounded


@pytest.mark.parametrize("key", ["bob.smith@example.com", "192.168.10.20", "+44 20 7946 0958"])
def test_an_error_naming_a_top_level_key_sanitizes_it(tmp_path: Path, key: str) -> None:
    """The first part of a path is a field's name, or any key an import item gave: sanitized too."""
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        with pytest.raises(memdb.errors.ValidationError) as caught:
            mem.import_episodes([{"kind": "debug", "summary": "x", "outcome": "failure", key: {"a": float("nan")}}], source="t")
        assert key not in str(caught.value)
        deep: dict[str, object] = {}
        for _ in range(40):
            deep = {"d": deep}
        with pytest.raises(memdb.errors.ValidationError) as caught:
            mem.import_episodes([{"kind": "debug", "summary": "x", "outcome": "failure", key: deep}], source="t")
        assert key not in str(caught.value)


def test_a_command_line_given_as_a_list_keeps_its_secrets_out(tmp_path: Path) -> None:
    """A tool's argv is sanitized string by string: the argument after --password, curl's -u and
    mysql's -pPASSWORD are secrets by their place in the list; a list of two words is no pair."""
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        call = mem.record_tool_call(
            "s1",
            "shell",
            {
                "a": ["mysql", "-u", "root", "-phunter2XY", "prod"],
                "b": ["deploy", "--password", "Flag7pwd", "--verbose"],
                "c": ["curl", "-u", "admin:Curl7pw", "https://x"],
                "d": ["pg_dump", "--no-password", "appdb"],
                "scopes": ["auth", "profile"],
            },
        )
        stored = json.loads(mem.get(call.id).content)
    assert stored["a"][3].startswith("<SECRET_") and stored["a"][4] == "prod"
    assert stored["b"][2].startswith("<SECRET_") and stored["b"][3] == "--verbose"
    assert stored["c"][2].startswith("<SECRET_") and stored["d"] == ["pg_dump", "--no-password", "appdb"]
    assert stored["scopes"] == ["auth", "profile"]
    raw = _disk(tmp_path / "db")
    assert all(s not in raw for s in (b"hunter2XY", b"Flag7pwd", b"Curl7pw"))


def test_a_tool_payload_keeps_two_keys_that_read_the_same_once_sanitized(tmp_path: Path) -> None:
    """A tool result keyed by two spellings of one address was refused ("merge them"), and the
    capture lost; a payload is data: the second key is numbered. Decisions still refuse it."""
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        call = mem.record_tool_call("s1", "crm", {"Bob@Example.com": 1, "bob@example.com": 2})
        mem.record_tool_result(call.id, {"Bob@Example.com": "a", "bob@example.com": "b"})
        got = mem.get(call.id)
        assert json.loads(got.content) == {"<EMAIL_1>": 1, "<EMAIL_1>#2": 2} and json.loads(got.result or "") == {
            "<EMAIL_2>": "a", "<EMAIL_2>#2": "b"  # numbered after the call's placeholders
        }  # fmt: skip
        with pytest.raises(memdb.errors.ValidationError, match="merge them"):
            mem.record("debug", "x", outcome="failure", decisions={"Bob@Example.com": 1, "bob@example.com": 2})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"user":"bob","pass":"Hunt3rPass"}', '{"user":"bob","pass":"<SECRET_1>"}'),  # "pass" as the whole key
        ("user=bob&pass=x1x", "user=bob&pass=<SECRET_1>"),
        ("export PASS=Hunt3r", "export PASS=<SECRET_1>"),
        ("tool --pass Hunt3r9", "tool --pass <SECRET_1>"),
        ("java -jar app.jar -token Tok3n99", "java -jar app.jar -token <SECRET_1>"),  # a single-dash secret option
        ("?e=john.doe%2Bnews%40example.com", "?e=<EMAIL_1>"),
        ("the door passcode is bluefalcon", "the door passcode is <SECRET_1>"),  # no digit, no other hint
        ("the wifi passphrase is correct-horse-battery-staple", "the wifi passphrase is <SECRET_1>"),
        ("CVC2: 1234, PIN code: 4321", "CVC2: <SECRET_1>, PIN code: <SECRET_2>"),
        ("passport C01X00T47, Account-No. 12345678", "passport <GOV_ID_1>, Account-No. <ACCOUNT_1>"),
    ],
)
def test_what_the_second_review_found(text: str, expected: str) -> None:
    assert clean(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "the password is incorrect",
        "Password is case-sensitive",
        "The PIN is 4 digits long",
        "phone 10.03.2026, account 2026-03-10, fax 2026/03/10, passport 12.05.2030 expiry",
        "account 1.234.567,89 EUR; account 150000 euros; Account: 100203 records migrated",
        "Routing 1000000 requests; Pin 2048 of the connector; Use PIN 8080 port; compute sin 3.14159; TIN 2024/2025 filing",
        "0001/0002/0003.log",
    ],
)
def test_numbers_after_label_words_that_are_not_labelled_values_stay(text: str) -> None:
    assert clean(text) == text


def test_header_pairs_in_camel_case_and_curl_by_its_path(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        call = mem.record_tool_call(
            "s1", "http", {"h": [["authToken", "Tok7en"], ["clientSecret", "Sec7ret"]], "argv": ["/usr/bin/curl", "-u", "admin:Cu7pw"]}
        )
        stored = json.loads(mem.get(call.id).content)
    assert all(v.startswith("<SECRET_") for v in (stored["h"][0][1], stored["h"][1][1], stored["argv"][2]))


def test_a_long_integral_float_is_read_as_its_digits_as_an_int_is(tmp_path: Path) -> None:
    """A card read from a float64 column (4539148803436467.0) was kept raw where the int was
    replaced; a float is given back as a float when its digits hold nothing."""
    card = 4539148803436467
    flat, rebuild = flatten_texts({"decisions": {"i": card, "f": float(card), "big": 1.5e6, "ratio": 2.5, "pin": 4821.0}})
    out = rebuild(sanitize_fields(S, flat))["decisions"]
    assert out == {"i": "<CARD_1>", "f": "<CARD_1>", "big": 1.5e6, "ratio": 2.5, "pin": "<SECRET_1>"}
    with memdb.open(tmp_path / "db") as db:
        call = db.owner("ana").record_tool_call("s1", "crm", {"row": {"card": float(card), "n": 1e7}})
        assert json.loads(call.content) == {"row": {"card": "<CARD_1>", "n": 1e7}}
    assert str(card).encode() not in _disk(tmp_path / "db")
