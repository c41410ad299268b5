"""The PII sanitizer on text in other scripts and countries: values written against letters of
scripts that use no spaces, national ids and phone forms, label words in other languages."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memdb.errors import ValidationError
from memdb.memory.models import check_owner
from memdb.memory.sanitize import RegexSanitizer

S = RegexSanitizer()


def clean(text: str) -> str:
    return S.sanitize({"t": text})["t"]


# --- values glued to letters of other scripts ----------------------------------------------------

# Chinese, Japanese and Thai are written without spaces, and Korean glues its particles to the word
# before: a value's neighbour is a letter. Only an ASCII letter, digit or "_" glues a value into a
# word ("v10.1.2.3", "id_4155550132"); one of another script does not.
NEIGHBOURS = {
    "Han": ("号码是", "谢谢"),
    "Kana": ("番号は", "です"),
    "Hangul": ("번호는", "입니다"),
    "Thai": ("คือ", "ครับ"),
    "Arabic": ("هو", "شكرا"),
    "Cyrillic": ("номер", "спасибо"),
}
GLUED = [
    ("EMAIL", "ana.lopez@example.com"),
    ("EMAIL", "o'brien+tag@mail.example.co.uk"),
    ("PHONE", "090-1234-5678"),  # a trunk prefix
    ("PHONE", "(415) 555-0132"),  # NANP
    ("PHONE", "415-555-0132"),
    ("PHONE", "+86 138 1234 5678"),
    ("PHONE", "+7 912 345-67-89"),
    ("PHONE", "8 (912) 345-67-89"),  # Russia's trunk 8
    ("PHONE", "(11) 91234-5678"),  # Brazil
    ("PHONE", "138-1234-5678"),  # a Chinese mobile
    ("IP", "10.1.2.3"),
    ("IP", "2001:db8::1"),
    ("CARD", "4111 1111 1111 1111"),
    ("CARD", "4111111111111111"),
    ("IBAN", "DE89 3704 0044 0532 0130 00"),
    ("SSN", "123-45-6789"),
    ("GOV_ID", "QQ123456C"),  # UK NI
    ("GOV_ID", "ABCPE1234F"),  # PAN
    ("GOV_ID", "130-692-544"),  # SIN
    ("SECRET", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("SECRET", "sk-proj-abcdefghijklmnopqrstuvwxyz123456"),
    ("SECRET", "AKIAIOSFODNN7EXAMPLE"),
]


@pytest.mark.parametrize("script", NEIGHBOURS)
@pytest.mark.parametrize(("kind", "value"), GLUED)
def test_a_value_glued_to_letters_of_another_script_is_replaced(script: str, kind: str, value: str) -> None:
    """``電話番号は090-1234-5678です`` reached disk raw: a number's boundary was any Unicode letter."""
    before, after = NEIGHBOURS[script]
    assert clean(f"{before}{value}{after}") == f"{before}<{kind}_1>{after}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("令牌Bearer abc123def456ghi789", "令牌Bearer <SECRET_1>"),
        ("运行curl -u admin:s3cret 失败", "运行curl -u admin:<SECRET_1> 失败"),
        ("用mysql -uroot -pS3cret连接", "用mysql -uroot -p<SECRET_1>连接"),
        ("실행sshpass -p hunter2 ssh", "실행sshpass -p <SECRET_1> ssh"),
    ],
)
def test_credentials_after_letters_of_another_script(text: str, expected: str) -> None:
    assert clean(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("設定api_key：abc123xyz", "設定api_key：<SECRET_1>"),  # a full-width colon, as Chinese and Japanese input writes it
        ("設定password＝hunter2です", "設定password＝<SECRET_1>です"),
        ("password is hunter2です", "password is <SECRET_1>です"),
    ],
)
def test_secrets_typed_among_other_scripts(text: str, expected: str) -> None:
    assert clean(text) == expected


