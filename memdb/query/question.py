"""How ``ask`` reads a question, as pure functions of its text: the order asked for ("the last
three deploys", "when did we last call Acme?"), the kinds and outcomes named, the words written
as names, and the question words that only say how a thing is asked. ``OwnerQueries._interpret``
applies them to the owner's tags and indexes."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from functools import lru_cache

from memdb.errors import ValidationError
from memdb.memory.text import HANGUL_CHARS, MARKS, STOPWORDS, UNSPACED_CHARS, normalize_tag, split_words, stem, terms_and_words

__all__ = [
    "ACRONYM_PLURAL",
    "ACT_FAMILIES",
    "ACT_TERMS",
    "FACT_WORDS",
    "FAILING",
    "HOW_IT_WENT",
    "KIND_WORDS",
    "NEGATED_OUTCOME",
    "OUTCOME_WORDS",
    "QUESTION_FORMS",
    "QUESTION_WORDS",
    "TALK",
    "TALKED_ABOUT",
    "WENT_WELL",
    "act_kinds",
    "asks_yes_or_no",
    "compound_heads",
    "kind_asked",
    "kinds_named",
    "letter_names",
    "name_terms",
    "one_word",
    "order_asked",
    "readable_question",
    "tag_form",
    "terms_of_word",
    "word_forms",
]

# "the last three deploys", "the first failure", "the last time we deployed": the newest (oldest)
# matches in time order, as many as said, one for a singular noun
_ORDER_ASKED = re.compile(
    r"\b(?:the|my|our|your|his|her|their)\s+(?P<which>last|latest|most\s+recent|newest|first|earliest|oldest)"
    r"(?:\s+(?P<n>\d{1,2}|two|three|four|five|six|seven|eight|nine|ten))?\s+(?=(?P<noun>[^\W\d_]+))",
    re.IGNORECASE,
)
# "When did we last deploy?", "what version did Ana Lee first ship?", "when did checkout last
# fail?", "what did our CEO last say?": the newest (oldest) one; the subject, a pronoun, a name,
# or one word or two after "the", "our"... stays (the answer may be about it). A question word
# first ("did the call last long?" asks of lasting), "last" right after the subject ("what did
# John volunteer at last weekend?" is a time phrase), and before no time unit ("when did we last
# week...") nor a span ("how did the meeting last so long?"); "which PRs did we last merge?" are
# as many as the limit
_DONE_WHEN = re.compile(
    r"\b(?i:when|what|where|which|who|how)(?:\s+(?P<noun>[\w'-]+))??\s+(?i:did|do|does|have|has|had)\s+"
    r"(?:[Ii]|we|you|he|she|they|[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2}"
    r"|(?i:the|our|my|your|his|her|their)\s+[A-Za-z][\w-]*(?:\s+[a-z][\w-]*)?|[a-z][\w-]*)"
    r"\s+(?P<which>last|first)\s+"
    r"(?!(?i:week|weekend|month|year|night|time|day|quarter|summer|winter|spring|fall|autumn)s?\b)"
    r"(?!(?i:so|long|longer|more|less|for|over|until|till|through|about|around|beyond|into|past|only|just|forever|all|as|an?|the|several)\b)"
    r"(?=[^\W\d_]{2,})"
)
_VERB = re.compile(r"\s*(?P<verb>[^\W\d_]+)")
_OLDEST = frozenset("first earliest oldest".split())
_ORDER_WORDS = ("last", "latest", "recent", "newest", "first", "earliest", "oldest", "order")
# "in chronological order", "oldest first": every match in time order ("reverse chronological
# order", "newest first": the newest first), as many as the limit
_IN_ORDER = re.compile(
    r"\b(?:in\s+)?(?P<rev>reverse\s+)?(?:chronological|time)\s+order\b"
    r"|\b(?:(?P<old>oldest|earliest)|newest|latest|most\s+recent)\s+first\b",
    re.IGNORECASE,
)
_NOT_ORDERED = frozenset("half part one ones".split())  # "the first half of September": a time, not an order
_COUNTS = {w: i for i, w in enumerate("one two three four five six seven eight nine ten".split(), 1)}
QUESTION_WORDS = frozenset(
    stem(w)
    for w in """what happened happen happens did do does done tell show give list find get any anything everything
    something stuff things thing know remember recall recent recently please about regarding re went go
    going status update updates news summary summarize memories memory episodes episode record records
    time times ever last week weeks day days month months year years ago past previous prior earlier before
    try tried tries trying attempt attempts attempted many much new latest mention mentioned mentions decide decided
    work lesson lessons learn learned learnt takeaway takeaways say said says tell told ask asked asks decision decisions
    deciding make made choose chose chosen discuss discussed discusses discussing discussion discussions use used uses
    using take takes took taken taking plan plans planned planning schedule scheduled upcoming coming happening
    issue issues problem problems see seen saw involve involves involved involving""".split()
    # Chinese, Japanese and Korean problems, situations and matters (bigrams: terms whole), and
    # Korean's question words, written with spaces: what, when, how, why, thing, was there, became,
    # did, tell me, about
    + """问题 情况 事情 問題 状況 문제 상황
    무슨 무엇 무엇이 뭐가 뭐야 뭐였어 언제 어떻게 어땠어 어땠나요 왜 일이 일 있었어 있었어요 있었나요 있었니 있었지
    있었는지 됐어 됐나요 되었나요 되었어요 했어 했나요 했어요 알려줘 알려주세요 관련 대해 대해서""".split()
)
# (not "related" or "concerning": their stems are "relational" databases and security "concerns")
# Question words dropped as written, not by their stem: "lately" is "late" to the stemmer, and
# "which homework was late?" asks of lateness
QUESTION_FORMS = frozenset({"lately"})
# Question words naming what a memory may say it did ("decided", "chose", "planned"): with
# nothing else asked, the memories holding any term of the act answer ("what did we decide?"
# finds "we decided" and "the decision", and every record with decisions: layout 19)
ACT_FAMILIES: tuple[dict[str, str], ...] = tuple(
    {**{stem(w): w for w in reversed(words.split())}, **terms_and_words(words)}
    for words in (
        "decide decided decision decisions",
        "choose chose chosen",
        "plan plans planned",
        "discuss discussed",
        "learn learned learnt",
    )
)
ACT_TERMS = frozenset(t for family in ACT_FAMILIES for t in family)
# "What did we talk about last week?", "have we talked to Jane?": talking about (of, to, with) a
# thing asks about it (the verb alone may be a word: "my talk at the summit")
TALKED_ABOUT = re.compile(
    r"\b(?:talk|talked|talking|chat|chatted|chatting|speak|spoke|spoken)\s+(?P<about>about|of|to|with)\b", re.IGNORECASE
)
# A question word that is a noun names a thing before another noun: "the memory leak", "the status
# page", "the summary table" ask about those, where "what memories about X" asks about X
_NOUN_BEFORE_NOUN = re.compile(r"\b(?P<noun>memory|status|summary|record|episode|news|issue|problem)\s+(?P<next>[^\W\d_]+)", re.IGNORECASE)
# Words naming a built-in kind: "what tools did I use?" asks for the tool calls, "which
# conversations..." for the exchanges (where the owner keeps them, and not before a noun: "the tools
# directory", "the conversation history" are words)
KIND_WORDS = {"tool": "tool_call", "tools": "tool_call", "conversation": "exchange", "conversations": "exchange"}
_KIND_WORD = re.compile(r"\b(?P<word>tools?|conversations?)\b(?:\s+(?P<next>[^\W\d_]+))?", re.IGNORECASE)
# Words asking for the owner's facts and preferences (as written, folded): with any fact recorded,
# they choose kind "fact" and leave the search, so "what does Ana prefer?" asks the facts about Ana.
FACT_WORDS = frozenset("prefer prefers preferred preference preferences favorite favourite favorites favourites fact facts".split())
OUTCOME_WORDS = {  # the words as written (folded), not their stems: "work" and "working" say no outcome
    "failure": "failure", "failures": "failure", "failed": "failure", "fail": "failure", "fails": "failure",
    "failing": "failure",  # "what's been failing lately?"
    "broke": "failure", "broken": "failure", "wrong": "failure",  # "what went wrong?"
    "success": "success", "successes": "success", "succeeded": "success", "succeed": "success", "successful": "success",
    "worked": "success",
    "partial": "partial", "partially": "partial",
}  # fmt: skip


# "What went well?", "what went badly?": how a thing went, said in two words, is its outcome
WENT_WELL = frozenset("well smoothly fine great".split())
# A question about what was said ("when did I first talk about payments?"): tool calls answer no
# such question in time order
TALK = re.compile(r"\b(?:talk|talked|chat|chatted|say|said|ask|asked|mention|mentioned|discuss|discussed|tell|told)\b", re.IGNORECASE)
# (not "went down": latency and costs go down when a fix works)
HOW_IT_WENT = re.compile(r"\b(?:went|go|goes|gone|going)\s+(?P<how>well|smoothly|fine|great|badly|poorly|south|sideways)\b", re.IGNORECASE)


# "Which deploys didn't fail?", "what never worked?", "what did not work?": a negated outcome word
# asks for the other outcome (failure for success, success for failure; partial is neither)
FAILING = frozenset("fail fails failed failing break breaks broke broken".split())  # the rest say success
NEGATED_OUTCOME = re.compile(
    r"(?:\b(?:not|never|no\s+longer)|n['’]t)\s+(?:\w+\s+)?"
    r"(?P<word>fail|fails|failed|failing|succeed|succeeded|successful|work|works|worked|break|breaks|broke|broken)\b",
    re.IGNORECASE,
)


# Chinese and Japanese ask inside the run of the question ("数据库迁移怎么样了？", "2026年7月14日に何があ
# った？"): the asking phrases are cut out before the run is read as bigrams, as English question
# words are dropped, so neither they nor the bigrams across them ("移怎", "么样") empty the answer
# or mark it partial; so are Chinese "的" (of) but in a word ("目的", "的确": ``_CJK_OF``), the
# pronouns "我们"..., "是" beside a question word ("什么是目的？"), and in Japanese a particle of one
# or two kana after a word of Han or katakana ("車は", "障害の"), which no memory's bigram across
# it holds
_CJK_ASKING = re.compile(
    "|".join(
        sorted(
            """发生了什么事情 发生了什么事 发生了什么 发生什么 出了什么事 出什么事 什么时候 什么 怎么样了 怎么样 怎么了 怎么回事 怎么
            为什么 如何 哪些 哪个 哪里 有没有 是不是 是否 谁 吗 呢 请问 告诉我 最近 我们 你们 他们 她们 咱们
            什么是 是什么 是哪里 是哪个 是哪些 是谁 在哪里 在哪
            に何があった 何があった 何が起きた 何が起こった どうなりましたか どうなった どうでしたか どうだった どうですか どうして
            なぜ いつ 何が 何を 何の ですか ましたか でしたか について 教えて ください""".split(),
            key=len,
            reverse=True,
        )
    )
)
# "的" (of) as a particle: not in the words that hold it ("目的" purpose, "标的", "的确" indeed, "的士")
_CJK_OF = re.compile("(?<![目标端])的(?![确士])")
_KANA_PARTICLE = re.compile(r"(?<=[\u3005\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u30a1-\u30ff])[\u3041-\u3096]{1,2}(?![\u3041-\u309f])")


def readable_question(question: str) -> str:
    """``question`` as ``ask`` reads it: NFKC, so letters and digits typed full width by an input
    method and accents sent decomposed are read as the tokenizer folds them ("ＬＡＳＴ ＷＥＥＫ" is
    "LAST WEEK", "ＹＥＳＴＥＲＤＡＹ" a time and no name), and the asking phrases and particles of
    Chinese and Japanese cut out (``_CJK_ASKING``; a particle alone is asked)."""
    if question.isascii():
        return question
    question = unicodedata.normalize("NFKC", question)
    if _UNSPACED.search(question) is None:
        return question
    asked = _CJK_ASKING.sub(" ", question)
    cut = _KANA_PARTICLE.sub(" ", _CJK_OF.sub(" ", asked))
    # "的" alone asks for the memories holding it, not for everything
    return cut if any(c.isalnum() for c in cut) else asked


def order_asked(text: str) -> tuple[str, int | None, str, str]:
    """Whether ``text`` asks for the newest or oldest matches ("the last three deploys", "the
    first failure"): ("newest" | "oldest" | "", how many or None, the text without those words,
    and the verb whose time is asked, "pay" of "when did Acme last pay?", or "")."""
    folded = text.lower()
    if not any(w in folded for w in _ORDER_WORDS):  # most questions: a few substring tests, no regex search
        return "", None, text, ""
    if (whole := _IN_ORDER.search(text)) is not None:
        order = "newest" if whole.group("rev") or (whole.group(0).lower().endswith("first") and not whole.group("old")) else "oldest"
        return order, None, text[: whole.start()] + text[whole.end() :], ""
    asked = _ORDER_ASKED.search(text)
    if asked is None and (done := _DONE_WHEN.search(text)) is not None:
        order = "oldest" if done.group("which").lower() in _OLDEST else "newest"
        noun = (done.group("noun") or "").lower()
        many = noun.endswith("s") and not noun.endswith(("ss", "us", "is")) and noun not in STOPWORDS  # "which PRs"
        verb = _VERB.match(text, done.end("which"))
        return order, None if many else 1, text[: done.start("which")] + text[done.end("which") :], verb.group("verb") if verb else ""
    noun = asked.group("noun").lower() if asked is not None else ""
    if asked is None or noun in STOPWORDS or noun in _NOT_ORDERED:
        return "", None, text, ""
    order = "oldest" if asked.group("which").lower() in _OLDEST else "newest"
    n = asked.group("n")
    if n:
        count: int | None = int(n) if n.isdigit() else _COUNTS[n.lower()]
    else:  # "the last deploy" is one; "the last deploys" are as many as the limit
        count = None if noun.endswith("s") and not noun.endswith(("ss", "us", "is")) else 1
    return order, count or None, text[: asked.start("which")] + text[asked.end() :], ""


@lru_cache(maxsize=1 << 14)
def tag_form(phrase: str) -> str | None:
    """``normalize_tag(phrase)``, or None where the phrase makes no tag; remembered, since
    questions reuse their words and ask tries every word and most phrases of each."""
    try:
        return normalize_tag(phrase)
    except ValidationError:
        return None


@lru_cache(maxsize=1 << 14)
def one_word(tag: str) -> bool:
    """Whether a tag is one word, and so a word of the memories that name it ("pgbouncer"), where
    one of several ("project-x") is no word of them: memories saying "project" are not about it."""
    return len(split_words(tag)) == 1


@lru_cache(maxsize=1 << 12)
def word_forms(word: str) -> frozenset[str]:
    """A word (a one-word tag) as a memory may write it: itself and its plural, folded."""
    word = word.casefold()
    return frozenset({word, word + "s", word + "es", *((word[:-1] + "ies",) if word.endswith("y") else ())})


def terms_of_word(word: str) -> tuple[str, ...]:
    """The index terms of one word (or tag), remembered: the names and tags of questions recur."""
    return tuple(terms_and_words(word))


# a word (its letters may carry combining marks: "Zoë" decomposed, "सर्वर"), with what joins a name's parts
_NAME_WORD = re.compile(f"(?:[^\\W_]|[{MARKS}])(?:[\\w'’.-]|[{MARKS}])*")
# where a word's script changes to or from one written without spaces: "AWS数据库迁移" is "AWS" and
# a run of Chinese, only the first of which can be a name
_SCRIPT_CHANGE = re.compile(f"[{UNSPACED_CHARS}]+|[^{UNSPACED_CHARS}]+")
_UNSPACED = re.compile(f"[{UNSPACED_CHARS}]")
_UNCASED_DIGITS = re.compile(f"[\\d{HANGUL_CHARS}]+")  # "7월", "2026년": a number and a Korean counter
_LETTERS = re.compile(r"[^\W\d_]+")
_HANGUL_AFTER = re.compile(f"(?<=[^\\W{HANGUL_CHARS}])[{HANGUL_CHARS}]+$")  # a particle after a name: "GCP에서"
_SENTENCE_ENDS = frozenset(".?!。")
# A title before a name, as written ("Dr. Patel": not "MS", "DR"), is no name itself (a memory may
# say "Patel" alone), and its full stop ends no sentence: the word after it is the name asked about
_TITLES = frozenset("Mr Mrs Ms Mx Dr Prof".split())
# Words written capitalised that are never the name a question asks about: the months and days
# of English, capitalised by convention, and acronyms that name kinds of things rather than one
# thing ("the payments API" asks about the payments, and a memory that says "endpoint" rather than
# "API" is no padding for it; proper acronyms, "AWS", "NASA", "OKR2", stay names: a question about
# one no memory holds is empty)
_NO_NAMES = frozenset(
    """january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday
    api apis url urls uri http https json xml yaml html css sql db dbs cpu gpu ram ssd os ui ux ci cd pr prs qa sdk
    cli dns ssl tls vpn id ids faq pdf csv eta asap fyi ai ml llm llms tv usb sms ok""".split()
)
# The months and days of German, French, Spanish, Italian, Portuguese and Dutch, and German's
# words of time: names too in an English question (Julio, Abril, Avril, Augustus, Domenica,
# Morgen), so one is a calendar word only beside a number ("15. Juli", "Juli 2026", "le 3 avril",
# "julio de 2026"; ``_calendar_word``); a German question reads every capital as grammar anyway
# (``_GERMAN_FUNCTION_WORDS``). Not Mars, Mai, Mei, Mayo, Domingo: names far more often
_FOREIGN_CALENDAR = frozenset(
    """januar februar märz juni juli oktober dezember montag dienstag mittwoch donnerstag freitag samstag sonntag sonnabend
    woche wochen wochenende monat monate monats jahr jahre jahres tag tage tages heute gestern vorgestern morgen
    janvier février avril juin juillet août septembre octobre novembre décembre
    lundi mardi mercredi jeudi vendredi samedi dimanche
    enero febrero marzo abril junio julio agosto septiembre setiembre octubre noviembre diciembre
    lunes martes miércoles jueves viernes sábado
    gennaio febbraio aprile maggio giugno luglio settembre ottobre dicembre
    lunedì martedì mercoledì giovedì venerdì sabato domenica
    janeiro fevereiro março maio junho julho setembro outubro dezembro
    segunda-feira terça-feira quarta-feira quinta-feira sexta-feira domingo-feira
    januari februari maart augustus maandag dinsdag woensdag donderdag vrijdag zaterdag zondag""".split()
)
# a number just before a word ("15. Juli", "le 3 avril", "3 de julio") or just after it ("Juli
# 2026", "julio de 2026", "Montag, 15."); the other languages write these words in lower case
_NUMBER_BEFORE = re.compile(r"\d\.?,?\s*(?:(?:de|del|di|do|da)\s+)?$", re.IGNORECASE)
# or German words of time before it, in lower case: "letzte Woche", "im Juni", "am Dienstag"
_GERMAN_TIME_BEFORE = re.compile(
    r"\b(?:am|im|vom|zum|ab|bis|seit|letzte[nrs]?|nächste[nrs]?|diese[nrs]?|vorige[nrs]?|vergangene[nrs]?|kommende[nrs]?|jede[nrs]?)\s+$"
)
_NUMBER_AFTER = re.compile(r"^,?\s*(?:(?:de|del|di|do|da)\s+)?\d", re.IGNORECASE)
# German capitalises every noun, so in a German question a capital says grammar, not a name
# ("Was ist letzte Woche mit dem Deploy passiert?"): a question holding two of these words, written
# in lower case, is read as German. None is an English word or one common in English text ("hat",
# "im", "es", "die" are), nor a common French, Spanish or Portuguese one; "von der" of a name
# ("von der Leyen") counts for nothing (``_reads_as_german``)
_GERMAN_FUNCTION_WORDS = frozenset(
    """der dem ein eine einer einem einen eines ist sind mit und oder nicht vom zum zur auf für von bei nach aus über
    wie wer wann warum wieso welche welcher welches ich wir sie haben wurde wurden gibt gab letzte letzten
    letzter diese dieser diesem dieses noch schon auch seit""".split()
)
_NAME_PARTICLE = re.compile(r"\bvon der\b")


# "Project Y", "Plan B", "Building 7"... a capitalised word and one letter after it: a name whose
# letter the index does not hold (one letter is no term), so "Project Y" would ask of "project"
_LETTER_NAME = re.compile(r"\b(?P<head>[A-Z][a-z]+)[ -](?P<letter>[A-HJ-Z])\b(?![\w'’-])")


def letter_names(text: str) -> list[tuple[str, str]]:
    """Each capitalised word of ``text`` followed by one capital letter ("Project Y"), as (the
    phrase as written, its first word): the letter ("I" aside) names which of a family it is."""
    return [(m.group(), m.group("head")) for m in _LETTER_NAME.finditer(text) if m.group("head").casefold() not in _NO_NAMES]


ACRONYM_PLURAL = re.compile(r"\b[A-Z][A-Z0-9]+s\b")  # "PRs", "SLOs", "SEV1s": an acronym's plural, as written
_YES_OR_NO = re.compile(r"\s*(?:did|does|do|has|have|had|was|were|is|are)\b", re.IGNORECASE)


def kinds_named(text: str, kinds: Iterable[str]) -> dict[str, str]:
    """Each folded word of ``text`` that names a typed kind -> the kind: a word, or two words
    side by side, written as the kind or its plural ("tickets", "retries", "quizzes"; "code
    reviews" and "code-review" of kind ``code_review``, "follow-ups" of ``followup``: the
    tokenizer splits on "_" and "-", so a kind of two words was never named). A plural only:
    "reviewed" or "debugging" may be what a memory says, not which kind it is."""
    forms = _kind_forms(tuple(kinds))
    words = split_words(text)
    out: dict[str, str] = {}
    i = 0
    while i < len(words):
        # the pair first, and its second word is taken: "code reviews" of kinds "review" and
        # "code_review" is a code review (test_a_typed_kind_of_two_words_is_named)
        pair = forms.get(words[i] + words[i + 1]) if i + 1 < len(words) else None
        if pair is not None:
            out.setdefault(words[i], pair)
            out.setdefault(words[i + 1], pair)
            i += 2
            continue
        kind = forms.get(words[i])
        if kind is not None:
            out.setdefault(words[i], kind)
        i += 1
    return out


@lru_cache(maxsize=64)
def _kind_forms(kinds: tuple[str, ...]) -> dict[str, str]:
    """Every way a question writes one of ``kinds`` -> the kind: its name without "_", and its
    plurals (+s, +es, y -> ies, z -> zzes). Kept: asked of every question."""
    out: dict[str, str] = {}
    for kind in kinds:
        name = kind.replace("_", "")
        plurals = [name + "s", name + "es"]
        plurals += [name[:-1] + "ies"] if name.endswith("y") else []
        plurals += [name + "zes"] if name.endswith("z") else []
        for form in (name, *plurals):
            out.setdefault(form, kind)
    return out


@lru_cache(maxsize=64)
def act_kinds(kinds: tuple[str, ...]) -> dict[str, str]:
    """The term of each act a kind of one word names -> the kind: its own ("sourcing": "sourc",
    which "source" shares), and for a noun made with "-ment" its verb's ("payment": "pay")."""
    out: dict[str, str] = {}
    for kind in kinds:
        if kind.isalpha():
            for term in terms_of_word(kind):
                out.setdefault(term, kind)
                if term.endswith("ment") and len(term) > 6:
                    out.setdefault(stem(term[:-4]), kind)
    return out


