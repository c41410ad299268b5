"""Session distillation: when a gateway session ends, its capture becomes one typed, honest episode.

Seed 003's auto-trigger: "every time one of those events completes, a rule fires that creates
an episodic record ... the model fills in the structured fields", and the outcome is forced to
success | partial | failure. ``Sessions.close`` reads one owner's captured exchanges and tool
calls of a session (their stored, already sanitized digests), has a ``Distiller`` fill summary,
what_we_tried, what_happened, why, lesson and outcome, and records one episode of the given
typed kind citing them, through the owner's ordinary record path: sanitized, validated, counted
for pattern extraction. Two rules fire it: an agent that knows it is done (``close_session``,
the MCP ``end_session`` tool, ``memdb close-session``) and ``close_idle`` for sessions nobody
closed (``db.close_idle_sessions``).

Honesty: an outcome a distiller judges must be exactly one of the three, and "success" may not
contradict the tool results the episode cites (the last result that reads as an error). An
answer that fails is refused and asked again once, with the reason; a second refusal writes
nothing, leaves the session open for a later try and is counted. The offline default never
judges: it needs the caller's ``outcome``, and the idle rule leaves its sessions waiting.

Layout (``^DIST``, this module's alone)::

    ^DIST(owner, "closed", session) = {episode, at, by, kind, events, first, last}
                                      the mark: written in the episode's transaction, so a
                                      session closes once; first/last are the cited ids' range;
                                      earlier versions erased, it names the oldest kept (repoint);
                                      the episode erased with events it cited while others stay,
                                      episode is None and first/last the range's events left
                                      (None if none is): the mark keeps no id of erased data
    ^DIST(owner, "continued", session, id) = µs   a closed session went on: the event (or the call
                                      whose result came) captured after its close read the
                                      session, whatever its ts, and when; the next close clears
                                      them, and one erased since is no news
    ^DIST(owner, "open", session) = {last, tries}   sessions the idle rule has seen and not
                                      closed: their last capture (µs) and the tries the model
                                      answered that were refused or unusable (an API failure,
                                      or a run that did not call, is no try)
    ^DIST(owner, "seen") = µs         how far the idle rule has read the owner's time index
    ^DIST(owner, "n", "closed"|"refused"|"failed") = count
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from memdb.errors import LLMError, NotFoundError, SanitizerError, ValidationError
from memdb.governance.patterns import Patterns
from memdb.governance.reflection import is_metered, usage_of
from memdb.memory.episodes import Episodes
from memdb.memory.ids import ts_micros
from memdb.memory.models import MAX_TAGS, Episode, check_ident, personal_data_in, shown_value, unstorable, utc
from memdb.memory.sanitize import shown
from memdb.memory.sanitize.fields import identifier_texts
from memdb.memory.settings import OUTCOMES, Settings
from memdb.memory.text import clip

__all__ = [
    "CAPTURE_KINDS",
    "Distillation",
    "Distiller",
    "Draft",
    "IdleReport",
    "OfflineDistiller",
    "SessionCapture",
    "Sessions",
    "kind_by_rule",
    "reads_as_error",
    "refusal",
]

CAPTURE_KINDS = ("exchange", "tool_call")
MAX_EVENTS = 500  # captured events one close reads and cites: the first and the newest 499
MAX_IDLE_TRIES = 3  # tries the model answered unusably (refused, malformed) after which the idle rule leaves a session to an explicit close

Status = Literal["closed", "already_closed", "nothing_captured", "refused", "failed", "waiting"]


@dataclass(frozen=True)
class SessionCapture:
    """What a distiller reads: one owner's captured events of a session, as stored (sanitized)."""

    owner: str
    session: str
    kind: str
    events: tuple[Episode, ...]  # exchanges and tool calls, oldest first
    total: int  # captured events in the session; more than ``len(events)`` when cut to MAX_EVENTS
    outcome: str | None  # the caller's outcome, or None when the distiller is to judge it


@dataclass(frozen=True)
class Draft:
    """The fields a distiller proposes for the episode."""

    summary: str
    outcome: str | None = None
    what_we_tried: str | None = None
    what_happened: str | None = None
    why: str | None = None
    lesson: str | None = None


@runtime_checkable
class Distiller(Protocol):
    """Fills a session's episode from its capture. ``judges_outcome``: whether it decides the
    outcome itself (a model) or needs the caller's (the offline one)."""

    judges_outcome: bool

    def distill(self, capture: SessionCapture, rejected: Sequence[str] = ()) -> Draft:
        """A draft for ``capture``; ``rejected`` holds why earlier answers were refused (say it
        in the prompt). Raises LLMError when the model fails."""
        ...


@dataclass(frozen=True)
class Distillation:
    """What closing a session did: the episode written (or the one written before), a status
    and a reason a person can read. Never an exception for an expected outcome."""

    session: str
    status: Status
    reason: str
    episode: Episode | None = None
    events: int = 0  # captured events read
    attempts: int = 0  # answers asked of the distiller
    rejected: tuple[str, ...] = ()  # why each refused answer was refused

    @property
    def closed(self) -> bool:
        """Whether the session is closed now (by this call or an earlier one)."""
        return self.status in ("closed", "already_closed")

    def __str__(self) -> str:
        return self.reason


# --- what reads as an error, and what an honest draft is ---------------------------------------
#
# A false positive costs more than a miss: a miss lets the model's own "success" stand, a false
# positive refuses an honest one twice, so a true success cannot be recorded and the idle rule
# parks the session. So names that also appear in ordinary text (exception classes, errno codes,
# HTTP statuses, "rc") count only in the shape an error takes, and every language's error words
# come with their reports of no error, "error handling" and "error fixed" (test_what_reads_as_an_error).

# The error words, by language, that a zero count beside them makes a report of no error.
_EN_WORDS = (
    r"\b(?:errors?|errored|fail(?:s|ed|ing|ures?)?|exceptions?|fatal|crash(?:es|ed)?|panic(?:s|ked)?|abort(?:s|ed)?"
    r"|timeouts?|timed[\s_-]?out|rejected|refused|denied|invalid)\b"
)
_CJK_WORDS = r"错误|錯誤|异常|異常|失败|失敗|出错|出錯|エラー|오류|에러|실패"
_EU_WORDS = r"\b(?:fehler|fehlgeschlagen|erreurs?|échecs?|échoué\w*)\b|\bошиб\w*|\bсбо[йяеию]\w*"
_WORDS = f"(?:{_EN_WORDS}|{_CJK_WORDS}|{_EU_WORDS})"
# a zero that is a count: not 0.5, 0x80070005, 10, 10:00, or the 0 of "0 != 1"
_ZERO = r"(?<![\d.,:])0+(?:[.,]0+)?(?![\d.,]*\d|[A-Za-z_]|\s*[!=<>])"
_ERRNO = (
    r"E(?:CONN(?:REFUSED|RESET|ABORTED)|TIMEDOUT|NOENT|ACCES|PERM|ADDRINUSE|ADDRNOTAVAIL|HOSTUNREACH|HOSTDOWN"
    r"|NETUNREACH|NETDOWN|NOTFOUND|AI_AGAIN|PIPE|NOSPC|NOMEM|EXIST|ISDIR|NOTDIR|MFILE|NFILE|NOTEMPTY|BUSY|ROFS"
    r"|INVAL|BADF|NOTCONN|AGAIN|DQUOT|LOOP|NAMETOOLONG|PROTO|CANCELED|NOTSUP|NOEXEC|NOBUFS|TXTBSY|NOSYS)"
)
_LINE = r"(?:^|\\[nr]|[\"'`])[ \t]*"  # a line's start, in a JSON string too ("...\nKeyError: 'x'"), or a quote's

