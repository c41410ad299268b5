"""The PII sanitizer on text in other scripts and countries: values written against letters of
scripts that use no spaces, national ids and phone forms, label words in other languages."""

from __future__ import annotations

import pytest
from hypothesis import given
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
        ("用mysql -uroot -pS3cret连接", "用mysql -uroot -p<SECRET_1>"),  # a bare value runs to a space
        ("실행sshpass -p hunter2 ssh", "실행sshpass -p <SECRET_1> ssh"),
    ],
)
def test_credentials_after_letters_of_another_script(text: str, expected: str) -> None:
    assert clean(text) == expected


@pytest.mark.parametrize(
    "text",
    [
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
    assert clean(f"{before}{value}{after}") == f"{before}<{kind}_1>{after}"


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
