"""PII sanitizer: every text field of an episode passes through here before anything reaches disk.

Detected values become typed placeholders ``<EMAIL_1>``, ``<PHONE_2>``, ``<SECRET_1>`` ... numbered
by first appearance across *all* fields of one episode (field order, then position), so the same
email in ``summary`` and ``content`` reads as the same ``<EMAIL_1>`` and the memory stays useful.

Detectors claim spans in a fixed order, most specific and most dangerous first; a later
detector never touches a span an earlier one claimed:

    SECRET   the secrets this process registered (:mod:`.known`: a server's tokens), first and
             whatever their shape; PEM and PuTTY private keys; token shapes ``sk-``,
             ``ghp_``/``gho_``/``github_pat_``, ``xox[bpars]-``/``xapp-``, ``AKIA``/``ASIA``,
             ``AIza``, JWTs, Stripe ``sk_live_``/``rk_live_``, GitLab ``glpat-`` and its kin, npm
             ``npm_``, PyPI ``pypi-``, Hugging Face ``hf_``/``api_org_``, Twilio ``AC``/``SK`` + 32
             hex, Stripe ``whsec_``, Slack and Discord webhook paths, SendGrid ``SG.``, Mailchimp
             ``-us12``, Mailgun ``key-``, Square ``sq0csp-``/``sq0atp-``/``EAAA``, Google OAuth
             ``GOCSPX-``, Vault ``hvs.``/``s.``, DigitalOcean ``dop_v1_``, Shopify ``shpat_``...,
             Telegram bot tokens, age ``AGE-SECRET-KEY-1`` (after gitleaks' and detect-secrets'
             rules, named where they are ported), an AWS
             secret key beside its key id; ``Bearer <token>`` and ``Basic <base64>``; the password of
             ``scheme://user:password@host`` for any host (unescaped "/" and "?" in it too); the
             value of ``password=``/``api_key:``/``:=``/``=>``/``"secret": "..."`` style
             assignments under any key :func:`is_secret_key` accepts, JSON escaped inside JSON too
             (the key is kept; a prose word after a label, "Token: see", is no value); a value a
             secret key names beside it (``<password>...</password>``, ``key="ApiKey"
             value="..."``, ``{"name": "DB_PASSWORD", "value": ...}``); a command line's
             ``--password x``, ``-pw x``, ``curl -u user:x``, ``mysql -px``, ``-passin pass:x``,
             ``htpasswd -b f user x``; the whole of a field named with :data:`SECRET_FIELD` (a dict
             value under such a key); and, after the emails, a random token of no known shape
             (``_detect_random_tokens``: 32 or more URL-safe characters reading as no words)
    EMAIL    ``local@domain.tld``, and ``local%40domain.tld`` as a URL writes it; the local part and
             each label of the domain end where Latin letters meet those of another script
             (``担当者はtanaka@example.co.jpまで``), so an address glued to the sentence is the address
    IBAN     ISO 13616 in either case, grouped by spaces or dashes, mod-97 checked
    GOV_ID   ids whose written shape and check digits tell them from other numbers (:mod:`.national`):
             China's resident id, Korea's RRN ``900101-1234568``, Brazil's CPF ``123.456.789-09``,
             Russia's СНИЛС ``112-233-445 95``, France's NIR (2A/2B too), Spain's DNI and NIE,
             Italy's codice fiscale; the UK's National Insurance number, India's PAN, Canada's SIN
             (``ddd-ddd-ddd``, Luhn checked). Before the cards: a Chinese id may pass Luhn's check
    CARD     13-19 digits, optional single spaces/dashes (or dots or slashes between groups of
             four), first digit 2-6 (payment cards), Luhn checked; after a "+" more digits than a
             phone number holds (``+4111 1111 1111 1111``)
    SSN      US ``ddd-dd-dddd`` or ``ddd dd dddd`` without the never-issued areas 000/666/9xx,
             group 00, serial 0000, spaced after a written date too (``1985-3-14 219 09 9999``,
             ``14 March 1985 219 09 9999``, ``2024-06-01 123 45 6789``: ``_ssn``); each of
             a run of them, NANP phones and dates joined by a bare "-" (``010-01-1000-001-01-0001``,
             ``1985-03-14-219-09-9999``), or of one and two groups or more on one side
             (``415-200-0000-646-555-010``), which none reads alone
    IP       IPv6 (with at least one decimal digit) and IPv4 (zero-padded parts too), validated with
             :mod:`ipaddress`, and the address an EC2 host name spells (``ip-10-20-30-40``)
    PHONE    ``+`` international forms (8-15 digits), NANP ``(415) 555-0132``/``415-555-0132``,
             trunk-prefix national forms ``020 7946 0958``, ``030/12345678``, ``01.23.45.67.89``
             (10-13 digits, one separator) or ``00`` international ones ``0044 20 7946 0958``;
             an area code in parentheses or a mobile prefix as Brazil, Russia and China write
             them, ``(11) 91234-5678``, ``8 (912) 345-67-89``, ``138-1234-5678``, a trunk 0 in
             parentheses ``(02) 9876 5432``, an exit code ``(0049) 30 901820``, ``011 44 20 7946 0958``; national forms
             need separators, so bare numbers, dates, times, versions and timestamps stay
    (label)  a number its label names, whatever its shape (``_LABELS``, found from each number
             back to the word before it): ``Tel. 089/123456-0`` a PHONE; ``Steuer-ID``, ``SV-Nr``,
             ``SSN``, ``NINO``, passport, Aadhaar and ``SIN`` numbers a GOV_ID, and the same words
             of other languages (``Tél``, ``celular``, ``тел.``, ``电话``, ``携帯``, ``핸드폰``;
             ``PESEL``, ``CPF``, ``DNI``, ``codice fiscale``, ``TC Kimlik``, ``СНИЛС``,
             ``주민등록번호``, ``身份证``, ``マイナンバー``), glued to the number as Chinese,
             Japanese, Korean and Thai write them too (``我的手机号是13812345678``); ``Kontonummer``,
             ``BLZ``, account, routing and sort code numbers an ACCOUNT; ``CVC``, ``CVV``, ``PIN``,
             ``TAN`` a SECRET; not a date, a decimal, money or a quantity after the label word
             ("account 150000 euros"); a key labels its value the same way (``"cvc": "947"``,
             ``routing_number=...``, and a dict key: :data:`LABEL_FIELD`); and "the password is X"
             said in prose

then the caller's ``extra`` patterns. Text already shaped like a placeholder is never touched,
and detection repeats until a pass finds nothing, so ``sanitize`` is idempotent by construction
(``tests/memory/test_sanitize.py::test_idempotent``).

Speed: one search for a hint (a digit, ``@``, ``:``, ``=``, a token prefix, ``Basic``) lets most prose
skip every built-in detector. A regex that starts with a character class costs ~6 ns per
character of text, one that starts with a literal a tenth of that. So digit-based detectors run
only inside "clusters" (runs of digits, capitals and phone punctuation) found by one scan, and
the rest are anchored on literals (``@``, ``:``, ``=``, token prefixes); text without a cluster
skips the clustered detectors, and one search for the token prefixes stands for the seven token
shapes. A 2,000-character note takes tens of µs. Time
is linear in the text length even for hostile input: repeats are bounded, and word-boundary
tests sit where they fail at once (``tests/memory/test_sanitize.py::test_repetitive_input``).

Values are found however they are typed: detectors read a copy in which every digit, space and
dash of any script, and the full-width forms, are folded to ASCII, characters that show nothing
(zero-width spaces, soft hyphens, combining accents) are dropped, a line break is one space
and a URL's percent-escapes are decoded (:func:`_read`); what they find is replaced in the text
as written, its span mapped back (``_Pass.origin``, ``_Pass.end``). So ``４１１１ １１１１ …``,
``١٢٣-٤٥-٦٧٨٩``, ``4539\u200b1488…``, a card wrapped onto the next line (``\r\n`` too),
``?phone=%2B1415…``, ``jörg@bücher.de`` and a lower-case IBAN are replaced like their plain forms.
A blank line, an indent, a tab or a "+" outside a query value still parts two numbers: a column
of counts or ``size=512+256+1024`` is no phone. Only an ASCII letter, digit or "_" glues a value
into a word (``v10.1.2.3``, ``id_4155550132``); a letter of another script is text around it, as
Chinese, Japanese and Thai write no spaces and Korean glues its particles on
(``電話番号は090-1234-5678です``), so the patterns that test a word's boundary do so in ASCII
(``re.ASCII``; ``tests/memory/test_sanitize_intl.py``).

Known limits: secrets written as prose other than "the password (passcode, PIN) is X" (in
English and German; a label or key of another language, ``Passwort:``, ``密码：``, is read), a
random token shorter than 32 characters, in a URL's path or reading as words, numbers in
spaced groups without a label (an Aadhaar number, a SIN, a My Number), ids written as bare digits
without a label (a PESEL, a TC Kimlik, a Steuer-ID, a CPF or СНИЛС without its punctuation: a
one- or two-digit check passes one number in ten or a hundred), a Chinese mobile without its
label or dashes, lower-case PAN, NI, DNI and codice fiscale, names and street addresses are not
detected; a 4-part version such as ``1.2.3.4`` is a valid IPv4 address and is replaced; an
address in a script written without spaces glued to text of the same script
(``请联系用户@例子.广告谢谢``) takes that text with it, where it starts being unreadable; about
one in 26 tokens of eight digits and a capital (``16777216K``) reads as a DNI; digits
outside the Basic Multilingual Plane (mathematical bold digits) are not folded.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import collections
import functools
import html
import ipaddress
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, TypeAlias, runtime_checkable

from memdb.errors import ConfigError, SanitizerError, ValidationError
from memdb.memory.sanitize.known import known_secrets
from memdb.memory.sanitize.national import CHECKED_IDS, compact

__all__ = [
    "LABEL_FIELD",
    "PLACEHOLDER",
    "SECRET_FIELD",
    "RegexSanitizer",
    "SanitizeResult",
    "Sanitizer",
    "argv_secrets",
    "is_secret_key",
    "label_of_key",
    "sanitize_fields",
]

PLACEHOLDER: Final = re.compile(r"<([A-Z][A-Z0-9_]*)_([0-9]+)>")
"""A placeholder ``<KIND_n>``; text of this shape passes through every sanitizer unchanged."""

SECRET_FIELD: Final = "~secret:"
"""A field whose name starts with this holds a value found under a secret-looking key (``{"password":
...}``, see :func:`is_secret_key`): the sanitizer replaces all of it with one ``<SECRET_n>``."""

LABEL_FIELD: Final = "~label:"
"""A field whose name holds this after its path, then a kind (``decisions.0.1~label:SECRET``), holds
the value of a dict key that is a label (``{"cvc": "947"}``, see :func:`label_of_key`): the sanitizer
reads it as if the label were written before it. A hint only: the name still starts with the
record's field and path, so a sanitizer that ignores the hint sees the value where it is."""

_KIND_NAME: Final = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_MAX_PASSES: Final = 8  # a second pass finds nothing in practice; the bound only guards against a bad extra pattern


@runtime_checkable
class Sanitizer(Protocol):
    """Anything that redacts the text fields of one episode at once (field name -> text)."""

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        """Return the same keys with sanitized text; placeholders are consistent across fields.

        A name is the record's field, then the path of a nested value (``decisions.0[1]``, a dict
        key's own text ``decisions.0:key``), so a sanitizer may route by the name's start: every
        field holding user text starts with that field's name. Two forms carry a key's verdict:
        a name starting with :data:`SECRET_FIELD` is a secret whole (capture replaces it with a
        ``<SECRET_n>`` itself if the result is anything else: fail closed); a name ending in
        :data:`LABEL_FIELD` and a kind (``decisions.0~label:GOV_ID``) is the value of a label key
        (``{"ssn": ...}``), user text like its field, which the built-in sanitizer reads as the
        label makes it. Other names starting with "~" (``~placeholders``) are context, not stored."""
        ...


@dataclass(frozen=True)
class SanitizeResult:
    """Sanitized fields plus the number of replacements per placeholder kind (for audit counters)."""

    texts: dict[str, str]
    counts: dict[str, int]


# --- one detection pass ------------------------------------------------------------------------

Span: TypeAlias = tuple[int, int, str]
"""(start, end, key): the key is the normalised value, so "Bob@X.com" and "bob@x.com" share a number."""

_CLUSTER: Final = re.compile(r"[0-9A-Z(+][0-9A-Z ().+/-]{6,}")

# Scans of a whole text at a literal's speed: a regex whose first item is a class tests each
# character in a generic loop (~13 ns a character), one starting with a repeat ("[0-9]+") tries a
# match at each (~30 ns), one starting with a literal skips to it in a tight loop (~0.2 ns). So
# those scans read the text as bytes, each character's class one letter (a ``bytes.translate``
# table lookup; a character outside ASCII one "?", so positions stay), and look for that letter.
_CLUSTER_CLASSES: Final = bytes(
    ord("s") if chr(i) in "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ(+" else ord("b") if chr(i) in " )./-" else ord("x") for i in range(256)
)
_CLUSTER_BYTES: Final = re.compile(rb"s[sb]{6,}")  # _CLUSTER, its first class "s", the rest "s" or "b"
_DIGIT_CLASSES: Final = bytes(ord("d") if chr(i) in "0123456789" else ord("x") for i in range(256))
_DIGITS_BYTES: Final = re.compile(rb"dd*")  # [0-9]+: a literal first, not a repeat


# The non-ASCII characters that can stand in a value for an ASCII one: the decimal digits of
# every script in the Basic Multilingual Plane, spaces, dashes and the minus sign, and the
# full-width forms of what PII is written with (letters, "@", ".", "/", "+", "-", parentheses; ":"
# and "=", which Chinese and Japanese input writes full-width: "api_key：...").
# Other text, CJK punctuation included, is read as written. Ranges, not \d and \s: the regex
# engine tests a BMP-only class in one step, where a lookahead for "not ASCII" costs 3x.
_NON_ASCII_DIGITS: Final = (  # tests/memory/test_sanitize.py checks these against unicodedata
    "\u0660-\u0669\u06f0-\u06f9\u07c0-\u07c9\u0966-\u096f\u09e6-\u09ef\u0a66-\u0a6f\u0ae6-\u0aef"
    "\u0b66-\u0b6f\u0be6-\u0bef\u0c66-\u0c6f\u0ce6-\u0cef\u0d66-\u0d6f\u0de6-\u0def\u0e50-\u0e59"
    "\u0ed0-\u0ed9\u0f20-\u0f29\u1040-\u1049\u1090-\u1099\u17e0-\u17e9\u1810-\u1819\u1946-\u194f"
    "\u19d0-\u19d9\u1a80-\u1a89\u1a90-\u1a99\u1b50-\u1b59\u1bb0-\u1bb9\u1c40-\u1c49\u1c50-\u1c59"
    "\ua620-\ua629\ua8d0-\ua8d9\ua900-\ua909\ua9d0-\ua9d9\ua9f0-\ua9f9\uaa50-\uaa59\uabf0-\uabf9"
    "\uff10-\uff19"
)
_NON_ASCII_SPACES: Final = "\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_FOLDABLE_CHARS: Final = (
    f"{_NON_ASCII_DIGITS}{_NON_ASCII_SPACES}\u058a\u05be\u2010-\u2015\u2212\ufe58\ufe63"
    "\uff08\uff09\uff0b\uff0d\uff0e\uff0f\uff1a\uff1d\uff20-\uff3a\uff41-\uff5a"
)
_FOLDABLE: Final = re.compile(f"[{_FOLDABLE_CHARS}]")
# Characters that show nothing of their own, so one inside a value hid it ("4539\u200b1488...", a
# soft hyphen, a BOM; "jose\u0301.garcia@..." as NFD writes it): every format character (Cf) of
# every plane, tags included, and the combining marks of Latin and of symbols (the keycap of
# "4\ufe0f\u20e3") with the variation selectors. Dropped from what the detectors read; a value's
# span still covers them in the original. Marks of other scripts' own blocks are read as written.
_HIDDEN_BMP: Final = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
    "\ufff9-\ufffb\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe00-\ufe0f\ufe20-\ufe2f"
)
_HIDDEN_ASTRAL: Final = (
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "\U000e0100-\U000e01ef"
)
_HIDDEN_CHARS: Final = _HIDDEN_BMP + _HIDDEN_ASTRAL  # tests/memory/test_sanitize.py checks these against unicodedata
# One scan of non-ASCII text for both; a class of BMP ranges only is tested in one step, where
# astral ranges in it cost 6x, so those get a scan of their own in the rare text that has any.
_TO_FOLD: Final = re.compile(f"[{_FOLDABLE_CHARS}{_HIDDEN_BMP}]")
_ASTRAL: Final = re.compile("[\U00010000-\U0010ffff]")
_TO_FOLD_ASTRAL: Final = re.compile(f"[{_HIDDEN_ASTRAL}]")


class _Fold(dict[str, str]):
    """The ASCII character each :data:`_TO_FOLD` one stands for, worked out on first use; a hidden
    one reads as NUL, which :func:`_read` then drops (with NULs of the text: they show nothing either)."""

    def __missing__(self, c: str) -> str:
        digit = unicodedata.decimal(c, None)
        if digit is not None:
            folded = str(digit)
        elif c.isspace():
            folded = " "
        elif unicodedata.category(c) == "Pd" or c == "\u2212":
            folded = "-"
        elif "\uff08" <= c <= "\uff5a":  # a full-width form
            folded = unicodedata.normalize("NFKC", c)
        else:  # _HIDDEN_CHARS
            folded = "\x00"
        self[c] = folded  # bounded: only _TO_FOLD characters come here
        return folded


