"""Index terms and tag normalisation: the rules in memdb/text.py, Unicode, and bounded terms."""

from __future__ import annotations

import itertools
import re
import string
import unicodedata
from collections import Counter

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memdb.errors import ValidationError
from memdb.memory import text as text_module
from memdb.memory.sanitize import PLACEHOLDER
from memdb.memory.text import (
    _CJK,
    _HANGUL_FUNCTION,
    IRREGULAR_VERBS,
    MARKS,
    MAX_TAG_CHARS,
    MAX_TERM_CHARS,
    STOPWORDS,
    _shorten,
    compound_parts,
    normalize_tag,
    stem,
    term_counts,
    terms_and_words,
    tokenize,
)

# --- tokenize ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("Deploy FAILED on staging", ["deploy", "fail", "stage"]),  # stemmed: Snowball English
        ("the deploy of the API was not fixed", ["deploy", "api", "fix"]),  # stopwords dropped
        ("project-x and max_tokens", ["project", "max", "token"]),  # punctuation and _ split; "x" is one char
        ("retry 3 times, 503 errors, 1 x", ["retri", "3", "time", "503", "error", "1"]),  # numbers of any length
        ("Café CAFÉ ｃａｆé", ["café", "café", "café"]),  # NFKC + case folding
        ("ﬁle Straße STRASSE", ["file", "strass", "strass"]),  # "ß" folds to "ss", then ASCII stems
        ("mail <EMAIL_1> and <EMPLOYEE_ID_2> now", ["mail"]),  # placeholders never become terms
        ("a<EMAIL_1>b", []),
        ("deployed deploys deploy", ["deploy", "deploy", "deploy"]),  # one term for the inflections
        ("Deployment of the API failed", ["deploy", "api", "fail"]),  # and for derived words: deploy finds it
        ("migrate migration migrations", ["migrat", "migrat", "migrat"]),
        ("paintings parties hopping agreed", ["paint", "parti", "hop", "agr"]),
        ("The build won't start; we won", ["build", "start", "win"]),  # "won't" is no "won"
        ("she bought it, went home and said so", ["buy", "go", "home", "say"]),  # irregular verbs: their verb
        ("buy go say became become", ["buy", "go", "say", "becom", "becom"]),
        ("left rose bit", ["left", "rose", "bit"]),  # more often other words: as written
        ("ain't needn’t DON'T can't isn't", []),  # negated auxiliaries, whole, with either apostrophe
        ("shan't, mustn't", []),
        ("", []),
        ("   \n\t ", []),
        ("!!! ??? ...", []),
    ],
)
def test_tokenize(text: str, terms: list[str]) -> None:
    assert tokenize(text) == terms


def test_chinese_and_japanese_runs_are_character_bigrams() -> None:
    assert tokenize("数据库迁移") == ["数据", "据库", "库迁", "迁移"]
    assert tokenize("東京タワー に 行った") == ["東京", "京タ", "タワ", "ワー", "に", "行っ", "った"]  # a lone character is a term
    assert tokenize("2024年の数据库migration") == ["2024", "年の", "の数", "数据", "据库", "migrat"]  # letters around a run split off


def test_a_chinese_word_finds_the_text_that_holds_it() -> None:
    """Searching 数据库 ("database") finds '...数据库迁移...' ("database migration"): the query's
    bigrams are among the text's, where one whole run per term matched only the same run."""
    text = "昨天的数据库迁移失败了"
    assert set(tokenize("数据库")) <= set(tokenize(text))
    assert set(tokenize("迁移")) <= set(tokenize(text)) and not set(tokenize("迁徙")) & set(tokenize(text))
    assert set(tokenize("データベース")) <= set(tokenize("本番のデータベースを移行した"))