# Reports of no error and text about errors as a topic, set aside before _ERROR looks.
_NO_ERROR = (
    # a key with a falsy value: "errors": 0, "lastError": null, "fatal": false, "aborted": false
    # (no left boundary, so "lastError" counts: a leading \w*? made every long word quadratic)
    r"""(?:errors?|failures?|failed|exceptions?|fatal|abort(?:ed)?|crash(?:ed)?|timed_?out|timeouts?)\b["']?"""
    r"""\s*[:=]\s*(?:null|none|false|0|\[\]|\{\}|""|'')(?![\w.]|\s+[a-z])""",
    # a zero count in any language: "0 failed", "0 Fehler", "errors: 0", "エラー 0 件", "{"失败": 0}"
    rf"""{_ZERO}\s*(?:件の?|个|個|개의?|x)?\s*{_WORDS}""",
    rf"""{_WORDS}["']?\s*[:：=]?\s*{_ZERO}(?!\s+[a-z])""",
    r"""\b(?:no|zero|without)\s+(?:(?:fatal|critical|new|unhandled|serious|more)\s+)?(?:errors?|failures?|failed|exceptions?|fatal)\b""",
    r"""\b(?:errors?|exceptions?)[\s_-]+(?:handl(?:ing|ers?)|reporting|boundar(?:y|ies)|logging|pages?)\b(?!\s+request)|\bnon-?fatal\b""",
    r"""\bfix(?:ed|es)?\s+(?:an?\s+|the\s+)?(?:\w+\s+)?(?:errors?|exceptions?|crash(?:es)?)\b""",
    # Chinese: none found, handling and logging, on failure, fixed
    r"""(?:没有|沒有|没|沒|无|無|未|零|不再)(?:发现|發現|出现|出現|检测到|檢測到|遇到|产生|產生|任何|报告?)*\s*(?:错误|錯誤|异常|異常|失败|失敗|出错|出錯)""",
    r"""(?:错误|錯誤|异常|異常)(?:处理|處理|日志|日誌|页面|頁面|提示|捕获|捕獲|上报|上報|监控|監控)""",
    r"""(?:失败|失敗)(?:重试|重試|率|时|時|后|後|回滚|回滾)""",
    r"""(?:修复|修復|修正|改正|解决|解決)了?[^。，,;；!！\n]{0,20}?(?:错误|錯誤|异常|異常)""",
    # Japanese
    r"""(?:エラー|失敗)(?:は|が|も)?(?:ありません|ない|なし|無し|ゼロ)|エラー(?:処理|ハンドリング|ログ|ページ)|エラー(?:を|が)?(?:修正|解消|解決)""",
    # Korean
    r"""(?:오류|에러|실패)(?:가|는|이|도)?\s*(?:없습니다|없음|없어요|없다|없이|없는)|(?:오류|에러)\s*(?:처리|핸들링|로그|로깅|페이지)"""
    r"""|(?:오류|에러)(?:를|을)?\s*(?:수정|해결|고쳤|고침)""",
    # German
    r"""\b(?:keine[nrms]?|ohne)\s+(?:\w+\s+)?fehler\b|\bfehler[\s-]+(?:logging|handling|behandlung|seite|page|tracking|meldungen|reporting|protokoll\w*)\b"""
    r"""|\bfehler\b(?:\s+\w+){0,3}?\s+(?:behoben|korrigiert|beseitigt|gefixt|repariert)\b|\b(?:behob|behebt|korrigier|beseitig)\w*\s+(?:\w+\s+){0,2}?fehler\b""",
    # French
    r"""\baucune?\s+(?:\w+\s+)?(?:erreurs?|échecs?)\b|\bsans\s+(?:aucune\s+)?(?:erreurs?|échecs?)\b|\bpas\s+d['’]\s?(?:erreurs?|échecs?)\b"""
    r"""|\b(?:gestion|page|journal|journalisation|traitement|gestionnaire)\s+(?:des\s+|de\s+l['’]\s?|d['’]\s?)(?:erreurs?|exceptions?)\b"""
    r"""|\b(?:erreurs?|échecs?)\b(?:\s+\S+){0,3}?\s+(?:corrigée?s?|résolue?s?)\b|\b(?:corrig|résol)\w*\s+(?:l['’]\s?|les?\s+|une?\s+|des\s+)?(?:erreurs?|échecs?)\b""",
    # Russian
    r"""\b(?:без|нет)\s+ошибок\b|\bошибок\s+(?:нет|не\s+(?:найдено|обнаружено))|\bобработк\w*\s+ошибок\b|\bошибк\w*\s+исправлен\w*|\bисправ\w*\s+(?:\w+\s+)?ошибк\w*""",
)
_BENIGN = re.compile("|".join(_NO_ERROR), re.I | re.M)
# What reads as an error. Words need boundaries ("terror", "failover" are none); CJK ones have none.
_ERROR_SHAPES = (
    r"""\b(?:errors?|errored|fail(?:s|ed|ing|ure)?|exception|traceback|timed?\s?out|timeout|refused|denied|forbidden"""
    r"""|unauthori[sz]ed|invalid|not\s+found|crash(?:ed)?|panic(?:ked)?|abort(?:ed)?|rejected|fatal)\b""",
    r"""\b(?:segmentation\s+fault|segfault|core\s+dumped|oomkilled|out\s+of\s+memory|connection\s+reset"""
    r"""|(?:unable\s+to|could\s*n[o']t|cannot|can't)\s+(?:connect|resolve)|non-?zero\s+exit"""
    r"""|bad\s+gateway|service\s+unavailable|gateway\s+time-?out|too\s+many\s+requests|internal\s+server\s+error)\b""",
    r"""["']?\b(?:ok|success|succeeded)\b["']?\s*[:=]\s*(?:false|0)\b""",
    # a status field of 400 or more: "status": 503, "statusCode": 502, "http_status": "404", Status: 503
    r"""["']?\b(?:status|code|(?:http[_-]?)?status[_-]?code|http[_-]?status|response[_-]?code)\b["']?\s*[:=]\s*["']?[45]\d\d\b""",
    # a status line (HTTP/1.1 502 Bad Gateway, < HTTP/2 404, HTTP 404 Not Found), never a number in prose
    rf"""{_LINE}[<>]?\s*HTTP/\d(?:\.\d)?\s+[45]\d\d\b|{_LINE}HTTP\s+[45]\d\d(?-i:(?:\s+[A-Z][a-z]+)*)[ \t]*(?:$|\\[nr]|["'])""",
    # a non-zero exit: "exit_code": 1, "exitCode": -9, "returncode": 2, "exit status 1" ("rc": 1 at the top: _top_rc)
    r"""["']?\b(?:exit[_-]?(?:code|status)|return[_-]?code|ret[_-]?code)\b["']?\s*[:=]\s*["']?-?[1-9]""",
    r"""\bexit(?:ed)?\s+(?:with\s+)?(?:status|code)\s*[:=]?\s*-?[1-9]""",
    # an exception raised, not named: "KeyError: 'x'" or "java.lang.NullPointerException" opening a line,
    # "Uncaught TypeError: ...", "Caused by: java.io.IOException" (never "except KeyError:" or "NotFoundError.ts")
    r"""(?:"""
    rf"""{_LINE}|\b(?:uncaught|unhandled|raised?|thrown|threw|caused\s+by:?)\s+)(?-i:(?:[\w$]+\.)*[A-Z]\w*(?:Error|Exception))"""
    r"""(?:\s*\[[A-Z_]+\])?(?::(?!:)|[ \t]*(?:$|\\[nr]))""",
    r"""(?-i:\bERR!|\[ERR_[A-Z_]+\])""",  # npm ERR!, Node's "TypeError [ERR_X]"
    # an errno code where an error puts it: opening a line, after Node's syscall, in a code field
    rf"""{_LINE}(?-i:{_ERRNO})(?::|\s+[\d\[(]|[ \t]*$)""",
    rf"""\b(?:connect|read|write|getaddrinfo|open|spawn(?:\s+\S+)?|mkdir|rmdir|stat|lstat|unlink|rename|scandir|listen|bind)\s+(?-i:{_ERRNO})\b""",
    rf"""["']?\b(?:errno|code)\b["']?\s*[:=]\s*["']?(?-i:{_ERRNO}|ERR_[A-Z_]+)\b""",
    r"""\[errno\s+-?\d+\]|["']?\berrno\b["']?\s*[:=]\s*-?[1-9]""",
    _CJK_WORDS,
    r"""\b(?:fehler|fehlgeschlagen|erreurs?|échecs?|échoué\w*)\b|\bошибк\w*|\bсбо[йяеию]\w*|\bне\s+удалось\b""",
)
_ERROR = re.compile("|".join(_ERROR_SHAPES), re.I | re.M)