_FOLD: Final = _Fold()


def _fold(m: re.Match[str]) -> str:
    return _FOLD[m.group()]


# What the detectors read other than as written, found by scans anchored on literals: hidden
# characters (NUL once folded), a Windows line break (raw or escaped in JSON: one space, as "\n"
# is), a percent-escape, an HTML character reference (a page a tool fetched writes
# "ana&#64;example.com" and "+1&nbsp;415&nbsp;555&nbsp;0132") and a "+" between digits (a space in
# a query value, see _in_query).
# A lone line break, "\r" or JSON's "\\n", "\\r", "\\t" is a space one for one, so a value wrapped
# onto the next line is read whole while a blank line, an indent or a tab still part two numbers:
# "415\n\n555\n\n2671" and a column of counts are no phone (tests/memory/test_sanitize.py::
# test_columns_and_arithmetic_stay).
# Each a pattern of its own starting with a literal, which the regex engine finds at memchr's
# speed (an alternation of them is tested at every position: 40x slower); no two can overlap.
# The named references that stand for a character a value can hold or be parted by (numeric ones
# can stand for any): "&amp;", "&lt;" or "&copy;" in a page are not read through (they hide no
# value, and a page is full of them).
_PII_REFERENCES: Final = (
    "commat", "plus", "period", "colon", "sol", "equals", "lpar", "rpar", "num", "hyphen", "dash", "minus",
    "ndash", "nbsp", "ensp", "emsp", "thinsp", "Tab", "NewLine", "shy", "zwnj", "zwj", "lrm", "rlm",
)  # fmt: skip
_EDITS: Final = (
    ("\x00", re.compile(r"\x00+")),
    ("\r\n", re.compile(r"\r\n")),
    ("\\r\\n", re.compile(r"\\r\\n")),
    ("%", re.compile(r"%[0-9A-Fa-f]{2}")),
    ("&", re.compile(rf"&(?:#[0-9]{{1,7}}|#[xX][0-9A-Fa-f]{{1,6}}|{'|'.join(_PII_REFERENCES)});")),
    ("+", re.compile(r"\+(?<=[0-9]\+)(?=[0-9])")),
)
_ESCAPED_BREAK: Final = re.compile(r"\\[nrt]")  # two characters, two spaces: positions stay
_QUERY_REACH: Final = 64  # a "+" is a space in a query value: an "=" this close before it, no space between
_QUERY_END: Final = re.compile(r"[^\s&\"'<>]*&")  # the rest of a query value, to the "&" of the next
_NO_CUTS: Final[tuple[list[int], list[int], list[int]]] = ([], [], [])


def _in_query(text: str, plus: int) -> bool:
    """Whether the "+" at ``plus`` is in a query value (a space there): after an "=" with no space
    between, that pair being one of a query string, a "?" or "&" before its name or a "&" after its
    value ("?phone=+44+20...", "card=4539+1488+...&cvc=..."); "size=512+256" is arithmetic."""
    eq = text.rfind("=", max(0, plus - _QUERY_REACH), plus)
    if eq == -1 or _SPACE.search(text, eq, plus) is not None:
        return False
    name = max(text.rfind("?", max(0, eq - _QUERY_REACH), eq), text.rfind("&", max(0, eq - _QUERY_REACH), eq))
    if name != -1 and _SPACE.search(text, name, eq) is None:
        return True
    return _QUERY_END.match(text, plus, plus + _QUERY_REACH) is not None


def _read(text: str) -> tuple[str, tuple[list[int], list[int], list[int]]]:
    """What the detectors read, and where its characters were in ``text``: each character that can
    stand for an ASCII one in PII folded to it (``４``, ``٤`` -> ``4``; a non-breaking hyphen ->
    ``-``; ``＠`` -> ``@``; a no-break space -> a space); hidden characters dropped; a line break
    a space ("4539 1488\\r\\n0343 6467" is a card wrapped onto the next line); a percent-escape
    decoded ("%2B1415...", "4539%201488...", but ``%40``, which ``_detect_emails`` reads in place)
    and a "+" between digits in a query value a space.

    The cuts are three lists: the positions of the read text after which characters of ``text``
    were dropped, how many in all up to each, and how many of those at each were hidden characters
    (which belong to no value: ``_Pass.end``); spans are replaced in ``text``, so what is around a
    value is kept as written, and a value's span covers what was dropped in it."""
    if not text.isascii():
        text = _TO_FOLD.sub(_fold, text)
        if _ASTRAL.search(text) is not None:
            text = _TO_FOLD_ASTRAL.sub(_fold, text)
    cuts = _NO_CUTS
    if "%" in text or "+" in text or "\x00" in text or "\r" in text or "\\" in text or "&" in text:  # most short texts have none
        edits = [m for c, pattern in _EDITS if c in text for m in pattern.finditer(text)]
        if edits:
            text, cuts = _edited(text, sorted(edits, key=re.Match.start) if len(edits) > 1 else edits)
    if "\n" in text:
        text = text.replace("\n", " ")  # a value wrapped onto the next line
    if "\r" in text:
        text = text.replace("\r", " ")
    if "\\" in text:  # JSON's escapes in a string holding JSON: "key\\n10.20.30.40" starts a line too
        text = _ESCAPED_BREAK.sub("  ", text)
    return text, cuts


def _edited(text: str, edits: list[re.Match[str]]) -> tuple[str, tuple[list[int], list[int], list[int]]]:
    """``text`` with each of ``edits`` (:data:`_EDITS` matches, in order) read as it stands for, and
    the cuts (:func:`_read`)."""
    pieces: list[str] = []
    at: list[int] = []
    dropped: list[int] = []
    hidden: list[int] = []
    pos = size = 0  # in text; in the text read so far
    for m in edits:
        start, end = m.span()
        c = text[start]
        if c == "\x00":
            # hidden characters join what is on both sides ("4539\u200b1488", "ghp_\u200bAbc...",
            # "123\u200b-45-6789"), but a word and a number they part, as a space does: joined,
            # "host\u200b203.0.113.77" and "call\u200b+1 415 555 0132" hid the address and the
            # phone (a review's finds). Where they join two words of letters the value may take the
            # word with it ("Email\u200bana@..."): more is replaced, nothing leaks
            left, right = text[start - 1 : start], text[end : end + 1]
            parts = (left.isalpha() and (right.isdigit() or right in "+(")) or (right.isalpha() and left.isdigit())
            new = " " if parts else ""
        elif c == "%":
            code = int(text[start + 1 : end], 16)
            if code in (0x09, 0x0A, 0x0D):
                new = " "
            elif 0x20 <= code < 0x7F and code != 0x40:
                new = chr(code)
            else:
                continue
        elif c == "&":
            char = _character_reference(m.group())
            if char is None:
                continue
            new = char
        elif c == "+":
            if not _in_query(text, start):
                continue
            new = " "
        else:  # a Windows line break
            new = " "
        pieces += (text[pos:start], new)
        size += start - pos + len(new)
        at.append(size)
        dropped.append((dropped[-1] if dropped else 0) + end - start - len(new))
        hidden.append(0 if new else end - start)
        pos = end
    if not pieces:
        return text, _NO_CUTS
    pieces.append(text[pos:])
    return "".join(pieces), (at, dropped, hidden)


@functools.lru_cache(maxsize=1024)
def _character_reference(ref: str) -> str | None:
    """What an HTML character reference stands for as the detectors read it ("&#64;" -> "@",
    "&nbsp;" -> " ", "&#8203;" -> "", hidden), or None for a name HTML does not define or one
    that stands for more than one character (read as written)."""
    char = html.unescape(ref)
    if char == ref or len(char) != 1:
        return None
    if char in "\t\n\r":
        return " "
    if not char.isascii() and (_TO_FOLD.fullmatch(char) or _TO_FOLD_ASTRAL.fullmatch(char)):
        char = _FOLD[char]
    return "" if char == "\x00" else char


def detection_text(text: str) -> str:
    """What the detectors read of ``text`` (:func:`_read`)."""
    return _read(text)[0]


class _Pass:
    """One pass over one text: the spans claimed so far and, computed once, the numeric clusters.

    Detectors read ``text`` (:func:`_read`); spans are claimed there and replaced in ``source``
    where ``origin`` maps them."""

    __slots__ = ("_at", "_bytes", "_clusters", "_dropped", "_hidden", "_scripts", "label", "quiet", "source", "spans", "starts", "text")

    def __init__(
        self, source: str, label: str | None = None, read: tuple[str, tuple[list[int], list[int], list[int]]] | None = None
    ) -> None:
        """``read``: ``_read(source)``, if the caller read it already."""
        self.source = source
        self.label = label  # the kind a dict key names for the value at the start (``LABEL_FIELD``)
        self.quiet: set[str] = set()  # secrets claimed that are not replaced in other fields (``_replace_known_secrets``)
        text, (self._at, self._dropped, self._hidden) = _read(source) if read is None else read
        self.text = text
        self.starts: list[int] = []
        self.spans: list[tuple[int, int, str, str]] = []  # (start, end, kind, key); kind "" = placeholder already there
        self._clusters: list[tuple[int, int, str]] | None = None
        self._bytes: bytes | None = None
        self._scripts: tuple[list[int], list[int]] | None = None
        if "<" in text:
            for m in PLACEHOLDER.finditer(text):
                self.claim(m.start(), m.end(), "", "")

    def origin(self, pos: int) -> int:
        """Where the character at ``pos`` of ``text`` is in ``source`` (a span's start): after what
        was dropped before it, hidden characters included."""
        if not self._at:
            return pos
        i = bisect.bisect_right(self._at, pos)
        return pos + self._dropped[i - 1] if i else pos

    def end(self, pos: int) -> int:
        """Where a span ending at ``pos`` of ``text`` ends in ``source``: just after its last
        character, the rest of a percent-escape or "\\r\\n" included, but not the hidden characters
        after it, which belong to the text that follows (a right-to-left mark closing a run:
        ``tests/memory/test_sanitize.py::test_hidden_characters_after_a_value_are_kept``)."""
        if not self._at:
            return pos
        i = bisect.bisect_right(self._at, pos)
        if not i:
            return pos
        end = pos + self._dropped[i - 1]
        while i and self._at[i - 1] == pos:  # dropped right after the value: only hidden ones stay
            end -= self._hidden[i - 1]
            i -= 1
        return end

    def claim(self, start: int, end: int, kind: str, key: str) -> bool:
        """Claim ``text[start:end]`` for ``kind`` unless it is empty or overlaps an earlier claim."""
        if end <= start:
            return False
        i = bisect.bisect_right(self.starts, start)
        if (i and self.spans[i - 1][1] > start) or (i < len(self.starts) and self.starts[i] < end):
            return False
        self.starts.insert(i, start)
        self.spans.insert(i, (start, end, kind, key))
        return True

    @property
    def clusters(self) -> list[tuple[int, int, str]]:
        """Maximal runs of ``[0-9A-Z ().+-]``; every digit-based match lies inside one of them."""
        if self._clusters is None:
            text = self.text
            self._clusters = [
                (m.start(), m.end(), text[m.start() : m.end()]) for m in _CLUSTER_BYTES.finditer(self.ascii.translate(_CLUSTER_CLASSES))
            ]
        return self._clusters

    @property
    def ascii(self) -> bytes:
        """``text`` as bytes, a character outside ASCII one "?": for the scans by class (``_CLUSTER_CLASSES``)."""
        if self._bytes is None:
            self._bytes = self.text.encode("ascii", "replace")
        return self._bytes

    @property
    def script_changes(self) -> tuple[list[int], list[int]]:
        """Where the letters of ``text`` change script, and the letter before each (``_script_end``)."""
        if self._scripts is None:
            self._scripts = _script_changes(self.text)
        return self._scripts


Detector: TypeAlias = Callable[[_Pass], None]
_Check: TypeAlias = Callable[[re.Match[str]], Span | None]


def _search(p: _Pass, kind: str, pattern: re.Pattern[str], check: _Check, pos: int, endpos: int) -> None:
    text = p.text
    while pos <= endpos and (m := pattern.search(text, pos, endpos)) is not None:
        span = check(m)
        if span is not None and p.claim(span[0], span[1], kind, span[2]):
            pos = max(span[1], m.start() + 1)
        else:
            pos = m.start() + 1  # a rejected candidate may hide a valid one that starts inside it


def _whole(kind: str, pattern: re.Pattern[str], check: _Check, gate: Callable[[str], bool] | None = None) -> Detector:
    """Detector scanning the whole text, skipped unless the cheap ``gate`` says it could match."""

    def detect(p: _Pass) -> None:
        if gate is None or gate(p.text):
            _search(p, kind, pattern, check, 0, len(p.text))

    return detect


# A UUID (8-4-4-4-12 hex digits) is an opaque id, never a number of a person: about one random
# UUID in 1,400 holds a Luhn-valid card-like run ("51598-3853-4178-84" of 2fb51598-3853-4178-84f8-
# e405a4e715ae) and one in 10,000 a phone-like one, and a LangGraph store item keyed by one was
# refused as personal data (test_a_uuid_holds_no_numeric_pii)
_UUID: Final = re.compile(r"(?<![0-9A-Fa-f-])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?![0-9A-Fa-f-])")


def _outside_uuids(check: _Check) -> _Check:
    """``check``, refusing a span that lies within a UUID."""

    def checked(m: re.Match[str]) -> Span | None:
        span = check(m)
        if span is None:
            return None
        start, end = span[0], span[1]
        near = _UUID.finditer(m.string, max(0, start - 36), min(len(m.string), end + 36))
        return None if any(u.start() <= start and end <= u.end() for u in near) else span

    return checked


def _clustered(kind: str, pattern: re.Pattern[str], check: _Check, fits: Callable[[str], bool]) -> Detector:
    """Detector scanning only the numeric clusters that ``fits`` (e.g. long enough) accepts; a
    number within a UUID is none of them (``_UUID``)."""
    check = _outside_uuids(check)

    def detect(p: _Pass) -> None:
        size = len(p.text)
        for start, end, cluster in p.clusters:
            if fits(cluster):
                _search(p, kind, pattern, check, start, min(size, end + 6))  # +6: room for the lookaheads (".log")

    _CLUSTERED.add(detect)
    return detect


_CLUSTERED: Final[set[Detector]] = set()
"""The detectors that only look inside numeric clusters: a text without clusters skips them all."""


def _entire(key: Callable[[str], str | None] = str) -> _Check:
    """Check replacing the whole match, if ``key`` (value -> numbering key, or None) accepts it."""

    def check(m: re.Match[str]) -> Span | None:
        k = key(m.group())
        return None if k is None else (m.start(), m.end(), k)

    return check


_WHOLE: Final = _entire()


def _digits(s: str) -> str:
    return "".join(c for c in s if "0" <= c <= "9")


def _script(c: str) -> str:
    """The script of a letter, Latin ("L") or another ("O"); "" for a digit or a symbol."""
    if c.isascii():
        return "L" if c.isalpha() else ""
    if not c.isalpha():
        return ""
    return "L" if c <= "\u02af" or "\u1e00" <= c <= "\u1eff" else "O"


def _script_end(p: _Pass, start: int, end: int) -> int:
    """``end``, or where the letters of ``text[start:end]`` first change script: a value that runs
    to a space, typed against Chinese or Japanese text ("token=abc123谢谢"), ends before the
    sentence, so the secret replaced in every field is the value alone (``_replace_known_secrets``)."""
    if p.text.isascii():
        return end
    changes, last_letters = p.script_changes
    i = bisect.bisect_left(last_letters, start)  # the first change after a letter of the value
    return min(end, changes[i]) if i < len(changes) else end


# Runs of letters of one script (``_script``), found in C: a letter that is no letter to
# ``str.isalpha`` (a superscript digit, a Roman numeral) is read one character at a time
_LATIN_LETTERS: Final = "A-Za-z\u00aa\u00b5\u00ba\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02af\u1e00-\u1eff"
_OTHER_LETTER: Final = rf"[^\W\d_{_LATIN_LETTERS}]"
_SCRIPT_RUN: Final = re.compile(rf"[{_LATIN_LETTERS}]+|{_OTHER_LETTER}+")


def _script_changes(text: str) -> tuple[list[int], list[int]]:
    """Where the letters of ``text`` change script, and where the letter before each change is."""
    changes: list[int] = []
    before: list[int] = []
    script, last = "", -1
    for m in _SCRIPT_RUN.finditer(text):
        run = m.group()
        letters = ((m.start(), _script(run[0])),) if run.isalpha() else ((m.start() + i, _script(c)) for i, c in enumerate(run))
        for i, k in letters:
            if k:
                if script and k != script:
                    changes.append(i)
                    before.append(last)
                script, last = k, i
        if run.isalpha():
            last = m.end() - 1
    return changes, before


def _claim_bare(p: _Pass, start: int, end: int) -> None:
    """Claim a secret that runs to a space (``--password x``, ``mysql -px``), to a change of script."""
    end = _script_end(p, start, end)
    p.claim(start, end, "SECRET", p.text[start:end])


# --- SECRET ----------------------------------------------------------------------------------------