def test_a_bare_secret_ends_where_its_script_changes_and_is_replaced_everywhere() -> None:
    """``token=abc123xyz谢谢`` took the sentence into the secret, so the secret replaced in the
    episode's other fields was "abc123xyz谢谢" and "abc123xyz" alone stayed there."""
    out = S.sanitize({"a": "配置token=abc123xyz谢谢", "b": "再试abc123xyz", "c": "用mysql -uroot -pS3cret连接"})
    assert out == {"a": "配置token=<SECRET_1>谢谢", "b": "再试<SECRET_1>", "c": "用mysql -uroot -p<SECRET_2>连接"}


def test_bare_secrets_among_another_script_stay_linear() -> None:
    """Each value was read to the next space, past its change of script, then cut there: a text of
    "token=x1谢" and no spaces took each value's reading to its end (26 s for 100 KB)."""
    assert clean("token=x1谢" * 10_000) == "token=<SECRET_1>谢" * 10_000
    assert clean("token=x1.谢") == "token=<SECRET_1>.谢"  # to its change of script, as a value ends before a space: no final "."


@pytest.mark.parametrize(
    "text",
    [
        "时间：12：30：45，比例：1：2：3",  # full-width colons between numbers
        "v10.1.2.3 and build_090-1234-5678",  # an ASCII letter or "_" still glues a number into a word
        "x415-555-0132 and id4155550132",
        "2026年7月14日に会議、版本2.3发布",  # dates and versions among CJK stay
        "第3.2.1节，共10-20页",
    ],
)
def test_numbers_inside_ascii_words_stay(text: str) -> None:
    assert clean(text) == text


def test_an_owner_name_with_a_glued_phone_is_refused_as_a_spaced_one_is() -> None:
    """``db.owner("田中090-1234-5678")`` was accepted while "田中 090-1234-5678" was refused."""
    for name in ("田中090-1234-5678", "田中 090-1234-5678", "김010-1234-5678"):
        with pytest.raises(ValidationError, match="looks like personal data"):
            check_owner(name)
    assert check_owner("田中") == "田中"


# Letters of scripts written without spaces or with glued particles, and of others beside them
_LETTER_RANGES = [
    (0x4E00, 0x9FFF),
    (0x3041, 0x3096),
    (0x30A1, 0x30FA),
    (0xAC00, 0xD7A3),
    (0x0E01, 0x0E2E),
    (0x0621, 0x063A),
    (0x0410, 0x044F),
    (0x05D0, 0x05EA),
]
letters = st.one_of([st.characters(min_codepoint=lo, max_codepoint=hi) for lo, hi in _LETTER_RANGES])
glue = st.text(letters, max_size=6)


@given(before=glue, sample=st.sampled_from(GLUED), after=glue)
def test_values_never_survive_any_neighbouring_letters(before: str, sample: tuple[str, str], after: str) -> None:
    kind, value = sample
    out = clean(f"{before}{value}{after}")
    assert out == f"{before}<{kind}_1>{after}"
    assert clean(out) == out


# --- an address beside the sentence ---------------------------------------------------------------


def test_an_address_glued_to_cjk_text_is_the_address_only() -> None:
    """The address swallowed the sentence around it ("<EMAIL_1>" for the whole summary), and the
    same address in another sentence got another number."""
    out = S.sanitize(
        {
            "summary": "障害の担当者はtanaka@example.co.jpまで連絡してください",
            "lesson": "次回もtanaka@example.co.jpに相談する",
            "why": "请联系ana@example.com确认数据库迁移",
        }
    )
    assert out == {
        "summary": "障害の担当者は<EMAIL_1>まで連絡してください",
        "lesson": "次回も<EMAIL_1>に相談する",
        "why": "请联系<EMAIL_2>确认数据库迁移",
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("이메일은ana@example.com입니다", "이메일은<EMAIL_1>입니다"),
        ("อีเมลana@example.comครับ", "อีเมล<EMAIL_1>ครับ"),
        ("почтаivan@example.ruспасибо", "почта<EMAIL_1>спасибо"),
        ("電話ana.lopez@例子.广告です", "電話<EMAIL_1>"),  # a change of script ends the local part; the domain is Han
        # internationalised addresses, standing alone
        ("邮箱 用户@例子.广告 谢谢", "邮箱 <EMAIL_1> 谢谢"),
        ("почта иван@пример.рф", "почта <EMAIL_1>"),
        ("δοκιμή@παράδειγμα.δοκιμή", "<EMAIL_1>"),
        ("écris à josé.garcía@correo.es", "écris à <EMAIL_1>"),  # Latin letters with accents are one script
        ("ana@example.中国 ok", "<EMAIL_1> ok"),  # a label of another script after a dot
        ("mail ana@example.com.", "mail <EMAIL_1>."),
    ],
)
def test_an_address_ends_where_its_script_changes(text: str, expected: str) -> None:
    assert clean(text) == expected