def test_the_index_holds_the_han_characters_of_a_run_and_a_query_its_bigrams() -> None:
    """A word of one Han character inside a run ("锁" lock, "車" car) was no term of the index,
    which held the run's bigrams alone: it holds its Han characters too (layout 25; not kana, whose
    lone characters are particles). A query of one character asks for it, a longer one for its
    bigrams alone: "数据库" is not answered by a text holding 数, 据 and 库 apart."""
    assert {"锁", "数", "据", "库"} <= set(term_counts("数据库被锁了")) and "の" not in term_counts("車の鍵")
    assert list(terms_and_words("锁")) == ["锁"] and list(terms_and_words("数据库")) == ["数据", "据库"]
    assert not set(terms_and_words("数据库")) <= set(term_counts("数字据说库存"))
    assert tokenize("数据库被锁了") == ["数据", "据库", "库被", "被锁", "锁了"]  # what similarity compares, as before


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("เซิร์ฟเวอร์ล่มเพราะฐานข้อมูลเต็ม", ["ฐานข้อมูล", "เซิร์ฟเวอร์", "ล่ม", "เต็ม"]),  # Thai: the server went down, the database full
        ("ເຊີບເວີລົ້ມ", ["ເຊີບເວີ"]),  # Lao
        ("ម៉ាស៊ីនមេគាំង", ["ម៉ាស៊ីនមេ"]),  # Khmer
        ("ဆာဗာပျက်သွားသည်", ["ဆာဗာ"]),  # Myanmar
    ],
)
def test_thai_lao_khmer_and_myanmar_runs_are_bigrams_of_letters_with_their_marks(text: str, words: list[str]) -> None:
    """A sentence of these scripts, written without spaces, was one term (cut to 24 characters and
    a hash): no word of it was found. It is read as bigrams of letters each with its marks, and a
    word's bigrams are among those of any text holding it."""
    assert list(terms_and_words("ฐานข้อมูล")) == ["ฐา", "าน", "นข้", "ข้อ", "อมู", "มูล"]  # tone marks stay on their letters
    for word in words:
        assert set(terms_and_words(word)) <= set(term_counts(text)), word
    assert tokenize(text) == [_shorten(unicodedata.normalize("NFKC", text))]  # what similarity compares, as before


def test_a_korean_word_of_one_syllable_is_a_term() -> None:
    """ "돈" (money), "책" (book) made no term (a lone letter is none), and ask("돈") answered with
    every memory; a particle written apart and one-syllable function words still make none."""
    assert list(term_counts("고객이 돈 을 환불 요청, 책 것")) == ["고객이", "돈", "환불", "요청", "책"]
    assert list(terms_and_words("돈")) == ["돈"] and list(terms_and_words("AWS에서 장애")) == ["aws", "에서", "장애"]
    assert tokenize("고객이 돈") == ["고객이"]  # what similarity compares, as before


def test_stems_join_derived_words() -> None:
    assert stem("deployment") == stem("deploy") == stem("deploying") == "deploy"
    assert stem("migration") == stem("migrate")
    assert stem("aws") == "aws" and stem("ios") == "ios"  # three letters or fewer pass unchanged
    # but for those ending in "y", whose longer forms Snowball shortens: "fly" found no "flying"
    assert stem("fly") == stem("flying") == stem("flies") == "fli" and set(tokenize("I flew")) == {"fli"}
    assert stem("try") == stem("tried") == stem("trying") and stem("sky") == stem("skies") == "sky"
    assert stem("café") == "café" and stem("k8s") == "k8s"  # other scripts and words with digits too


def test_other_scripts_tokenise() -> None:
    assert tokenize("Привет МИР, γειά σου, שלום") == ["привет", "мир", "γειά", "σου", "שלום"]


def test_term_counts_is_tf_in_first_appearance_order() -> None:
    tf = term_counts("Deploy failed; deploy retried; DEPLOY")
    assert tf == {"deploy": 3, "fail": 1, "retri": 1}
    assert list(tf) == ["deploy", "fail", "retri"]
    assert term_counts("the of and") == {}


def test_stopwords_are_lower_case_words_of_two_or_more_letters() -> None:
    assert 140 <= len(STOPWORDS) <= 200
    assert all(w == w.casefold() and w.isalpha() and len(w) >= 2 for w in STOPWORDS)
    assert {"the", "and", "of", "is", "not"} <= STOPWORDS