def kind_asked(written: str, keeps: Callable[[str], bool]) -> str | None:
    """The built-in kind a word of the question names (``KIND_WORDS``), where the owner keeps it."""
    for m in _KIND_WORD.finditer(written):
        following = m.group("next") or ""
        if following and following.lower() not in ("call", "calls") and _names_a_thing(following):
            continue  # "the tools directory"
        kind = KIND_WORDS[m.group("word").lower()]
        if keeps(kind):
            return kind
    return None


def compound_heads(written: str) -> frozenset[str]:
    """The terms of the question words that stand before another noun (``_NOUN_BEFORE_NOUN``):
    "What did we try for the memory leak?" searched "leak" alone, and so also found leaks of
    credentials."""
    return frozenset(stem(m.group("noun").lower()) for m in _NOUN_BEFORE_NOUN.finditer(written) if _names_a_thing(m.group("next")))


def _names_a_thing(word: str) -> bool:
    """Whether a word after a question noun makes the two one thing ("memory leak", "tools
    directory"): a word that is neither a stopword nor a way of asking."""
    folded = word.lower()
    return folded not in STOPWORDS and stem(folded) not in QUESTION_WORDS


def asks_yes_or_no(question: str) -> bool:
    """Whether ``question`` opens with an auxiliary ("Did ...?", "Has ... ever ...?")."""
    return _YES_OR_NO.match(question) is not None


