"""PII sanitizer: every text field of an episode passes through here before anything reaches disk.

Detected values become typed placeholders ``<EMAIL_1>``, ``<PHONE_2>``, ``<SECRET_1>`` ... numbered
by first appearance across *all* fields of one episode (field order, then position), so the same
email in ``summary`` and ``content`` reads as the same ``<EMAIL_1>`` and the memory stays useful.

Detectors claim spans in a fixed order, most specific and most dangerous first; a later
detector never touches a span an earlier one claimed:

    SECRET   PEM private-key blocks; token shapes ``sk-``, ``ghp_``/``gho_``/``github_pat_``,
             ``xox[bpars]-``, ``AKIA``/``ASIA``, ``AIza``, JWTs; ``Bearer <token>``; the value of
             ``password=``/``api_key:``/``secret=``/``token=`` style assignments (the key is kept)
    EMAIL    ``local@domain.tld``
    IBAN     ISO 13616 in either case, mod-97 checked
    CARD     13-19 digits, optional single spaces/dashes, first digit 2-6 (payment cards), Luhn checked
    SSN      US ``ddd-dd-dddd`` without the never-issued areas 000/666/9xx, group 00, serial 0000
    IP       IPv6 (with at least one decimal digit) and IPv4, validated with :mod:`ipaddress`
    PHONE    ``+`` international forms (8-15 digits), NANP ``(415) 555-0132``/``415-555-0132``, and
             trunk-prefix national forms ``020 7946 0958`` (10-13 digits, one separator); national
             forms need separators, so bare numbers, dates, times, versions and timestamps stay

then the caller's ``extra`` patterns. Text already shaped like a placeholder is never touched,
and detection repeats until a pass finds nothing, so ``sanitize`` is idempotent by construction
(``tests/memory/test_sanitize.py::test_idempotent``).

Speed: one search for a hint (a digit, ``@``, ``:``, ``=``, a token prefix) lets most prose
skip every built-in detector. A regex that starts with a character class costs ~6 ns per
character of text, one that starts with a literal a tenth of that. So digit-based detectors run
only inside "clusters" (runs of digits, capitals and phone punctuation) found by one scan, and
the rest are anchored on literals (``@``, ``:``, ``=``, token prefixes); text without a cluster
skips the clustered detectors, and one search for the token prefixes stands for the seven token
shapes. A 2,000-character note takes tens of µs. Time
is linear in the text length even for hostile input: repeats are bounded, and word-boundary
tests sit where they fail at once (``tests/memory/test_sanitize.py::test_repetitive_input``).

Values are found however they are typed: detectors read a copy in which every digit, space and
dash of any script, and the full-width forms, are folded to ASCII one character for one
(:func:`detection_text`), and what they find is replaced in the text as written. So
``４１１１ １１１１ …``, ``١٢٣-٤٥-٦٧٨٩``, a card wrapped onto the next line, ``jörg@bücher.de``
and a lower-case IBAN are replaced like their plain forms.

Known limits: secrets written as prose ("my password is hunter2"), names and street addresses
are not detected; a 4-part version such as ``1.2.3.4`` is a valid IPv4 address and is replaced;
digits outside the Basic Multilingual Plane (mathematical bold digits) are not folded.
"""

from __future__ import annotations

import bisect
import ipaddress
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol, TypeAlias, runtime_checkable

from memdb.errors import ConfigError, SanitizerError, ValidationError

__all__ = ["PLACEHOLDER", "RegexSanitizer", "SanitizeResult", "Sanitizer", "sanitize_fields"]

PLACEHOLDER: Final = re.compile(r"<([A-Z][A-Z0-9_]*)_([0-9]+)>")
"""A placeholder ``<KIND_n>``; text of this shape passes through every sanitizer unchanged."""

_KIND_NAME: Final = re.compile(r"[A-Z][A-Z0-9_]*\Z")
_MAX_PASSES: Final = 8  # a second pass finds nothing in practice; the bound only guards against a bad extra pattern


@runtime_checkable
class Sanitizer(Protocol):
    """Anything that redacts the text fields of one episode at once (field name -> text)."""

    def sanitize(self, texts: Mapping[str, str]) -> dict[str, str]:
        """Return the same keys with sanitized text; placeholders are consistent across fields."""
        ...


