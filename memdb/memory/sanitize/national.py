"""National identity numbers the sanitizer finds without a label: the shapes they are written in
and the check digits that tell one from any other number of that shape.

Only a shape no ordinary number has, confirmed by its check, is found unlabelled: a CPF's dots
and dash, a Korean RRN's birth date and dash, a Chinese id's region, birth date and ISO 7064 check.
A bare run of 11 or 12 digits (a PESEL, a TC Kimlik, a CPF or СНИЛС without punctuation, a My
Number, Germany's Steuer-ID) passes a one- or two-digit check once in ten or a hundred, so those
are found by their label (``detect._LABELS``). Patterns read the text as the detectors do
(``detect._read``: digits and dashes folded to ASCII); a value's boundary is an ASCII letter,
digit or "_", never a letter of another script (``电话``, ``번호는``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final, NamedTuple

__all__ = ["CHECKED_IDS", "CheckedId", "compact"]


def compact(value: str) -> str:
    """The id without its separators, in capitals: what its check and its placeholder's number read."""
    return value.replace(" ", "").replace("-", "").replace(".", "").upper()


def _weighted(digits: str, weights: tuple[int, ...]) -> int:
    return sum(int(d) * w for d, w in zip(digits, weights, strict=False))


def _cn_ok(v: str) -> bool:
    """China's resident id: ISO 7064 MOD 11-2 over 17 digits, "X" for 10."""
    return "10X98765432"[_weighted(v, (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)) % 11] == v[17]


def _rrn_ok(v: str) -> bool:
    """Korea's resident registration number (as issued before October 2020, with a check digit)."""
    return (11 - _weighted(v, (2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5)) % 11) % 10 == int(v[12])


def _cpf_ok(v: str) -> bool:
    """Brazil's CPF: two mod-11 check digits; eleven equal digits pass them but are no CPF."""

    def check(n: int) -> int:
        return _weighted(v, tuple(range(n + 1, 1, -1))) * 10 % 11 % 10

    return check(9) == int(v[9]) and check(10) == int(v[10]) and v != v[0] * 11


def _snils_ok(v: str) -> bool:
    """Russia's СНИЛС: the digits weighted 9..1, mod 101, 100 read as 00."""
    total = _weighted(v, (9, 8, 7, 6, 5, 4, 3, 2, 1)) % 101
    return (0 if total == 100 else total) == int(v[9:])


def _nir_ok(v: str) -> bool:
    """France's NIR: the key is 97 less the 13 digits mod 97, Corsica's 2A and 2B read as 19 and 18."""
    body = v[:5] + {"2A": "19", "2B": "18"}.get(v[5:7], v[5:7]) + v[7:13]
    return 97 - int(body) % 97 == int(v[13:])


_SPANISH_LETTERS: Final = "TRWAGMYFPDXBNJZSQVHLCKE"


def _dni_ok(v: str) -> bool:
    """Spain's DNI (8 digits) or NIE (X, Y or Z for 0, 1, 2, then 7 digits): the letter is the number mod 23."""
    number = str("XYZ".index(v[0])) + v[1:8] if v[0] in "XYZ" else v[:8]
    return _SPANISH_LETTERS[int(number) % 23] == v[8]


# Italy's codice fiscale: what each character is worth in an odd position (1st, 3rd, ...); in an even
# one a digit is itself and a letter its place in the alphabet (A = 0)
_CF_ODD_DIGITS: Final = (1, 0, 5, 7, 9, 13, 15, 17, 19, 21)  # the letters A-J are worth the same
_CF_ODD: Final = dict(
    zip(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        (*_CF_ODD_DIGITS, *_CF_ODD_DIGITS, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23),
        strict=True,
    )
)


def _cf_ok(v: str) -> bool:
    """Italy's codice fiscale: the letter of the sum of what its first 15 characters are worth, mod 26."""
    total = sum(_CF_ODD[c] if i % 2 == 0 else int(c) if c.isdigit() else ord(c) - 65 for i, c in enumerate(v[:15]))
    return chr(65 + total % 26) == v[15]