# An unterminated block (a truncated paste) is replaced up to the end of the text.
_PEM: Final = re.compile(r"-----BEGIN[A-Z ]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[A-Z ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)", re.DOTALL)
# One regex per literal prefix, which keeps the scan fast. The "not inside a longer word" test
# is a lookbehind placed after the head, so a start in the middle of a word fails at once
# instead of consuming the word first (no quadratic time on "xsk-sk-sk-..."). A head is fixed
# width (the lookbehind's); the rest of a prefix of several widths follows it. A letter or digit
# before the head makes it part of a word ("task-", "disk_live_"), but "_" and "-" glue a token
# to a name as "=" and quotes do ("x_sk-ant-...", "AWS-AKIA...", "token_eyJ..."), where gitleaks'
# "\b" missed it after "_" and memdb's test after either (tests/memory/test_glued_tokens.py). Shapes after
# gitleaks' rules (cmd/generate/config/rules/*.go) and detect-secrets' plugins
# (detect_secrets/plugins/*.py), as named.
#
# The hint is what one search for "any token here?" looks for: a part of the prefix anchored on
# its rarest character ("_", "-", a capital, "J"), the rest checked by a lookbehind. A regex whose
# alternatives all start with a literal skips every other character in C; alternatives starting
# on common letters ("s", "g", "h") made that search 3x slower than the whole rest of the pass.
_GITLAB_HINT: Final = "-(?<=gl[dfr]t-)|-(?<=gl(?:pat|cbt|imt|ptt|oas)-)|-(?<=gl(?:soat|ffct)-)|-(?<=glagent-)"  # by width
_TOKEN_SHAPES: Final = (  # (head, its length, the rest of the prefix, the token after it, the hint)
    ("sk-", 3, "", "[A-Za-z0-9_-]{20,}", "-(?<=sk-)"),
    ("gh[pousr]_", 4, "", "[A-Za-z0-9]{20,}", "_(?<=gh[pousr]_)"),
    ("github_pat_", 11, "", "[A-Za-z0-9_]{20,}", "_(?<=github_pat_)"),
    ("xox[bpars]-", 5, "", "[A-Za-z0-9-]{10,}", "-(?<=xox[bpars]-)"),
    ("xapp-", 5, "", "[0-9]-[A-Za-z0-9-]{10,}", "-(?<=xapp-)"),  # Slack app-level token (gitleaks slack.go)
    ("A(?:KIA|SIA)", 4, "", "[0-9A-Z]{16}(?![0-9A-Za-z])", "KIA(?<=AKIA)|SIA(?<=ASIA)"),
    ("AIza", 4, "", "[0-9A-Za-z_-]{30,}", "za(?<=AIza)"),
    # a JWT glued after "_" or "-" reads its header up to the next such start at most: each start
    # in "-eyJ-eyJ..." scanned to the end of the run before it failed (quadratic time)
    ("eyJ", 3, "", r"(?:(?<![_-]...)[A-Za-z0-9_-]+|(?:[A-Za-z0-9]|[_-](?!eyJ))+)\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*", "J(?<=eyJ)"),
    # Stripe secret and restricted keys (gitleaks stripe.go; detect-secrets stripe.py); real ones
    # have 24 or 99 characters, 20 keeps "sk_test_fixtures" and test names out
    ("[rs]k_", 3, "(?:live|test|prod)_", "[0-9A-Za-z]{20,}", "_(?<=[rs]k_live_)|_(?<=[rs]k_test_)|_(?<=[rs]k_prod_)"),
    # GitLab personal, deploy, feed, runner, OAuth, CI/CD, mail, trigger, agent, OIDC and
    # feature-flag tokens (gitleaks gitlab.go; detect-secrets gitlab_token.py)
    ("gl", 2, "(?:pat|dt|ft|rt|soat|cbt|imt|ptt|agent|oas|ffct)-", "[0-9A-Za-z_-]{20,}", _GITLAB_HINT),
    ("npm_", 4, "", "[A-Za-z0-9]{36}(?![A-Za-z0-9])", "_(?<=npm_)"),  # npm access token (gitleaks npm.go)
    ("whsec_", 6, "", "[A-Za-z0-9+/=]{24,}", "_(?<=whsec_)"),  # Stripe webhook signing secret (gitleaks stripe.go)
    ("pypi-", 5, "", "AgE[A-Za-z0-9_-]{50,}", "-(?<=pypi-)"),  # PyPI upload token (detect-secrets pypi_token.py)
    # Hugging Face user and organisation tokens: 34 letters (gitleaks huggingface.go), mixed case (_mixed)
    ("hf_", 3, "", "[A-Za-z]{34}(?![A-Za-z0-9_-])", "_(?<=hf_)"),
    ("api_", 4, "org_", "[A-Za-z]{34}(?![A-Za-z0-9_-])", "_(?<=api_org_)"),
    # Slack incoming webhooks (detect-secrets slack.py, gitleaks slack.go): the path is the secret
    (r"hooks\.slack\.com/", 16, "", "(?:services|workflows|triggers)/[A-Za-z0-9_+/-]{20,}", r"\.slack\.com/(?<=hooks\.slack\.com/)"),
    # Discord webhooks: the id and token after the path are the secret, the host stays readable
    ("discord", 7, r"(?:app)?\.com/api/webhooks/", "[0-9]{15,21}/[A-Za-z0-9_-]{40,}", r"\.com/api/webhooks/"),
    # SendGrid API keys: "SG.", 22 and 43 characters (detect-secrets sendgrid.py, gitleaks sendgrid.go)
    (r"SG\.", 3, "", r"[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,50}(?![A-Za-z0-9_-])", r"\.(?<=SG\.)"),
    # Google OAuth client secrets (GOCSPX-: Google's prefix since 2021; gitleaks gcp.go has only the API key)
    ("GOCSPX-", 7, "", "[A-Za-z0-9_-]{24,}", "-(?<=GOCSPX-)"),
    # HashiCorp Vault service, batch and recovery tokens (gitleaks vault.go)
    (r"hv[sbr]\.", 4, "", "[A-Za-z0-9_-]{24,}", r"\.(?<=hv[sbr]\.)"),
    # Vault's tokens before 1.10: "s." and 24 letters and digits, mixed (_random_body); hinted only
    # where those follow, as "s." ends many words of prose ("items.")
    (r"s\.", 2, "", "[A-Za-z0-9]{24}(?![A-Za-z0-9_-])", r"\.(?<=s\.)(?=[A-Za-z0-9]{24}(?![A-Za-z0-9]))"),
    # DigitalOcean personal, OAuth and refresh tokens (gitleaks digitalocean.go)
    ("do[opr]_", 4, "v1_", "[a-f0-9]{64}(?![A-Za-z0-9])", "_(?<=do[opr]_v1_)"),
    # Shopify access, custom app, private app tokens and shared secrets (gitleaks shopify.go)
    ("shp", 3, "(?:at|ca|pa|ss)_", "[a-fA-F0-9]{32}(?![A-Za-z0-9])", "_(?<=shp(?:at|ca|pa|ss)_)"),
    # Square OAuth secrets and access tokens (detect-secrets square_oauth.py; gitleaks square.go)
    ("sq0", 3, "(?:csp|atp)-", "[A-Za-z0-9_-]{22,}", "-(?<=sq0(?:csp|atp)-)"),
    ("EAAA", 4, "", "[A-Za-z0-9_-]{60}(?![A-Za-z0-9_-])", "AAA(?<=EAAA)"),
    # age encryption secret keys (gitleaks age.go): bech32 after the prefix
    ("AGE-", 4, "SECRET-KEY-1", "[0-9A-Z]{40,}", "-(?<=AGE-SECRET-KEY-)"),
    # Mailgun private API keys: "key-" and 32 of [0-9a-z] with a digit and a letter past "f" (a hex
    # digest after "key-", a cache key's name, stays: _random_body)
    ("key-", 4, "", "[0-9a-z]{32}(?![A-Za-z0-9_-])", "-(?<=key-)"),
)
_INNER_HINTS: Final = ("AA(?<=:AA)", "-us(?=[0-9])", "-User-Key-(?<=PuTTY-User-Key-)")  # the anchors of _detect_inner_shapes


def _alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of ``pattern`` (its "|" outside parentheses)."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 1
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "|" and not depth:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    return [*parts, pattern[start:]]


def _by_first_character(hints: Sequence[str]) -> str:
    """One regex of ``hints``, whose alternatives each start with a literal character (escaped or
    not), the alternatives starting alike as one: the engine tries every alternative at each
    character that starts one, so forty of them cost a quarter more than eight groups."""
    groups: dict[str, list[str]] = {}
    for hint in hints:
        for alternative in _alternatives(hint):
            first = alternative[:2] if alternative.startswith("\\") else alternative[:1]
            groups.setdefault(first, []).append(alternative[len(first) :])
    return "|".join(f"{first}(?:{'|'.join(rests)})" for first, rests in groups.items())


_TOKEN_HINT: Final = re.compile(_by_first_character([*(hint for *_, hint in _TOKEN_SHAPES), *_INNER_HINTS]))  # any token's prefix
_WEBHOOK_HOST: Final = len("hooks.slack.com/")


def _mixed(m: re.Match[str]) -> Span | None:
    """A token of letters only is a real one if it mixes cases (``hf_xxxx...`` is a placeholder in docs)."""
    value = m.group()
    body = value[value.rindex("_") + 1 :]
    return (m.start(), m.end(), value) if not body.islower() and not body.isupper() else None


def _webhook(m: re.Match[str]) -> Span | None:
    return m.start() + _WEBHOOK_HOST, m.end(), m.group()  # the host stays readable


def _past_f(c: str) -> bool:
    return "g" <= c <= "z"


def _random_body(prefix: int, classes: str) -> _Check:
    """A token whose body (after ``prefix`` characters) holds each of ``classes`` ("d" a digit,
    "u" a capital, "l" a small letter, "x" a letter past "f"): one of the shape without them is a
    word, a name or a hex digest ("s.getAttributeNamesListX", "key-" and an MD5)."""
    tests: dict[str, Callable[[str], bool]] = {"d": str.isdigit, "u": str.isupper, "l": str.islower, "x": _past_f}
    needed = [tests[c] for c in classes]

    def check(m: re.Match[str]) -> Span | None:
        body = m.group()[prefix:]
        return (m.start(), m.end(), m.group()) if all(any(t(c) for c in body) for t in needed) else None

    return check


def _discord(m: re.Match[str]) -> Span | None:
    value = m.group()
    return m.start() + value.index("/webhooks/") + len("/webhooks/"), m.end(), value  # the host and path stay readable


# The prefixes of vendors' "sk-" keys: Anthropic's "sk-ant-", OpenAI's project, service account
# and admin keys, OpenRouter's "sk-or-v1-"
_VENDOR_SK: Final = re.compile("sk-(?:ant|proj|svcacct|admin|or)-")


def _sk(m: re.Match[str]) -> Span | None:
    """An ``sk-`` key glued after "_" or "-" has a vendor's prefix (``_VENDOR_SK``) or one random
    body of letters and digits, with a digit or mixed case (OpenAI's older keys, DeepSeek's):
    kebab case runs words on ("locale-sk-slovakia-release-2024", "btn-sk-2col-layout"; "sk" is
    Slovak's code)."""
    key = m.group()
    if m.start() and m.string[m.start() - 1] in "_-" and _VENDOR_SK.match(key) is None:
        body = key[3:]
        if not (body.isascii() and body.isalnum() and (_has_digit(body) is not None or not (body.islower() or body.isupper()))):
            return None
    return m.start(), m.end(), key


_TOKEN_CHECKS: Final[dict[str, _Check]] = {
    "sk-": _sk,
    "hf_": _mixed,
    "api_": _mixed,
    r"hooks\.slack\.com/": _webhook,
    "discord": _discord,
    r"s\.": _random_body(2, "dul"),
    "EAAA": _random_body(4, "dul"),
    "key-": _random_body(4, "dx"),
}
# "key-" and "s." glued by "_" or "-" are tokens too ("mailgun_key-...", "vault_s.<token>"): a
# name's own ("cache-key-<md5>", "logs-s.<hex id>") has a hex body, which their checks refuse.
# A name whose id is random but not hex ("nix-cache-key-<base32>", "api_s.listObjectsV2Paginator")
# is withheld as a token would be: fail closed, at that cost (revI)
_TOKENS: Final = tuple(
    (re.compile(f"{head}(?<![A-Za-z0-9]{'.' * width}){rest}{tail}"), _TOKEN_CHECKS.get(head, _WHOLE))
    for head, width, rest, tail, _ in _TOKEN_SHAPES
)
# Twilio account SIDs and API keys (detect-secrets twilio.py, gitleaks twilio.go): "AC"/"SK" and
# 32 hex digits. Not a hint of its own (pairs of capitals are everywhere): a real one has a digit,
# which is a hint already, and the check asks for one so the shortcut stays exact.
_TWILIO: Final = re.compile("(?:AC|SK)(?<![A-Za-z0-9]..)[0-9a-fA-F]{32}(?![0-9A-Za-z])")
_BEARER: Final = re.compile(r"\b(?:[Bb]earer|BEARER)[ \t]+(?P<v>[A-Za-z0-9._~+/-]+=*)", re.ASCII)  # the cases _MAYBE_PII hints
# HTTP Basic credentials, base64 of "user:password" (gitleaks curl.go's header rule)
_BASIC: Final = re.compile(r"(?:[Bb]asic|BASIC)(?<![A-Za-z0-9_].....)[ \t]+(?P<v>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=])")
_AUTH_HEADER_REACH: Final = 40  # "Authorization:" within this many characters before "Basic"


def _secret_key_forms(*words: str) -> tuple[str, ...]:
    """Each key as written in code, headers and prose: ``api_key``, ``api-key``, ``apikey``, ``api key``."""
    return tuple(dict.fromkeys(w.replace("_", sep) for w in words for sep in ("_", "-", "", " ")))


# A key is secret when it ends with one of these (lower case): DB_PASSWORD, X-Api-Key, clientSecret,
# aws_secret_access_key; the list follows gitleaks' generic-api-key rule, without its bare "key"
# and "access" (primary_key, access_level) since memdb has no entropy test to weed those out.
_SECRET_KEYS: Final = _secret_key_forms(
    "password", "passwords", "passwd", "passphrase", "passcode", "pwd", "secret", "secrets", "secret_key", "secret_key_base",
    "token", "api_key", "api_keys", "access_key", "private_key", "encryption_key", "signing_key", "master_key", "account_key",
    "shared_key", "access_tokens", "api_tokens", "auth_tokens", "refresh_tokens", "auth", "authorization", "credential",
    "credentials", "cookie", "amz_signature", "goog_signature",  # a presigned URL's X-Amz-Signature
    # "password" in other languages, as a label ("Passwort: ...", "密码：...") or a key ({"senha": ...})
    "passwort", "kennwort", "contraseña", "contrasena", "contrasenya", "mot_de_passe", "senha", "palavra_passe",
    "wachtwoord", "parool", "lösenord", "losenord", "passord", "adgangskode", "salasana", "hasło", "haslo", "heslo",
    "geslo", "lozinka", "jelszó", "jelszo", "parola", "parolă", "şifre", "sifre", "kata_sandi", "mật_khẩu", "пароль",
    "гасло", "κωδικός_πρόσβασης", "סיסמה", "סיסמא", "كلمة_المرور", "كلمة_السر", "رمز_عبور", "पासवर्ड", "รหัสผ่าน",
    "密码", "密碼", "口令", "パスワード", "비밀번호",
)  # fmt: skip
# "<NAME>_KEY" holds a secret when NAME is what the key opens or signs with: a provider's API
# (OPENAI_KEY, stripeKey), a scheme (JWT_KEY, HMAC_KEY, FERNET_KEY), an app's own secret
# (APP_KEY, Laravel's; LICENSE_KEY, CLIENT_KEY); in any case and with any separator
_KEY_OWNERS: Final = frozenset(
    """openai anthropic claude stripe sendgrid mailgun mailchimp twilio github gitlab bitbucket slack discord telegram
    google gcp gemini azure aws cohere mistral groq huggingface hf replicate deepseek xai perplexity fireworks
    openrouter pinecone algolia mapbox datadog sentry pusher paypal braintree square shopify plaid firebase supabase
    vercel netlify heroku cloudflare digitalocean linode elevenlabs deepgram assemblyai voyage serpapi tavily
    langsmith wandb notion airtable hubspot zendesk okta auth0 clerk resend postmark brevo jwt jws jwe hmac fernet
    aes cipher crypt crypto encrypt decrypt sign signer signature webhook session cookie csrf xsrf app application
    license licence client bot admin root deploy otp totp mfa recovery vault kms""".split()
)
# Any other upper-case NAME_KEY is an environment variable holding a key (ACME_KEY), unless a
# word of it names what a key of data is: PRIMARY_KEY, SORT_KEY, CACHE_KEY, S3_KEY (an object's
# name), PUBLIC_KEY. In lower or mixed case such names are a dict's fields (primary_key, sort_key),
# and only the owners above make them secret (tests/memory/test_secrets.py::test_named_keys)
_DATA_KEY_WORDS: Final = frozenset(
    """primary foreign sort partition range hash cache routing idempotency dedup dedupe object s3 blob file bucket
    shard lookup unique composite natural surrogate row table index group public pub publishable site map dict lock
    queue topic message event state config settings translation i18n locale search join order cursor page id uuid
    name label tag field column property attribute json yaml registry resource schema type kind lang language hot
    shortcut escape enter modifier toggle action command cluster distribution sequence redis kv store""".split()
)
_NAMED_KEY: Final = re.compile(r"([A-Za-z0-9]+)(?:[ _.-](?:key|KEY|Key)|(?<=[a-z0-9])Key)\Z")
_ENV_KEY: Final = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]*_KEY\Z")
_CAMEL_WORD: Final = re.compile(r"[A-Z]?[a-z0-9]+\Z")
# Short words naming a secret only as a word of their own in a key: "pw" and "creds" whole or
# after a separator; "pass" only as the last part of a name (SMTP_PASS, db-pass, smtpPass: "Tests
# pass: 120" and "bypass" stay); "sig" only as a URL's parameter (a SAS token's "&sig=": a
# function's {"sig": ...} stays)
_SHORT_SECRET_KEYS: Final = ("pass", "pw", "creds", "sig")
_SHORT_AFTER: Final = {"pass": "_-.&?\"'", "pw": "_-. \t\"'&?", "creds": "_-. \t\"'&?", "sig": "&?"}
_KEY_LAST: Final = frozenset({*(c for k in (*_SECRET_KEYS, *_SHORT_SECRET_KEYS) for c in (k[-1], k[-1].upper())), " ", "\t", '"', "'"})
# _SECRET_KEYS by their last character: one ``endswith`` of 200 suffixes cost more than the rest of a key's test
_SECRET_KEYS_BY_LAST: Final[dict[str, tuple[str, ...]]] = {
    last: tuple(k for k in _SECRET_KEYS if k[-1] == last) for last in {k[-1] for k in _SECRET_KEYS}
}
_KEY_REACH: Final = 40  # characters before a separator read for the key (aws_secret_access_key is 21)


