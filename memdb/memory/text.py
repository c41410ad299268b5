"""Terms for the text inverted index (BM25) and tag normalisation: pure functions, no I/O.

A term is a run of letters, digits and the combining marks on them, after NFKC normalisation
and case folding, so "Café", "CAFÉ" and "ｃａｆé" are one term and a Devanagari word keeps its
vowel signs; optional marks (Arabic harakat, Hebrew points, the dot of "İ") are dropped, so
"كَتَبَ" is "كتب" and "İstanbul" is "istanbul". Hyphens, underscores and other punctuation split words
("project-x" -> "project", "max_tokens" -> "max", "token"); terms shorter than two characters
are dropped unless they are numbers, and so are English stopwords and negated auxiliaries whole
("won't", "ain't", "needn’t": split at the apostrophe, "won't" would be the word "won"). English words are stemmed
by Snowball's English stemmer (Porter2, from PyStemmer): "deploy", "deployed" and "deployment"
are one term, "deploy", and so are "migrate" and "migration"; the past forms of common irregular
verbs are their verb's term ("bought" is "buy", ``IRREGULAR_VERBS``); other scripts are left as
they are.
Chinese and Japanese, written without spaces between words, are indexed as overlapping character
bigrams ("数据库迁移" -> "数据", "据库", "库迁", "迁移"; a lone character is a term of its own), as
Lucene's CJK analyzer does: a search for "数据库" finds a text that holds "数据库" anywhere; and
the index holds each Han character of a run too (Lucene's ``outputUnigrams``), so a word of one
character, "锁", "車", is found where it stands (layout 25). Thai, Lao, Myanmar and Khmer, also
written without spaces, are read as bigrams of their letters each with its marks ("ฐานข้อมูล" ->
"ฐา", "าน", "นข้", "ข้อ", "อมู", "มูล": a tone mark never splits from its letter). A Korean word of
one syllable ("돈", "책") is a term, where a lone Latin letter is none, and Hangul beside other
letters is a word of its own ("AWS에서" is "aws", "에서"). Queries are read by the same rules
(``terms_and_words``), a run by its bigrams alone (a text holding "数", "据" and "库" apart does
not answer "数据库"). ``tokenize`` reads Chinese and Japanese bigrams alone and other scripts as
words, as before layout 25: knowledge digests and tombstones were stored by its terms.

An identifier that joins letters and digits with hyphens, underscores or dots ("INV-2026-0042",
"JIRA-1234", "CVE-2024-3094", "gpt-4", "v2.3.1") is an index term of its own too
(``term_counts``), its parts joined by "-" ("inv-2026-0042"), beside the terms of its parts,
and so is it without its last words of letters ("INV-2026-0042.pdf" holds "inv-2026-0042",
"web-01.prod.internal" holds "web-01"), also written against Chinese, Japanese or Korean
("发票INV-2026-0042逾期"): a text holding it is found by its parts ("invoice
0042") and by the whole. A query names it whole (``terms_and_words``), so "What happened with
INV-2026-0042?" is not answered by every text that says "2026" or "inv" (layouts 21 and 23),
and ``ask`` names one no memory holds, as it does a name, but for a phrase ("3-day" is asked by
its words: ``memdb.query.engine``; ``compound_parts`` tells an identifier's term). ``tokenize``
gives the words' terms only: what the governance layer compares lessons by stays as it was.

Sanitizer placeholders such as ``<EMAIL_1>`` are removed first, so they never become terms.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
import threading
import unicodedata
from collections import _count_elements  # type: ignore[attr-defined]  # Counter's counting loop, in C
from collections.abc import Iterable, Mapping
from typing import Final

import Stemmer

from memdb.errors import ValidationError
from memdb.memory.sanitize.detect import PLACEHOLDER
from memdb.memory.sanitize.messages import redacted, shown

__all__ = [
    "IRREGULAR_VERBS",
    "MAX_TAG_BYTES",
    "MAX_TAG_CHARS",
    "MAX_TERM_CHARS",
    "STOPWORDS",
    "compound_parts",
    "identifier_heads",
    "normalize_tag",
    "normalize_tags",
    "shown_tag",
    "split_words",
    "stem",
    "term_counts",
    "terms_and_words",
    "tokenize",
    "unchecked_tag_form",
]

MAX_TERM_CHARS: Final = 32
"""Longest term; longer ones become their first 24 characters + "~" + 7 hex digits of a hash."""

MAX_TAG_CHARS: Final = 64
MAX_TAG_BYTES: Final = 128  # keeps an index key with owner, tag and an episode's tail within LMDB's 511 bytes

_TERM_HEAD: Final = MAX_TERM_CHARS - 8  # room for "~" and 7 hex digits
_WORD: Final = re.compile(r"[^\W_]+")  # \w without the underscore: snake_case splits like kebab-case
_ASCII_WORD: Final = re.compile(r"[a-z0-9]+")  # _WORD on folded ASCII text, at two thirds of the cost
_TAG_SEPARATORS: Final = re.compile(r"[\s_.]+")


def _char_class(codes: Iterable[int]) -> str:
    """Code points (ascending) as the body of a regex character class, consecutive ones as ranges."""
    ranges: list[list[int]] = []
    for c in codes:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)


MARKS: Final = _char_class(c for c in range(0x300, 0x10000) if unicodedata.category(chr(c))[0] == "M")
"""The combining marks of the Basic Multilingual Plane as the body of a regex character class:
``[\\w{MARKS}]`` is a word's characters, where ``\\w`` alone cuts "सर्वर" or a decomposed "café" at
its marks (about 10 ms to build, at import: the query layer's patterns are compiled with it)."""
# Han (with 々, 〇 and the Hangzhou numerals), whose single characters are words too ("锁", "車")
_HAN_CHARS: Final = r"\u3005\u3007\u3021-\u3029\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
# Han, hiragana and katakana: scripts written without spaces, read as character bigrams
_CJK_CHARS: Final = _HAN_CHARS + r"\u3040-\u30ff\u31f0-\u31ff"
_CJK: Final = re.compile(f"[{_CJK_CHARS}]+")
_HAN: Final = re.compile(f"[{_HAN_CHARS}]")
# Thai, Lao, Myanmar and Khmer (their letters and marks; digits are numbers): written without
# spaces between words too, read as bigrams of letters each with its marks (``_units``)
_SEA_CHARS: Final = _char_class(
    c
    for lo, hi in ((0xE00, 0xEFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x19E0, 0x19FF), (0xA9E0, 0xA9FF), (0xAA60, 0xAA7F))
    for c in range(lo, hi + 1)
    if unicodedata.category(chr(c))[0] in "LM"
)
HAN_CHARS: Final = _HAN_CHARS
"""Han characters as the body of a regex character class (a Chinese or Japanese word's)."""
UNSPACED_CHARS: Final = _CJK_CHARS + _SEA_CHARS
"""Scripts written without spaces between words (Han, kana, Thai, Lao, Myanmar, Khmer), as the body
of a regex character class: a run of them is read as overlapping bigrams, never as one word."""
HANGUL_CHARS: Final = r"\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
"""Hangul (jamo and syllables) as the body of a regex character class: Korean is written with
spaces, and a particle or a counter follows a word or a number without one ("14일에", "7월")."""
_RUNS: Final = re.compile(f"[{UNSPACED_CHARS}{HANGUL_CHARS}]")
_RUN: Final = re.compile(f"(?P<cjk>[{_CJK_CHARS}]+)|(?P<sea>[{_SEA_CHARS}]+)|(?P<hangul>[{HANGUL_CHARS}]+)")
_CJK_RUN: Final = re.compile(f"(?P<cjk>[{_CJK_CHARS}]+)")  # ``_RUN``'s Chinese and Japanese runs alone (``tokenize``)
_UNIT: Final = re.compile(f"[^{MARKS}][{MARKS}]*|[{MARKS}]+")  # a letter and the marks on it
# One-syllable Korean words that are function words (thing, can, etc., more, not...) and the
# particles after a word of other letters ("API가", "0042를"): frequent everywhere, as English
# stopwords are, so they make no term
_HANGUL_FUNCTION: Final = frozenset("것 수 등 및 그 저 더 또 좀 안 못 뭐 왜 때 중 을 를 은 는 의 에 와 과 가 로 도 만".split())
_DASHES: Final = re.compile(r"-{2,}")
# an identifier: letters and digits joined by hyphens, underscores or dots (kept a term if it
# holds a letter and a digit: "project-x", "3.5" and "e.g" are words and numbers, not names)
# _ASCII_WORD's words, an identifier's joined; possessive (nothing follows to backtrack for): the
# same runs, found about 15% faster by capture's term_counts
_ASCII_RUN: Final = re.compile(r"[a-z0-9]+(?:[-_.][a-z0-9]+)*+")
_JOINERS: Final = re.compile(r"[-_.]")
_HAS_LETTER: Final = re.compile(r"[a-z]")
_HAS_DIGIT: Final = re.compile(r"[0-9]")
# A negated auxiliary ("won't", "don't", "ain't", "needn’t") is a function word whole; split at its
# apostrophe it would leave "won" (a word of its own) or "ain" as a term.
_NEGATION: Final = re.compile(r"\b[^\W_]+n['\u2019]t\b")

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

IRREGULAR_VERBS: Final[dict[str, str]] = dict(
    pair.split(":")
    for pair in """
    said:say went:go gone:go bought:buy brought:bring thought:think taught:teach caught:catch sought:seek fought:fight
    told:tell sold:sell took:take taken:take gave:give given:give made:make came:come became:become began:begin
    begun:begin knew:know known:know grew:grow grown:grow threw:throw thrown:throw drew:draw drawn:draw flew:fly
    flown:fly wrote:write written:write drove:drive driven:drive rode:ride ridden:ride spoke:speak spoken:speak
    broke:break broken:break chose:choose chosen:choose froze:freeze frozen:freeze stole:steal stolen:steal woke:wake
    woken:wake wore:wear worn:wear tore:tear torn:tear sang:sing sung:sing rang:ring drank:drink swam:swim ran:run
    sat:sit met:meet fed:feed led:lead fled:flee slept:sleep kept:keep swept:sweep wept:weep dealt:deal meant:mean
    built:build sent:send spent:spend lent:lend paid:pay stood:stand understood:understand found:find held:hold
    heard:hear lost:lose shot:shoot got:get gotten:get forgot:forget forgotten:forget won:win hung:hang dug:dig
    stuck:stick struck:strike saw:see seen:see ate:eat eaten:eat fell:fall fallen:fall felt:feel hid:hide hidden:hide
    shook:shake shaken:shake forgave:forgive forgiven:forgive beaten:beat mistook:mistake mistaken:mistake
    overcame:overcome withdrew:withdraw
    """.split()
)
"""Past forms of common irregular English verbs and their verb: "I bought a car" is found by "what
did she buy?", as "painted" is by "paint" through the stemmer, which leaves irregular forms alone
(it raised LoCoMo's evidence recall@10 by 0.004 for ``recall`` and 0.002 for ``ask``, both halves
of the split up). Forms that are more often other words stay out ("left", "rose", "bit", "lay",
"ground", "bound", "wound"), as do the auxiliaries' (stopwords)."""


_SNOWBALL: Final = threading.local()  # a PyStemmer stemmer keeps state: one per thread


def stem(word: str) -> str:
    """Snowball's English stemmer (Porter2): "paintings" -> "paint", "deployment" -> "deploy",
    "migration" -> "migrat", "parties" -> "parti". It joins the forms a question and a memory
    use differently ("migrate" and "migration"); on LoCoMo it raised memdb's evidence recall@10
    by about 0.01 over Porter's step 1 alone. Other scripts, words with digits and words of three
    letters or fewer ("aws", "ios") pass unchanged, but for a three-letter word ending in "y"
    ("fly", "try"), whose longer forms Snowball makes "fli" and "tri" ("flying", "tries"):
    unstemmed, "when did I fly?" missed "I'm flying".

    Applied until nothing changes, so a stem is its own stem ("universe" -> "univers" ->
    "univer" both ways): the index terms of a text are stable when the text is its terms."""
    if (len(word) <= 3 and not (len(word) == 3 and word[2] == "y")) or not word.isascii() or not word.isalpha():
        return word
    stemmer = getattr(_SNOWBALL, "stemmer", None)
    if stemmer is None:
        stemmer = _SNOWBALL.stemmer = Stemmer.Stemmer("english", 0)  # no cache of its own: _term has one
    for _ in range(4):  # Snowball shortens a stem again at most once or twice
        once: str = stemmer.stemWord(word)
        if once == word or len(once) <= 3:
            return once
        word = once
    return word


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


# keyed and valued by stems, so that a term is its own term ("bought" -> "buy", "buy" -> "buy"):
# a plural the stemmer makes a past form of ("shots" -> "shot") reaches the verb as that form does
_IRREGULAR_STEMS: Final = {stem(past): stem(verb) for past, verb in IRREGULAR_VERBS.items()}


@functools.lru_cache(maxsize=1 << 16)
def _term(word: str) -> str:
    """The term of a folded word, or "" for a word that makes none (a stopword, a lone letter).

    Words repeat heavily (Zipf), so capture decides and stems each distinct word about once,
    and ``tokenize`` runs as ``map``/``filter`` over this cache without a Python loop per word.
    """
    if (len(word) < 2 and not word.isdecimal() and not _CJK.match(word)) or word in STOPWORDS:
        return ""
    term = stem(word)
    return _shorten(_IRREGULAR_STEMS.get(term, term))


@functools.cache
def _marked() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A search for any combining mark or tatweel, and words whose letters may carry marks:
    Devanagari's vowel signs, the dot lower-casing leaves on "İ"."""
    return re.compile(f"[{MARKS}\u0640]"), re.compile(f"(?:[^\\W_]|[{MARKS}])+")  # U+0640: tatweel, dropped too


@functools.cache
def _compound_unmarked() -> re.Pattern[str]:
    """Runs of ASCII letters and digits joined by ``-``, ``_`` or ``.`` in text that is not ASCII,
    not inside a word of a script written with spaces: a letter or a combining mark beside a run
    joins it into a word (``split_words``), so a run ends before one. A script written without
    spaces (Han, kana, Thai...) or Hangul, whose particles follow a word without one, is no part
    of it: "发票INV-2026-0042逾期" and "CVE-2024-3094の対応" hold the identifiers whole. (ASCII text
    reads its runs with ``_ASCII_RUN``.)"""
    word = f"[^\\W_{UNSPACED_CHARS}{HANGUL_CHARS}]|[{MARKS}]"
    return re.compile(f"(?<!{word})[a-z0-9]++(?:[-_.][a-z0-9]++)+(?!{word})")


# Optional marks, dropped so a word matches with or without them: Arabic harakat and tatweel,
# Hebrew points, and the dot that case folding leaves on "İ" (so "İstanbul" is "istanbul").
_OPTIONAL_MARKS: Final = {
    c: None for c in [*range(0x64B, 0x660), 0x670, 0x640, *range(0x591, 0x5C8)] if c not in (0x5BE, 0x5C0, 0x5C3, 0x5C6)
}


def _folded(text: str) -> tuple[str, bool]:
    """``text`` as words are read from it: placeholders out, folded, negated auxiliaries out;
    and whether it is ASCII (the fast path)."""
    if "<" in text:
        text = PLACEHOLDER.sub(" ", text)
    if text.isascii():  # NFKC leaves ASCII as it is, and casefold is lower there
        lowered = text.lower()
        return (_NEGATION.sub(" ", lowered) if "n't" in lowered else lowered), True
    folded = _fold(text)
    if "n't" in folded or "n\u2019t" in folded:
        folded = _NEGATION.sub(" ", folded)
    return folded, False


def _words(folded: str, plain: bool, runs: bool = False, unigrams: bool = False) -> list[str]:
    """The words of a ``_folded`` text. With ``runs``, a run of a script written without spaces
    is its bigrams (``_runs``), with the Han characters in it too where ``unigrams`` (the index
    holds them, a query asks for them alone); without, only Chinese and Japanese runs are, as
    bigrams alone: the words ``tokenize`` has always made, which knowledge digests and
    tombstones were stored by."""
    if plain:
        return _ASCII_WORD.findall(folded)
    any_mark, marked_word = _marked()
    if any_mark.search(folded) is None:  # most text: NFKC composed its accents into letters
        words = _WORD.findall(folded)
    else:
        words = marked_word.findall(folded.replace("i\u0307", "i").translate(_OPTIONAL_MARKS))
    if runs:
        return _runs(words, unigrams) if _RUNS.search(folded) else words
    return _runs(words, False, _CJK_RUN) if _CJK.search(folded) else words


def split_words(text: str) -> list[str]:
    """The folded words of ``text`` in order, stopwords kept, Chinese and Japanese runs as bigrams:
    what ``tokenize`` makes its terms of (the index reads more scripts by runs: ``term_counts``)."""
    return _words(*_folded(text))


def _runs(words: list[str], unigrams: bool, runs: re.Pattern[str] = _RUN) -> list[str]:
    """``words`` with each run of a script written without spaces as its overlapping bigrams (a
    lone character as itself), the letters around a run as words of their own, and so a run of
    Hangul beside other letters (a particle after a name: "AWS에서" is "aws", "에서"). A Chinese or
    Japanese run is read by characters, its Han characters each a term too with ``unigrams``
    (as Lucene's CJKBigramFilter outputs unigrams: "锁" and "車" are words); a Thai, Lao,
    Myanmar or Khmer run by letters with their marks (``_UNIT``), so a vowel sign or a tone mark
    stays on its letter: "ฐานข้อมูล" -> "ฐา", "าน", "นข้", "ข้อ", "อมู", "มูล". ``runs``
    says which scripts are read so (``_CJK_RUN``: Chinese and Japanese alone, as ``tokenize`` reads them)."""
    out: list[str] = []
    for word in words:
        at = 0
        for run in runs.finditer(word):
            if run.start() > at:
                out.append(word[at : run.start()])
            chars = run.group()
            if run.lastgroup == "hangul":
                out.append(chars)
                at = run.end()
                continue
            units: list[str] = list(chars) if run.lastgroup == "cjk" else _UNIT.findall(chars)
            out.extend(units if len(units) == 1 else [units[i] + units[i + 1] for i in range(len(units) - 1)])
            if unigrams and len(units) > 1 and run.lastgroup == "cjk":
                out.extend(c for c in chars if _HAN.match(c))
            at = run.end()
        if at < len(word):
            out.append(word[at:])
    return out


def _index_term(word: str) -> str:
    """``_term`` of a word of the index or a query (``term_counts``, ``terms_and_words``), where a
    lone Hangul syllable is a term too ("돈", "책": Korean writes a word of one syllable apart,
    where a lone Latin letter is no word), but for a function word (``_HANGUL_FUNCTION``)."""
    term = _term(word)
    if term or len(word) != 1 or not "\uac00" <= word <= "\ud7a3" or word in _HANGUL_FUNCTION:
        return term
    return word


def _identifiers_of(run: str) -> tuple[str, ...]:
    """The identifier terms of a run of words joined by ``-``, ``_`` or ``.``: the run whole where
    it joins a letter and a digit, and the run without each last word of letters in turn while
    it still does ("web-01.prod.internal" holds "web-01-prod" and "web-01"; "INV-2026-0042.pdf"
    holds "INV-2026-0042"; "gpt-4-turbo" holds "gpt-4")."""
    parts = _JOINERS.split(run)
    if len(parts) < 2 or not (_HAS_LETTER.search(run) and _HAS_DIGIT.search(run)):
        return ()
    out = [_shorten("-".join(parts))]
    while len(parts) > 2 and parts[-1].isalpha():
        parts = parts[:-1]
        joined = "".join(parts)
        if not (_HAS_LETTER.search(joined) and _HAS_DIGIT.search(joined)):
            break
        out.append(_shorten("-".join(parts)))
    return tuple(out)


def _identifiers(folded: str) -> list[tuple[int, int, tuple[str, ...], str]]:
    """The identifier runs of a ``_folded`` text that is not ASCII (see the module docstring):
    (start, end, their terms, as folded) in order. ASCII text reads them with its words
    (``_token_terms``)."""
    out: list[tuple[int, int, tuple[str, ...], str]] = []
    if "-" not in folded and "_" not in folded and "." not in folded:
        return out
    for m in _compound_unmarked().finditer(folded):
        terms = _identifiers_of(m.group())
        if terms:
            out.append((m.start(), m.end(), terms, m.group()))
    return out


def _terms_of_run(run: str) -> tuple[str, ...]:
    """The index terms of a run of ASCII words joined by ``-``, ``_`` or ``.`` (most runs are one
    word): its words' terms, then its identifiers (``_identifiers_of``)."""
    if run.isalnum():
        term = _term(run)
        return (term,) if term else ()
    return (*(t for p in _JOINERS.split(run) if (t := _term(p))), *_identifiers_of(run))


class _TokenTerms(dict[bytes, tuple[str, ...]]):
    """The index terms of a token of folded ASCII text (``_NOT_RUN``): its runs' terms
    (``_terms_of_run``) in order, remembered (capture reads each distinct token about once), as a
    plain dict emptied when full: a hit is one lookup in C, where ``lru_cache`` also moves the
    entry in its list (``term_counts``' counting ran 14% fewer instructions so: callgrind, 1,000
    captures)."""

    def __missing__(self, token: bytes) -> tuple[str, ...]:
        if len(self) >= _TOKENS_KEPT:
            self.clear()
        runs = _ASCII_RUN.findall(token.decode("ascii"))
        terms = self[token] = _terms_of_run(runs[0]) if len(runs) == 1 else tuple(itertools.chain.from_iterable(map(_terms_of_run, runs)))
        return terms


_TOKENS_KEPT: Final = 1 << 16
_token_terms: Final = _TokenTerms().__getitem__
# Each byte that is no part of a run (``_ASCII_RUN``: letters, digits and the joiners between them)
# as a space: a run never crosses one, so the runs of a folded ASCII text are those of its tokens
# split at spaces, in order. Translating and splitting in C, and reading each token's terms by one
# lookup, took half the time of finding the runs with the regex (~7 us of a capture's 30 in terms_of).
_NOT_RUN: Final = bytes(c if chr(c) in "abcdefghijklmnopqrstuvwxyz0123456789-_." else 0x20 for c in range(256))


def identifier_heads(term: str) -> tuple[str, ...]:
    """The identifiers an identifier term holds without its last words of letters, longest
    first ("inv-2026-0042-pdf" -> "inv-2026-0042"), as ``term_counts`` indexes them."""
    return _identifiers_of(term)[1:] if "-" in term and "~" not in term else ()


def compound_parts(term: str) -> tuple[str, ...]:
    """The terms of an identifier's parts ("inv-2026-0042" -> "inv", "2026", "0042"), or () for
    a term that is no identifier (or one longer than ``MAX_TERM_CHARS``, kept shortened)."""
    if "-" not in term or "~" in term:
        return ()
    return tuple(dict.fromkeys(t for part in term.split("-") if (t := _term(part))))


def tokenize(text: str) -> list[str]:
    """The terms of the words of ``text`` in order, with repeats (see the module docstring for the
    rules; identifiers whole are the index's, ``term_counts``): what similarity compares."""
    return list(filter(None, map(_term, split_words(text))))


def terms_and_words(text: str) -> dict[str, str]:
    """Each distinct term a query of ``text`` searches, with the first word it came from (to show
    people words, not stems): an identifier whole, not its parts."""
    folded, plain = _folded(text)
    out: dict[str, str] = {}
    if plain:
        for run in _ASCII_RUN.findall(folded):
            found = () if run.isalnum() else _identifiers_of(run)
            if found:  # an identifier: searched whole
                out.setdefault(found[0], run)
                continue
            for word in _JOINERS.split(run) if not run.isalnum() else (run,):
                term = _term(word)
                if term:
                    out.setdefault(term, word)
        return out
    at = 0
    for start, end, terms, word in [*_identifiers(folded), (len(folded), len(folded), (), "")]:
        for w in _words(folded[at:start], plain, runs=True):
            t = _index_term(w)
            if t:
                out.setdefault(t, w)
        if terms:
            out.setdefault(terms[0], word)
        at = end
    return out


def term_counts(text: str) -> dict[str, int]:
    """The index's term frequencies of ``text`` (the tf of BM25), in order of first appearance:
    the terms of its words, and each identifier whole (after its parts in ASCII text, after
    every word in other text)."""
    folded, plain = _folded(text)
    # counted into a plain dict by Counter's own C loop: Counter() checked its argument against
    # Mapping first, 2-3 us a call, about a tenth of what a capture's terms cost
    counts: dict[str, int] = {}
    if plain:
        _count_elements(counts, itertools.chain.from_iterable(map(_token_terms, folded.encode("ascii").translate(_NOT_RUN).split())))
        return counts
    _count_elements(counts, filter(None, map(_index_term, _words(folded, plain, runs=True, unigrams=True))))
    found = _identifiers(folded)
    if found:
        _count_elements(counts, (term for _, _, terms, _ in found for term in terms))
    return counts


def normalize_tags(values: Iterable[str], what: str = "tags") -> tuple[str, ...]:
    """A list of tags normalised (``normalize_tag``), each once, in the order given; one string
    is one tag. ValidationError names ``what`` when it is no list of strings (bytes, a mapping, a
    number) and names a bad tag as ``normalize_tag`` does."""
    if isinstance(values, str):
        values = [values]
    elif isinstance(values, (bytes, Mapping)) or not isinstance(values, Iterable):
        raise ValidationError(f"{what} {shown(values)}: expected a list of strings")
    return tuple(dict.fromkeys(_normal_tag(t) if isinstance(t, str) else normalize_tag(t) for t in values))


def normalize_tag(tag: str) -> str:
    """The canonical form of a tag, so "Project X", "project_x" and "PROJECT.X" are one tag.

    NFKC, case folding, trimming; runs of spaces, underscores and dots become "-"; anything
    but letters, digits, "-", ":" and "/" is dropped; repeated "-" collapse; edge "-" go. The
    optional marks words drop stay (the U+0307 dot folding leaves on "İ", tatweel, harakat,
    points): stored tags are never rewritten, so a tag names what it named when it was stored.
    Raises ValidationError naming the tag if nothing is left or the result exceeds 64 characters
    or 128 bytes in UTF-8.
    """
    if not isinstance(tag, str):
        raise ValidationError(f"tag {shown(tag)}: expected str, got {type(tag).__name__}")
    out = unchecked_tag_form(tag)
    # the tag is shown (sanitized) only in an error: ask normalises every phrase of a question
    if not out:
        raise ValidationError(f"tag {shown_tag(tag)}: nothing is left after normalising (use letters or digits)")
    if len(out) > MAX_TAG_CHARS:
        raise ValidationError(f"tag {shown_tag(tag)}: {len(out)} characters after normalising, more than {MAX_TAG_CHARS} (shorten it)")
    size = len(out.encode("utf-8", "surrogatepass"))
    if size > MAX_TAG_BYTES:
        raise ValidationError(f"tag {shown_tag(tag)}: {size} bytes in UTF-8 after normalising, more than {MAX_TAG_BYTES} (shorten it)")
    return out


def unchecked_tag_form(tag: str) -> str:
    """``normalize_tag``'s normal form of ``tag``, unchecked: empty where nothing is left, and of
    any length (a participant is compared with the tags by it, but need not make a tag)."""
    out = _TAG_SEPARATORS.sub("-", _fold(tag).strip())
    out = "".join(c for c in out if c in "-:/" or unicodedata.category(c)[0] in "LNM")  # marks belong to letters
    return _DASHES.sub("-", out).strip("-")


# a bad tag's characters sanitized for its error: the normal form drops characters, so a cut
# near what is shown could show a card number's first digits; this one costs 15 ms at most
_SHOWN_TAG_CHARS = 1 << 16


def shown_tag(tag: str) -> str:
    """A bad tag for its error, sanitized as capture reads a tag: as given and in its normal form,
    where "4111_1111_1111_1111" is a card number (its "_" are "-"). The normal form of the tag
    as given sanitized is shown where sanitizing finds more in it, else the tag as given."""
    said = redacted(tag[:_SHOWN_TAG_CHARS])
    normal = unchecked_tag_form(said)
    clean = redacted(normal)
    return shown(clean if clean != normal else said)


def clip(text: str, limit: int) -> str:
    """``text`` on one line (white space folded), cut to ``limit`` characters with an ellipsis."""
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@functools.lru_cache(maxsize=1 << 14)
def _normal_tag(tag: str) -> str:
    """``normalize_tag(tag)``, remembered (a bad tag raises each time: errors are not kept), since
    an agent's queries reuse a few tags."""
    return normalize_tag(tag)