@dataclass(frozen=True)
class SanitizeResult:
    """Sanitized fields plus the number of replacements per placeholder kind (for audit counters)."""

    texts: dict[str, str]
    counts: dict[str, int]


# --- one detection pass ------------------------------------------------------------------------

Span: TypeAlias = tuple[int, int, str]
"""(start, end, key): the key is the normalised value, so "Bob@X.com" and "bob@x.com" share a number."""

_CLUSTER: Final = re.compile(r"[0-9A-Z(+][0-9A-Z ().+-]{6,}")


# The non-ASCII characters that can stand in a value for an ASCII one: the decimal digits of
# every script in the Basic Multilingual Plane, spaces, dashes and the minus sign, and the
# full-width forms of what PII is written with (letters, "@", ".", "+", "-", parentheses).
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
_FOLDABLE: Final = re.compile(
    f"[{_NON_ASCII_DIGITS}{_NON_ASCII_SPACES}\u058a\u05be\u2010-\u2015\u2212\ufe58\ufe63\uff08\uff09\uff0b\uff0d\uff0e\uff20-\uff3a\uff41-\uff5a]"
)


class _Fold(dict[str, str]):
    """The ASCII character each :data:`_FOLDABLE` one stands for, worked out on first use."""

    def __missing__(self, c: str) -> str:
        digit = unicodedata.decimal(c, None)
        if digit is not None:
            folded = str(digit)
        elif c.isspace():
            folded = " "
        elif unicodedata.category(c) == "Pd" or c == "\u2212":
            folded = "-"
        else:  # a full-width form
            folded = unicodedata.normalize("NFKC", c)
        self[c] = folded  # bounded: only _FOLDABLE characters come here
        return folded


_FOLD: Final = _Fold()


def _fold(m: re.Match[str]) -> str:
    return _FOLD[m.group()]


def detection_text(text: str) -> str:
    """What the detectors read: ``text`` with each character that can stand for an ASCII one in
    PII folded to it (``４``, ``٤`` -> ``4``; a non-breaking hyphen -> ``-``; ``＠`` -> ``@``; a line
    break or no-break space -> a space). One character for one, so a span found here is the
    same span of the original, which is what is replaced: the text around it is kept as written."""
    if "\n" in text:
        text = text.replace("\n", " ")  # a value wrapped onto the next line
    return text if text.isascii() else _FOLDABLE.sub(_fold, text)


class _Pass:
    """One pass over one text: the spans claimed so far and, computed once, the numeric clusters.

    Detectors read ``text`` (the :func:`detection_text`); spans are replaced in ``source``."""

    __slots__ = ("_clusters", "source", "spans", "starts", "text")

    def __init__(self, source: str) -> None:
        self.source = source
        self.text = text = detection_text(source)
        self.starts: list[int] = []
        self.spans: list[tuple[int, int, str, str]] = []  # (start, end, kind, key); kind "" = placeholder already there
        self._clusters: list[tuple[int, int, str]] | None = None
        if "<" in text:
            for m in PLACEHOLDER.finditer(text):
                self.claim(m.start(), m.end(), "", "")

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
            self._clusters = [(m.start(), m.end(), m.group()) for m in _CLUSTER.finditer(self.text)]
        return self._clusters


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


def _clustered(kind: str, pattern: re.Pattern[str], check: _Check, fits: Callable[[str], bool]) -> Detector:
    """Detector scanning only the numeric clusters that ``fits`` (e.g. long enough) accepts."""

    def detect(p: _Pass) -> None:
        size = len(p.text)
        for start, end, cluster in p.clusters:
            if fits(cluster):
                _search(p, kind, pattern, check, start, min(size, end + 2))  # +2: room for the lookaheads

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


# --- SECRET ----------------------------------------------------------------------------------------