# --- long terms -------------------------------------------------------------------------------


def test_terms_up_to_the_limit_are_kept_whole() -> None:
    word = "a" * MAX_TERM_CHARS
    assert tokenize(word) == [word]


def test_long_terms_are_shortened_with_a_hash() -> None:
    word = "supercalifragilistic" * 3
    (term,) = tokenize(word)
    assert len(term) == MAX_TERM_CHARS
    assert term.startswith(word[:24] + "~")
    assert tokenize(word.upper()) == [term]  # folded before hashing, so case does not matter


def test_long_terms_with_a_shared_prefix_stay_distinct() -> None:
    prefix = "x" * 40
    terms = {tokenize(prefix + suffix)[0] for suffix in ("a", "b", "c", "aa", "0")}
    assert len(terms) == 5
    assert all(len(t) == MAX_TERM_CHARS and t.startswith("x" * 24 + "~") for t in terms)


def test_long_numbers_are_shortened_too() -> None:
    (term,) = tokenize("9" * 100)
    assert len(term) == MAX_TERM_CHARS


# --- normalize_tag ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("Project X", "project-x"),
        ("  URGENT ", "urgent"),
        ("project_x", "project-x"),
        ("PROJECT.X", "project-x"),
        ("project   x", "project-x"),
        ("project - x", "project-x"),
        ("--a--b--", "a-b"),
        ("hello!!! world?", "hello-world"),
        ("team:infra/api", "team:infra/api"),
        ("v1.2", "v1-2"),
        ("Café", "café"),
        ("ＦＵＬＬ　ＷＩＤＴＨ", "full-width"),
        ("Straße", "strasse"),
        ("हिन्दी टैग", "हिन्दी-टैग"),  # combining vowel signs belong to the letters
        ("東京", "東京"),
        # the optional marks words drop stay in tags, as stored before layout 25: the dot folding
        # leaves on "İ", tatweel, harakat, points (a stored tag is never rewritten)
        ("İzmir Ofisi", "i\u0307zmir-ofisi"),
        ("مـشـروع", "مـشـروع"),
        ("كَتَبَ", "كَتَبَ"),
        ("x" * MAX_TAG_CHARS, "x" * MAX_TAG_CHARS),
    ],
)
def test_normalize_tag(tag: str, expected: str) -> None:
    assert normalize_tag(tag) == expected


@pytest.mark.parametrize(
    ("tag", "message"),
    [
        ("", "tag '': nothing is left"),
        ("   ", "tag '   ': nothing is left"),
        ("!!!", "tag '!!!': nothing is left"),
        ("_._", "tag '_._': nothing is left"),
        ("x" * (MAX_TAG_CHARS + 1), f"{MAX_TAG_CHARS + 1} characters after normalising, more than {MAX_TAG_CHARS}"),
    ],
)
def test_bad_tags_are_validation_errors_naming_the_tag(tag: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        normalize_tag(tag)


def test_very_long_tag_is_shown_truncated() -> None:
    with pytest.raises(ValidationError) as info:
        normalize_tag("y" * 500)
    assert "y" * 81 not in str(info.value) and "..." in str(info.value)


@pytest.mark.parametrize(
    "tag",
    [
        "4111_1111_1111_1111" + "x" * 200,  # a card number once its "_" are "-", as capture reads it
        "4111.1111.1111.1111 " + "w" * 60,
        "4111_1111_1111_1111 ana@example.com " + "y" * 100,  # and an address the normal form would hide
        "!" * 900 + "4111_1111_1111_1111" + "z" * 200,  # after what the normal form drops
    ],
)
def test_a_bad_tag_is_shown_sanitized_as_capture_reads_it(tag: str) -> None:
    with pytest.raises(ValidationError) as info:
        normalize_tag(tag)
    message = str(info.value)
    assert "<CARD_1>" in message and not re.search(r"\d{4}", message), message
    assert "ana" not in message and "example" not in message


def test_non_str_tag_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="expected str, got int"):
        normalize_tag(7)  # type: ignore[arg-type]


