"""Questions and memories in other languages and scripts: words with combining marks, scripts
written without spaces (Chinese, Japanese, Thai...), one-syllable Korean words, names beside a
run of Chinese, German capitals, full-width letters, identifiers written against Chinese, tags
with a dotted capital I. Each test pins a finding of a multilingual probe: the answer was empty,
or padded with everything, where the memory was there."""

from __future__ import annotations

import datetime as dt
import itertools
import unicodedata
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from query_times import NOW

import memdb
from memdb.memory.text import normalize_tag
from memdb.query.question import name_terms

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)

DAY = dt.timedelta(days=1)


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("डेटाबेस सर्वर विफल हो गया", "सर्वर"),  # Hindi: vowel signs and a virama
        ("சேவையகம் செயலிழந்தது", "சேவையகம்"),  # Tamil
        ("كتب المهندس التقرير", "كَتَبَ"),  # Arabic, asked with harakat (optional)
        ("שלום עולם בדיקה", "שָׁלוֹם"),  # Hebrew, asked with points (optional)
        ("Meeting at the café about the rollout", unicodedata.normalize("NFD", "café")),  # as macOS input sends it
        ("ฐานข้อมูล ล่ม", "ฐานข้อมูล"),  # Thai: tone marks
    ],
)
def test_a_word_with_combining_marks_is_asked_whole(qdb: memdb.Database, text: str, question: str) -> None:
    """ask split a question's words at their combining marks (``\\w`` holds none) and asked for
    the pieces, where recall(text=) found the memory: "सर्वर" was "सर वर" and answered nothing,
    "كَتَبَ" lost every letter and answered with everything."""
    mem = qdb.owner("ana")
    ep = mem.record("debug", text, outcome="failure")
    mem.record("debug", "unrelated note about billing", outcome="success")
    answer = mem.ask(question)
    assert [m.id for m in answer] == [m.id for m in mem.recall(text=question)] == [ep.id], question
    assert not answer.partial


def test_a_name_beside_a_run_of_chinese_is_read_apart(qdb: memdb.Database) -> None:
    """ "AWS数据库迁移怎么样了？" was one word, all capitals, so every bigram of it was a name no
    memory holds, and the note named the whole question once a bigram: only the Latin or digits
    beside a run can be a name ("AWS", "v2"), and the asking phrase ("怎么样了") is no word."""
    mem = qdb.owner("ana")
    ep = mem.record("debug", "AWS数据库迁移失败，v2版本回滚", outcome="failure")
    for question in ("AWS数据库迁移怎么样了？", "v2版本怎么样了？", "数据库迁移怎么样了？", "AWS 数据库迁移怎么样了？"):
        answer = mem.ask(question)
        assert [m.id for m in answer] == [ep.id] and not answer.partial and not answer.interpretation.missing_names, question
    missing = mem.ask("GCP数据库怎么样了？")  # a name no memory holds still empties the answer, named once
    assert not missing.found and missing.interpretation.missing_names == ("GCP",)
    assert name_terms("AWS数据库迁移怎么样了") == {"aws": "AWS"} and name_terms("v2版本") == {"v2": "v2"}
    assert name_terms("2026年7月14日") == {} and name_terms("2026년 7월 14일") == {}  # a number and its counter


@pytest.mark.parametrize(
    "question",
    [
        "{y}年{m}月{d}日发生了什么？", "{m}月{d}日数据库怎么样了？", "{y}年{m}月{d}日に何があった？",
        "{y}년 {m}월 {d}일에 무슨 일이 있었어?", "db {y}年{m}月{d}日", "昨天发生了什么？", "昨日何があった？", "어제 무슨 일이 있었어?",
    ],
)  # fmt: skip
def test_a_chinese_japanese_or_korean_date_is_a_window(qdb: memdb.Database, question: str) -> None:
    """These questions were emptied: the date joined digits and letters, so it was a name no
    memory holds. They are read as a window, and the asking words around them are none."""
    mem = qdb.owner("ana")
    ep = mem.record(
        "debug", "数据库迁移失败 / データベース移行失敗 / 데이터베이스 마이그레이션 실패", outcome="failure", tags=["db"], ts=NOW - DAY
    )
    mem.record("debug", "数据库迁移成功", outcome="success", tags=["db"], ts=NOW - 3 * DAY)
    yesterday = NOW - DAY
    question = question.format(y=yesterday.year, m=yesterday.month, d=yesterday.day)
    answer = mem.ask(question, now=NOW)
    assert answer.interpretation.window is not None, question
    assert [m.id for m in answer] == [ep.id] and not answer.partial and not answer.interpretation.missing_names, question