def is_secret_key(key: str) -> bool:
    """Whether a value under ``key`` (a dict key, a header, an assignment's name) is a secret:
    ``password``, ``DB_PASSWORD``, ``X-Api-Key``, ``client_secret``, ``aws_secret_access_key``,
    ``Passwort``, ``OPENAI_KEY``... A key that merely contains a word stays ordinary
    (``max_tokens``, ``tokenizer``, ``password_hint``, ``primary_key``)."""
    if not key.isascii():
        key = unicodedata.normalize("NFC", key)  # "contraseña" typed with a combining tilde
    return _names_secret(key.strip().strip("\"'"))


def _names_secret(key: str) -> bool:
    """Whether ``key`` (as written) ends with a secret word: one of ``_SECRET_KEYS``, or one of
    ``_SHORT_SECRET_KEYS`` standing as a word of its own (after a non-letter, or a capital after a
    small letter: ``smtpPass``)."""
    folded = key.lower()
    if folded.endswith(_SECRET_KEYS_BY_LAST.get(folded[-1:], ())):
        return True
    for word in _SHORT_SECRET_KEYS:
        if folded.endswith(word):
            at = len(key) - len(word)
            before = key[at - 1] if at else ""
            if not before and word != "sig":  # the whole key: {"pass": ...}, PASS=, pw:
                return True
            if before and before in _SHORT_AFTER[word]:
                return True
            if word == "pass" and before in " \t" and key[at:] == "PASS":  # "export PASS=": a variable, not "Tests pass:"
                return True
            if word == "pass" and before.islower() and key[at].isupper():  # smtpPass
                return True
    return folded.endswith("key") and _names_a_key_secret(key)


def _names_a_key_secret(key: str) -> bool:
    """Whether ``key`` ends with a name of a secret key (``_KEY_OWNERS``, ``_DATA_KEY_WORDS``)."""
    m = _NAMED_KEY.search(key)
    if m is None:
        return False
    stem = m.group(1)
    if stem.lower() in _KEY_OWNERS:  # "stripe_key", "X-Stripe-Key", "openAiKey"
        return True
    camel = _CAMEL_WORD.search(stem)
    if camel is not None and camel.group().lower() in _KEY_OWNERS:  # "myStripeKey"
        return True
    env = _ENV_KEY.search(key)
    return env is not None and not any(w.lower() in _DATA_KEY_WORDS for w in env.group().split("_")[:-1])


# A value of spaced digit groups ("pin: 4111 1111 ...") is taken whole, not just its first group.
# A bare value runs to a space or a quote, "&", ";" and "," inside it ("Tr0ub4dor&3x": cut there,
# the rest of a password stayed), not at its end ("password=x, then")
# ("token=abc&page=2": the next parameter is not the secret)
_BARE_VALUE: Final = re.compile(
    r"[0-9]+(?:[ -][0-9]+)+(?![^\s\"',;&\]}])"
    r"|(?:[^\s\"'\]}&;,]|[&;,](?![A-Za-z_][\w.\[\]-]{0,40}=))*[^\s\"',;&.\]}]"
)
# Words a label is followed by in prose, never the secret ("Token: see the runbook", "auth: enabled")
_PROSE_VALUES: Final = frozenset(
    """see the a an it its is was are be to in on of for and or not no yes none null nil true false enabled disabled
    required optional set unset missing empty expired invalid revoked rotated redacted hidden changed reset updated
    here below above later tbd n/a incorrect wrong correct right too hashed encrypted salted case-sensitive weak strong
    long short stored saved blank known unknown different same stale secure insecure visible shown used needed
    mandatory shared leaked compromised""".split()
)
_AUTH_SCHEME: Final = re.compile(r"(?i:basic|bearer|digest|token|negotiate|ntlm)[ \t]+(?=[^\s\"'])")
_QUOTE_REACH: Final = 2048  # the longest quoted value looked for; an unterminated one is taken as a bare token
_BRACKET_REACH: Final = 4096  # the longest [list] or {object} value taken whole
_CLOSING: Final = {"[": "]", "{": "}"}


def _closing_quote(text: str, start: int, quote: str, escapes: int) -> int | None:
    """Where a quoted value that opened with ``escapes`` backslashes and ``quote`` closes (the
    index of its closing backslashes), or None. A JSON string inside a JSON string escapes its
    quotes as ``\\"``: the closing quote has as many backslashes as the opening one, a quote
    inside the value more."""
    limit = min(len(text), start + _QUOTE_REACH)
    pos = start
    while (q := text.find(quote, pos, limit)) != -1:
        back = 0
        while q - back > start and text[q - back - 1] == "\\":
            back += 1
        if back == escapes:
            return q - escapes
        pos = q + 1
    return None


def _closing_bracket(text: str, start: int) -> int:
    """The end of the bracketed value at ``start`` (nested brackets and quoted strings skipped);
    unclosed within reach, everything up to the reach (fail closed)."""
    limit = min(len(text), start + _BRACKET_REACH)
    stack = [_CLOSING[text[start]]]
    i = start + 1
    in_string = False
    while i < limit:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if in_string:
            in_string = c != '"'
        elif c == '"':
            in_string = True
        elif c in _CLOSING:
            stack.append(_CLOSING[c])
        elif c == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return limit


def _assigned(p: _Pass, pos: int) -> tuple[int, int] | None:
    """The span of the value assigned at ``pos`` (after ``=`` or ``:``): a quoted string (plain
    or escaped, as in JSON inside JSON), a [list] or {object} whole, spaced digit groups, or a
    bare token; an HTTP auth scheme before it ("Basic", "Bearer") is skipped."""
    text = p.text
    size = len(text)
    while pos < size and text[pos] in " \t":
        pos += 1
    if pos < size and text[pos] in "=>":  # the rest of ":=", "=>" or "==" (Go, Ruby, PHP)
        pos += 1
        while pos < size and text[pos] in " \t":
            pos += 1
    if (scheme := _AUTH_SCHEME.match(text, pos)) is not None:
        pos = scheme.end()
    quote = pos
    while quote < size and quote - pos < 8 and text[quote] == "\\":
        quote += 1
    if quote < size and text[quote] in "\"'":
        end = _closing_quote(text, quote + 1, text[quote], quote - pos)
        if end is not None:
            return (quote + 1, end) if end > quote + 1 else None
        pos = quote + 1  # unterminated: the token after the quote
    elif pos < size and text[pos] in _CLOSING:
        return pos, _closing_bracket(text, pos)
    # read to its change of script, not past it: "token=a谢token=a谢..." read each to the end of the text
    m = _BARE_VALUE.match(text, pos, _script_end(p, pos, size))
    end = m.end() if m is not None else pos
    if end == pos or text[pos:end].lower() in _PROSE_VALUES:
        return None
    return pos, end


def _bearer(m: re.Match[str]) -> Span | None:
    value = m.group("v")
    # "Bearer authentication" is prose; a real token is long or has digits/symbols in it.
    if len(value) >= 24 or (len(value) >= 8 and not value.isalpha()):
        return m.start("v"), m.end("v"), value
    return None


def _basic(m: re.Match[str]) -> Span | None:
    """Basic credentials: base64 that decodes to ``user:password``, or any base64-looking value
    in an ``Authorization:`` header ("basic understanding" is prose)."""
    value = m.group("v")
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    header = m.string[max(0, m.start() - _AUTH_HEADER_REACH) : m.start()].lower()
    if b":" in decoded or ("authorization" in header and len(value) >= 8):
        return m.start("v"), m.end("v"), value
    return None


def _twilio(m: re.Match[str]) -> Span | None:
    return (m.start(), m.end(), m.group()) if _has_digit(m.group(), 2) else None


def _detect_tokens(p: _Pass) -> None:
    if _TOKEN_HINT.search(p.text) is None:  # one search instead of one per token shape
        return
    for pattern, check in _TOKENS:
        _search(p, "SECRET", pattern, check, 0, len(p.text))
    _detect_inner_shapes(p)


# Shapes anchored on an inner literal rather than a prefix: a Telegram bot token (its bot's id,
# ":AA" and 33 more; detect-secrets telegram_token.py, gitleaks telegram.go), a Mailchimp API key
# (32 hex digits and its data centre "-us12"; detect-secrets mailchimp.py), a PuTTY private key
# file (detect-secrets private_key.py), whole to its MAC or, cut short, to the end as a PEM block
_TELEGRAM: Final = re.compile(r"(?<![A-Za-z0-9_:-])[0-9]{6,12}:AA[A-Za-z0-9_-]{31,34}(?![A-Za-z0-9_-])")
_MAILCHIMP: Final = re.compile(r"(?<![A-Za-z0-9_-])[0-9a-f]{32}-us[0-9]{1,2}(?![A-Za-z0-9_-])")
_PUTTY: Final = re.compile(r"PuTTY-User-Key-File-[0-9]+:(?:.*?Private-MAC:[ \t]*[0-9a-fA-F]+|.*\Z)", re.DOTALL)
_TELEGRAM_REACH: Final = 13  # the bot id's digits and ":" before "AA"
_MAILCHIMP_REACH: Final = 33


def _detect_inner_shapes(p: _Pass) -> None:
    """The shapes anchored on ":AA", "-us" and "PuTTY-User-Key-File-": each searched near its
    anchor only, found by ``str.find`` (a regex starting with a class reads every character)."""
    text = p.text
    for anchor, pattern, reach in ((":AA", _TELEGRAM, _TELEGRAM_REACH), ("-us", _MAILCHIMP, _MAILCHIMP_REACH)):
        at = text.find(anchor)
        while at != -1:
            m = pattern.search(text, max(0, at - reach), at + 48)
            if m is not None and m.start() <= at < m.end():
                p.claim(m.start(), m.end(), "SECRET", m.group())
            at = text.find(anchor, at + 1)
    if "PuTTY-User-Key-File-" in text:
        _search(p, "SECRET", _PUTTY, _WHOLE, 0, len(text))


def _detect_known(p: _Pass) -> None:
    """The secrets this process registered (:mod:`.known`), wherever they are: inside a word too."""
    text = p.text
    for secret in known_secrets():
        at = text.find(secret)
        while at != -1:
            p.claim(at, at + len(secret), "SECRET", secret)
            at = text.find(secret, at + len(secret))


# A random token of no known shape, as ``secrets.token_urlsafe`` makes them: 32 or more
# characters of [A-Za-z0-9_-] mixing capitals, small letters and digits, read as random where
# detect-secrets reads entropy. Shannon entropy alone does not part random tokens from the long
# identifiers of code ("Wav2Vec2ConformerRotaryPositionalEmbedding" has 4.4 bits a character,
# as many as one in a hundred token_urlsafe(32)); words do: a token's runs of letters are short
# (2 on average) and its small-letter pairs as rare in English as any others. Measured on
# token_urlsafe(24) and (32) and on 2,600 identifiers of that shape from installed packages
# (tests/memory/test_random_tokens.py): about one token_urlsafe(32) in 1,000 is missed (35 of
# 40,000 seeded in a final read; a token with no digit, one in about 1,500, always is), and the
# identifiers taken are kernel names, hex constants and base64, no prose identifier of code.
# Never a hex digest, a UUID or a memdb id (no mix), a URL's or a file's path segment ("/" or
# "\" before it: a document id in a link stays usable).
_RANDOM_MIN: Final = 32
_RANDOM_RUN: Final = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{32,}")
# Whether a text has such a run at all, found in C at a byte a character (a regex starting with a
# class costs 8 ns a character, and most texts have none): token characters read as "a", others
# (non-ASCII "?" too) as " ", then one substring search
_TOKEN_BYTES: Final = bytes(ord("a") if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "_-") else ord(" ") for i in range(256))
_RANDOM_GATE: Final = b"a" * _RANDOM_MIN
_HEX_RUN: Final = re.compile(r"(?:0[xX])?[0-9A-Fa-f_-]+")
_LETTER_RUN: Final = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
# The hundred commonest letter pairs of English text: a word's pairs are mostly these, a random
# string's one in seven
_COMMON_PAIRS: Final = frozenset(
    """th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le ve co me de hi ri ro
    ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns di fo ho pe ec pr no ct us ac ot il tr ly nc et ut ss so rs
    un lo wa ge ie wh ee wi em ad ol rt po we na ul ni ts mo ow pa im mi ai sh ir su id""".split()
)


def _entropy(text: str) -> float:
    """Shannon entropy in bits a character."""
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in collections.Counter(text).values())


def _random(run: str) -> bool:
    """Whether a run of token characters reads as random rather than as words (see above)."""
    if run.islower() or run.isupper() or _has_digit(run) is None or _HEX_RUN.fullmatch(run) or _UUID.search(run):
        return False
    if _entropy(run) < 4.0:
        return False
    runs = _LETTER_RUN.findall(run)
    mean = sum(map(len, runs)) / len(runs)
    if mean < 3.0:
        return True
    if mean >= 4.0:
        return False
    pairs = [run[i : i + 2] for i in range(len(run) - 1) if run[i].islower() and run[i + 1].islower()]
    return len(pairs) < 3 or sum(pair in _COMMON_PAIRS for pair in pairs) < 0.35 * len(pairs)


def _detect_random_tokens(p: _Pass) -> None:
    """Random tokens (above)."""
    text = p.text
    if len(text) < _RANDOM_MIN or _RANDOM_GATE not in p.ascii.translate(_TOKEN_BYTES):
        return
    for m in _RANDOM_RUN.finditer(text):
        if text[m.start() - 1 : m.start()] not in ("/", "\\") and _random(m.group()):
            p.claim(m.start(), m.end(), "SECRET", m.group())


_AUTHORITY: Final = re.compile(r"[^\s/?#\"'`\\]{0,512}")  # user:password@host:port
_USERINFO: Final = re.compile(r"[^\s\"'`\\@]{1,256}@")  # up to an "@", over "/" and "?" too


def _detect_url_credentials(p: _Pass) -> None:
    """The password of ``scheme://user:password@host`` for any host (``localhost``, ``cache:6379``);
    scheme, user and host stay readable. The authority ends at the first ``/?#``, a quote or a
    space, and the password runs from the first ``:`` of the user part to its last ``@``
    (detect-secrets' basic_auth.py takes the same part)."""
    text = p.text
    at = text.find("://") if "@" in text else -1  # no credentials without an "@"
    while at != -1:
        start = at + 3
        m = _AUTHORITY.match(text, start)
        end = m.end() if m is not None else start
        amp = text.rfind("@", start, end)
        if amp == -1 and (userinfo := _USERINFO.match(text, start)) is not None:
            amp = _unescaped_userinfo(text, start, userinfo.end() - 1)
        colon = text.find(":", start, amp) if amp != -1 else -1
        if colon != -1 and colon + 1 < amp:
            p.claim(colon + 1, amp, "SECRET", text[colon + 1 : amp])
        at = text.find("://", max(end, start))


def _unescaped_userinfo(text: str, start: int, amp: int) -> int:
    """``amp`` if ``text[start:amp]`` is a user and a password written unescaped (``root:Xq7?kd9``,
    ``:p/ss99``), so the "/" or "?" in it cut the authority short; -1 for a host, a port and a
    path before an "@" (``host:8080/users/@ana``, ``example.com/a:b@c``)."""
    colon = text.find(":", start, amp)
    if colon == -1 or any(c in text[start:colon] for c in "/?#["):  # a path, a query, an IPv6 host before it
        return -1
    port = re.split(r"[/?#]", text[colon + 1 : amp], maxsplit=1)[0]
    return -1 if port.isdigit() else amp


# A URL's "key" parameter is an API key (Google Maps' "?key=AIza...", many others): not a secret
# word alone ("sort key=name"), so only after "?" or "&" and only a value a key could be, 16 or
# more token characters with a letter and a digit
_QUERY_KEYS: Final = ("?key", "&key", "?apikey", "&apikey")
_QUERY_KEY_VALUE: Final = re.compile(r"(?=[A-Za-z_.~-]*[0-9])(?=[0-9_.~-]*[A-Za-z])[A-Za-z0-9_.~-]{16,}(?![A-Za-z0-9_.~-])", re.ASCII)