def name_terms(text: str) -> dict[str, str]:
    """Terms of the words of ``text`` written as names, with the word as written: capitalised
    past the start of a sentence, all capitals, or letters with digits ("Zeta", "OKR", "v2").
    A question asks about such a word; a lower-case word only describes what is asked.

    A run of a script written without spaces is never a name (it has no capitals, and its
    bigrams are no word), so a word is read apart from one: in "AWS数据库迁移怎么样了？" the name is
    "AWS", in "v2版本" "v2". Digits with Hangul are a number and its counter ("7월", "2026년"),
    not an identifier; and in a German question, whose nouns are all capitalised, a capital
    names nothing (``_GERMAN_FUNCTION_WORDS``)."""
    out: dict[str, str] = {}
    start = True
    german = _reads_as_german(text)
    # Chinese and Japanese have no capitals: a capitalised Latin word there is a name, at the start too
    unspaced = _UNSPACED.search(text) is not None
    for m in _NAME_WORD.finditer(text):
        written = m.group().rstrip(".")  # "...with INV-2026-0099." names the invoice, not its full stop
        parts = [p.group() for p in _SCRIPT_CHANGE.finditer(written)] if _UNSPACED.search(written) else [written]
        for i, word in enumerate(parts):
            if _UNSPACED.match(word):
                continue
            named = (
                (word[0].isupper() and not (start and i == 0 and not unspaced) and not german)
                or (len(word) > 1 and word.isupper())
                # a word of letters alone holds no digit (no character is both), so most skip the scans
                or (
                    not word.isalpha()
                    and any(c.isdigit() for c in word)
                    and any(c.isalpha() for c in word)
                    and not _UNCASED_DIGITS.fullmatch(word)
                )
            )
            if named and _HANGUL_AFTER.search(word):
                word = _HANGUL_AFTER.sub("", word)  # "GCP에서": the name is "GCP", its particle no part of it
            folded = word.casefold()
            if (
                named
                and folded not in _NO_NAMES
                and word not in _TITLES
                and not (folded in _FOREIGN_CALENDAR and _calendar_word(text, m.start(), m.end()))
            ):
                out.update(dict.fromkeys(terms_of_word(word), word))
        end = m.start() + len(written)
        start = text[end : end + 2].strip()[:1] in _SENTENCE_ENDS and written not in _TITLES
    return out


def _calendar_word(text: str, start: int, end: int) -> bool:
    """Whether the word at ``text[start:end]`` stands beside a number, as a month or a day of a
    date does ("15. Juli", "Juli 2026"), or after a German word of time ("letzte Woche"); alone,
    "Julio" or "Morgen" may be whom a question asks about."""
    before = text[max(0, start - 12) : start]
    if _NUMBER_BEFORE.search(before) is not None or _GERMAN_TIME_BEFORE.search(before) is not None:
        return True
    return _NUMBER_AFTER.match(text[end : end + 8]) is not None


def _reads_as_german(text: str) -> bool:
    """Whether ``text`` holds two German function words (``_GERMAN_FUNCTION_WORDS``) written in
    lower case, or capitalised as its first word ("Wie", "Ist"): "MIT" or "Der" past the start
    may be a name, and so is "von der" of "von der Leyen"."""
    words = _LETTERS.findall(_NAME_PARTICLE.sub(" ", text))
    lower = [w for i, w in enumerate(words) if w.islower() or (i == 0 and w.istitle())]
    return sum(w.casefold() in _GERMAN_FUNCTION_WORDS for w in lower) >= 2