def test_a_chinese_memory_tells_of_the_day_it_names(qdb: memdb.Database) -> None:
    """A memory recorded on July 14 that says "昨天" (yesterday) answers a question about July 13."""
    mem = qdb.owner("ana")
    ep = mem.record("debug", "昨天数据库被锁了", outcome="failure", ts=NOW - DAY)
    yesterday = NOW - 2 * DAY
    answer = mem.ask(f"{yesterday.month}月{yesterday.day}日发生了什么？", now=NOW)
    assert [m.id for m in answer] == [ep.id]


def test_a_single_chinese_character_and_a_korean_syllable_are_words(qdb: memdb.Database) -> None:
    """ "锁" (lock), "猫" (cat), "車" (car) inside a run were never found (the index held its bigrams
    alone), and a one-syllable Korean word ("돈", money) was no term: ask("돈") dropped it and
    answered with every memory. A longer query still asks for its bigrams, not its characters."""
    mem = qdb.owner("ana")
    lock = mem.record("debug", "数据库被锁了，迁移失败", outcome="failure")
    cat = mem.record("debug", "我的猫把键盘弄坏了", outcome="failure")
    car = mem.record("debug", "社用車のバッテリーが上がった", outcome="failure")
    money = mem.record("debug", "고객이 돈 환불 요청", outcome="partial")
    apart = mem.record("debug", "数字据说库存", outcome="success")  # 数, 据 and 库, never 数据库
    for question, ep in (("锁", lock), ("猫", cat), ("車", car), ("돈", money)):
        assert [m.id for m in mem.ask(question)] == [m.id for m in mem.recall(text=question)] == [ep.id], question
    for question, ep in (("猫怎么了？", cat), ("車はどうなった？", car)):  # "what happened to the cat/car?"
        assert [m.id for m in mem.ask(question)] == [ep.id], question
    assert apart.id not in {m.id for m in mem.recall(text="数据库")} and [m.id for m in mem.recall(text="数据库")] == [lock.id]
    none = mem.ask("책")  # a word no memory holds is named, never padded with everything
    assert not none.found and none.interpretation.unmatched == ("책",)


def test_thai_is_searched_by_its_words(qdb: memdb.Database) -> None:
    """A Thai sentence (no spaces between words) was one term: no word of it was found. Its
    bigrams find it, first: another text sharing one of them ("าน" of "ทำงาน") ranks below, as a
    text sharing one word of an English question does."""
    mem = qdb.owner("ana")
    ep = mem.record("debug", "เซิร์ฟเวอร์ล่มเพราะฐานข้อมูลเต็ม", outcome="failure")  # the server went down: the database was full
    mem.record("debug", "ระบบสำรองทำงานปกติ", outcome="success")  # the backup system works as usual
    for word in ("ฐานข้อมูล", "เซิร์ฟเวอร์", "ล่ม"):
        assert mem.recall(text=word).memories[0].id == mem.ask(word).memories[0].id == ep.id, word
        assert not mem.ask(word).partial, word