def test_validation_error_is_a_value_error() -> None:
    # pydantic validators in memdb.memory.models rely on this to report bad tags as field errors
    with pytest.raises(ValueError):
        normalize_tag("???")


# --- properties -------------------------------------------------------------------------------


@given(st.text())
def test_terms_are_bounded_non_empty_and_not_stopwords(text: str) -> None:
    terms = tokenize(text)
    assert all(0 < len(t) <= MAX_TERM_CHARS for t in terms)
    assert not any(t in STOPWORDS for t in terms)
    assert all(len(t) >= 2 or t.isdecimal() or _CJK.match(t) for t in terms)


@given(st.text(), st.text())
@example("Project", " X")
@example("a.", " b")  # the separator run spans the words
@example("\ufdfa", " x")  # a ligature NFKC spells with spaces
@example("İ", "̇x")  # casefold adds a combining dot; the next word starts with one
@example("ﬁ", " ǅ")
@example("x" * MAX_TAG_CHARS, " y")  # the phrase's form is too long, the word's is not
def test_a_phrase_tag_begins_with_its_first_words(first: str, rest: str) -> None:
    """ask tries a phrase as a tag only if a known tag begins with its first word's tag form
    (memdb.query.engine.OwnerQueries._tag_starts): that holds for every phrase of words as
    ask splits them."""
    words = re.findall(f"(?:[\\w#+./:-]|[{MARKS}])+", first + " " + rest)  # as ask splits them
    if not words:
        return
    try:
        head, whole = normalize_tag(words[0]), normalize_tag(" ".join(words))
    except ValidationError:
        return
    assert whole.startswith(head)


@given(st.text())
@example("0.A")  # an identifier whole is a term tokenize does not give (it failed the old count)
def test_tokenize_is_deterministic(text: str) -> None:
    assert tokenize(text) == tokenize(text)
    assert term_counts(text) == term_counts(text)
    # the index's terms are its words' read by runs, and each identifier whole beside its parts (layout 21)
    counts, words = Counter(term_counts(text)), Counter(_reference_terms(text, runs=True, unigrams=True))
    assert counts - words == Counter({t: n for t, n in counts.items() if "-" in t}) and not words - counts
    if not any(_unspaced(c) or _hangul(c) for c in text):  # and so are tokenize's, where no run differs
        assert not Counter(tokenize(text)) - counts


def _unspaced(c: str) -> bool:
    """Whether ``c`` is of a script written without spaces: Chinese, Japanese (``_CJK``), or a
    letter or mark of Thai, Lao, Myanmar or Khmer."""
    return bool(_CJK.fullmatch(c)) or _south_east_asian(c)


def _south_east_asian(c: str) -> bool:
    return unicodedata.category(c)[0] in "LM" and unicodedata.name(c, "").startswith(("THAI", "LAO", "MYANMAR", "KHMER"))


def _hangul(c: str) -> bool:
    return unicodedata.name(c, "").startswith("HANGUL")