def _top_rc(result: str) -> bool:
    """Whether ``result`` is a JSON object whose own ``rc`` (Ansible's exit code) is not 0: nested,
    ``rc`` is anything ({"version": {"rc": 1}} is a release candidate)."""
    if '"rc"' not in result or not result.lstrip().startswith("{"):
        return False
    try:
        value = json.loads(result)
    except (ValueError, RecursionError):
        return False
    rc = value.get("rc") if isinstance(value, dict) else None
    return isinstance(rc, int) and not isinstance(rc, bool) and rc != 0


def reads_as_error(result: str | None) -> bool:
    """Whether a tool result reads as an error: an error word (in a few languages), an exception
    raised, an errno code where an error puts it, ``"ok": false``, a 4xx/5xx status field or
    status line, or a non-zero exit code, once reports of no error (``"errors": 0``, "0 Fehler",
    "no failures", "error handling") are set aside. It leans towards "no error": a miss leaves the
    model's judgement standing, while a false one refuses an honest "success"."""
    if not result:
        return False
    if _ERROR.search(result) is not None and _ERROR.search(_BENIGN.sub(" ", result)) is not None:
        return True  # (most results hold no error shape at all: the first search spares them the second)
    return _top_rc(result)


def _last_result(events: Sequence[Episode]) -> Episode | None:
    """The latest tool call that has a result (one still running says nothing yet)."""
    return next((e for e in reversed(events) if e.kind == "tool_call" and e.result), None)


def refusal(draft: Draft, capture: SessionCapture) -> str | None:
    """Why ``draft`` cannot be written as the episode of ``capture``, or None if it can.

    The summary must say something; an outcome the distiller judged must be exactly success,
    partial or failure (case aside), and "success" must not follow a last tool result that
    reads as an error. The caller's outcome is the caller's judgement and is not second-guessed.
    """
    if not isinstance(draft.summary, str) or not draft.summary.strip():
        return "the summary is empty: say in one sentence what the session was about and how it ended"
    if capture.outcome is not None:
        return None
    given = draft.outcome.strip().lower() if isinstance(draft.outcome, str) else ""
    if not given:
        return f"the outcome is missing: answer exactly one of {', '.join(OUTCOMES)}"
    if given not in OUTCOMES:
        # the model's text, quoted sanitized (then cut): the reason reaches the caller, MCP's end_session
        # and the next prompt, and quoted raw it carried an address the model wrote (test_a_hedge_is_quoted_sanitized)
        return (
            f"the outcome {shown(str(draft.outcome), 48)} is not one of {', '.join(OUTCOMES)}: no hedging "
            "(partial when only part of it worked, failure when the goal was not reached)"
        )
    last = _last_result(capture.events)
    if given == "success" and last is not None and reads_as_error(last.result):
        return (
            f"the outcome 'success' contradicts the last tool result: {last.tool} returned {clip(last.result or '', 160)!r}; "
            "a session that ends on an error is partial or a failure"
        )
    return None


def kind_by_rule(events: Sequence[Episode], settings: Settings) -> str | None:
    """The typed kind the settings give a session: the first ``session_kinds`` rule matching a
    tool it called (``tool:NAME``) or a tag of one of its events (``tag:TAG``), else
    ``session_default_kind`` if that is a typed kind, else None (the session waits)."""
    tools = {e.tool for e in events if e.kind == "tool_call" and e.tool}
    tags = {t for e in events for t in e.tags}
    for rule, kind in settings.session_kinds.items():
        what, _, name = rule.partition(":")
        if (what == "tool" and name in tools) or (what == "tag" and name in tags):
            return kind
    default = settings.session_default_kind
    return default if default in settings.typed_kinds else None


# --- the deterministic default -----------------------------------------------------------------