def test_an_identifier_written_against_chinese_or_japanese_is_found_whole(qdb: memdb.Database) -> None:
    """ "发票INV-2026-0042逾期未付" did not hold "INV-2026-0042" whole, nor "CVE-2024-3094の対応"
    "CVE-2024-3094" ("CVE-2024" only): asked whole, neither was found."""
    mem = qdb.owner("ana")
    invoice = mem.record("debug", "发票INV-2026-0042逾期未付", outcome="failure")
    cve = mem.record("debug", "CVE-2024-3094の対応が完了", outcome="success")
    for name, ep in (("INV-2026-0042", invoice), ("CVE-2024-3094", cve)):
        assert [m.id for m in mem.recall(text=name)] == [m.id for m in mem.ask(f"What happened with {name}?")] == [ep.id], name
    assert not mem.ask("What happened with CVE-2024-9999?").found


def test_a_german_question_reads_capitals_as_grammar(qdb: memdb.Database) -> None:
    """German capitalises every noun, so "Woche", "Dienstag", "Juli" and "Rechnung" were names no
    memory holds, and each question was emptied. A question with two German function words reads
    capitals as grammar; a month or a day of German, French, Spanish, Italian, Portuguese or
    Dutch beside a number or after a German word of time is a date's. An English name no memory
    holds still empties the answer."""
    mem = qdb.owner("ana")
    deploy = mem.record("debug", "Deploy der Abrechnung ist fehlgeschlagen, Datenbank gesperrt", outcome="failure",
                        tags=["deploy"], ts=NOW - 8 * DAY)  # fmt: skip
    for question in (
        "Was ist letzte Woche mit dem Deploy passiert?", "deploy letzte Woche", "Was ist am Dienstag mit der Datenbank passiert?",
        "Was ist im Juli mit der Datenbank passiert?", "What happened to the deploy on Donnerstag, 18.?", "Datenbank im Juni",
    ):  # fmt: skip
        answer = mem.ask(question, now=NOW)
        assert [m.id for m in answer] == [deploy.id] and not answer.interpretation.missing_names, question
    assert mem.ask("Was ist mit der Rechnung passiert?", now=NOW).interpretation.missing_names == ()
    assert not mem.ask("What happened with Project Zeta?", now=NOW).found  # English: Zeta is a name
    assert name_terms("Was ist mit Projekt Zeta passiert?") == {}
    assert name_terms("What did Zeta say on Juli 3, 15. Juli, le 3 Avril and Julio de 2026?") == {"zeta": "Zeta"}


@pytest.mark.parametrize(
    "name", ["Julio", "Abril", "Avril", "Augustus", "Domenica", "Juli", "Morgen", "Sabato", "Tag", "Martes"]
)  # fmt: skip
def test_a_name_that_is_a_foreign_month_or_day_is_a_name(qdb: memdb.Database, name: str) -> None:
    """Every month and day of six languages, and German's words of time, were no names in any
    question, so "What did Julio say about the billing migration?" was answered with the
    billing memories, which say nothing of Julio (DESIGN 6: never pad)."""
    mem = qdb.owner("ana")
    mem.record("debug", "Deploy of the billing service failed: migration locked the users table", outcome="failure")
    mem.record("exchange", "Marta said the billing migration should wait until the retro")
    answer = mem.ask(f"What did {name} say about the billing migration?", now=NOW)
    assert not answer.found and answer.interpretation.missing_names == (name,)