# An unterminated block (a truncated paste) is replaced up to the end of the text.
_PEM: Final = re.compile(r"-----BEGIN[A-Z ]*PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END[A-Z ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)", re.DOTALL)
# One regex per literal prefix, which keeps the scan fast. The "not inside a longer word" test
# is a lookbehind placed after the prefix, so a start in the middle of a word fails at once
# instead of consuming the word first (no quadratic time on "xsk-sk-sk-...").
_TOKEN_SHAPES: Final = (  # (literal prefix, its length, the rest)
    ("sk-", 3, "[A-Za-z0-9_-]{20,}"),
    ("gh[pousr]_", 4, "[A-Za-z0-9]{20,}"),
    ("github_pat_", 11, "[A-Za-z0-9_]{20,}"),
    ("xox[bpars]-", 5, "[A-Za-z0-9-]{10,}"),
    ("A(?:KIA|SIA)", 4, "[0-9A-Z]{16}(?![0-9A-Za-z])"),
    ("AIza", 4, "[0-9A-Za-z_-]{30,}"),
    ("eyJ", 3, r"[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"),
)
_TOKENS: Final = tuple(re.compile(f"{head}(?<![A-Za-z0-9_-]{'.' * width}){tail}") for head, width, tail in _TOKEN_SHAPES)
_TOKEN_HINT: Final = re.compile("|".join(head for head, _, _ in _TOKEN_SHAPES))  # any token's prefix
_BEARER: Final = re.compile(r"\b(?i:bearer)[ \t]+(?P<v>[A-Za-z0-9._~+/-]+=*)")
_SECRET_KEYS: Final = (
    "password", "passwd", "passphrase", "pwd", "secret", "token",
    "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key", "privatekey", "private_key", "private-key",
)  # fmt: skip
_KEY_LAST: Final = frozenset({*"dDeEtTnNyY", " ", "\t", '"', "'"})  # last characters of _SECRET_KEYS, or padding
# A value of spaced digit groups ("pin: 4111 1111 ...") is taken whole, not just its first group.
_ASSIGN_VALUE: Final = re.compile(
    r"[ \t]*(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<v>[0-9]+(?:[ -][0-9]+)+(?![^\s\"',;&])|[^\s\"',;&]+))"
)


def _bearer(m: re.Match[str]) -> Span | None:
    value = m.group("v")
    # "Bearer authentication" is prose; a real token is long or has digits/symbols in it.
    if len(value) >= 24 or (len(value) >= 8 and not value.isalpha()):
        return m.start("v"), m.end("v"), value
    return None


def _detect_tokens(p: _Pass) -> None:
    if _TOKEN_HINT.search(p.text) is None:  # one search instead of one per token shape
        return
    for pattern in _TOKENS:
        _search(p, "SECRET", pattern, _WHOLE, 0, len(p.text))