def _detect_assignments(p: _Pass) -> None:
    """Replace the value of ``key = value`` / ``key: value`` when the key ends with a secret word
    (:func:`is_secret_key`), quoted or not, in JSON too (``{"api_key": "..."}``, and escaped,
    ``{\\"api_key\\": \\"...\\"}``, as a JSON string holding JSON reads).

    Anchored on the separators rather than the key words: ``:`` and ``=`` are rare in prose, and
    a key that merely *contains* a word ("max_tokens: 1024", "tokenizer=bpe") is left alone.
    """
    text = p.text
    for sep in ":=":
        at = text.find(sep)
        while at != -1:
            if text[at - 1 : at] not in _KEY_LAST:  # fast path: "12:30", "Next step:", "a=1"
                at = text.find(sep, at + 1)
                continue
            head = text[max(0, at - _KEY_REACH) : at].rstrip(" \t")
            if head[-1:] in ("'", '"'):
                head = head[:-1].rstrip("\\")
            if _names_secret(head) and (span := _assigned(p, at + 1)) is not None:
                p.claim(span[0], span[1], "SECRET", text[span[0] : span[1]])
                at = text.find(sep, span[1])  # separators inside the value are part of it ("password=a=b")
            elif sep == "=" and head.endswith(_QUERY_KEYS) and (m := _QUERY_KEY_VALUE.match(text, at + 1)) is not None:
                p.claim(at + 1, m.end(), "SECRET", m.group())  # "?key=AIza...": an API key in a URL
                at = text.find(sep, m.end())
            else:
                at = text.find(sep, at + 1)


# A command line's secret: "--password Hunt3r", "-pw x" (PuTTY), "--api-key=..." is an assignment
# a long option (or PuTTY's -pw) and the argument after it
_FLAG: Final = re.compile(
    r"-(?<![\w-]-)(?P<option>-?[A-Za-z][\w-]{1,40})[ \t]+(?P<v>\"[^\"\n]{1,512}\"|'[^'\n]{1,512}'|[^\s\"'-][^\s\"']*)",
    re.ASCII,
)
# an option that takes no secret though its name ends with one: --no-password, --ask-pass, --skip-auth
_FLAG_SWITCH: Final = re.compile(r"(?:no|skip|ask|prompt|with|without|use|enable|disable|require|allow|show|print|check|verify)-", re.I)
# single-dash options naming a secret whole (PuTTY's -pw, java's -token): "-pMyToken" is mysql's -p
_SHORT_OPTIONS: Final = frozenset("pw password passwd pass token secret apikey api-key passphrase".split())


def _secret_option(option: str) -> bool:
    """Whether a command-line option (without its first "-") takes a secret: ``-password``,
    ``--db-password``, ``-pw``; not a switch (``--no-password``) nor mysql's ``-pSECRET``."""
    if option.startswith("-"):
        return is_secret_key(option[1:]) and not _FLAG_SWITCH.match(option[1:])
    return option.lower() in _SHORT_OPTIONS