class OfflineDistiller:
    """Deterministic and offline: fills what the capture says and never judges the outcome.

    summary: the first user message (else the tools called); what_we_tried: each tool with its
    input; what_happened: each tool's result, errors included; why and lesson stay empty (a
    cause or a lesson would be a guess). The outcome is the caller's.
    """

    judges_outcome = False

    def distill(self, capture: SessionCapture, rejected: Sequence[str] = ()) -> Draft:
        calls = [e for e in capture.events if e.kind == "tool_call"]
        asked = next((e.summary for e in capture.events if e.kind == "exchange" and e.summary), None)
        tools = list(dict.fromkeys(e.tool or "tool" for e in calls))
        summary = clip(asked, 300) if asked else f"Ran {', '.join(tools[:8])}" + (f" and {len(tools) - 8} more" if len(tools) > 8 else "")
        tried = "; ".join(f"{e.tool} {clip(e.content, 200)}".strip() for e in calls) or None
        happened = "; ".join(f"{e.tool} -> {clip(e.result, 200) if e.result else 'no result recorded'}" for e in calls) or None
        if capture.total > len(capture.events):
            happened = f"(the first and the last {len(capture.events) - 1} of {capture.total} events) {happened or ''}".strip()
        return Draft(summary=summary or f"Session {capture.session}", outcome=capture.outcome, what_we_tried=tried, what_happened=happened)


# --- closing sessions --------------------------------------------------------------------------


@dataclass
class IdleReport:
    """What one ``close_idle`` run did: every session it looked at, by owner."""

    now: dt.datetime
    idle: dt.timedelta
    owners: dict[str, list[Distillation]] = field(default_factory=dict)
    deferred: int = 0  # idle sessions left for the next run (over the run's limit)

    def _with(self, *statuses: str) -> list[Distillation]:
        return [d for ds in self.owners.values() for d in ds if d.status in statuses]

    @property
    def closed(self) -> list[Distillation]:
        return self._with("closed")

    @property
    def waiting(self) -> list[Distillation]:
        """Idle sessions that need an outcome (or a kind) from someone: nothing was written."""
        return self._with("waiting")

    @property
    def refused(self) -> list[Distillation]:
        return self._with("refused")

    @property
    def failed(self) -> list[Distillation]:
        return self._with("failed")

    def __str__(self) -> str:
        minutes = self.idle.total_seconds() / 60
        return (
            f"close idle sessions at {self.now:%Y-%m-%d %H:%M} UTC (idle {minutes:g} min): {len(self.closed)} closed, "
            f"{len(self.waiting)} waiting for an outcome, {len(self.refused)} refused as not honest, {len(self.failed)} failed"
            + (f", {self.deferred} left for the next run" if self.deferred else "")
        )


_NEWS_FIELDS = frozenset({"summary", "content", "result", "input", "tool", "what_happened", "why", "lesson", "decisions", "outcome"})
"""What a correction of a capture may say anew of its session (``Sessions.on_corrected``)."""