def _detect_assignments(p: _Pass) -> None:
    """Replace the value of ``key = value`` / ``key: value`` when the key ends with a secret word.

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
            head = text[max(0, at - 32) : at].rstrip(" \t")
            if head[-1:] in ("'", '"'):
                head = head[:-1]
            if head.lower().endswith(_SECRET_KEYS) and (m := _ASSIGN_VALUE.match(text, at + 1)) is not None:
                group = m.lastgroup or "v"
                p.claim(m.start(group), m.end(group), "SECRET", m.group(group))
                at = text.find(sep, m.end())  # separators inside the value are part of it ("password=a=b")
            else:
                at = text.find(sep, at + 1)


# --- EMAIL -----------------------------------------------------------------------------------------

_LOCAL_PUNCT: Final = frozenset("_.!#$%&'*+/=?^`{|}~-")
_DOMAIN: Final = re.compile(r"(?:[\w-]+\.)+[\w-]*[^\W\d_][\w-]*")  # Unicode labels too: jörg@bücher.de


def _detect_emails(p: _Pass) -> None:
    """Anchored on each ``@``: extend left over local-part characters, match a domain to the right."""
    text = p.text
    at = text.find("@")
    while at != -1:
        start = at
        while start and (text[start - 1].isalnum() or text[start - 1] in _LOCAL_PUNCT):
            start -= 1
        m = _DOMAIN.match(text, at + 1)
        if m is not None and start < at and p.claim(start, m.end(), "EMAIL", text[start : m.end()].casefold()):
            at = text.find("@", m.end())
        else:
            at = text.find("@", at + 1)


# --- IBAN ------------------------------------------------------------------------------------------

# Either case: people type "gb82 west 1234 ...". Lower-case letters are outside the numeric
# clusters, so the search runs in a window reaching an IBAN's length either side of a cluster.
_IBAN: Final = re.compile(
    r"(?<![A-Za-z0-9])[A-Za-z]{2}[0-9]{2}(?:[A-Za-z0-9]{11,30}|(?: [A-Za-z0-9]{4}){2,7}(?: [A-Za-z0-9]{1,4})?)(?![A-Za-z0-9])"
)
_IBAN_REACH: Final = 34  # the longest IBAN, compact
_NOT_DIGITS: Final = str.maketrans("", "", "ABCDEFGHIJKLMNOPQRSTUVWXYZ ().+-")  # the rest of a cluster


def _iban_ok(compact: str) -> bool:
    """ISO 13616: move the first four characters to the end, letters to 10..35, mod 97 must be 1."""
    if not 15 <= len(compact) <= 34:
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
    parts = m.group().split(" ")
    for n in range(len(parts), 0, -1):
        compact = "".join(parts[:n]).upper()
        if _iban_ok(compact):
            return m.start(), m.start() + len(" ".join(parts[:n])), compact
    return None


# --- CARD ------------------------------------------------------------------------------------------

# Up to eight digit groups holding at least 13 digits; which groups form the card is decided in _card.
_CARD: Final = re.compile(r"(?<![0-9+])(?=(?:[0-9][ -]?){13})[0-9]+(?:[ -][0-9]+){0,7}")  # 19 digits need at most 8 groups
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
    keeps a list of small numbers from reading as one card.
    """
    digits = ""
    best: Span | None = None
    prev_len = 0
    for i, g in enumerate(_DIGIT_RUN.finditer(m.group())):
        if i and not 3 <= prev_len <= 6:
            break
        digits += g.group()
        prev_len = len(g.group())
        if len(digits) > 19:
            break
        if len(digits) >= 13 and digits[0] in "23456" and _luhn_ok(digits):
            best = (m.start(), m.start() + g.end(), digits)
    return best


# --- SSN, IP, PHONE --------------------------------------------------------------------------------

_SSN: Final = re.compile(r"(?<![0-9])(?<![0-9]-)(?!000|666|9)[0-9]{3}-(?!00)[0-9]{2}-(?!0000)[0-9]{4}(?![0-9]|-[0-9])")
_IPV4: Final = re.compile(r"(?<![\w.])(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?!\w|\.[0-9])")
_IPV6: Final = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9A-Fa-f]{1,4})?(?![\w:]|\.[0-9])")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_has_digit: Final = re.compile(r"[0-9]").search

# Atomic groups and possessive repeats: a long digit string cannot make these backtrack.
_PHONE_INTL: Final = re.compile(r"(?<![\w+])\+[0-9]{1,3}(?>[ .-]?(?:\([0-9]{1,4}\)|[0-9]{1,4})){1,7}+(?![0-9])")
_PHONE_NANP: Final = re.compile(
    r"(?<![\w+.])(?<![0-9][.-])(?:1[ .-]?)?(?:\([2-9][0-9]{2}\)[ ]?|[2-9][0-9]{2}[ .-])[2-9][0-9]{2}[ .-][0-9]{4}(?!\w|[.-][0-9])"
)
# One separator throughout, so a date followed by a number ("01-02-2026 07") is not a phone.
_PHONE_TRUNK: Final = re.compile(r"(?<![\w+.])(?<![0-9][.-])0[0-9]{1,4}(?P<sep>[ -])[0-9]{2,8}(?>(?P=sep)[0-9]{2,8}){0,3}+(?!\w|[.-][0-9])")


def _trunk_fits(cluster: str) -> bool:
    # the leading 0 must start a number: at the cluster start or after a space or parenthesis
    return len(cluster) >= 11 and (cluster[0] == "0" or " 0" in cluster or "(0" in cluster or ")0" in cluster)


def _ipv4_key(value: str) -> str | None:
    try:
        return str(ipaddress.IPv4Address(value))
    except ValueError:  # 256.1.1.1, leading zeros
        return None


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