def _reference_terms(text: str, runs: bool = False, unigrams: bool = False) -> list[str]:
    """The module docstring's rules written plainly, one word at a time: the fast paths of
    ``tokenize`` (ASCII, cached per word, map/filter) must give exactly this; with ``runs``, of
    a query (``terms_and_words``) and with ``unigrams`` too of the index (``term_counts``)."""
    folded = unicodedata.normalize("NFKC", PLACEHOLDER.sub(" ", text)).casefold()
    folded = re.sub(r"\b[^\W_]+n['\u2019]t\b", " ", unicodedata.normalize("NFKC", folded))  # a negated auxiliary, whole
    folded = folded.replace("i\u0307", "i")
    optional = {*range(0x64B, 0x660), 0x670, 0x640, *range(0x591, 0x5C8)} - {0x5BE, 0x5C0, 0x5C3, 0x5C6}
    folded = "".join(c for c in folded if ord(c) not in optional)
    in_word = [c.isalnum() or (unicodedata.category(c)[0] == "M" and ord(c) < 0x10000) for c in folded]
    words = "".join(c if inside else " " for c, inside in zip(folded, in_word, strict=True)).split()
    split: list[str] = []  # a run of Chinese or Japanese characters: its bigrams, or the lone character
    for w in words:
        if not runs:
            for part in re.split(f"({_CJK.pattern})", w):
                if part and _CJK.fullmatch(part):
                    split += [part] if len(part) == 1 else [part[i : i + 2] for i in range(len(part) - 1)]
                elif part:
                    split.append(part)
            continue
        # read by runs: Chinese and Japanese by characters, the Han ones each a term too in the
        # index; Thai, Lao, Myanmar and Khmer by letters each with the marks after it
        # (and Hangul beside other letters is a word of its own: "AWS에서" is "aws", "에서")
        kinds = ["cjk" if _CJK.fullmatch(c) else "sea" if _south_east_asian(c) else "hangul" if _hangul(c) else "" for c in w]
        for kind, group in itertools.groupby(zip(w, kinds, strict=True), key=lambda pair: pair[1]):
            part = "".join(c for c, _ in group)
            if kind in ("", "hangul"):
                split.append(part)
                continue
            units: list[str] = []
            for c in part:
                if kind == "sea" and units and unicodedata.category(c)[0] == "M":
                    units[-1] += c
                else:
                    units.append(c)
            split += units if len(units) == 1 else [units[i] + units[i + 1] for i in range(len(units) - 1)]
            if kind == "cjk" and unigrams and len(units) > 1:
                split += [c for c in part if not unicodedata.name(c, "").startswith(("HIRAGANA", "KATAKANA"))]
    irregular = {stem(past): stem(verb) for past, verb in IRREGULAR_VERBS.items()}
    return [
        _shorten(irregular.get(stem(w), stem(w)))
        for w in split
        if (
            (len(w) >= 2 or w.isdecimal() or _CJK.fullmatch(w))
            or (runs and _hangul(w) and unicodedata.name(w).startswith("HANGUL SYLLABLE") and w not in _HANGUL_FUNCTION)
        )
        and w not in STOPWORDS
    ]


def _reference_identifiers(text: str) -> list[str]:
    """Identifiers by the module docstring, plainly: in each run of word characters, dots and
    hyphens, the longest sequences of ASCII letter-and-digit parts joined by one ``-``, ``_``
    or ``.``, holding a letter and a digit, as one term with its parts joined by "-", and the
    same without each last part of letters in turn while more than two parts are joined."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", PLACEHOLDER.sub(" ", text)).casefold())
    folded = re.sub(r"\b[^\W_]+n['\u2019]t\b", " ", folded)  # a negated auxiliary is no word, whole
    # a script written without spaces, or Hangul, is no part of an identifier beside it ("发票INV-2026-0042")
    folded = "".join(" " if _unspaced(c) or _hangul(c) else c for c in folded)
    out = []
    for found in re.finditer(r"[\w.\-]+", folded):
        parts = re.split(r"[-_.]", found.group())
        # a combining mark joins the letters beside it into a word: those parts are no identifier's
        before, after = folded[found.start() - 1 : found.start()], folded[found.end() : found.end() + 1]
        if before and unicodedata.category(before)[0] == "M" and ord(before) < 0x10000:
            parts[0] = "\u0301"
        if after and unicodedata.category(after)[0] == "M" and ord(after) < 0x10000:
            parts[-1] = "\u0301"
        seq: list[str] = []
        for part in [*parts, ""]:
            if part and part.isascii() and part.isalnum():
                seq.append(part)
                continue
            run = seq
            while len(run) > 1:
                joined = "".join(run)
                if not (any(c.isalpha() for c in joined) and any(c.isdigit() for c in joined)):
                    break  # none whole: none without its last words either
                out.append(_shorten("-".join(run)))
                if len(run) < 3 or not run[-1].isalpha():
                    break
                run = run[:-1]
            seq = []
    return out


def _reference_wholes(text: str) -> list[str]:
    """The identifiers a query of ``text`` names: each run's whole (the first of its terms)."""
    wholes: list[str] = []
    for term in _reference_identifiers(text):
        if not (wholes and wholes[-1].startswith(term + "-")):
            wholes.append(term)
    return wholes