_USER_FLAG: Final = re.compile(  # curl -u admin:password (docker run -u 1000:1000 is a uid)
    r"\b(?:curl|wget|http|https)\b[^\n|;&]{0,200}?-(?<![\w-]-)(?:u|-user)[ \t]+[\"']?[^\s:\"']+:(?P<v>[^\s\"']+)",
    re.ASCII,
)
# Commands whose short option takes a password ("-p" is a port to ssh and psql, a port mapping to
# docker run): sshpass -p, redis-cli -a, docker login -p, ldapsearch -w, sqlcmd -P, zip -P, mongo -p.
# A command listed with a verb takes it only after that verb (test_a_command_s_own_password_option_is_a_secret)
_PASSWORD_OPTIONS: Final = {
    "sshpass": ("", "-p"), "redis-cli": ("", "-a"), "ldapsearch": ("", "-w"), "ldapmodify": ("", "-w"), "ldapadd": ("", "-w"),
    "ldapdelete": ("", "-w"), "sqlcmd": ("", "-P"), "bcp": ("", "-P"), "zip": ("", "-P"), "unzip": ("", "-P"), "7z": ("", "-p"),
    "mongo": ("", "-p"), "mongosh": ("", "-p"), "mongodump": ("", "-p"), "mongorestore": ("", "-p"),
    **{c: ("login", "-p") for c in ("docker", "podman", "buildah", "skopeo", "nerdctl", "helm", "oras", "az")},
}  # fmt: skip
_COMMAND_PASSWORD: Final = re.compile(
    r"(?<![\w./-])(?P<cmd>" + "|".join(re.escape(c) for c in _PASSWORD_OPTIONS) + r")(?![\w.-])(?P<rest>[^\n|;&]{0,200})", re.ASCII
)
_OPTION_VALUE: Final = re.compile(r"(?<![\w-])(?P<opt>-[A-Za-z])(?:[ \t]+|(?=[^\s\"'-]))(?P<v>[^\s\"'-][^\s\"']*)", re.ASCII)
# OpenSSL's password arguments: "-passin pass:X", "-passout pass:X", "-pass pass:X" ("env:" and
# "file:" name where it is, no secret); as an argv, "pass:X" is an assignment of its own
_OPENSSL_PASS: Final = re.compile(r"(?<![\w-])-pass(?:in|out)?[ \t]+[\"']?pass:(?P<v>[^\s\"']+)", re.ASCII)
# htpasswd's batch mode takes the password as its last argument: htpasswd -b[c...] FILE USER PASSWORD,
# htpasswd -nb USER PASSWORD (-n: no file); -C and -r take a number
_HTPASSWD: Final = re.compile(r"(?<![\w./-])htpasswd(?![\w.-])(?P<rest>[^\n|;&]{0,300})", re.ASCII)
_SHELL_WORD: Final = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+")
_MYSQL_FLAG: Final = re.compile(
    r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]{0,200}?(?<![\w-])-p(?P<v>[^\s\"'-][^\s\"']*)", re.ASCII
)
# <password>...</password>; key="ApiKey" value="..." (.NET config); {"name": "DB_PASSWORD", "value": "..."}
_XML_ELEMENT: Final = re.compile(r"<(?P<key>[A-Za-z_][\w:.-]{0,40})>(?P<v>[^<\n]{1,512})</(?P=key)>")
_NAMED_VALUE: Final = re.compile(
    r"(?i:\b(?:key|name)\s*=\s*)(?P<q>[\"'])(?P<key>[^\"'\n]{1,64})(?P=q)\s+(?i:value)\s*=\s*(?P<q2>[\"'])(?P<v>[^\"'\n]{1,512})(?P=q2)"
    r"|\"(?i:name|key)\"\s*:\s*\"(?P<jkey>[^\"\n]{1,64})\"\s*,\s*\"(?i:value)\"\s*:\s*\"(?P<jv>[^\"\n]{1,512})\"",
    re.ASCII,
)
# An AWS secret access key (40 characters of base64) beside its key id, outside any assignment
_AWS_KEY_ID: Final = re.compile(r"A(?:KIA|SIA)[0-9A-Z]{16}(?![0-9A-Za-z])")
_AWS_SECRET: Final = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_REACH: Final = 120


def _detect_command_lines(p: _Pass) -> None:
    """Secrets given to a command: a secret-named option's value, curl's ``-u user:password``,
    mysql's ``-pPASSWORD``."""
    text = p.text
    if " -" not in text and not text.startswith("-"):  # an option starts a word
        return
    for m in _FLAG.finditer(text):
        if _secret_option(m.group("option")):
            start, end = m.span("v")
            if text[start] in "\"'":
                p.claim(start + 1, end - 1, "SECRET", text[start + 1 : end - 1])
            else:
                _claim_bare(p, start, end)
    if "-u" in text and ("curl" in text or "wget" in text or "http" in text):
        for m in _USER_FLAG.finditer(text):
            _claim_bare(p, *m.span("v"))
    if "mysql" in text or "mariadb" in text:
        for m in _MYSQL_FLAG.finditer(text):
            _claim_bare(p, *m.span("v"))
    if "pass:" in text:
        for m in _OPENSSL_PASS.finditer(text):
            _claim_bare(p, *m.span("v"))
    if "htpasswd" in text:
        for m in _HTPASSWD.finditer(text):
            words = list(_SHELL_WORD.finditer(m.group("rest")))
            i = _htpasswd_password([w.group() for w in words])
            if i is not None:
                start, end = (m.start("rest") + x for x in words[i].span())
                if text[start] in "\"'":
                    start, end = start + 1, end - 1
                p.claim(start, end, "SECRET", text[start:end])
    for m in _COMMAND_PASSWORD.finditer(text):
        verb, option = _PASSWORD_OPTIONS[m.group("cmd")]
        rest, at = m.group("rest"), m.start("rest")
        if verb:  # "docker login -p x", not "docker run -p 8080:80"
            found = re.match(rf"\s+(?:\S+\s+)?{verb}\b", rest)
            if found is None:
                continue
            rest, at = rest[found.end() :], at + found.end()
        for o in _OPTION_VALUE.finditer(rest):
            if o.group("opt") == option:
                _claim_bare(p, at + o.start("v"), at + o.end("v"))


def argv_secrets(items: Sequence[object]) -> set[int]:
    """The positions of secrets in a command line given as a list (a tool's argv), as
    ``_detect_command_lines`` finds them in one: the argument after ``--password`` or ``-pw``,
    after curl's ``-u``, and mysql's ``-pPASSWORD`` whole."""
    words = [w if isinstance(w, str) else "" for w in items]
    names = [w.rsplit("/", 1)[-1] for w in words]
    curl = any(n in ("curl", "wget") for n in names)
    mysql = any(n in ("mysql", "mysqldump", "mysqladmin", "mariadb") for n in names)
    own = _own_password_option(names)  # "-p" of sshpass, "-a" of redis-cli, "-p" after docker login
    out: set[int] = set()
    if "htpasswd" in names:
        at = names.index("htpasswd") + 1
        i = _htpasswd_password(words[at:])
        if i is not None:
            out.add(at + i)
    for i, word in enumerate(words):
        if i + 1 < len(words) and ((word.startswith("-") and _secret_option(word[1:])) or (curl and word in ("-u", "--user"))):
            out.add(i + 1)
        elif mysql and len(word) > 2 and word.startswith("-p"):
            out.add(i)
        elif own is not None and i > own[0] and word.startswith(own[1]):
            if word == own[1] and i + 1 < len(words):
                out.add(i + 1)
            elif len(word) > 2:  # "-pSECRET"
                out.add(i)
    return out


def _htpasswd_password(words: Sequence[str]) -> int | None:
    """Which of htpasswd's arguments (``words``, after the command) is a password given with
    -b: the third after the options, the second with -n; None without -b."""
    batch = no_file = False
    i = 0
    while i < len(words) and words[i].startswith("-") and len(words[i]) > 1:
        letters = words[i][1:]
        batch, no_file = batch or "b" in letters, no_file or "n" in letters
        i += 2 if letters[-1:] in ("C", "r") else 1  # -C cost, -r rounds
    at = i + (1 if no_file else 2)
    return at if batch and at < len(words) else None


def _own_password_option(names: Sequence[str]) -> tuple[int, str] | None:
    """Where a command with a password option of its own (``_PASSWORD_OPTIONS``) starts, after
    its verb where it has one, and that option; None for any other command line."""
    for i, name in enumerate(names):
        if name in _PASSWORD_OPTIONS:
            verb, option = _PASSWORD_OPTIONS[name]
            if not verb:
                return i, option
            if verb in names[i + 1 : i + 3]:
                return names.index(verb, i + 1), option
    return None


def _detect_named_values(p: _Pass) -> None:
    """A value named by a secret key beside it rather than before a separator: an XML element,
    a key/value attribute pair, a JSON {"name": ..., "value": ...} object."""
    text = p.text
    if "</" in text:
        for m in _XML_ELEMENT.finditer(text):
            if is_secret_key(m.group("key")) and m.group("v").strip():
                p.claim(m.start("v"), m.end("v"), "SECRET", m.group("v"))
    if ("alue" in text or "ALUE" in text) and ("=" in text or '"' in text):  # both forms name a "value", after "=" or in JSON
        for m in _NAMED_VALUE.finditer(text):
            key, v = ("key", "v") if m.group("key") is not None else ("jkey", "jv")
            if is_secret_key(m.group(key)):
                p.claim(m.start(v), m.end(v), "SECRET", m.group(v))


def _detect_aws_secrets(p: _Pass) -> None:
    """A 40-character secret access key near an access key id (gitleaks' aws rule reads it from
    its assignment; a CSV row or a pasted pair has none)."""
    text = p.text
    if "KIA" not in text and "SIA" not in text:
        return
    for key_id in _AWS_KEY_ID.finditer(text):
        lo, hi = max(0, key_id.start() - _AWS_REACH), min(len(text), key_id.end() + _AWS_REACH)
        for m in _AWS_SECRET.finditer(text, lo, hi):
            value = m.group()
            if not value.isalpha() and not value.isdigit() and not value.islower() and not value.isupper():
                p.claim(m.start(), m.end(), "SECRET", value)


def _detect_beside(p: _Pass) -> None:
    """The secrets named beside them rather than assigned: command lines, named values, an AWS
    secret by its key id (one detector: each gates itself on a substring)."""
    _detect_command_lines(p)
    _detect_named_values(p)
    _detect_aws_secrets(p)


# A number named by its label: "Tel. 089/123456-0", "Steuer-ID 65929970489", "SV-Nr 65 170839 J
# 003", "Kontonummer 532013000", "CVC 123", "PIN 4821": the label says what a number of any shape
# is; unlabelled, most of these are any number. Found from each number back to the word before it
# (a regex over every position for thirty labels cost more than all the other detectors together).
# Other languages' words too, Latin ("Tél", "celular", "PESEL", "codice fiscale") or not ("тел.",
# "电话", "携帯", "핸드폰", "주민등록번호", "身份证"): a number bare or in any shape is what its label says.
_LABELS: Final[dict[str, str]] = {
    **dict.fromkeys(
        """tel telefon telephone phone fax mobile mobil handy cell msisdn tél téléphone telefone telefono teléfono telefonnummer
        handynummer mobilnummer rufnummer celular móvil movil cellulare portable telemóvel telefoonnummer mobiel komórka
        telefonu telefonum тел телефон телефона моб мобильный сотовый τηλ τηλέφωνο κινητό טלפון נייד هاتف الهاتف جوال
        الجوال موبايل फोन फ़ोन मोबाइल โทร โทรศัพท์ เบอร์โทร มือถือ 电话 電話 手机 手機 座机 携帯 携帯電話 ケータイ 전화
        휴대폰 핸드폰 휴대전화 연락처""".split(),
        "PHONE",
    ),
    **dict.fromkeys(
        """steuer-id steuerid steuer-idnr idnr tin sv-nr svnr sv-nummer sozialversicherungsnummer ssn nino aadhaar sin
        personalausweis personalausweisnummer passport social-security national-insurance dni nie nif nir cpf pesel
        snils tckn kimlik rrn bsn personnummer codice-fiscale sécurité-sociale securite-sociale my-number pasaporte
        passeport passaporto reisepass paszport pasaport снилс паспорт инн आधार เลขบัตรประชาชน บัตรประชาชน 身份证 身份證
        公民身份 护照 護照 マイナンバー 個人番号 パスポート 旅券 주민등록번호 주민번호 외국인등록번호 여권""".split(),
        "GOV_ID",
    ),
    **dict.fromkeys("kontonummer konto-nr acct blz bankleitzahl bsb account routing sort-code".split(), "ACCOUNT"),
    **dict.fromkeys("cvc cvc2 cvv cvv2 csc security-code pin pin-code tan".split(), "SECRET"),
}
# Label words that are also ordinary words or names of other things ("tan" of an angle, a
# spreadsheet's "cell", "mobile" traffic, "sin", a ledger's "account" balance): a key ending in one
# (angle_tan, excel_cell) labels nothing, and under the bare word as a key, only a value of the
# kind's shape is read (``label_of_key``; tests/memory/test_sanitize.py::test_numbers_under_look_alike_keys_stay)
_AMBIGUOUS_TAILS: Final = frozenset({"tan", "cell", "mobile", "handy", "sin", "portable"})
# Acronyms that are words in lower case (Polish "dni" days, German "nie" never): labels in capitals only
_CAPITALS_ONLY: Final = frozenset({"dni", "nie", "nir"})


def _phone_shape(value: str) -> bool:
    """Digits of a phone: 7 to 15 written with separators or a "+" or trunk "0", 10 to 15 bare."""
    n = len(_digits(value))
    bare = value.isdigit() and not value.startswith("0")
    return 10 <= n <= 15 if bare else 7 <= n <= 15


_KEY_SHAPES: Final[dict[str, Callable[[str], bool]]] = {
    **dict.fromkeys(("mobile", "cell", "handy", "portable"), _phone_shape),
    "tan": lambda v: v.isdigit() and len(v) == 6,  # a transaction number
    "sin": lambda v: len(_digits(v)) == 9,  # Canada's social insurance number
    "account": lambda v: 8 <= len(_digits(v)) <= 18,  # a number, not a balance or a count
}
_AFTER_LABEL: Final = frozenset(" \t:#=.\"'\\")  # what stands between a label and its value (never "")
_BETWEEN_LABEL: Final = " \t:#=.\"'\\"  # the same, read back from the value: '"cvc": "947"' and '\\"cvc\\": \\"947\\"' too
_NUMBER_WORDS: Final = frozenset(  # "account number", "passport no.", "numéro", "номер", "번호"
    "no nr number num numer numero número numéro nummer nro nº n° номер numarası numarasi 번호 号码 號碼 番号".split()
)
_SECOND_WORDS: Final = frozenset({"security", "insurance", "code", "fiscale", "sociale"})  # "social security", "codice fiscale"
_COPULAS: Final = frozenset({"is", "es", "est", "ist", "é", "to", "jest", "это"})  # "mi móvil es 612 34 56 78", "PESEL to ..."
_LABEL_VALUE: Final = re.compile(
    r"\+?\(?[0-9][0-9 ()/.-]{1,28}[0-9](?![0-9A-Za-z])"  # digits and their separators, to a digit
)
_ID_VALUE: Final = re.compile(r"[A-Z]{0,2}[0-9][0-9A-Z -]{3,20}[0-9A-Z](?![0-9A-Za-z])")  # letters among its digits, in capitals
# what a number after a label word is not: a date, a decimal ("sin 3.14159"), a range of years,
# money written with thousands ("1.234.567,89"), a quantity ("150000 euros", "2048 of", "8080 port")
_NOT_LABELLED: Final = re.compile(
    r"\d{1,2}[./]\d{1,2}[./]\d{4}|\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d+[.,]\d{1,5}|\d{4}/\d{4}|\d{1,3}(?:\.\d{3})+"
)
_UNIT_AFTER: Final = re.compile(
    r",\d|\s*(?:%|€|\$|(?i:eur|euros?|usd|dollars?|gbp|chf|records?|rows?|requests?|items?|entries|users?|ms|sec|seconds?|"
    r"minutes?|hours?|days?|kb|mb|gb|percent|ports?|of|times|digits|characters|chars|bytes|expiry|expires)\b)",
    re.ASCII,
)
_LABEL_DIGITS: Final = {"PHONE": 6, "GOV_ID": 5, "ACCOUNT": 5}  # the fewest digits a labelled value holds
# "the DATEV password is Winter2026!": a secret said in prose (a known limit for other phrasings)
_SAID_SECRET: Final = re.compile(  # a literal first letter, its word start checked after it (see _TOKEN_SHAPES)
    r"[Pp](?<![A-Za-z].)(?:ass(?:word|wort|code|phrase)|ASS(?:WORD|WORT|CODE|PHRASE)|in|IN)"
    r"\s+(?i:is|was|ist|lautet|war)\s+(?P<v>[^\s\"',;]*[^\s\"',;.!?])"
)


def _word_before(text: str, end: int) -> tuple[str, int]:
    """The word (letters, digits, "-" and "_") ending at ``end`` after any ":", "=", "#", ".", quotes
    and spaces (``"cvc": "947"``, escaped as JSON in JSON too), and where it starts."""
    i = end
    while i > 0 and end - i < 12 and text[i - 1] in _BETWEEN_LABEL:
        i -= 1
    j = i
    while j > 0 and i - j < 32 and (text[j - 1].isalnum() or text[j - 1] in "-_"):  # "CVC2", "Steuer-ID", "account_number"
        j -= 1
    return text[j:i], j


_CAMEL: Final = re.compile(r"(?<=[a-z])(?=[A-Z])")
_ASCII_LETTER: Final = re.compile(r"[A-Za-z]")
# Chinese, Japanese and Thai write a label against the words around it ("我的手机号是13812345678",
# "電話番号は090-..."), Korean its particles ("주민등록번호는"), so the word before a number may end
# in a label, then a number word, then particles. Labels of those scripts may end any word; others
# only one of their own ("PESEL是...", not the "тел" of "хотел"). Read back from the word's end in a
# few dictionary lookups (a regex of every label searched there cost 100 us a number).
_UNSPACED: Final = re.compile("[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_PARTICLES: Final = frozenset("是为為はがも는은이가도")
_PARTICLES_REACH: Final = 3
_LABEL_SUFFIXES: Final = ("号码", "號碼", "番号", "번호", "号", "號")  # the number words of those scripts


def _lengths_by_last() -> dict[str, tuple[int, ...]]:
    """The lengths of the labels (one word, not a look-alike) ending in each character, longest first."""
    lengths: dict[str, set[int]] = {}
    for w in _LABELS:
        if "-" not in w and w not in _AMBIGUOUS_TAILS:
            for c in (w[-1], w[-1].upper()):
                lengths.setdefault(c, set()).add(len(w))
    return {c: tuple(sorted(n, reverse=True)) for c, n in lengths.items()}


_LABEL_LENGTHS: Final = _lengths_by_last()
_LABEL_LAST: Final = frozenset(_LABEL_LENGTHS)
# a character a label can end with, with what may follow it: most numbers in such text follow none
_LABEL_TAIL: Final = _LABEL_LAST | _PARTICLES | frozenset("".join(_LABEL_SUFFIXES))
# What before a number ends any label's reach to it (``_detect_labeled``, outside a labelled key's
# value): an ASCII character that parts no label from its value, nor is a "+", a "(" or a capital
# an id starts with; or nothing
_NO_LABEL_BEFORE: Final = frozenset(map(chr, range(128))) - _AFTER_LABEL - frozenset("+(ABCDEFGHIJKLMNOPQRSTUVWXYZ") | {""}
# The numbers a label may reach, found by class (``_CLUSTER_CLASSES``): a digit, "d", after any other
# character, "p" (a character outside ASCII reads "?", which stands for itself too): "pd" starts one
_LABEL_REACH_CLASSES: Final = bytes(
    ord("d") if chr(i) in "0123456789" else ord("p") if chr(i) not in _NO_LABEL_BEFORE or chr(i) == "?" else ord("x") for i in range(256)
)
_LABEL_REACH_BYTES: Final = re.compile(rb"pd")


def _script_label(text: str, end: int) -> str | None:
    """The kind of a label that ends the word ending at ``end``, a number word and particles after
    it (``手机号是``, ``전화번호는``, ``PESEL是``), or None."""
    i = end
    while i > 0 and end - i < _PARTICLES_REACH and text[i - 1] in _PARTICLES:
        i -= 1
    ends = [i]  # the label may hold the number word: 주민등록번호
    for suffix in _LABEL_SUFFIXES:
        if text.endswith(suffix, 0, i):
            ends.append(i - len(suffix))
            break
    for i in ends:
        for n in _LABEL_LENGTHS.get(text[i - 1 : i], ()):
            written = text[i - n : i] if n <= i else ""
            if (kind := _label_word(written)) is not None and (_UNSPACED.match(written) or not text[i - n - 1 : i - n].isalpha()):
                return kind
    return None


def _label_word(word: str) -> str | None:
    """The kind a word names as a label, as written ("DNI" is one, "dni" in Polish prose none)."""
    folded = word.lower()
    kind = _LABELS.get(folded)
    return None if kind is None or (folded in _CAPITALS_ONLY and not word.isupper()) else kind


def _label_kind(word: str) -> str | None:
    """The kind a label word names, written as a word or as a key: "PIN", "Steuer-ID", "Account-No",
    "account_number", "accountNumber", "card-cvc", "social_security_number"."""
    if word.isalnum() and (word.islower() or word.isupper() or word.istitle()):  # one plain word: most are
        return _LABELS.get(word.lower())
    if not word.isascii() and word.isalnum():  # "手机号", "전화번호"
        return _LABELS.get(word.lower()) or _script_label(word, len(word))
    if not word.islower():
        word = _CAMEL.sub("-", word).lower()  # "SteuerID" reads "steuer-id", "cardCvc" "card-cvc"
    word = word.replace("_", "-")
    if word in _LABELS:  # "sv-nr" is a label, number word and all
        return _LABELS[word]
    parts = word.split("-")
    while len(parts) > 1 and parts[-1] in _NUMBER_WORDS:  # "account-no", "passport-number"
        parts.pop()
    for n in (2, 1):  # "social-security", "sort-code", then the last part: "cvc" of "card-cvc"
        if len(parts) >= n and (kind := _LABELS.get("-".join(parts[-n:]))) is not None:
            return None if n == 1 and len(parts) > 1 and parts[-1] in _AMBIGUOUS_TAILS else kind  # not "angle-tan"
    return None


def _label_of(text: str, start: int) -> str | None:
    """The kind the label before the number at ``start`` names, or None."""
    word, at = _word_before(text, start)
    folded = word.lower()
    if folded in _COPULAS:  # "my phone number is ...", "mi móvil es ..."
        word, at = _word_before(text, at)
        folded = word.lower()
    if folded in _NUMBER_WORDS:  # "account number", "passport no.", "Steuer-ID Nr.", "numéro", "номер"
        before, before_at = _word_before(text, at)
        if (kind := _LABELS.get(f"{before.lower()}-{folded}")) is not None:  # "My Number"
            return kind
        word, at, folded = before, before_at, before.lower()
    if folded in _SECOND_WORDS:  # "social security", "national insurance", "sort code", "PIN code", "codice fiscale"
        before, _ = _word_before(text, at)
        return _LABELS.get(f"{before.lower()}-{folded}")
    if folded in _LABELS:
        return _label_word(word)  # "DNI", not Polish "dni"
    end = at + len(word)
    last = text[end - 1 : end]  # the word's last letter, or the vowel sign that ended the word read ("โทรศัพท์")
    if not last.isascii():
        # A word of a script without spaces may end in a label, particles after it ("我的手机号是",
        # "전화번호는"); a word read only to a vowel sign ("फोन", "आधार") is read back whole
        if last not in _LABEL_TAIL:
            return None
        before = text[at - 1 : at]
        if _UNSPACED.match(last) or (not before.isascii() and not before.isalnum() and unicodedata.category(before)[0] == "M"):
            return _script_label(text, end)
        return None
    if "-" in word or "_" in word:  # "card-cvc", "account_number"
        return _label_kind(word) if _ASCII_LETTER.search(word) is not None else None
    if word.islower() or word.isupper() or word.istitle() or _ASCII_LETTER.search(word) is None:
        return None  # one word, not camel case, not a label; or no ASCII letter ("2024", CJK): most words before a number
    return _label_kind(word)  # "SteuerID", "cardCvc"


def label_of_key(key: str, value: str | None = None) -> str | None:
    """The kind a dict key names as a label does in prose (``_LABELS``): under ``{"cvc": ...}``,
    ``{"routing_number": ...}``, ``{"accountNumber": ...}`` a number is what "cvc 947" makes it.
    Given the ``value`` (as text), None unless it has the shape of the kind where the key is a
    word with other meanings (``_KEY_SHAPES``: ``{"mobile": 1520000}`` is traffic, ``{"tan": 100.0}``
    a tangent). Carried to the sanitizer by naming the value's field with :data:`LABEL_FIELD`."""
    if not key.isalnum():  # most keys are: no quotes, spaces or dots to read past
        key = key.strip().strip("\"'").replace(" ", "_").replace(".", "_")
    kind = _label_kind(key)
    if kind is None or value is None:
        return kind
    fits = _KEY_SHAPES.get(key.lower())
    return kind if fits is None or fits(value.strip()) else None


def _detect_labeled(p: _Pass) -> None:
    """Values named by their label (``_LABELS``), and passwords said in prose (``_SAID_SECRET``)."""
    text = p.text
    if p.label is None:  # most numbers are in a word or an id ("v2", "PRJ-2474"), or start the text: not read
        firsts = [m.start() + 1 for m in _LABEL_REACH_BYTES.finditer(p.ascii.translate(_LABEL_REACH_CLASSES))]
        passed = _NO_LABEL_BEFORE
    else:  # the value of a label key: every number
        firsts = [m.start() for m in _DIGITS_BYTES.finditer(p.ascii.translate(_DIGIT_CLASSES))]
        passed = frozenset()
    for first in firsts:  # each checked for a label before it in Python
        start = first
        before = text[start - 1 : start]
        if before in passed:  # a "?" as written
            continue
        if before in "+(" and before:
            start -= 1
        else:  # an id's capitals before its digits: "QQ123456C", "C01X00T47"
            while start > first - 2 and start and "A" <= text[start - 1] <= "Z":
                start -= 1
        before = text[start - 1 : start]
        keyed = p.label is not None and not text[:start].strip()
        shape: Callable[[str], bool] | None = None
        as_key = False
        if keyed:  # the value of a dict key that is a label: {"pin": "4821"}
            kind: str | None = p.label
        elif before not in _AFTER_LABEL and (before.isascii() or before not in _LABEL_TAIL):
            continue  # a number inside a word or a number ("v2", "3.11"), or at the start; "2026年7月": no label ends in 年
        else:
            kind = _label_of(text, start)
            if kind is not None:  # a label written as a JSON key is read as a dict's key is ('"mobile": 1520000')
                word, at = _word_before(text, start)
                as_key = text[at + len(word) : at + len(word) + 1] in ('"', "'", "\\")
                shape = _KEY_SHAPES.get(word.lower()) if as_key else None
        if kind is None:
            continue
        value = _LABEL_VALUE.match(text, start)
        end = value.end() if value is not None else start
        if kind == "GOV_ID" and (whole := _ID_VALUE.match(text, start)) is not None:  # "65 170839 J 003"
            end = max(end, whole.end())
        found = text[start:end]
        if _NOT_LABELLED.fullmatch(found) or _UNIT_AFTER.match(text, end) or (shape is not None and not shape(found.strip())):
            continue  # a date, a decimal, a quantity; a key's number of another shape than its kind's
        digits = _digits(found)
        if kind == "SECRET":
            if 3 <= len(digits) <= 8 and found.replace(" ", "").isdigit() and p.claim(start, end, "SECRET", digits) and (keyed or as_key):
                p.quiet.add(digits)  # {"pin": 1000000}: too short and too common to blank "1000000 rows" elsewhere
        elif len(digits) >= _LABEL_DIGITS[kind]:
            p.claim(start, end, kind, found.upper())
    # "password ...", "PIN ...": "in " is in most prose, so a "pin" in any case the pattern reads is asked for too
    pin = ("in " in text or "IN " in text) and ("pin" in text or "Pin" in text or "PIN" in text or "pIN" in text)
    if pin or "ass" in text or "ASS" in text:
        for m in _SAID_SECRET.finditer(text):  # (searched over its first letter in C)
            if m.group("v").lower() not in _PROSE_VALUES and not _UNIT_AFTER.match(text, m.end("v")):  # "4 digits long"
                _claim_bare(p, *m.span("v"))


# --- EMAIL -----------------------------------------------------------------------------------------

_ENCODED_LOCAL_PUNCT: Final = frozenset("_.+-%")  # "%2B" is an encoded "+"; "/", "?", "=" end the address
_LOCAL_REACH: Final = 64  # RFC 5321's longest local part; bounded, so "%40%40..." stays linear
_LOCAL_PUNCT: Final = frozenset("_.!#$%&'*+/=?^`{|}~-")
# Unicode labels too (jörg@bücher.de, иван@пример.рф), but the letters of one label are Latin or of
# other scripts, never both: Chinese and Japanese write an address against the sentence
# ("担当者はtanaka@example.co.jpまで連絡"), and the sentence is no part of it. Each label is atomic,
# its first letter choosing the script, so a long run of labels cannot backtrack.
_LETTERS: Final = rf"(?:[{_LATIN_LETTERS}][0-9_{_LATIN_LETTERS}-]*|{_OTHER_LETTER}(?:{_OTHER_LETTER}|[0-9_-])*)"
_DOMAIN: Final = re.compile(rf"(?:(?>(?=[\w-])[0-9_-]*{_LETTERS}?)\.)+(?>[0-9_-]*{_LETTERS})")  # a letter in the last label


def _local_start(text: str, at: int, punct: frozenset[str]) -> int:
    """Where the local part before the ``@`` at ``at`` starts: over letters, digits and ``punct``,
    up to a change of script (``请联系ana@...``: ``ana``)."""
    start = at
    script = ""
    while start and at - start < _LOCAL_REACH:
        c = text[start - 1]
        if not (c.isalnum() or c in punct):
            break
        if (k := _script(c)) and k != script:
            if script:
                break
            script = k
        start -= 1
    return start


def _detect_emails(p: _Pass) -> None:
    """Anchored on each ``@`` (or ``%40``, as a URL writes it): extend left over local-part
    characters, match a domain to the right."""
    text = p.text
    for sign in ("@", "%40"):
        at = text.find(sign)
        while at != -1:
            punct = _LOCAL_PUNCT if sign == "@" else _ENCODED_LOCAL_PUNCT  # in a URL, "/", "?", "=" end the address
            start = _local_start(text, at, punct)
            # a quote opening the address ("say 'ana@...'"), not its start; a local part of quotes
            # alone ("'@a.ai", valid) stays one, so the address is withheld (fail closed)
            while start < at - 1 and text[start] in "'`.":
                start += 1
            m = _DOMAIN.match(text, at + len(sign))
            key = f"{text[start:at]}@{text[at + len(sign) : m.end()]}".casefold() if m is not None else ""
            if m is not None and start < at and p.claim(start, m.end(), "EMAIL", key):
                at = text.find(sign, m.end())
            else:
                at = text.find(sign, at + 1)


# --- IBAN ------------------------------------------------------------------------------------------

# Either case: people type "gb82 west 1234 ...". Lower-case letters are outside the numeric
# clusters, so the search runs in a window reaching an IBAN's length either side of a cluster.
_IBAN: Final = re.compile(
    r"(?<![A-Za-z0-9])[A-Za-z]{2}[0-9]{2}(?:[A-Za-z0-9]{11,30}|(?:[ -][A-Za-z0-9]{4}){2,7}(?:[ -][A-Za-z0-9]{1,4})?)(?![A-Za-z0-9])"
)
_IBAN_REACH: Final = 34  # the longest IBAN, compact
_NOT_DIGITS: Final = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZ ().+/-")  # the rest of a cluster


def _iban_ok(compact: str) -> bool:
    """ISO 13616: move the first four characters to the end, letters to 10..35, mod 97 must be 1.
    "RF" is no country: an ISO 11649 creditor reference (on invoices) has the same check digits."""
    if not 15 <= len(compact) <= 34 or compact.startswith("RF"):
        return False
    rotated = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rotated)) % 97 == 1