def test_an_address_in_a_script_without_spaces_glued_to_that_script_takes_the_text_with_it() -> None:
    """Where 联系用户@例子.广告谢谢 starts or ends cannot be read: more is replaced, nothing kept."""
    assert clean("请联系用户@例子.广告谢谢") == "<EMAIL_1>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a@" + "1." * 20000 + "!", "a@" + "1." * 20000 + "!"),
        ("a@" + "例." * 20000 + "!", "<EMAIL_1>.!"),
        ("a@" + "a例." * 20000, "a@" + "a例." * 20000),
    ],
)
def test_a_long_domain_stays_linear(text: str, expected: str) -> None:
    """Each label is atomic, its first letter choosing the script: a failed match never tries
    the other script's reading of every label before it."""
    assert clean(text) == expected


# --- national ids, found by their shape and check digits ----------------------------------------------

CHECKED = [
    "11010519491231002X",  # China's resident id (GB 11643's example), ISO 7064 MOD 11-2
    "110105 19491231 002X",
    "440524198001010005",
    "900101-1234568",  # Korea's RRN
    "123.456.789-09",  # Brazil's CPF
    "112-233-445 95",  # Russia's СНИЛС
    "112-233-445-95",
    "1 84 12 76 451 089 46",  # France's NIR
    "295109912611193",
    "1 84 12 2B 451 089 60",  # born in Corsica
    "12345678Z",  # Spain's DNI
    "12345678-Z",
    "X1234567L",  # and NIE
    "RSSMRA85T10A562S",  # Italy's codice fiscale
]


@pytest.mark.parametrize("value", CHECKED)
def test_national_ids_are_found_by_their_shape_and_check(value: str) -> None:
    assert clean(f"on file: {value}.") == "on file: <GOV_ID_1>."
    assert clean(f"号码是{value}谢谢") == "号码是<GOV_ID_1>谢谢"


@pytest.mark.parametrize(
    "text",
    [
        "11010519491231002Y 11010519491231003X",  # the check fails
        "900101-1234567",
        "123.456.789-00 and 111.111.111-11",  # equal digits pass the CPF's checks
        "112-233-445 96",
        "1 84 12 76 451 089 47",
        "12345678A X1234567M",
        "RSSMRA85T10A562T",
        "240101-0012345 and 20260701-1234567",  # a dated order number: no sex digit, or no date
        "2026.123.456-78",
        "1.234.567,89 € on 01.07.2026, version 10.2.3, order 4711-0815-2026",
        "ids 44051401359 10000000146 123456789012",  # bare runs: a PESEL, a TC Kimlik, a My Number shape
    ],
)
def test_numbers_of_those_shapes_that_fail_their_check_stay(text: str) -> None:
    assert clean(text) == text


def test_an_id_that_passes_luhn_is_still_a_gov_id() -> None:
    """The ids claim their spans before the cards: 440524198001010005 passes Luhn's check too."""
    assert clean("证件 440524198001010005") == "证件 <GOV_ID_1>"