@pytest.mark.parametrize(
    "question",
    [
        "What did Kowalski say about the Red Hat renewal at MIT?", "What did Kowalski say about the ES cluster in AUS?",
        "What did Kowalski say about the speech by von der Leyen?", "Im wondering what Kowalski said about the Red Hat renewal",
    ],
)  # fmt: skip
def test_an_english_question_is_not_read_as_german(qdb: memdb.Database, question: str) -> None:
    """ "Hat", "MIT", "ES", "Im" and "von der" counted as German function words, so these English
    questions read their capitals as grammar: Kowalski, whom no memory names, was no name and
    the answer padded with the memories about the rest."""
    mem = qdb.owner("ana")
    mem.record("debug", "Red Hat license renewal for the MIT lab failed", outcome="failure")
    mem.record("exchange", "The ES cluster in AUS was resized")
    mem.record("exchange", "Ursula von der Leyen speech notes summarised")
    answer = mem.ask(question, now=NOW)
    assert not answer.found and answer.interpretation.missing_names == ("Kowalski",)


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("deploy ｌａｓｔ ｗｅｅｋ", "last week"), ("deploy ＹＥＳＴＥＲＤＡＹ", "YESTERDAY"), ("deploy in Ｑ２", "in Q2"),
        ("deploy on ２０２６-０６-２９", "on 2026-06-29"),
    ],
)  # fmt: skip
def test_full_width_letters_are_read_as_the_tokenizer_folds_them(qdb: memdb.Database, question: str, window: str) -> None:
    """Time phrases typed full width (as Japanese and Chinese input methods type them) were not
    read: "ｌａｓｔ ｗｅｅｋ" vanished, "ＹＥＳＴＥＲＤＡＹ" and "Ｑ２" were names no memory holds."""
    mem = qdb.owner("ana")
    mem.record("debug", "Deploy of the billing service failed", outcome="failure", tags=["deploy"], ts=NOW - 40 * DAY)
    answer = mem.ask(question, now=NOW)
    assert answer.interpretation.window is not None and window in str(answer.interpretation.window)
    assert not answer.interpretation.missing_names and not answer.interpretation.unmatched


def test_a_chinese_relative_word_inside_another_word_asks_of_no_time(qdb: memdb.Database) -> None:
    """ "提前天数" (days in advance) was read as "前天" (the day before yesterday), and the memory
    that says it, recorded ten days ago, was outside the window: the answer was empty."""
    mem = qdb.owner("ana")
    ep = mem.record("exchange", "订单的提前天数设置为3天", ts=NOW - 10 * DAY)
    genius = mem.record("exchange", "聪明天才项目的评审完成", ts=NOW - 20 * DAY)
    for question, found in (("提前天数", ep), ("提前天数怎么设置？", ep), ("聪明天才项目怎么样了？", genius)):
        answer = mem.ask(question, now=NOW)
        assert answer.interpretation.window is None and [m.id for m in answer] == [found.id], question


def test_a_chinese_word_holding_de_is_asked_whole(qdb: memdb.Database) -> None:
    """Every "的" (of) was cut from a question, so "什么是目的？" (what is the purpose?) asked "是目",
    "目的地是哪里？" "目" and "地是", neither finding the memory that says it; and "的" alone asked
    of everything, unlabelled."""
    mem = qdb.owner("ana")
    purpose = mem.record("exchange", "这次迁移的目的：降低延迟")
    place = mem.record("exchange", "出差目的地：东京")
    other = mem.record("exchange", "数据库迁移失败")
    assert {m.id for m in mem.ask("什么是目的？")} == {purpose.id, place.id}
    assert mem.ask("目的地是哪里？").memories[0].id == place.id
    assert other.id not in {m.id for m in mem.ask("的")} and mem.ask("的").interpretation.terms == ("的",)
    assert mem.ask("迁移的目的是什么？").memories[0].id == purpose.id


def test_a_latin_name_in_a_chinese_or_korean_question_is_named_as_written(qdb: memdb.Database) -> None:
    """Chinese has no capitals, so a capitalised Latin word is a name even at the start: "Zeta项目
    怎么样了？" padded with every project memory; and a name no memory holds was reported with the
    Korean particle after it ("GCP에서")."""
    mem = qdb.owner("ana")
    mem.record("exchange", "项目数据库迁移失败")
    mem.record("exchange", "AWS에서 장애 발생")
    answer = mem.ask("Zeta项目怎么样了？", now=NOW)
    assert not answer.found and answer.interpretation.missing_names == ("Zeta",)
    assert mem.ask("GCP에서 무슨 일이 있었어?", now=NOW).interpretation.missing_names == ("GCP",)