_DAY: Final = "(?:0[1-9]|[12][0-9]|3[01])"
_MONTH: Final = "(?:0[1-9]|1[0-2])"
_END: Final = "(?![A-Za-z0-9_])"


def _shape(pattern: str) -> re.Pattern[str]:
    """``pattern`` with no ASCII letter, digit or "_" before it (a letter of another script may be)."""
    return re.compile(f"(?<![A-Za-z0-9_]){pattern}", re.ASCII)


class CheckedId(NamedTuple):
    """One shape: its pattern, the check of its :func:`compact` form, and the cheap test a numeric
    cluster (``detect._Pass.clusters``) must pass to hold one."""

    country: str
    pattern: re.Pattern[str]
    valid: Callable[[str], bool]
    fits: Callable[[str], bool]


CHECKED_IDS: Final = (
    # China: 11010519491231002X, 110105 19491231 002X (region, birth date, serial, check); a
    # lower-case "x" is no part of a cluster, hence 17
    CheckedId("CN", _shape(f"[1-8][0-9]{{5}} ?(?:19|20)[0-9]{{2}}{_MONTH}{_DAY} ?[0-9]{{3}}[0-9Xx]{_END}"), _cn_ok, lambda c: len(c) >= 17),
    # Korea: 900101-1234568 (birth date, a digit for sex and century, serial, check)
    CheckedId(
        "KR",
        _shape(f"(?<![0-9][.-])[0-9]{{2}}{_MONTH}{_DAY}-[1-8][0-9]{{6}}(?![A-Za-z0-9_]|-[0-9])"),
        _rrn_ok,
        lambda c: len(c) >= 14 and "-" in c,
    ),
    # Brazil: 123.456.789-09
    CheckedId(
        "BR",
        _shape(r"(?<![0-9][.-])[0-9]{3}\.[0-9]{3}\.[0-9]{3}-[0-9]{2}(?![A-Za-z0-9_]|[.-][0-9])"),
        _cpf_ok,
        lambda c: len(c) >= 14 and "." in c,
    ),
    # Russia: 112-233-445 95 (before Canada's SIN, whose shape its first nine digits have)
    CheckedId(
        "RU",
        _shape(r"(?<![0-9][.-])[0-9]{3}-[0-9]{3}-[0-9]{3}[ -][0-9]{2}(?![A-Za-z0-9_]|[.-][0-9])"),
        _snils_ok,
        lambda c: len(c) >= 14 and "-" in c,
    ),
    # France: 1 84 12 76 451 089 46 or compact (sex, year, month, department or 2A/2B, commune, order, key)
    CheckedId(
        "FR",
        _shape(f"(?<![0-9] )[12] ?[0-9]{{2}} ?{_MONTH} ?(?:[0-9]{{2}}|2[AB]) ?[0-9]{{3}} ?[0-9]{{3}} ?[0-9]{{2}}(?![A-Za-z0-9_]| [0-9])"),
        _nir_ok,
        lambda c: len(c) >= 15,
    ),
    # Spain: 12345678Z, X1234567L, a dash before the letter too
    CheckedId("ES", _shape(f"(?<![0-9][.-])(?:[0-9]{{8}}|[XYZ]-?[0-9]{{7}})-?[A-Z]{_END}"), _dni_ok, lambda c: len(c) >= 9),
    # Italy: RSSMRA85T10A562S (surname, name, year, month letter, day (+40 for women), place, check);
    # a digit shared with another person's code is replaced by a letter of LMNPQRSTUV
    CheckedId(
        "IT",
        _shape(f"[A-Z]{{6}}[0-9LMNPQRSTUV]{{2}}[ABCDEHLMPRST][0-9LMNPQRSTUV]{{2}}[A-Z][0-9LMNPQRSTUV]{{3}}[A-Z]{_END}"),
        _cf_ok,
        lambda c: len(c) >= 16,
    ),
)
"""Every shape, in the order they claim a span."""