def _cpf(body: str) -> str:
    digits = [int(c) for c in body]
    for n in (9, 10):
        digits.append(sum(d * w for d, w in zip(digits, range(n + 1, 1, -1), strict=False)) * 10 % 11 % 10)
    d = "".join(map(str, digits))
    return f"{d[:3]}.{d[3:6]}.{d[6:9]}-{d[9:]}"


def _cn(region: int, day: int, serial: int) -> str:
    body = f"{region}{19000101 + day:08d}{serial:03d}"
    total = sum(int(c) * (2 ** (17 - i) % 11) for i, c in enumerate(body))
    return body + "10X98765432"[total % 11]


@given(body=st.text("0123456789", min_size=9, max_size=9), before=glue, after=glue)
def test_any_cpf_never_survives(body: str, before: str, after: str) -> None:
    assume(len(set(body)) > 1)  # 000.000.000-00 passes the checks and is no CPF
    cpf = _cpf(body)
    assert cpf not in clean(f"{before}{cpf}{after}")


@given(region=st.integers(110000, 829999), day=st.integers(0, 27), serial=st.integers(0, 999), before=glue, after=glue)
def test_any_chinese_resident_id_never_survives(region: int, day: int, serial: int, before: str, after: str) -> None:
    value = _cn(region, day, serial)
    assert value not in clean(f"{before}{value}{after}")


# --- labels in other languages -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Tél : 0612345678", "Tél : <PHONE_1>"),
        ("portable 0612345678", "portable <PHONE_1>"),
        ("telefone: 11912345678", "telefone: <PHONE_1>"),
        ("meu celular (11) 91234-5678", "meu celular <PHONE_1>"),
        ("mi móvil es 612 34 56 78", "mi móvil es <PHONE_1>"),  # "es": the label, then "is"
        ("my phone number is 4155550132", "my phone number is <PHONE_1>"),
        ("número de teléfono 612345678", "número de teléfono <PHONE_1>"),
        ("тел. 8 (912) 345-67-89", "тел. <PHONE_1>"),
        ("номер телефона 89123456789", "номер телефона <PHONE_1>"),
        ("我的手机号是13812345678", "我的手机号是<PHONE_1>"),
        ("手机 138 1234 5678", "手机 <PHONE_1>"),
        ("联系电话：13812345678", "联系电话：<PHONE_1>"),
        ("携帯09012345678まで", "携帯<PHONE_1>まで"),
        ("電話番号は09012345678です", "電話番号は<PHONE_1>です"),
        ("핸드폰 01012345678", "핸드폰 <PHONE_1>"),
        ("휴대폰번호는01012345678입니다", "휴대폰번호는<PHONE_1>입니다"),
        ("โทร0812345678ครับ", "โทร<PHONE_1>ครับ"),
        ("มือถือ 0812345678", "มือถือ <PHONE_1>"),  # a label ending in a combining vowel
        ("هاتف 0501234567", "هاتف <PHONE_1>"),
        ("주민등록번호 900101-1234567", "주민등록번호 <GOV_ID_1>"),  # issued after 2020: no check digit
        ("주민등록번호는9001011234567", "주민등록번호는<GOV_ID_1>"),
        ("身份证号是110105194912310021", "身份证号是<GOV_ID_1>"),
        ("CPF 12345678909 e PESEL: 44051401359", "CPF <GOV_ID_1> e PESEL: <GOV_ID_2>"),
        ("mój PESEL to 44051401359", "mój PESEL to <GOV_ID_1>"),
        ("DNI 12345678 Z, NIE X1234567M", "DNI <GOV_ID_1>, NIE <GOV_ID_2>"),  # spaced; a wrong letter
        ("NIR 184127645108947", "NIR <GOV_ID_1>"),
        ("numéro de sécurité sociale 1 84 12 76 451 089 47", "numéro de sécurité sociale <GOV_ID_1>"),
        ("TC Kimlik No 10000000146", "TC Kimlik No <GOV_ID_1>"),
        ("T.C. Kimlik numarası: 10000000146", "T.C. Kimlik numarası: <GOV_ID_1>"),
        ("СНИЛС 11223344595, паспорт 4509 123456", "СНИЛС <GOV_ID_1>, паспорт <GOV_ID_2>"),
        ("マイナンバー 1234 5678 9012", "マイナンバー <GOV_ID_1>"),
        ("マイナンバーは123456789012", "マイナンバーは<GOV_ID_1>"),
        ("My Number 1234 5678 9012", "My Number <GOV_ID_1>"),
        ("PESEL是44051401359", "PESEL是<GOV_ID_1>"),
    ],
)
def test_labels_of_other_languages_name_their_numbers(text: str, expected: str) -> None:
    assert clean(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Das habe ich nie 123456 Mal gesagt",  # "nie", "dni", "nir" label only in capitals
        "przez dni 123456 i 654321",
        "я хотел 1234567 рублей",  # a word ending in a label's letters is not the label
        "hotel是1234567",
        "电话会议 20260714 开始",  # a label in the middle of a word
        "手机壳 12345678 个",
        "2026年7月14日に会議、版本2.3发布，共有1500个用户",
        "Tel Aviv 2026 and the portable 12 GB disk",
        "mobile is 1520000 users",
    ],
)
def test_words_like_labels_leave_their_numbers(text: str) -> None:
    assert clean(text) == text