IDENTIFIER_TEXTS = st.lists(
    st.one_of(
        st.sampled_from(["INV", "2026", "0042", "gpt", "4", "v2", "é", "x", "pdf", "数据", "<EMAIL_1>", "can't", "\u0301"]),
        st.sampled_from(["-", "_", ".", "--", " ", "/", "é"]),
    ),
    max_size=12,
).map("".join)


@given(
    st.one_of(
        st.text(),
        st.text(alphabet=string.printable),
        IDENTIFIER_TEXTS,
        st.text(alphabet="aAeEdDsS _-<>19\xe9\u0130"),
        st.text(alphabet="\u0915\u093f\u0924\u093e\u092c\u093c \u0643\u064e\u062a\u0628\u0640\u05e9\u05b8\u0130I\u0301e"),
        st.text(alphabet="数据库迁移东京タワーのに行った 2a-\u3005\u30fc\uff80\U00020000"),
        st.text(alphabet="เซิร์ฟเวอร์ล่มฐานข้อมูล ລາວ ကြ ខ្មែរ ๒ 돈책차 을 INV-2026-0042 数据 é\u0301"),
    )
)
@example("Ünïcode and ASCII_mixed İstanbul <EMAIL_1> x 7")
@example("2024年の数据库migration 猫 ｶﾀｶﾅ")
@example("发票INV-2026-0042逾期未付 CVE-2024-3094の対応 돈 을 ฐานข้อมูล")
def test_tokenize_matches_the_plain_rules(text: str) -> None:
    identifiers = _reference_identifiers(text)
    assert tokenize(text) == _reference_terms(text)  # the words' terms: what similarity compares, as before layout 25
    # the index's: the words' terms read by runs, Han characters too, and each identifier whole
    terms = _reference_terms(text, runs=True, unigrams=True) + identifiers
    assert term_counts(text) == {t: terms.count(t) for t in dict.fromkeys(terms)}
    # in first-appearance order (an identifier's own place is after its parts or after every word)
    assert [t for t in term_counts(text) if t not in identifiers] == [t for t in dict.fromkeys(terms) if t not in identifiers]
    assert [t for t in term_counts(text) if t in identifiers] == list(dict.fromkeys(identifiers))
    searched = terms_and_words(text)
    if not identifiers:  # a query's: read by runs, without the characters of a longer run
        assert list(searched) == list(dict.fromkeys(_reference_terms(text, runs=True)))
    # a query names each identifier whole, and searches only terms the same text is indexed by:
    # a memory is found by its own words
    assert set(_reference_wholes(text)) <= set(searched) <= set(terms)
    assert all(compound_parts(t) for t in identifiers if "~" not in t)  # a shortened one keeps no parts