def test_a_tag_stored_before_layout_25_is_still_found_and_erased(qdb: memdb.Database) -> None:
    """Layout 25 had tags drop the dot case folding leaves on "İ" (and tatweel, harakat), but
    stored tags keep their form: "İzmir Ofisi" then named none of the records tagged with it
    before the upgrade, and erase(tags=["İzmir Ofisi"]) missed them while its audit said done."""
    assert normalize_tag("İzmir Ofisi") == "i\u0307zmir-ofisi"  # the form every older memdb stored
    assert normalize_tag("مـشـروع") == "مـشـروع" and normalize_tag("كَتَبَ") == "كَتَبَ"
    mem = qdb.owner("ana")
    ep = mem.record("debug", "Sunucu çöktü", outcome="failure", tags=["İzmir Ofisi"])
    assert ep.tags == ("i\u0307zmir-ofisi",)
    for tag in ("İzmir Ofisi", "i\u0307zmir ofisi", "İzmir_OFISI"):
        assert [m.id for m in mem.recall(tags=[tag])] == [ep.id], tag
    report = mem.erase(tags=["İzmir Ofisi"], reason="customer request")
    assert ep.id in report.ids and not list(mem.recall(text="Sunucu"))


# --- any word of a stored text is found, in every script --------------------------------------

# words of scripts that read beyond ``\w``: with combining marks, without spaces, or of one syllable
WORDS = {
    "devanagari": ("सर्वर", "डेटाबेस", "विफल", "किताब", "मरम्मत", "परीक्षण"),
    "tamil": ("சேவையகம்", "தரவுத்தளம்", "செயலிழந்தது", "சோதனை"),
    "arabic": ("كَتَبَ", "المُهَنْدِس", "التَّقْرِير", "الخادم", "مـشـروع"),
    "hebrew": ("שָׁלוֹם", "בְּדִיקָה", "שרת", "מסד"),
    "thai": ("ฐานข้อมูล", "เซิร์ฟเวอร์", "ล่ม", "เต็ม", "ระบบ", "สำรอง"),
    "lao": ("ເຊີບເວີ", "ຖານຂໍ້ມູນ", "ລະບົບ"),
    "khmer": ("ម៉ាស៊ីនមេ", "ទិន្នន័យ", "ប្រព័ន្ធ"),
    "myanmar": ("ဆာဗာ", "ဒေတာ", "စနစ်"),
    "chinese": ("数据库", "迁移", "服务器", "锁", "猫", "失败", "回滚"),
    "japanese": ("データベース", "移行", "車", "障害", "サーバー"),
    "korean": ("서버", "데이터베이스", "돈", "책", "장애", "배포"),
}
UNSPACED = frozenset({"thai", "lao", "khmer", "myanmar", "chinese", "japanese"})
_OWNERS = itertools.count()


@pytest.fixture(scope="module")
def words_db(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[memdb.Database]:
    """One database for every example of the property below, an owner each."""
    with memdb.open(tmp_path_factory.mktemp("words") / "db", clock=lambda: NOW) as db:
        yield db


@settings(max_examples=80, deadline=None)
@given(data=st.data(), script=st.sampled_from(sorted(WORDS)))
def test_any_word_of_a_stored_text_is_found_by_recall_and_by_ask(words_db: memdb.Database, data: st.DataObject, script: str) -> None:
    """A memory of words of one script is found by each of its words, by recall and by ask
    (a word of a script written without spaces wherever it stands in the run)."""
    words = data.draw(st.lists(st.sampled_from(WORDS[script]), min_size=1, max_size=5), label="words")
    asked = data.draw(st.sampled_from(words), label="asked")
    text = ("" if script in UNSPACED else " ").join(words)
    mem = words_db.owner(f"o{next(_OWNERS)}")
    ep = mem.record("debug", text, outcome="failure")
    other = mem.record("debug", "unrelated note about billing", outcome="success")
    assert [m.id for m in mem.recall(text=asked)] == [ep.id], (text, asked)
    answer = mem.ask(asked)
    assert [m.id for m in answer] == [ep.id] and other.id not in {m.id for m in answer}, (text, asked)
    assert not answer.partial and not answer.interpretation.missing_names, (text, asked)