def test_a_key_in_another_language_labels_its_value() -> None:
    from memdb.memory.sanitize import sanitize_fields
    from memdb.memory.sanitize.fields import flatten_texts

    keyed = {"手机": "13812345678", "手机号": 13812345678, "CPF": "12345678909", "pesel": 44051401359, "телефон": "89123456789"}
    flat, rebuild = flatten_texts({"decisions": keyed})
    assert rebuild(sanitize_fields(S, flat))["decisions"] == {
        "手机": "<PHONE_1>", "手机号": "<PHONE_1>", "CPF": "<GOV_ID_1>", "pesel": "<GOV_ID_2>", "телефон": "<PHONE_2>"
    }  # fmt: skip


def _label_words() -> list[str]:
    from memdb.memory.sanitize.detect import _CAPITALS_ONLY, _LABELS

    return sorted(w.upper() if w in _CAPITALS_ONLY else w for w, kind in _LABELS.items() if kind in ("PHONE", "GOV_ID") and "-" not in w)


@pytest.mark.parametrize("label", _label_words())
def test_every_label_word_names_a_number_after_it(label: str) -> None:
    """Spaced, and glued as Chinese, Japanese, Korean and Thai write it."""
    from memdb.memory.sanitize.detect import _LABELS, _UNSPACED

    kind = _LABELS[label.lower()]
    assert clean(f"{label} 5551234567") == f"{label} <{kind}_1>"
    if _UNSPACED.match(label):
        assert clean(f"我们{label}5551234567") == f"我们{label}<{kind}_1>"


# --- phones written as Brazil, Russia and China write them --------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["(11) 91234-5678", "(11) 3456-7890", "(21) 2345 6789", "8 (912) 345-67-89", "8(912)345-67-89", "8-912-345-67-89", "(495) 123-45-67",
     "138-1234-5678", "(010) 1234-5678", "(0755) 12345678"],
)  # fmt: skip
def test_national_phone_forms_are_phones(value: str) -> None:
    assert clean(f"ligue {value} hoje") == "ligue <PHONE_1> hoje"


@pytest.mark.parametrize(
    "text",
    [
        "Nature 45 (12) 2345-2356",  # a volume, its issue and pages
        "vol 45(12) 2345-2356",
        "(12) 2019-2020 season and (3) 2019-2020",
        "scores (12) 1234 5678",
        "13812345678 and 138 1234 5678",  # a Chinese mobile unlabelled, bare or spaced: any number
        "ISBN 978-3-16-148410-0, 2019-2020-2021",
    ],
)
def test_look_alikes_of_national_phone_forms_stay(text: str) -> None:
    assert clean(text) == text


# --- the shortcuts ---------------------------------------------------------------------------------