class Sessions:
    """Closing gateway sessions into typed episodes, for one database (module docstring)."""

    def __init__(
        self,
        episodes: Episodes,
        patterns: Patterns,
        distiller: Distiller | None = None,
        read_archived: Callable[[str, Sequence[str]], list[Episode]] | None = None,
    ) -> None:
        self.episodes = episodes
        self.patterns = patterns
        # the full records of archived captures (``Lifecycle.read_archived``): a session left open
        # until maintain archived its events still closes from them
        self.read_archived = read_archived
        self.space = episodes.space
        self.distiller: Distiller = distiller or OfflineDistiller()
        self.marks = self.space["DIST"]

    # --- the explicit rule: an agent (or person) says the session is over ------------------------

    def close(
        self,
        owner: str,
        session: str,
        kind: str,
        outcome: str | None = None,
        now: dt.datetime | None = None,
        tags: list[str] | tuple[str, ...] = (),
    ) -> Distillation:
        """Close ``owner``'s ``session`` into one episode of typed ``kind``; see ``Memory.close_session``."""
        settings = self.episodes.settings
        check_ident("session", session)
        # capture refuses such a session, read as it reads one: none was captured, and its name is not echoed
        if any(map(personal_data_in, identifier_texts({"session": session}).values())):
            raise ValidationError("session: looks like personal data; use an opaque id")
        if not isinstance(kind, str) or kind not in settings.typed_kinds:
            raise ValidationError(f"kind {shown_value(kind)}: a session closes into a typed kind: one of {', '.join(settings.typed_kinds)}")
        if outcome is not None and outcome not in OUTCOMES:
            raise ValidationError(f"outcome {shown_value(outcome)}: must be one of {', '.join(OUTCOMES)} (no hedging: pick the closest)")
        if outcome is None and not self.distiller.judges_outcome:
            raise ValidationError(
                f"outcome: required with {type(self.distiller).__name__}, which never guesses one "
                f"(give one of {', '.join(OUTCOMES)}, or open the database with a model distiller)"
            )
        if not isinstance(tags, list | tuple):  # a set's order, which the label rule reads, is the hash seed's
            raise ValidationError(f"tags {shown_value(tags)}: close_session takes a list or tuple of tags, as record does")
        given = list(tags)
        # read as record stores them now, to refuse more than an episode holds or a bad tag before
        # the distiller runs (as record refuses them) and to tell
        # the events' tags they already hold; the episode is given them as given, so capture
        # sanitizes them once, as record's (test_close_session_tags_are_stored_as_record_stores_them)
        stored = self.episodes.stored_tags(owner, given, "close_session tags")
        at = utc(now, "now") if now is not None else self.episodes.now()
        return self._close(owner, session, kind, outcome, at, list(zip(given, stored, strict=True)))

    def _close(
        self, owner: str, session: str, kind: str | None, outcome: str | None, at: dt.datetime, extra: Sequence[tuple[str, str]]
    ) -> Distillation:
        """Close one session (``kind`` None: by the settings' rule); the model is asked outside
        any transaction, and the episode, its mark and its counter are written in one. ``extra``:
        tags to add, each as given with the form capture stores it in."""
        done = self._already(owner, session)
        if done is not None:
            if self.marks.data((owner, "open", session)):  # (the idle rule had seen it go on, and that was erased since)
                with self.space.transaction():
                    self.marks.kill((owner, "open", session))
            return done
        previous = self.marks.get((owner, "closed", session))  # a session continued after its close: closed again
        if previous is not None:
            if kind is not None and kind != previous["kind"]:
                again = f"a new version of episode {previous['episode']}" if previous.get("episode") else "its episode was erased"
                raise ValidationError(
                    f"kind {shown(kind)}: session {session} was closed as {previous['kind']} and continued since; "
                    f"it closes again as {previous['kind']} ({again})"
                )
            kind = str(previous["kind"])
            current = self._archived_version(owner, session, previous)
            if current is not None:
                if self.marks.data((owner, "open", session)):  # the idle rule waits for a restore, not for each run
                    with self.space.transaction():
                        self.marks.kill((owner, "open", session))
                return Distillation(
                    session, "already_closed",
                    f"session {session}: went on after its close, but the episode it closed as ({current}) is archived; "
                    "restore it, then close the session again; nothing written", None, int(previous.get("events", 0)),
                )  # fmt: skip
        events, total, read = self._captured(owner, session)
        if not events:
            if self.marks.data((owner, "open", session)):
                self.marks.kill((owner, "open", session))  # erased since the idle rule saw it: nothing left to close
            # an erasure forgets a session whose events it took (test_erasing_a_session_forgets_its_id):
            # "nothing captured" was untrue of one, and which it was cannot be told, by design
            # (test_a_session_whose_events_were_erased_says_they_may_have_been)
            return Distillation(
                session, "nothing_captured",
                f"session {session}: no exchanges or tool calls of it are stored (none were captured under this id, "
                "or they were erased); nothing written",
            )  # fmt: skip
        if kind is None:
            kind = kind_by_rule(events, self.episodes.settings)
            if kind is None:
                return Distillation(
                    session, "waiting", f"session {session}: no rule gives it a typed kind (session_kinds, session_default_kind); "
                    "close it with a kind", events=total,
                )  # fmt: skip
        capture = SessionCapture(owner, session, kind, tuple(events), total, outcome)
        use = self.distiller
        rejected: list[str] = []
        draft: Draft | None = None
        before = usage_of(use)
        for _ in range(2):  # the answer, and once more with the reason it was refused
            try:
                answer = use.distill(capture, tuple(rejected))
            except LLMError as exc:
                # a try only when the model answered (refused here, or unusable: cut, malformed): an outage
                # charged every idle session a try each pass, sessions a run never called too, and after
                # MAX_IDLE_TRIES passes parked them all for good (test_an_outage_parks_no_idle_session)
                answered = bool(rejected) or not is_metered(use) or (usage_of(use) - before).answers > 0
                reason = f"session {session}: not closed, nothing written: {exc}"
                return self._not_closed(owner, capture, "failed", reason, rejected, at, tried=answered)
            problem = refusal(answer, capture)
            if problem is None:
                draft = answer
                break
            rejected.append(problem)
        if draft is None:
            reason = f"session {session}: not closed, nothing written: asked twice, the answer was not honest ({rejected[-1]})"
            return self._not_closed(owner, capture, "refused", reason, rejected, at)
        return self._write(capture, draft, extra, at, type(use).__name__, rejected, read, previous)

    def _already(self, owner: str, session: str, seen: Mapping[str, Any] | None = None) -> Distillation | None:
        """The answer for a session closed already, or None where there is something to close:
        a session never closed, or one continued after its close (an event or a tool result
        captured after the close read the session). With ``seen`` (the mark a close began from), a mark another
        process wrote since is closed already, continued or not."""
        mark = self.marks.get((owner, "closed", session))
        if mark is None or (mark == seen if seen is not None else self._continued(owner, session, mark)):
            return None
        at = f"session {session}: already closed on {mark['at']:%Y-%m-%d %H:%M} UTC"
        if not mark.get("episode"):  # erased, and the mark forgot its id (erase_news)
            reason = f"{at}; its episode was erased since; nothing written"
            return Distillation(session, "already_closed", reason, None, int(mark.get("events", 0)))
        eid = str(mark["episode"])
        episode = self._peek(owner, eid)
        current = self._current_version(owner, session, mark) if episode is None else eid
        if current not in (None, eid):
            eid, episode = str(current), self._peek(owner, str(current))  # the version it named was cut
        # erased (with an event it cited) is not "no longer in hot storage": that reads as archived,
        # to restore (test_erasing_a_cited_event_takes_the_episode_distilled_from_it)
        gone = "" if episode is not None else " (no longer in hot storage)" if current is not None else ", erased since"
        reason = f"{at} as episode {eid}{gone}; nothing written"
        return Distillation(session, "already_closed", reason, episode, int(mark.get("events", 0)))

    def _peek(self, owner: str, episode_id: str) -> Episode | None:
        """A hot episode, or None (erased or archived since)."""
        try:
            return self.episodes.owner(owner).peek(episode_id)
        except NotFoundError:
            return None

    def _archived_version(self, owner: str, session: str, mark: Mapping[str, Any]) -> str | None:
        """The current version of what a session's close wrote, where it is archived (closing the
        session again waits for a restore); else None."""
        current = self._current_version(owner, session, mark)
        return current if current is not None and (self.episodes.header(owner, current) or {}).get("status") == "archived" else None

    def _current_version(self, owner: str, session: str, mark: Mapping[str, Any]) -> str | None:
        """The current version of what a session's close wrote (itself, or what corrected it), or
        None if erased."""
        versions = self._versions(owner, session, mark)
        return versions[-1] if versions else None

    def _versions(self, owner: str, session: str, mark: Mapping[str, Any]) -> list[str]:
        """Every version of what a session's close wrote, oldest first: the chain of the version
        its mark names, or, where that version is gone while later ones stay (a mark that
        erase_versions or retention left naming a cut version before ``repoint``), the chain of
        the session's current episode of the mark's kind citing the close's events; [] when
        nothing of it is left. Never "nothing derived" for a mark that lost its version
        (test_erasing_the_version_a_close_wrote_keeps_the_session_derived)."""
        if not mark.get("episode"):
            return []  # erased whole: the mark forgot it (erase_news)
        try:
            return self.episodes.chain(owner, str(mark["episode"]))
        except NotFoundError:
            pass
        ends = {str(end) for end in (mark.get("first"), mark.get("last")) if end}
        hot = list(self.episodes.ids_in_session(owner, session))
        archived = list(self.episodes.archived_ids_in_session(owner, session))
        found: list[str] = []
        for eid in sorted({*hot, *archived}):
            header = self.episodes.header(owner, eid) or {}
            if header.get("kind") != mark["kind"] or self.episodes.successor(owner, eid) is not None:
                continue
            cites = self._cites_of(owner, eid)
            if cites is None or not ends.isdisjoint(cites):  # (unreadable: its kind and session stand in)
                found.append(eid)
        return self.episodes.chain(owner, found[-1]) if found else []

    def _continued(self, owner: str, session: str, mark: Mapping[str, Any]) -> bool:
        """Whether ``session`` went on after its close: an event or a tool result captured since
        (``on_capture``'s mark: an event dated before the close's last one, as live capture allows
        within the tolerance, or a result that came late, are news too), or, as marks written
        before there was one tell, an event after the last one the close cited, by id (ids are in
        time order; test_an_event_dated_before_the_close_continues_the_session)."""
        for subs, _ in self.marks.items((owner, "continued", session)):
            if self.episodes.header(owner, str(subs[3])) is not None:
                return True
        last = mark.get("last")  # None: every event the close read was erased, so what is left came after
        for eid in self.episodes.ids_in_session(owner, session, reverse=True):
            if (self.episodes.header(owner, eid) or {}).get("kind") in CAPTURE_KINDS:
                return last is None or eid > str(last)
        return False

    def _captured(self, owner: str, session: str) -> tuple[list[Episode], int, frozenset[str]]:
        """The owner's exchanges and tool calls of ``session``, hot and archived, oldest first
        (the first and the newest when there are more than MAX_EVENTS), how many there are, and
        the ids of all of them (what the close read, ``_went_on``)."""
        mem = self.episodes.owner(owner)
        with self.space.snapshot():
            ids, archived_set = self._capture_ids(owner, session)
            kept = ids if len(ids) <= MAX_EVENTS else [ids[0], *ids[-(MAX_EVENTS - 1) :]]
            cold = [eid for eid in kept if eid in archived_set]
            read = {e.id: e for e in self.read_archived(owner, cold)} if cold and self.read_archived is not None else {}
            events = [read.get(eid) if eid in archived_set else mem.peek(eid) for eid in kept]
            return [e for e in events if e is not None], len(ids), frozenset(ids)

    def _capture_ids(self, owner: str, session: str) -> tuple[list[str], set[str]]:
        """The ids of ``session``'s captured events, hot and archived, in time order, and the archived ones."""
        hot = list(self.episodes.ids_in_session(owner, session))
        archived = list(self.episodes.archived_ids_in_session(owner, session)) if self.read_archived is not None else []
        ids = sorted(eid for eid in (*hot, *archived) if (self.episodes.header(owner, eid) or {}).get("kind") in CAPTURE_KINDS)
        return ids, set(archived)

    def _went_on(self, owner: str, capture: SessionCapture, read: frozenset[str]) -> list[str]:
        """In the close's transaction: what ``capture``'s session captured while the distiller
        ran, after the close read it: the events it did not read, and the calls it read without
        a result that have one now (``on_capture`` marks only sessions closed already)."""
        ids, _ = self._capture_ids(owner, capture.session)
        waiting = [e.id for e in capture.events if e.kind == "tool_call" and e.result is None]
        answered = [eid for eid in waiting if (self.episodes.record_of(owner, eid) or {}).get("result") is not None]
        return [*(eid for eid in ids if eid not in read), *answered]

    def on_capture(self, owner: str, episode: Episode) -> None:
        """``Episodes.capture_hooks``, in the capture's transaction: an exchange, a tool call or a
        tool result captured for a session closed already is news its episode does not hold, so
        the session continues (closed again as a new version of its episode, by the caller or
        the idle rule, which counts its idle time from now). Whatever the event's ts: live
        capture may date an event before the close's last one, and a result comes when it
        comes (test_a_late_error_result_continues_a_closed_session)."""
        session = episode.session
        if session and episode.kind in CAPTURE_KINDS and self.marks.data((owner, "closed", session)):
            self._continue(owner, session, [episode.id])

    def _continue(self, owner: str, session: str, news: Sequence[str]) -> None:
        """Mark a closed session as gone on since its close by the captures ``news`` (events, or
        calls whose result came), and open for the idle rule from now."""
        now = ts_micros(self.episodes.now())
        for eid in news:
            self.marks.set((owner, "continued", session, eid), now)
        entry = self.marks.get((owner, "open", session)) or {"last": 0, "tries": 0}
        if now > int(entry["last"]):
            self.marks.set((owner, "open", session), {**entry, "last": now})

    def _write(
        self,
        capture: SessionCapture,
        draft: Draft,
        extra: Sequence[tuple[str, str]],
        at: dt.datetime,
        by: str,
        rejected: list[str],
        read: frozenset[str],
        previous: Mapping[str, Any] | None = None,
    ) -> Distillation:
        """Write the distilled episode, its mark, counter and audit record in one transaction. A
        session closed before (``previous``: it continued since) gets a new version of the
        current version of the episode its close wrote (``supersede``: one memory of the work,
        its outcome the latest), or, where that was erased, a new episode the mark names."""
        owner, session, events = capture.owner, capture.session, capture.events
        outcome = capture.outcome or str(draft.outcome).strip().lower()
        # the tags given go through capture's route once, as given; the events' are stored already and
        # join as they are: sanitized again, ["withheld-secret", "vendor"] lost "vendor", and ["password"]
        # closing over ["deploy"] read a header and its secret (test_close_session_keeps_its_events_tags_as_stored)
        given, held = [tag for tag, _ in extra], {stored for _, stored in extra}
        kept = [t for t in dict.fromkeys(t for e in events for t in e.tags) if t not in held][: MAX_TAGS - len(given)]
        fields: dict[str, Any] = {
            "outcome": outcome, "what_we_tried": draft.what_we_tried or None, "what_happened": draft.what_happened or None,
            "why": draft.why or None, "lesson": draft.lesson or None,
        }  # fmt: skip
        unfit = next((name for name, value in {"summary": draft.summary, **fields}.items() if unstorable(name, value)), None)
        if unfit is not None:
            # a lone surrogate in a field: the store's error quoted the model's text raw in the reason
            # (test_one_unstorable_item_costs_itself_only); it is an unusable answer, and the try counts
            reason = f"session {session}: not closed, nothing written: the answer's {unfit} cannot be stored (a lone surrogate)"
            return self._not_closed(owner, capture, "failed", reason, rejected, at)
        dropped: SanitizerError | None = None
        episode: Episode | None = None
        failed = ""
        with self.space.transaction():
            done = self._already(owner, session, previous or {})  # closed by another process while the distiller ran
            if done is not None:
                return done
            mem = self.episodes.owner(owner)
            # the current version of what the session's last close wrote (a user may have corrected it since)
            older = self._current_version(owner, session, previous) if previous is not None else None
            if older is not None and (self.episodes.header(owner, older) or {}).get("status") not in ("active", "summarized"):
                return Distillation(
                    session, "already_closed", f"session {session}: its episode {older} was archived meanwhile; nothing written"
                )
            # (erased since: the new close stands alone, and the mark names it)
            try:
                # dated when the work ended: the last captured event (a typed record dated before the
                # clock writes its backfill audit record, as any does); hooks count it for patterns
                if older is not None:
                    episode = mem.supersede(
                        older, "the session continued after its close",
                        {"summary": draft.summary.strip(), "ts": events[-1].ts, "tags": given, "cites": [e.id for e in events], **fields},
                        kept_tags=kept,
                    )  # fmt: skip
                else:
                    episode = mem.record_distilled(
                        capture.kind, draft.summary.strip(), ts=events[-1].ts, accessed_at=at, session=session, tags=given,
                        kept_tags=kept, cites=[e.id for e in events], **fields,
                    )  # fmt: skip
            except SanitizerError as exc:  # the capture is dropped and counted, as any: keep the counter, write nothing
                dropped = exc
            except ValidationError as exc:  # what a distiller wrote does not validate: its answer costs the try
                failed = f"session {session}: not closed, nothing written: the distilled episode does not validate ({exc})"
            else:
                mark = {
                    "episode": episode.id, "at": at, "by": by, "kind": capture.kind, "events": capture.total,
                    "first": events[0].id, "last": events[-1].id,
                }  # fmt: skip
                self.marks.set((owner, "closed", session), mark)
                self.marks.kill((owner, "open", session))
                self.marks.kill((owner, "continued", session))
                news = self._went_on(owner, capture, read)
                if news:  # captured while the distiller ran: the close is behind already
                    self._continue(owner, session, news)
                if previous is None:  # closed again: still one closed session
                    self.marks.increment((owner, "n", "closed"))
                self.episodes.audit.write(
                    owner, "distill", at, session=session, episode=episode.id, kind=capture.kind, outcome=outcome,
                    distiller=by, events=capture.total, rejected=len(rejected),
                )  # fmt: skip
        if dropped is not None:
            raise dropped
        if episode is None:
            # the error may quote the distiller's text, which is not sanitized: the audit keeps only what failed
            return self._not_closed(owner, capture, "failed", failed, rejected, at, kept="the distilled episode does not validate")
        self.patterns.run_due(owner, episode.id)  # outside the transaction, as the handle's record does
        n = len(events)
        reason = f"session {session}: closed as {capture.kind}/{outcome}, episode {episode.id} citing {n} captured event{'s' * (n != 1)}"
        return Distillation(session, "closed", reason, episode, capture.total, len(rejected) + 1, tuple(rejected))

    def _not_closed(
        self,
        owner: str,
        capture: SessionCapture,
        status: Status,
        reason: str,
        rejected: list[str],
        at: dt.datetime,
        kept: str | None = None,
        tried: bool = True,
    ) -> Distillation:
        """Count a refused or failed close (the session stays open) and audit it, without the
        answer's text: it is a model's, never sanitized. A failure's audit record keeps ``kept``,
        else the reason (an LLMError's, which quotes only the API's own errors). ``tried``: the
        model answered, so the idle rule counts a try against the session (``MAX_IDLE_TRIES``)."""
        attempts = len(rejected) + (1 if status == "failed" else 0)
        with self.space.transaction():
            self.marks.increment((owner, "n", status))
            open_entry = self.marks.get((owner, "open", capture.session))
            if open_entry is not None and tried:
                self.marks.set((owner, "open", capture.session), {**open_entry, "tries": int(open_entry.get("tries", 0)) + 1})
            error = (kept or reason) if status == "failed" else None
            self.episodes.audit.write(
                owner, "distill", at, session=capture.session, status=status, distiller=type(self.distiller).__name__,
                attempts=attempts, error=error,
            )  # fmt: skip
        return Distillation(capture.session, status, reason, None, capture.total, attempts, tuple(rejected))

    def counts(self, owner: str) -> dict[str, int]:
        """An owner's sessions closed, refused as not honest and failed (model errors), so far."""
        return {name: int(self.marks.get((owner, "n", name), 0)) for name in ("closed", "refused", "failed")}

    # --- the idle rule ---------------------------------------------------------------------------

    def close_idle(self, now: dt.datetime | None = None, idle: dt.timedelta | None = None, *, limit: int = 100) -> IdleReport:
        """Close every owner's sessions whose last capture is older than ``idle`` (default the
        ``session_idle_minutes`` setting), each into the kind ``kind_by_rule`` gives it, at
        most ``limit`` distiller runs per call (the rest wait for the next).

        Without a distiller that judges outcomes (the offline default) nothing is written: an
        outcome is never invented, so idle sessions are reported ``waiting`` for someone to
        close them with one. A session whose answers were refused or unusable ``MAX_IDLE_TRIES``
        times is left to an explicit close (an API failure, or a run that stopped calling, costs it
        no try). Only captures newer than the last run are read (``^DIST(owner, "seen")``),
        so a run costs what was captured since, plus the sessions still open.
        """
        at = utc(now, "now") if now is not None else self.episodes.now()
        settings = self.episodes.reload_settings()
        wait = dt.timedelta(minutes=settings.session_idle_minutes) if idle is None else idle
        if not isinstance(wait, dt.timedelta) or wait <= dt.timedelta(0):
            raise ValidationError(f"idle {idle!r}: a positive datetime.timedelta (default session_idle_minutes)")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValidationError(f"limit {limit!r}: a count of sessions, 0 or more")
        cutoff = ts_micros(at - wait)
        report = IdleReport(at, wait)
        judges = self.distiller.judges_outcome
        for owner in self.episodes.owners():
            self._track(owner)
            found: list[Distillation] = []
            for subs, entry in list(self.marks.items((owner, "open"))):
                session = str(subs[2])
                if int(entry["last"]) > cutoff:
                    continue
                tries = int(entry.get("tries", 0))
                if not judges or tries >= MAX_IDLE_TRIES:
                    why = (
                        f"{type(self.distiller).__name__} never guesses an outcome" if not judges
                        else f"{tries} tries were refused or unusable"
                    )  # fmt: skip
                    reason = f"session {session}: idle, waiting: {why}; close it with an outcome (close_session, memdb close-session)"
                    found.append(Distillation(session, "waiting", reason))
                    continue
                if limit <= 0:
                    report.deferred += 1
                    continue
                limit -= 1
                found.append(self._close(owner, session, None, None, at, ()))
            if found:
                report.owners[owner] = found
        return report

    def _track(self, owner: str) -> None:
        """Note the sessions of captures written since the last run, with their last capture,
        in ``^DIST(owner, "open")``. Live capture is dated within the capture tolerance of the
        clock, so reading again from that far before the last run's clock misses none."""
        clock = self.episodes.now()
        seen = self.marks.get((owner, "seen"))
        tolerance = int(self.episodes.settings.capture_tolerance_minutes * 60_000_000)
        latest: dict[str, int] = {}
        with self.space.snapshot():
            lo = int(seen) - tolerance if seen is not None else None
            for eid in self.episodes.ids_in_time(owner, lo):
                header = self.episodes.header(owner, eid) or {}
                session = header.get("session")
                if session and header.get("kind") in CAPTURE_KINDS:
                    latest[session] = max(latest.get(session, 0), ts_micros(header["ts"]))
        with self.space.transaction():
            for session, last in latest.items():
                closed = self.marks.get((owner, "closed", session))
                if closed is not None and (not self._continued(owner, session, closed) or self._archived_version(owner, session, closed)):
                    continue  # (continued after its close: open again, for the idle rule to close again, unless archived)
                entry = self.marks.get((owner, "open", session)) or {"last": 0, "tries": 0}
                if last > int(entry["last"]):
                    self.marks.set((owner, "open", session), {**entry, "last": last})
            self.marks.set((owner, "seen"), ts_micros(clock))

    def adopt_imported(self, owner: str, episode_ids: Iterable[str], at: dt.datetime) -> int:
        """In the caller's transaction: close the sessions that imported episodes had closed. A
        typed episode of a session citing that session's captured events is what a close wrote
        (an export carries it, not ``^DIST``'s mark): without the mark, the idle rule would read
        the imported captures as an open session and a model distiller would close it a second
        time. Returns the sessions marked (tests/surfaces/test_import_fidelity.py)."""
        typed = set(self.episodes.settings.typed_kinds)
        marked = 0
        for eid in episode_ids:
            header = self.episodes.header(owner, eid) or {}
            session = header.get("session")
            if not session or header.get("kind") not in typed or self.marks.data((owner, "closed", session)):
                continue
            record = self.episodes.record_of(owner, eid) or {}
            events = sorted(
                c for c in record.get("cites") or ()
                if (cited := self.episodes.header(owner, c)) is not None and cited.get("session") == session
                and cited.get("kind") in CAPTURE_KINDS
            )  # fmt: skip
            if not events:
                continue
            mark = {
                "episode": eid,
                "at": at,
                "by": "import",
                "kind": header["kind"],
                "events": len(events),
                "first": events[0],
                "last": events[-1],
            }
            self.marks.set((owner, "closed", session), mark)
            self.marks.kill((owner, "open", session))
            self.marks.increment((owner, "n", "closed"))
            marked += 1
        return marked

    # --- erasure takes what was distilled from what it erases ----------------------------------------

    def forget(self, owner: str, sessions: Collection[str]) -> None:
        """``Erasure.forget``: a session none of whose episodes is left loses its marks (closed
        and open), which name it; the counters stay, as counts."""
        for session in sessions:
            self.marks.kill((owner, "closed", session))
            self.marks.kill((owner, "open", session))
            self.marks.kill((owner, "continued", session))

    def repoint(self, owner: str, kept: Mapping[str, str]) -> None:
        """``Erasure.repoint``, before the cut versions go: a closed mark naming a version erased
        while later ones stay (erase_versions, retention) names the oldest version kept. The mark
        is how erasing a session's events finds what was distilled from them, and how closing it
        again supersedes it: naming an erased id, it found neither (a review's find)."""
        for cut, head in kept.items():
            session = (self.episodes.header(owner, cut) or {}).get("session")
            mark = self.marks.get((owner, "closed", session)) if session else None
            if mark is not None and mark["episode"] == cut:
                self.marks.set((owner, "closed", session), {**mark, "episode": head})

    def erase_news(self, owner: str, sessions: Collection[str], erased: set[str]) -> None:
        """``Erasure.touched``, with the sessions of the erased episodes: an erased capture is no
        longer news of the session it continued, and its id leaves the marks
        (test_an_erased_late_event_is_no_news); a closed session left with no news is no longer
        open for the idle rule (it reported such a session as waiting for an outcome). A closed
        mark forgets the erased ids it names (``_forget_in_mark``). Only those sessions' marks are
        read: every erasure walked all of the owner's closed sessions
        (test_an_erasure_reads_the_marks_of_its_sessions_only)."""
        for session in sessions:
            news = [subs for subs, _ in self.marks.items((owner, "continued", session)) if str(subs[3]) in erased]
            for subs in news:
                self.marks.kill(subs)
            mark = self.marks.get((owner, "closed", session))
            if mark is None:
                continue
            if news and not self.marks.data((owner, "continued", session)):
                self.marks.kill((owner, "open", session))
            if not erased.isdisjoint((mark.get("episode"), mark.get("first"), mark.get("last"))):
                self.marks.set((owner, "closed", session), self._forget_in_mark(owner, session, mark, erased))

    def _forget_in_mark(self, owner: str, session: str, mark: Mapping[str, Any], erased: set[str]) -> dict[str, Any]:
        """A closed mark without the ids ``erased`` took (their episodes are gone already): an
        episode erased with an event it cited while the session has other events kept its id and
        the event's, times of erased data. The session stays closed (the mark stays); its episode
        is None, and its cited range is the events of it left (None where none is), which is what
        the range is read for (test_an_erasure_leaves_no_id_of_what_it_took_in_a_closed_session_s_mark)."""
        new = dict(mark)
        if mark.get("episode") in erased:
            new["episode"] = None
        first, last = mark.get("first"), mark.get("last")
        if first in erased or last in erased:
            ids, _ = self._capture_ids(owner, session)
            left = [eid for eid in ids if (first is None or eid >= str(first)) and (last is None or eid <= str(last))]
            new["first"], new["last"] = (left[0], left[-1]) if left else (None, None)
        return new

    def on_corrected(self, owner: str, _old_id: str, _old: Mapping[str, Any], new: Episode, changed: list[str], _at: dt.datetime) -> None:
        """``Episodes.supersede_hooks``: a capture of a closed session corrected in what it says
        happened (a tool result corrected to the error it was, as the refusal of a second result
        says to do) is news its episode does not hold, as a late capture is: the session goes on
        (on_capture). Its tags or participants corrected are not."""
        if _NEWS_FIELDS.intersection(changed):
            self.on_capture(owner, new)

    def derived_from(self, owner: str, targets: Collection[str], action: str) -> list[str]:
        """``Erasure.derived``: the distilled episodes citing captured events about to be erased
        (any version of a closed session's episode: a later one cites every event the earlier
        did). An event it does not cite, captured after the close or cut by MAX_EVENTS, leaves it
        (test_erasing_an_event_the_episode_does_not_cite_leaves_it). Retention's routine pruning
        keeps them: experience is dated like its sources and ages out by its own date."""
        if action == "retention":
            return []
        found: list[str] = []
        cited: dict[str, tuple[str, set[str], tuple[str, str] | None]] = {}  # per session: its episode, what it cites
        for eid in targets:
            header = self.episodes.header(owner, eid) or {}
            session = header.get("session")
            if not session or header.get("kind") not in CAPTURE_KINDS:
                continue
            if session not in cited:
                mark = self.marks.get((owner, "closed", session))
                if mark is None:
                    continue
                versions = self._versions(owner, session, mark)
                if not versions:  # erased since
                    continue
                cited[session] = (versions[-1], *self._cited(owner, mark, versions))
            derived, cites, span = cited[session]
            if eid not in cites and not (span is not None and span[0] <= eid <= span[1]):
                continue
            if derived not in targets and derived not in found:
                found.append(derived)
        return found

    def _cited(self, owner: str, mark: Mapping[str, Any], versions: Sequence[str]) -> tuple[set[str], tuple[str, str] | None]:
        """What the ``versions`` of a session's episode cite, and, where a version's cites cannot
        be read (archived, without cold storage to read), the mark's cited range standing in for them."""
        out: set[str] = set()
        span: tuple[str, str] | None = None
        for version in versions:
            cites = self._cites_of(owner, version)
            if cites is not None:
                out.update(cites)
            elif mark.get("first") and mark.get("last"):  # (None: no event of the range is left)
                span = (str(mark["first"]), str(mark["last"]))
        return out, span

    def _cites_of(self, owner: str, episode_id: str) -> list[str] | None:
        """What an episode cites, hot or archived (from cold storage); None where it cannot be read."""
        record = self.episodes.record_of(owner, episode_id)
        if record is not None:
            return list(record.get("cites") or ())
        if self.read_archived is not None and (archived := self.read_archived(owner, [episode_id])):
            return list(archived[0].cites)
        return None