def _detect_ibans(p: _Pass) -> None:
    """Inside each cluster long enough, as printed in capitals; and, where a run of 10 digits or
    more (every IBAN's account part has one) follows a letter or a group of four, in a window
    reaching an IBAN's length back over the lower-case letters a cluster leaves out."""
    text = p.text
    size = len(text)
    for start, end, cluster in p.clusters:
        if len(cluster) < 10:
            continue
        before = text[start - 1 : start]
        if (before.isalnum() or (before == " " and text[max(start - 5, 0) : start - 1].isalnum())) and len(
            cluster.translate(_NOT_DIGITS)
        ) >= 10:  # the window holds the cluster too: one search covers both
            _search(p, "IBAN", _IBAN, _iban, max(start - _IBAN_REACH, 0), min(size, end + _IBAN_REACH))
        elif len(cluster) >= 15:
            _search(p, "IBAN", _IBAN, _iban, start, min(size, end + 2))


_CLUSTERED.add(_detect_ibans)


def _iban(m: re.Match[str]) -> Span | None:
    # Printed IBANs come in groups of four and the regex may have swallowed a following
    # upper-case word, so try shorter prefixes at group boundaries, longest first.
    parts = re.split("[ -]", m.group())  # one character between groups: a prefix's length is its parts'
    for n in range(len(parts), 0, -1):
        compact = "".join(parts[:n]).upper()
        if _iban_ok(compact):
            return m.start(), m.start() + len(" ".join(parts[:n])), compact
    return None


# --- CARD ------------------------------------------------------------------------------------------

# Up to eight digit groups holding at least 13 digits; which groups form the card is decided in _card.
_CARD: Final = re.compile(r"(?<![0-9])(?=(?:[0-9][ ./-]?){13})[0-9]+(?:[ ./-][0-9]+){0,7}")  # 19 digits need at most 8 groups
_PHONE_LONGEST: Final = 15  # digits of an international number (E.164)
_FOURS: Final = "./"  # separators that part a card only into groups of four (``_card``)
_DIGIT_RUN: Final = re.compile(r"[0-9]+")


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if i & 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card(m: re.Match[str]) -> Span | None:
    """Longest prefix of the run's groups that is a card: 13-19 digits, first digit 2-6, Luhn-valid.

    In a grouped number every group but the last has 3-6 digits (4-4-4-4, 4-6-5, ...), which
    keeps a list of small numbers from reading as one card. Dots and slashes part groups of four
    only, the same one throughout (``4012.8888.8888.1881``, ``4111/1111/1111/1111``): a decimal
    such as ``345.678901234567``, a date ``2026/07/01`` and a version ``10.0.19045.3803`` stay.
    Parted numbers that start with 20 are no card: no issuer's numbers start so (Mastercard's
    2-series is 2221-2720, Mir's 2200-2204), and lists of years do (``2023/2024/2025/2026``, a
    table's header ``2023 2024 2025 2026``, with a cell after it, ``2024 2025 2026 6``) as do times
    (``2000/0400/0800/1200``). Unparted, a number of a card's length and check digit is withheld
    whatever it starts with (fail closed). After a "+" a card holds more digits than a phone
    number may (E.164's 15), so ``+4111 1111 1111 1111`` is a card and ``+44 7911 123456`` a phone.
    """
    run = m.group()
    shortest = _PHONE_LONGEST + 1 if m.start() and m.string[m.start() - 1] == "+" else 13
    digits = ""
    best: Span | None = None
    prev_len = 0
    fours = ""  # the run's separator if it parts groups of four only (_FOURS), else ""
    for i, g in enumerate(_DIGIT_RUN.finditer(run)):
        size = g.end() - g.start()
        if i:
            sep = run[g.start() - 1]
            sep = sep if sep in _FOURS else ""
            if i == 1:
                fours = sep
            if sep != fours or not (prev_len == 4 and size <= 4 if fours else 3 <= prev_len <= 6):
                break
        digits += g.group()
        prev_len = size
        if len(digits) > 19:
            break
        if len(digits) >= shortest and digits[0] in "23456" and not (i and digits.startswith("20")) and _luhn_ok(digits):
            best = (m.start(), m.start() + g.end(), digits)
    return best


# --- SSN, IP, PHONE --------------------------------------------------------------------------------

# A date of ten characters, the year first (month, then day) or last (day and month in either
# order: 14.03.1985, 03/14/1985), as one member of a run joined by "-" reads (_JOINED)
_DATE: Final = (
    r"(?:19|20)[0-9]{2}[./-](?:0[1-9]|1[0-2])[./-](?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[1-9]|[12][0-9]|3[01])[./-](?:0[1-9]|[12][0-9]|3[01])[./-](?:19|20)[0-9]{2}"
)
# A date as people write one ending where a spaced SSN begins (``_ssn``): digits parted by "-", "."
# or "/", one or two for the day and month in either order (1985-3-14, 1985-14-03, 14.3.1985), or
# a month's name (14 March 1985, 14-Mar-1985, March 14th, 1985); or a time, an ISO datetime's too
# (10:30, 23:59:59.5, 1985-03-14T10:00): "met at 10:30 219 09 9999" kept the SSN as more groups of
# a number, and "1985-03-14T10:00 219 09 9999" read "00 219 09 9999" as a phone dialled with "00"
_DAY: Final = r"(?:0?[1-9]|[12][0-9]|3[01])"
_MONTH_NAME: Final = (
    r"(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_WRITTEN_DATE: Final = re.compile(
    rf"(?:(?<![0-9A-Za-z])(?:(?:19|20)[0-9]{{2}}[./-]{_DAY}[./-]{_DAY}|{_DAY}[./-]{_DAY}[./-](?:19|20)[0-9]{{2}}"
    rf"|{_DAY}(?i:st|nd|rd|th)?[ ./-]{_MONTH_NAME},?[ ./-](?:19|20)[0-9]{{2}}"
    rf"|{_MONTH_NAME}[ ./-]{_DAY}(?i:st|nd|rd|th)?,?[ ./-](?:19|20)[0-9]{{2}})"
    r"|(?<![0-9:.])(?:[01]?[0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,9})?)?)\Z",
    re.ASCII,
)
_WRITTEN_DATE_LONGEST: Final = len("September. 30th, 1985")  # the window _ssn reads: each part at its longest
_SSN: Final = re.compile(
    r"(?<![0-9])(?<![0-9]-)(?!000|666|9)[0-9]{3}-(?!00)[0-9]{2}-(?!0000)[0-9]{4}(?![0-9]|-[0-9])"
    r"|(?<![0-9])(?!000|666|9)[0-9]{3} (?!00)[0-9]{2} (?!0000)[0-9]{4}(?![0-9]| [0-9]+ [0-9])"  # spaced: 219 09 9999 (_ssn)
)


def _ssn(m: re.Match[str]) -> Span | None:
    """An SSN; a spaced one after a number and a space only if that number is a date or a time: it
    is more groups of a longer spaced number (a column, "12 219 09 9999"), but a date of birth
    beside its SSN ("born 14 March 1985 219 09 9999", "at 10:30 219 09 9999":
    test_numbers_in_context.py). After it (``_SSN``), one number is a count ("219 09 9999 5
    copies", withheld), two a longer run ("010 01 1000 001 01 0001", kept)."""
    start, text = m.start(), m.string
    if (
        text[start + 3] == " "
        and start >= 2
        and text[start - 1] == " "
        and "0" <= text[start - 2] <= "9"
        and _WRITTEN_DATE.search(text, max(0, start - 1 - _WRITTEN_DATE_LONGEST), start - 1) is None
    ):
        return None
    return start, m.end(), _digits(m.group())


# Government ids of other countries: those whose shape and check digits ``national`` knows, the UK's
# National Insurance number (two letters, six digits, a letter A-D), India's PAN (five letters, four
# digits, a letter; the fourth says who holds it), Canada's SIN (nine digits in dashed groups of
# three, Luhn-checked). Spaced digit groups ("130 692 544 euros") are any number: an Aadhaar or a SIN
# written so is found by its label (``_LABELED``).
_UK_NI: Final = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2} ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D](?![A-Za-z0-9])")
_PAN: Final = re.compile(r"(?<![A-Za-z0-9])[A-Z]{3}[ABCFGHJLPT][A-Z][0-9]{4}[A-Z](?![A-Za-z0-9])")
_SIN: Final = re.compile(r"(?<![0-9])(?<![0-9]-)[1-79][0-9]{2}-[0-9]{3}-[0-9]{3}(?![0-9]|-[0-9])")  # spaced, it is any number


def _checked_digits(ok: Callable[[str], bool]) -> Callable[[str], str | None]:
    def key(value: str) -> str | None:
        d = _digits(value)
        return d if ok(d) else None

    return key


def _checked_id(valid: Callable[[str], bool]) -> _Check:
    def check(m: re.Match[str]) -> Span | None:
        value = compact(m.group())
        return (m.start(), m.end(), value) if valid(value) else None

    return _outside_uuids(check)


_GOV_IDS: Final = (  # (pattern, check, whether a cluster may hold one)
    *((i.pattern, _checked_id(i.valid), i.fits) for i in CHECKED_IDS),
    (_SIN, _outside_uuids(_entire(_checked_digits(_luhn_ok))), lambda c: len(c) >= 11),
    (_UK_NI, _WHOLE, lambda c: True),
    (_PAN, _WHOLE, lambda c: len(c) >= 10),
)


def _detect_gov_ids(p: _Pass) -> None:
    """The national ids, in one walk over the clusters (four detectors cost a quarter of the
    sanitizer's time on ordinary text). Before the cards: a Chinese id or a compact NIR may pass
    Luhn's check too, and is the id its own checks say it is."""
    size = len(p.text)
    for start, end, cluster in p.clusters:
        if len(cluster) >= 9:
            for pattern, check, fits in _GOV_IDS:
                if fits(cluster):
                    _search(p, "GOV_ID", pattern, check, start, min(size, end + 2))


_CLUSTERED.add(_detect_gov_ids)


# re.ASCII in these as in the secrets' patterns: a letter of another script is no part of a word (the docstring)
# "_" glues an address to a name as "-" does ("host_10.20.30.40", "10.20.30.40_prod"): no part of a number
_IPV4: Final = re.compile(r"(?<![A-Za-z0-9.])(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?![A-Za-z0-9]|\.[0-9])", re.ASCII)
_IPV6: Final = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9A-Fa-f]{1,4})?(?![\w:]|\.[0-9])", re.ASCII
)
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_has_digit: Final = re.compile(r"[0-9]").search

# Atomic groups and possessive repeats: a long digit string cannot make these backtrack.
_PHONE_INTL: Final = re.compile(r"(?<![\w+])\+[0-9]{1,3}(?>[ .-]?(?:\([0-9]{1,4}\)|[0-9]{1,4})){1,7}+(?![0-9])", re.ASCII)
_PHONE_NANP: Final = re.compile(
    r"(?<![\w+.])(?<![0-9][.-])(?:1[ .-]?)?(?:\([2-9][0-9]{2}\)[ ]?|[2-9][0-9]{2}[ .-])[2-9][0-9]{2}[ .-][0-9]{4}(?!\w|[.-][0-9])",
    re.ASCII,
)
# One separator throughout, so a date followed by a number ("01-02-2026 07") is not a phone.
# "/" as Germans write it (030/12345678, 0049/30/12345678), "." as the French do (01.23.45.67.89)
_PHONE_TRUNK: Final = re.compile(
    r"(?<![\w+./])(?<![0-9][./-])0[0-9]{1,5}(?P<sep>[ ./-])[0-9]{2,8}(?>(?P=sep)[0-9]{2,8}){0,3}+"
    r"(?!\w|[./-][0-9]|\.(?:log|txt|csv|json|jsonl|gz|zip|tar|py|md|pdf|png|jpe?g|bin|dat)\b)",  # not a file's name
    re.ASCII,
)

# National forms that tell a phone by an area code in parentheses or a mobile's prefix, as Brazil,
# Russia and China write them; not after a number and a space, as a journal's "45 (12) 2345-2356" is
_PHONE_NATIONAL: Final = re.compile(
    r"(?<![\w+.(/-])(?<![0-9][ .-])(?:"
    r"\([1-9][1-9]\) ?(?:9[0-9]{4}|(?!(?:19|20)[0-9]{2}-(?:19|20))[2-5][0-9]{3})[ -][0-9]{4}"  # Brazil: (11) 91234-5678, (11) 3456-7890
    r"|\(0[0-9]{2,3}\) ?[0-9]{3,4}[ -]?[0-9]{4}"  # a trunk 0 in parentheses: (010) 1234-5678
    r"|\(0[1-9]\) ?[0-9]{4}[ -]?[0-9]{4}"  # and a one-digit area code: (02) 9876 5432 in Australia, (06) 1234 5678
    r"|(?:[78][ -]?)?\([0-9]{3}\) ?[0-9]{3}-[0-9]{2}-[0-9]{2}|[78][ -][0-9]{3}[ -][0-9]{3}-[0-9]{2}-[0-9]{2}"  # Russia
    r"|1[3-9][0-9]-[0-9]{4}-[0-9]{4}"  # a Chinese mobile: 138-1234-5678
    r")(?!\w|[.-][0-9])",
    re.ASCII,
)


# SSNs and NANP phones joined by a bare "-" ("010-01-1000-001-01-0001", "415 200 0000-415 200 0001"):
# each refuses a "-" and a digit beside it (a longer dashed number is no SSN), so the run kept both
# whole in text, and in a tag in every reading of it. A run of two or more such values, or of one
# and a date ("1985-03-14-219-09-9999", a date of birth and the SSN), is them, whatever other groups
# a "-" glues at either end ("01-219-09-9999-078-05-1120", "+1-415-200-0000-646-555-0100"); so is
# one value with two groups or more on one side ("415-200-0000-646-555-010", a phone and a number
# cut short), as a tag reads it; one with a group beside it ("123-45-6789-01") is still no id. A
# member has one shape at any place (three digits and a separator, four or two digits and a date's
# separator, or "("), so the run is read member by member, each starting and ending a group.
_JOINED_PART: Final = re.compile(r"[0-9]{3}[ .-][0-9]{2,3}[ .-][0-9]{4}|\([2-9][0-9]{2}\) ?[0-9]{3}[ .-][0-9]{4}")
_JOINED_MEMBER: Final = re.compile(rf"(?<![0-9])(?:{_JOINED_PART.pattern}|{_DATE})(?![0-9])")
_JOINED_GROUPS: Final = 6  # the most groups read before a lone value: a longer run of groups is read from a later one (linear time)
# Not after a digit and a space or a dot, as a column of numbers or a version runs on, but "+1 "
_JOINED: Final = re.compile(
    rf"(?<![0-9])(?:(?<=\+1[ .])|(?<![0-9][ .]))(?:"
    rf"(?:{_JOINED_PART.pattern}|{_DATE})(?:-(?:{_JOINED_PART.pattern}|{_DATE}))+"
    rf"|(?:[0-9]+-){{2,{_JOINED_GROUPS}}}(?:{_JOINED_PART.pattern})"  # "01-02-415-200-0000"
    rf"|(?:{_JOINED_PART.pattern})(?:-[0-9]+){{2,}}+"  # "415-200-0000-646-555-010"
    r")(?![0-9])"
)
_JOINED_MIN: Final = len("219-09-9999-1-2")


def _detect_joined(p: _Pass) -> None:
    """Each SSN or NANP phone of a run of them and dates, or of one and groups, joined by "-"
    (``_JOINED``), as it is found alone."""
    size = len(p.text)
    for start, end, cluster in p.clusters:
        if len(cluster) < _JOINED_MIN or "-" not in cluster:
            continue
        for run in _JOINED.finditer(p.text, start, min(size, end + 2)):
            for member in _JOINED_MEMBER.finditer(run.group()):
                value = member.group()
                kind = "SSN" if _SSN.fullmatch(value) else "PHONE" if _PHONE_NANP.fullmatch(value) else None
                if kind is not None:
                    p.claim(run.start() + member.start(), run.start() + member.end(), kind, _digits(value))


_CLUSTERED.add(_detect_joined)


def _trunk_fits(cluster: str) -> bool:
    # the leading 0 must start a number: at the cluster start or after a space, a slash or parenthesis
    return len(cluster) >= 11 and (cluster[0] == "0" or " 0" in cluster or "(0" in cluster or ")0" in cluster or "/0" in cluster)