@given(
    st.lists(
        st.one_of(glue, st.sampled_from([v for _, v in GLUED]), st.sampled_from(CHECKED), st.sampled_from(["电话", "PESEL", " "])),
        max_size=6,
    )
)
def test_the_shortcuts_change_nothing_in_other_scripts(parts: list[str]) -> None:
    """As ``test_sanitize.py::test_the_no_hint_shortcuts_change_nothing``, for values among letters
    of other scripts: the clustered detectors see every value the full scan would."""
    import memdb.memory.sanitize.detect as sanitize_module

    texts = {"summary": "".join(parts)}
    fast = S.scan(texts)
    slow_sanitizer = RegexSanitizer()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sanitize_module, "_MAYBE_PII", re.compile(""))
        patch.setattr(slow_sanitizer, "_unclustered", slow_sanitizer._detectors)
        slow = slow_sanitizer.scan(texts)
    assert fast == slow


def test_a_secret_replaced_in_another_field_frees_what_was_glued_to_it() -> None:
    """A phone glued to a secret known from another field was kept, and a second sanitizing,
    with the secret a placeholder, replaced it: the result was no fixpoint."""
    texts = {"a": "token=x1y2z3", "b": "x1y2z3+49 30 901820"}
    out = S.sanitize(texts)
    assert out == {"a": "token=<SECRET_1>", "b": "<SECRET_1><PHONE_1>"}
    assert S.sanitize(out) == out


@pytest.mark.parametrize(
    "value",
    [
        "(02) 9876 5432",  # Australia: a one-digit area code after the trunk 0, in parentheses
        "(06) 1234 5678",  # a Dutch mobile so written
        "(0049) 30 901820",  # the "00" international prefix in parentheses
        "(0044) 20 7946 0958",
        "011 44 20 7946 0958",  # NANP's exit code
    ],
)
def test_parenthesised_trunk_and_exit_code_phones_are_phones(value: str) -> None:
    assert clean(f"Call me back on {value} please") == "Call me back on <PHONE_1> please"


@pytest.mark.parametrize(
    "text", ["pages (12) 2019-2020", "in (2019) 1234 5678 rows", "v(02) 9876 5432", "2011 44 20 7946 0958", "(00) 1234 5678"]
)
def test_look_alikes_of_parenthesised_phones_stay(text: str) -> None:
    assert clean(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "https://maps.googleapis.com/maps/api/js?key=AIzaSyD3xAmPlE0123456789abcdefghijklmno&callback=x",
            "https://maps.googleapis.com/maps/api/js?key=<SECRET_1>&callback=x",
        ),
        ("https://maps.example.com/api?key=PLANTEDmapsKey77&q=x", "https://maps.example.com/api?key=<SECRET_1>&q=x"),
        ("GET /v1?q=1&key=0123456789abcdefXYZ", "GET /v1?q=1&key=<SECRET_1>"),
        ("/search?key=name&sort=asc", "/search?key=name&sort=asc"),  # a word, not a key
        ("sort key=name_of_the_column_v2", "sort key=name_of_the_column_v2"),  # no URL's parameter
    ],
)
def test_a_url_key_parameter_is_an_api_key(text: str, expected: str) -> None:
    assert clean(text) == expected


def test_a_key_naming_a_phone_makes_its_number_a_phone() -> None:
    """``{"msisdn": 447700900123}`` in a tool's input was kept: "msisdn" named no phone."""
    from memdb.memory.sanitize import sanitize_fields
    from memdb.memory.sanitize.fields import flatten_texts

    flat, rebuild = flatten_texts({"decisions": {"msisdn": 447700900123, "MSISDN": "447700900124"}})
    assert rebuild(sanitize_fields(S, flat))["decisions"] == {"msisdn": "<PHONE_1>", "MSISDN": "<PHONE_2>"}
    assert clean("MSISDN 447700900123, BSN: 123456782") == "MSISDN <PHONE_1>, BSN: <GOV_ID_1>"