def _digit_count(lo: int, hi: int) -> Callable[[str], str | None]:
    def key(value: str) -> str | None:
        d = _digits(value)
        return d if lo <= len(d) <= hi else None

    return key


# Every built-in detector needs one of these to match anything (a digit for the numeric kinds,
# the anchors and literal prefixes for the rest), so most prose skips them all after one search.
_MAYBE_PII: Final = re.compile(rf"[0-9@:=]|{_TOKEN_HINT.pattern}|(?i:earer)|-----BEGIN")

_DETECTORS: Final[tuple[Detector, ...]] = (
    _whole("SECRET", _PEM, _WHOLE, lambda t: "-----BEGIN" in t),
    _detect_tokens,
    _whole("SECRET", _BEARER, _bearer, lambda t: "earer" in t or "EARER" in t),
    _detect_assignments,
    _detect_emails,
    _detect_ibans,
    _clustered("CARD", _CARD, _card, lambda c: len(c) >= 13),
    _clustered("SSN", _SSN, _entire(_digits), lambda c: len(c) >= 11 and "-" in c),
    _detect_ipv6,
    _clustered("IP", _IPV4, _entire(_ipv4_key), lambda c: c.count(".") >= 3),
    _clustered("PHONE", _PHONE_INTL, _entire(_digit_count(8, 15)), lambda c: "+" in c),
    _clustered("PHONE", _PHONE_NANP, _entire(_digit_count(10, 11)), lambda c: len(c) >= 12),
    _clustered("PHONE", _PHONE_TRUNK, _entire(_digit_count(10, 13)), _trunk_fits),
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

    def render(self, p: _Pass) -> str:
        """The pass's text with every claimed span replaced, numbered in order of position."""
        parts: list[str] = []
        pos = 0
        for start, end, kind, key in p.spans:
            if not kind:
                continue  # a placeholder that was already there
            self.counts[kind] = self.counts.get(kind, 0) + 1
            placeholder = self.assigned.get((kind, key))
            if placeholder is None:
                n = self.last[kind] = self.last.get(kind, 0) + 1
                placeholder = self.assigned[(kind, key)] = f"<{kind}_{n}>"
            parts += (p.source[pos:start], placeholder)
            pos = end
        parts.append(p.source[pos:])
        return "".join(parts)


class RegexSanitizer:
    """The default sanitizer: precompiled stdlib regexes plus checksums; no I/O, no state, thread-safe.

    ``extra`` maps a placeholder kind (upper case, e.g. ``"EMPLOYEE_ID"``) to a pattern whose
    whole match becomes ``<EMPLOYEE_ID_n>``; extra patterns run after the built-in detectors.

    Raises ConfigError if a kind name or a pattern is invalid.
    """

    __slots__ = ("_detectors", "_extra", "_unclustered")

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

    def scan(self, texts: Mapping[str, str]) -> SanitizeResult:
        """Sanitize all fields of one episode and count the replacements per kind.

        Raises ValidationError (naming the field, never its text) if a value is not a str.
        """
        for name, text in texts.items():
            if not isinstance(text, str):
                raise ValidationError(f"field {name!r}: expected str to sanitize, got {type(text).__name__}")
        numbering = _Numbering(texts)
        out: dict[str, str] = {}
        for name, text in texts.items():
            # Repeat until a pass finds nothing: the result is then a fixpoint, hence idempotent.
            for _ in range(_MAX_PASSES):
                p = _Pass(text)
                claimed = len(p.spans)
                if _MAYBE_PII.search(p.text) is None:
                    detectors = self._extra
                else:
                    detectors = self._detectors if p.clusters else self._unclustered
                for detect in detectors:
                    detect(p)
                if len(p.spans) == claimed:
                    break
                text = numbering.render(p)
            out[name] = text
        return SanitizeResult(out, numbering.counts)

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
        return _verified(who, texts, result)
    except SanitizerError:
        raise
    except Exception as exc:  # a broken result object, e.g. a Mapping whose __getitem__ raises
        raise SanitizerError(f"sanitizer {who}: inspecting its result raised {type(exc).__name__} (capture dropped)") from None


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