# An international prefix as some write it, "00" in parentheses or NANP's exit code 011, then a
# country code and the number: (0049) 30 901820, 011 44 20 7946 0958
_PHONE_EXIT: Final = re.compile(
    r"(?<![\w+.(/-])(?<![0-9][ .-])(?:\(00[1-9][0-9]{0,2}\) ?|011[ .-](?=[1-9]))[0-9]{1,4}(?>[ .-][0-9]{1,8}){1,5}+(?!\w|[.-][0-9])",
    re.ASCII,
)


def _ipv4_key(value: str) -> str | None:
    """The address, its parts without leading zeros (``192.168.001.010`` is ``192.168.1.10``)."""
    try:
        return str(ipaddress.IPv4Address(".".join(part.lstrip("0") or "0" for part in value.split("."))))
    except ValueError:  # 256.1.1.1
        return None


# An AWS EC2 host name spells its private address: ip-10-20-30-40.ec2.internal
_AWS_HOST: Final = re.compile(r"(?<![\w-])ip-(?P<v>[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3}-[0-9]{1,3})(?![\w-])", re.ASCII)


def _aws_host(m: re.Match[str]) -> Span | None:
    key = _ipv4_key(m.group("v").replace("-", "."))
    return None if key is None else (m.start("v"), m.end("v"), key)


def _ipv6_key(value: str) -> str | None:
    # A decimal digit is required so "::" and hex-only C++/Rust paths such as "cafe::bad" stay.
    if not _has_digit(value):
        return None
    try:
        return str(ipaddress.IPv6Address(value))
    except ValueError:  # times such as 12:30:45
        return None


def _detect_ipv6(p: _Pass) -> None:
    """Anchored on ``:``: back up over at most four hex digits, then match the address there."""
    text = p.text
    if text.count(":") < 2:
        return
    at = text.find(":")
    while at != -1:
        if text.find(":", at + 1, at + 6) == -1:
            # An address's next colon is at most 5 characters on, and its first colon was tried
            # already, so this one ("12:30", "step:") cannot be part of one not yet found.
            at = text.find(":", at + 1)
            continue
        start = at
        while start > at - 4 and start and text[start - 1] in _HEX:
            start -= 1
        m = _IPV6.match(text, start)
        key = _ipv6_key(m.group()) if m is not None else None
        if m is not None and key is not None and p.claim(start, m.end(), "IP", key):
            at = text.find(":", m.end())
        else:
            at = text.find(":", at + 1)


def _trunk_key(value: str) -> str | None:
    """A national number of 10-13 digits, or an international one dialled with ``00`` (up to
    ``00`` and 15 digits, ``0044 20 7946 0958``), keyed like its ``+`` form."""
    d = _digits(value)
    if d.startswith("00") and 10 <= len(d) <= 17:
        return d[2:]
    return d if 10 <= len(d) <= 13 else None


def _digit_count(lo: int, hi: int) -> Callable[[str], str | None]:
    def key(value: str) -> str | None:
        d = _digits(value)
        return d if lo <= len(d) <= hi else None

    return key


# Every built-in detector needs one of these to match anything (a digit for the numeric kinds,
# the anchors and literal prefixes for the rest), so most prose skips them all after one search.
# Literals only, so the search skips in C every character that starts none of them (see _TOKEN_SHAPES).
_MAYBE_PII: Final = re.compile(
    "|".join(
        (
            *"0123456789@:=",
            _TOKEN_HINT.pattern,
            "Bearer|bearer|BEARER|Basic|basic|BASIC|-----BEGIN|</|--|-pw|mysql|mariadb|assw|ASSW|assc|ASSC|assp|ASSP",
            " -p| -a| -w| -P",  # a command's own password option (_PASSWORD_OPTIONS)
        )
    )
)

_DETECTORS: Final[tuple[Detector, ...]] = (
    _whole("SECRET", _PEM, _WHOLE, lambda t: "-----BEGIN" in t),
    _detect_tokens,  # and _detect_inner_shapes
    _whole("SECRET", _TWILIO, _twilio, lambda t: "AC" in t or "SK" in t),
    _whole("SECRET", _BEARER, _bearer, lambda t: "earer" in t or "EARER" in t),
    _whole("SECRET", _BASIC, _basic, lambda t: "asic" in t or "ASIC" in t),
    _detect_url_credentials,
    _detect_assignments,
    _detect_beside,
    _detect_emails,
    _detect_random_tokens,  # after an address (its local part may look random), before the numbers glued in a token
    _detect_ibans,
    _detect_gov_ids,
    _clustered("CARD", _CARD, _card, lambda c: len(c) >= 13),
    _clustered("SSN", _SSN, _ssn, lambda c: len(c) >= 11 and ("-" in c or " " in c)),
    _detect_joined,  # after the SSNs and cards, so no run of them takes a value that is one
    _detect_ipv6,
    _clustered("IP", _IPV4, _entire(_ipv4_key), lambda c: c.count(".") >= 3),
    _whole("IP", _AWS_HOST, _aws_host, lambda t: "ip-" in t),
    _clustered("PHONE", _PHONE_INTL, _entire(_digit_count(8, 15)), lambda c: "+" in c),
    _clustered("PHONE", _PHONE_NANP, _entire(_digit_count(10, 11)), lambda c: len(c) >= 12),
    _clustered("PHONE", _PHONE_TRUNK, _entire(_trunk_key), _trunk_fits),
    _clustered("PHONE", _PHONE_NATIONAL, _entire(_digit_count(10, 12)), lambda c: len(c) >= 12 and ("(" in c or c.count("-") >= 2)),
    _clustered("PHONE", _PHONE_EXIT, _entire(_digit_count(10, 18)), lambda c: len(c) >= 13 and ("(00" in c or "011" in c)),
    _detect_labeled,  # last: a value of a shape detected above keeps its own kind (an SSN labelled "SSN")
)


# --- numbering and the sanitizer -----------------------------------------------------------------


class _Numbering:
    """Placeholder allocation for one call: one number per (kind, key), shared by every field.

    Numbers continue after placeholders already present in the input, so a new value never
    reuses a number that already stands for something else.
    """

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.last: dict[str, int] = {}
        for text in texts.values():
            for m in PLACEHOLDER.finditer(text) if "<" in text else ():
                kind, n = m.group(1), int(m.group(2))
                if n > self.last.get(kind, 0):
                    self.last[kind] = n
        self.assigned: dict[tuple[str, str], str] = {}
        self.counts: dict[str, int] = {}
        self.spread: set[str] = set()  # the secrets replaced in every field (``_replace_known_secrets``)

    def placeholder(self, kind: str, key: str) -> str:
        """The placeholder of one value, counted as one replacement."""
        self.counts[kind] = self.counts.get(kind, 0) + 1
        placeholder = self.assigned.get((kind, key))
        if placeholder is None:
            n = self.last[kind] = self.last.get(kind, 0) + 1
            placeholder = self.assigned[(kind, key)] = f"<{kind}_{n}>"
        return placeholder

    def render(self, p: _Pass) -> str:
        """The pass's text with every claimed span replaced, numbered in order of position."""
        parts: list[str] = []
        pos = 0
        for start, end, kind, key in p.spans:
            if not kind:
                continue  # a placeholder that was already there
            if kind == "SECRET" and key not in p.quiet:
                self.spread.add(key)
            start, end = p.origin(start), p.end(end)
            parts += (p.source[pos:start], self.placeholder(kind, key))
            pos = end
        parts.append(p.source[pos:])
        return "".join(parts)


_SPACE: Final = re.compile(r"\s")
_LABEL_KINDS: Final = frozenset(_LABELS.values())


def _field_label(name: str) -> str | None:
    """The kind a field named with :data:`LABEL_FIELD` says its dict key labels, or None."""
    at = name.rfind(LABEL_FIELD)
    if at == -1:
        return None
    kind = name[at + len(LABEL_FIELD) :].partition("#")[0]  # "#n": a name made unique (``flatten_texts``)
    return kind if kind in _LABEL_KINDS else None


def _spreads(secret: str) -> bool:
    """Whether a secret found by its key is replaced wherever else it occurs: long and shaped
    like a credential (a digit or a symbol in it), so a value such as ``enabled`` under ``auth``
    does not blank the word across the episode."""
    return len(secret) >= 6 and not secret.isalpha() and _SPACE.search(secret) is None


def _replace_known_secrets(out: dict[str, str], numbering: _Numbering) -> list[str]:
    """A secret known from its key (``{"password": "xkcd936q"}``, ``token=...``, a URL's password)
    is a secret in every field of the episode: "retry with xkcd936q" loses it too. Not a label key's
    number (``{"pin": 1000000}``, ``_Pass.quiet``): too short and common to blank "1000000 rows".
    Returns the names of the fields it changed."""
    if "SECRET" not in numbering.counts:
        return []
    known = [
        (key, placeholder)
        for (kind, key), placeholder in numbering.assigned.items()
        if kind == "SECRET" and key in numbering.spread and _spreads(key)
    ]
    changed = []
    for name, text in out.items():
        for key, placeholder in known:
            if key in text:
                text, n = re.subn(rf"(?<![A-Za-z0-9]){re.escape(key)}(?![A-Za-z0-9])", placeholder, text)
                numbering.counts["SECRET"] += n
                if n:
                    changed.append(name)
        out[name] = text
    return list(dict.fromkeys(changed))


# Short texts found to hold nothing, remembered (``RegexSanitizer._memo``): an episode's session,
# its tags, kinds and decisions' words repeat from one capture to the next, and a session's two
# forms ("conv_000123", "conv 000123") took every detector each time, a tenth of a capture's
# sanitizing. A text is remembered only where its episode left it as it was: its own pass claimed
# nothing, which depends on the text alone (not on the other fields nor the numbering), and no
# other field's secret was in it, so a remembered text reads as it would be read again
# (tests/memory/test_sanitize_memo.py).
_CLEAN_CHARS: Final = 64  # longer texts are prose, seldom repeated
_CLEAN_KEPT: Final = 4096  # then forgotten all at once: bounded memory, no per-hit bookkeeping


class RegexSanitizer:
    """The default sanitizer: precompiled stdlib regexes plus checksums; no I/O, thread-safe; its
    only state is a bounded memo of short texts that held nothing (``_CLEAN_CHARS``).

    ``extra`` maps a placeholder kind (upper case, e.g. ``"EMPLOYEE_ID"``) to a pattern whose
    whole match becomes ``<EMPLOYEE_ID_n>``; extra patterns run after the built-in detectors.

    Raises ConfigError if a kind name or a pattern is invalid.
    """

    __slots__ = ("_detectors", "_extra", "_memo", "_unclustered")

    def __init__(self, extra: Mapping[str, str | re.Pattern[str]] | None = None) -> None:
        detectors = list(_DETECTORS)
        for kind, pattern in (extra or {}).items():
            if not isinstance(kind, str) or not _KIND_NAME.match(kind):
                raise ConfigError(f"extra pattern kind {kind!r}: must be upper-case letters, digits and '_' (e.g. 'EMPLOYEE_ID')")
            if isinstance(pattern, str):
                try:
                    pattern = re.compile(pattern)
                except re.error as exc:
                    raise ConfigError(f"extra pattern {kind!r}: does not compile: {exc} (check the regex syntax)") from None
            elif not isinstance(pattern, re.Pattern) or not isinstance(pattern.pattern, str):
                raise ConfigError(f"extra pattern {kind!r}: expected a str regex or a compiled str pattern, got {type(pattern).__name__}")
            detectors.append(_whole(kind, pattern, _WHOLE))
        self._detectors: tuple[Detector, ...] = tuple(detectors)
        self._unclustered = tuple(d for d in detectors if d not in _CLUSTERED)  # the same, for text without clusters
        self._extra = self._detectors[len(_DETECTORS) :]  # what runs on text without a hint of built-in PII
        # (the registered secrets, short texts read clean under them): one pair, replaced whole when
        # the secrets change, so a capture that began under the old ones adds to a discarded set (revU)
        self._memo: tuple[tuple[str, ...], set[str]] = (known_secrets(), set())

    def scan(self, texts: Mapping[str, str]) -> SanitizeResult:
        """Sanitize all fields of one episode and count the replacements per kind.

        Raises ValidationError (naming the field, never its text) if a value is not a str.
        """
        for name, text in texts.items():
            if not isinstance(text, str):
                raise ValidationError(f"field {name!r}: expected str to sanitize, got {type(text).__name__}")
        numbering = _Numbering(texts)
        known, clean = self._memo
        if known is not known_secrets():  # a secret registered or dropped since: read every text again
            known, clean = self._memo = (known_secrets(), set())
        out: dict[str, str] = {}
        for name, text in texts.items():
            if name.startswith(SECRET_FIELD) and text.strip() and PLACEHOLDER.fullmatch(text) is None:
                out[name] = numbering.placeholder("SECRET", text)  # the value of a secret key, whole
                numbering.spread.add(text)
                continue
            label = _field_label(name)
            out[name] = text if label is None and text in clean else self._settled(text, label, numbering)
        # A secret replaced in another field may free what was glued to it ("x1y2z3+49 30 901820":
        # a phone once its secret is a placeholder), which the next sanitizing found: read those again
        for name in _replace_known_secrets(out, numbering):
            out[name] = self._settled(out[name], _field_label(name), numbering)
        # remembered once the episode is read whole: a field read clean alone may hold a secret another
        # field's key revealed (a password's value in the summary), which the memo must never keep (revU)
        for name, text in texts.items():
            if len(text) <= _CLEAN_CHARS and out[name] is text and _field_label(name) is None and not name.startswith(SECRET_FIELD):
                if len(clean) >= _CLEAN_KEPT:
                    clean.clear()
                clean.add(text)
        return SanitizeResult(out, numbering.counts)

    def _settled(self, text: str, label: str | None, numbering: _Numbering) -> str:
        """``text`` sanitized until a pass finds nothing: the result is then a fixpoint, hence idempotent."""
        known = known_secrets()
        for _ in range(_MAX_PASSES):
            read = _read(text)
            hinted = _MAYBE_PII.search(read[0]) is not None
            if not (hinted or self._extra or known):
                break  # most texts (a tag, a session, a sentence without a number): no detector would run, so no pass is built
            p = _Pass(text, label, read)
            claimed = len(p.spans)
            if known:  # first: whatever their shape, and however the rest of the text reads
                _detect_known(p)
            if not hinted:
                detectors = self._extra
            else:
                detectors = self._detectors if p.clusters else self._unclustered
            for detect in detectors:
                detect(p)
            if len(p.spans) == claimed:
                break
            text = numbering.render(p)
        return text

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        """Return the sanitized fields (see :meth:`scan` for the counts)."""
        return self.scan(texts).texts


def sanitize_fields(sanitizer: Sanitizer, texts: Mapping[str, str]) -> dict[str, str]:
    """Run ``sanitizer`` and verify its result fail-closed, so raw text never slips through.

    Any exception from the sanitizer, or a result that is not a mapping of exactly the input's
    keys to str values, raises SanitizerError. Messages name the sanitizer class, the exception
    type and field names, never any text (it may hold PII); the original exception is not
    chained for the same reason.
    """
    who = type(sanitizer).__qualname__
    try:
        result = sanitizer.sanitize(texts)
    except Exception as exc:
        raise SanitizerError(f"sanitizer {who}: raised {type(exc).__name__} (capture dropped; fix the sanitizer or its input)") from None
    try:
        out = _verified(who, texts, result)
    except SanitizerError:
        raise
    except Exception as exc:  # a broken result object, e.g. a Mapping whose __getitem__ raises
        raise SanitizerError(f"sanitizer {who}: inspecting its result raised {type(exc).__name__} (capture dropped)") from None
    # memdb's own sanitizer replaced them already (``_detect_known``); a custom one may not have
    return _without_known_secrets(out) if known_secrets() and type(sanitizer).sanitize is not RegexSanitizer.sanitize else out


def _without_known_secrets(texts: dict[str, str]) -> dict[str, str]:
    """``texts`` with the secrets this process registered (:mod:`.known`) replaced, numbered after
    the ``<SECRET_n>`` there: what a sanitizer that does not know them left (the built-in one
    leaves none)."""
    found = [secret for secret in known_secrets() if any(secret in text for text in texts.values())]
    if not found:
        return texts
    last = max((int(m.group(2)) for t in texts.values() if "<" in t for m in PLACEHOLDER.finditer(t) if m.group(1) == "SECRET"), default=0)
    out = dict(texts)
    for n, secret in enumerate(found, last + 1):
        out = {name: text.replace(secret, f"<SECRET_{n}>") for name, text in out.items()}
    return out


def _verified(who: str, texts: Mapping[str, str], result: object) -> dict[str, str]:
    if not isinstance(result, Mapping):
        raise SanitizerError(f"sanitizer {who}: returned {type(result).__name__}, not a mapping of field -> str (capture dropped)")
    missing = [name for name in texts if name not in result]
    unexpected = len(result) - (len(texts) - len(missing))
    if missing or unexpected:
        # Unexpected keys are counted, not shown: a buggy sanitizer may have put text in them.
        raise SanitizerError(f"sanitizer {who}: returned the wrong fields (missing {missing}, {unexpected} unexpected) (capture dropped)")
    out: dict[str, str] = {}
    for name in texts:
        value = result[name]
        if not isinstance(value, str):
            raise SanitizerError(f"sanitizer {who}: field {name!r} came back as {type(value).__name__}, not str (capture dropped)")
        out[name] = value
    return out
