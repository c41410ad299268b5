"""Terms for the text inverted index (BM25) and tag normalisation: pure functions, no I/O.

A term is a run of letters and digits after NFKC normalisation and case folding, so "Café",
"CAFÉ" and "ｃａｆé" are one term. Hyphens, underscores and other punctuation split words
("project-x" -> "project", "max_tokens" -> "max", "tokens"); terms shorter than two characters
are dropped unless they are numbers, and so are English stopwords. There is no stemming:
"deploy" and "deployed" are different terms, which keeps matching predictable and
language-neutral (queries go through the same ``tokenize``). Scripts written without spaces
(Chinese, Japanese) are not segmented: a run of such characters is one term.

Sanitizer placeholders such as ``<EMAIL_1>`` are removed first, so they never become terms.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from typing import Final

from memdb.errors import ValidationError
from memdb.sanitize import PLACEHOLDER

__all__ = ["MAX_TAG_CHARS", "MAX_TERM_CHARS", "STOPWORDS", "normalize_tag", "term_counts", "tokenize"]

MAX_TERM_CHARS: Final = 32
"""Longest term; longer ones become their first 24 characters + "~" + 7 hex digits of a hash."""

MAX_TAG_CHARS: Final = 64

_TERM_HEAD: Final = MAX_TERM_CHARS - 8  # room for "~" and 7 hex digits
_WORD: Final = re.compile(r"[^\W_]+")  # \w without the underscore: snake_case splits like kebab-case
_TAG_SEPARATORS: Final = re.compile(r"[\s_.]+")
_DASHES: Final = re.compile(r"-{2,}")

STOPWORDS: Final[frozenset[str]] = frozenset(
    """
    about above after again against all also am an and any are aren as at
    be because been before being below between both but by
    can cannot could couldn did didn do does doesn doing don down during
    each either else ever every few for from further
    had hadn has hasn have haven having he her here hers herself him himself his how however
    if in into is isn it its itself just ll me might mightn more most must mustn my myself
    neither no nor not now of off on once only or other others our ours ourselves out over own
    re same shall shan she should shouldn since so some such
    than that the their theirs them themselves then there these they this those though through to too
    under until up upon us ve very was wasn we were weren what whatever when where whether which while
    who whom whose why will with within without would wouldn yet you your yours yourself yourselves
    """.split()
)
"""English function words (about 160): frequent everywhere, so they carry no BM25 signal."""


def _fold(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    # casefold can undo NFKC for a few characters; normalise again only then (rare, and cheap to test)
    return folded if unicodedata.is_normalized("NFKC", folded) else unicodedata.normalize("NFKC", folded)


def _shorten(term: str) -> str:
    """Keep index keys bounded: a long term keeps a readable head and a hash of the whole term."""
    if len(term) <= MAX_TERM_CHARS:
        return term
    digest = hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()[:7]
    return f"{term[:_TERM_HEAD]}~{digest}"


def tokenize(text: str) -> list[str]:
    """The index terms of ``text`` in order, with repeats (see the module docstring for the rules)."""
    if "<" in text:
        text = PLACEHOLDER.sub(" ", text)
    return [_shorten(word) for word in _WORD.findall(_fold(text)) if (len(word) >= 2 or word.isdecimal()) and word not in STOPWORDS]


def term_counts(text: str) -> dict[str, int]:
    """Term frequencies of ``text`` (the tf of BM25), in order of first appearance."""
    return dict(Counter(tokenize(text)))


def normalize_tag(tag: str) -> str:
    """The canonical form of a tag, so "Project X", "project_x" and "PROJECT.X" are one tag.

    NFKC, case folding, trimming; runs of spaces, underscores and dots become "-"; anything
    but letters, digits, "-", ":" and "/" is dropped; repeated "-" collapse; edge "-" go.
    Raises ValidationError naming the tag if nothing is left or the result exceeds 64 characters.
    """
    if not isinstance(tag, str):
        raise ValidationError(f"tag {tag!r}: expected str, got {type(tag).__name__}")
    out = _TAG_SEPARATORS.sub("-", _fold(tag).strip())
    out = "".join(c for c in out if c in "-:/" or unicodedata.category(c)[0] in "LNM")  # marks belong to letters
    out = _DASHES.sub("-", out).strip("-")
    shown = repr(tag) if len(tag) <= 80 else repr(tag[:80]) + "..."
    if not out:
        raise ValidationError(f"tag {shown}: nothing is left after normalising (use letters or digits)")
    if len(out) > MAX_TAG_CHARS:
        raise ValidationError(f"tag {shown}: {len(out)} characters after normalising, more than {MAX_TAG_CHARS} (shorten it)")
    return out