@pytest.mark.parametrize(
    ("text", "indexed", "searched"),
    [
        ("Sent INV-2026-0042.pdf to Initech", ["send", "inv", "2026", "0042", "pdf", "inv-2026-0042-pdf", "inv-2026-0042", "initech"],
         ["send", "inv-2026-0042-pdf", "initech"]),
        ("CVE-2024-3094, gpt-4 and v2.3.1", ["cve", "2024", "3094", "cve-2024-3094", "gpt", "4", "gpt-4", "v2", "3", "1", "v2-3-1"],
         ["cve-2024-3094", "gpt-4", "v2-3-1"]),
        # not ASCII: after every word
        ("数据 INV-2026-0042", ["数据", "数", "据", "inv", "2026", "0042", "inv-2026-0042"], ["数据", "inv-2026-0042"]),
        # written against Chinese, Japanese or Korean, whole too (layout 25)
        ("发票INV-2026-0042逾期", ["发票", "发", "票", "inv", "2026", "0042", "逾期", "逾", "期", "inv-2026-0042"],
         ["发票", "inv-2026-0042", "逾期"]),
        ("CVE-2024-3094の対応", ["cve", "2024", "3094", "の対", "対応", "対", "応", "cve-2024-3094"], ["cve-2024-3094", "の対", "対応"]),
        ("송장INV-2026-0042가 연체", ["송장", "inv", "2026", "0042", "연체", "inv-2026-0042"], ["송장", "inv-2026-0042", "연체"]),
        ("project-x on 2026-03-04, e.g. node.js 3.5", ["project", "2026", "03", "04", "node", "js", "3", "5"],
         ["project", "2026", "03", "04", "node", "js", "3", "5"]),  # no letter joined to a digit: words and numbers
        ("ticket PR_1234 merged", ["ticket", "pr", "1234", "pr-1234", "merg"], ["ticket", "pr-1234", "merg"]),
        ("on web-01.prod.internal", ["web", "01", "prod", "internal", "web-01-prod-internal", "web-01-prod", "web-01"],
         ["web-01-prod-internal"]),
    ],
)  # fmt: skip
def test_an_identifier_is_a_term_whole_beside_its_parts(text: str, indexed: list[str], searched: list[str]) -> None:
    assert list(term_counts(text)) == indexed
    if not any(map(_hangul, text)):  # (tokenize reads words as before: "송장inv" is one)
        assert tokenize(text) == [t for t in indexed if "-" not in t and not (len(t) == 1 and _CJK.match(t))]
    assert list(terms_and_words(text)) == searched
    assert compound_parts("inv-2026-0042") == ("inv", "2026", "0042") and compound_parts("deploy") == ()


@given(st.text(max_size=60))
@example("AAEDED proceeding succeeded exceeded")  # one Porter step left stems that stem again
@example("OWNED owning")  # stems that are stopwords ("own"): see the test below
@example("universe agreed")  # Snowball stems a stem again: "universe" -> "univers" -> "univer" ...
def test_tokenize_is_stable_on_its_own_output(text: str) -> None:
    """Index terms tokenize to themselves, except stems that happen to be stopwords."""
    terms = [t for t in tokenize(text) if "~" not in t]  # shortened terms are keys, not words
    words = [t for t in terms if t not in STOPWORDS]
    assert tokenize(" ".join(words)) == words


def test_a_stem_that_is_a_stopword_is_reached_through_its_words() -> None:
    """Words like "owned", "owning" stem to "own", a stopword: as query words they find the
    documents holding any of their forms, while "own" itself stays a stopword. Dropping such
    stems instead would lose common words from the index."""
    assert tokenize("owned owning") == ["own", "own"]
    assert tokenize("own") == []


@given(st.text(max_size=80))
def test_normalize_tag_is_idempotent_and_within_limits(tag: str) -> None:
    try:
        once = normalize_tag(tag)
    except ValidationError:
        return
    assert 0 < len(once) <= MAX_TAG_CHARS
    assert normalize_tag(once) == once
    assert once == once.strip("-") and "--" not in once and " " not in once


_ASCII_PIECES = st.one_of(
    st.text(alphabet=string.printable, max_size=12),
    st.sampled_from(["INV-2026-0042.pdf", "web-01.prod.internal", "won't", "v2.3.1", "e.g.", "-a-", "..", "x__y", "<EMAIL_1>"]),
)


@given(st.lists(_ASCII_PIECES, max_size=12).map(" ".join))
@example("Deploy failed, again; retry.. INV-2026-0042.pdf (web-01.prod.internal) -- 3.5 _x_ ")
def test_ascii_term_counts_are_the_terms_of_its_runs_in_order(text: str) -> None:
    # capture reads an ASCII text's runs by its tokens split at what no run holds (in C, each
    # token's terms looked up once): the same terms, counts and first-appearance order as the
    # regex's runs of the whole text
    folded, plain = text_module._folded(text)
    assert plain
    runs = text_module._ASCII_RUN.findall(folded)
    want = Counter(itertools.chain.from_iterable(map(text_module._terms_of_run, runs)))
    got = term_counts(text)
    assert got == dict(want) and list(got) == list(want)
