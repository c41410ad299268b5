"""Seeded synthetic agent episodes for benchmarks: realistic shape, no real data, fully reproducible.

``episodes(n, seed)`` yields ``n`` episode dicts, accepted as they are by
``OwnerMemory.import_episodes`` (and ``EpisodeInput``), in session order, which is nearly
chronological. The same ``(n, seed)`` always gives the same episodes, so two backends fed from
two calls hold identical data. The shape:

- kinds: the six default typed kinds with an honest outcome, in per-kind proportions (debug
  fails often, routine rarely), plus ``exchange`` (no outcome), about 35% of all episodes;
- tags: 200 tags (``TAGS``, most popular first: project-x, billing, deploy, twilio, ...) with a
  Zipf-like popularity; an episode gets its session's project (75% of sessions have one), some
  of its session's topic tags and sometimes one more, 1-4 tags in all;
- sessions: runs of 1-40 episodes (mean about 8) a few minutes apart, with opaque letter-only ids;
- timestamps: over ``SPAN_DAYS`` (about 2 years) ending at ``END``, activity growing over time,
  lighter at weekends and at night (UTC);
- text: a summary line and 100-600 characters of content made of plausible English words
  (Zipf-distributed nouns, verbs and adjectives in sentence templates, with the episode's tag
  words mixed in); exchanges hold a ``user:``/``assistant:`` digest; about half of the failed or
  partial typed episodes (and a few successes) carry a lesson, debug episodes also
  ``what_we_tried`` and ``what_happened``; a few episodes carry feedback.

The text avoids anything the PII sanitizer would rewrite (no digits, ``@``, ``=``; session ids
are letters only, as digit runs in them can look like phone numbers), so what a backend stores
is exactly what was generated. ``indexed_text(ep)`` is the text memdb's
inverted index sees (the text fields and the tags), for building an equivalent full-text index.

Run ``python -m benchmarks.agent_data 10000`` to print sample episodes and the tag/kind mix.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
import re
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from memdb.memory.text import normalize_tag

__all__ = [
    "END",
    "KINDS",
    "NOUNS",
    "SEED",
    "SPAN_DAYS",
    "START",
    "TAGS",
    "VERBS",
    "Zipf",
    "batches",
    "episodes",
    "indexed_text",
    "tag_phrase",
]

SEED = 20260701
END = dt.datetime(2026, 6, 30, tzinfo=dt.UTC)
SPAN_DAYS = 730
START = END - dt.timedelta(days=SPAN_DAYS)

# --- vocabulary --------------------------------------------------------------------------------

# Most popular first; the order of the rest is a seeded shuffle (see TAGS below).
_TAG_HEAD = """project-x billing deploy twilio auth stripe project-atlas incident api postgres onboarding
    search urgent aws payments notifications""".split()
_TAG_REST = """
    project-orion project-hermes project-nova project-zephyr project-apollo project-lumen project-cobalt
    project-delta project-ember project-falcon project-granite project-harbor project-iris project-juniper
    project-kestrel project-lattice project-meridian project-nimbus project-onyx project-pulse project-quartz
    project-raven frontend backend database migrations infra monitoring alerting logging performance security
    compliance testing ci release docs support analytics reporting pricing invoices subscriptions refunds
    checkout cart inventory shipping email sms webhooks caching queue scheduler cron backups dns cdn networking
    storage permissions sso oauth rate-limiting localization accessibility mobile ios android web dashboard
    admin exports imports integrations data-pipeline etl ml embeddings prompts evals agents tools memory
    sendgrid gcp azure redis kafka github gitlab slack jira datadog sentry pagerduty kubernetes docker
    terraform cloudflare vercel heroku elasticsearch mongodb mysql snowflake bigquery airflow segment
    mixpanel intercom zendesk hubspot salesforce okta auth0 openai anthropic s3 lambda ecs rds sqs sns
    dynamodb nginx grafana prometheus vault circleci npm pypi react nextjs django fastapi celery rabbitmq
    graphql grpc customer-escalation postmortem hotfix regression flaky-test tech-debt refactor spike
    design-review code-review oncall prod staging dev planning okr roadmap hiring retro standup demo beta
    launch feature-flag experiment ab-test rollback outage latency memory-leak timeout data-loss gdpr soc2
    pci audit cost budget vendor-eval partner enterprise sandbox quotas sla
""".split()

_NOUNS = """
    request response error retry timeout token user customer account invoice payment charge webhook queue job
    worker service endpoint schema table index query migration deploy build release branch commit test fixture
    config setting flag secret key certificate domain record cache session cookie header payload message event
    log metric alert dashboard trace span latency throughput limit quota plan subscription refund dispute
    report export import file bucket object upload download image video template email notification number
    carrier delivery status callback handler parser validator client server proxy gateway load balancer
    cluster node pod container image registry pipeline stage step artifact version dependency package library
    module function class method field column row constraint transaction lock deadlock connection pool replica
    primary backup snapshot restore rollback outage incident postmortem runbook playbook ticket issue bug
    regression patch fix workaround hotfix review comment approval owner team vendor contract price discount
    tier feature experiment variant cohort funnel signup login password reset link redirect route page form
    button modal layout style component state store reducer hook effect render bundle asset font icon color
    theme locale translation string date timezone calendar schedule cron task batch window backlog sprint
    estimate deadline milestone roadmap goal decision tradeoff risk assumption question answer summary note
    memory context prompt model embedding score threshold ranking result filter tag label category topic
    document page section paragraph sentence word character encoding format parser serializer codec
    compression checksum hash signature permission role policy scope grant audit trail compliance region zone
    network firewall port socket packet bandwidth disk volume partition shard key space budget cost forecast
    usage spike drop trend baseline benchmark profile bottleneck leak allocation garbage collector thread
    process signal handler exception stack frame call loop condition branch case default value type
""".split()
_VERBS = """
    fixed deployed added removed updated checked tested retried rolled reverted merged reviewed approved
    rejected debugged traced logged measured profiled cached invalidated migrated backfilled exported imported
    configured rotated renewed expired failed crashed timed stalled recovered restarted scaled throttled
    blocked unblocked escalated resolved closed opened triaged assigned documented explained summarized
    compared benchmarked optimized refactored renamed split combined moved copied deleted archived restored
    validated parsed rendered generated sent received queued dropped duplicated skipped ignored flagged
    patched upgraded downgraded pinned bumped released shipped paused resumed cancelled scheduled verified
    confirmed reproduced isolated narrowed investigated discovered noticed missed found lost rebuilt
    reindexed sharded replicated synced polled streamed batched split buffered flushed compacted vacuumed
    tuned capped limited raised lowered doubled halved monitored alerted paged called emailed notified
""".split()
_ADJECTIVES = """
    slow fast broken stale flaky intermittent missing duplicate invalid expired empty large small new old
    legacy critical minor major urgent stable unstable partial complete manual automatic nightly weekly daily
    hourly regional global internal external public private shared dedicated primary secondary cold warm
    hot noisy quiet strict loose unexpected expected consistent inconsistent safe unsafe risky simple complex
    upstream downstream concurrent sequential blocking async sync cached uncached idempotent retryable
    transient permanent degraded healthy unhealthy full clean dirty
""".split()
_GLUE = "the the the a a to to of of and and in in for for on with after before when".split()

_TEMPLATES = (
    "{V} the {A} {N} in the {N} {N}",
    "the {N} {V} after the {N} {V}",
    "we {V} the {N} {N} and {V} the {A} {N}",
    "{T} {N} {V} because the {N} was {A}",
    "the {A} {N} for {T} {V} twice",
    "{V} {T} {N} and the {N} {V}",
    "a {A} {N} in {T} {V} the {N} {N}",
    "checked the {N} then {V} the {N} for {T}",
    "the {N} from {T} was {A} so we {V} the {N}",
    "{V} the {N} {N} with a {A} {N}",
    "nobody {V} the {A} {N} until the {N} {V}",
    "{T} {V} the {N} during the {A} {N}",
)
_LESSONS = (
    "always check the {N} before you {V0} the {N}",
    "the {A} {N} is the usual cause when {T} {N} fails",
    "{V0} the {N} first and keep the {N} {A}",
    "do not trust the {N} from {T} when the {N} is {A}",
    "add a {N} check to the {N} before the next {N}",
    "keep the {N} {N} small and {V0} it daily",
)
_BASE_VERBS = "check fix retry test pin rotate cache validate log review measure reindex".split()
_USER_ASKS = (
    "can you look at the {A} {N} in {T}",
    "why did the {N} {N} fail again",
    "please summarize what changed in the {T} {N}",
    "what is the status of the {N} for {T}",
    "help me {V0} the {A} {N}",
    "is the {T} {N} still {A}",
)

# kind -> (share of episodes, (failure, partial, success) proportions or None for no outcome)
KINDS: dict[str, tuple[float, tuple[float, float, float] | None]] = {
    "exchange": (0.35, None),
    "debug": (0.16, (0.35, 0.25, 0.40)),
    "routine": (0.15, (0.06, 0.10, 0.84)),
    "research": (0.10, (0.15, 0.35, 0.50)),
    "review": (0.10, (0.10, 0.25, 0.65)),
    "sprint": (0.09, (0.20, 0.35, 0.45)),
    "roundtable": (0.05, (0.10, 0.30, 0.60)),
}
_KIND_VERB = {
    "exchange": "Asked about", "debug": "Debugged", "routine": "Ran routine for", "research": "Researched",
    "review": "Reviewed", "sprint": "Sprint on", "roundtable": "Roundtable on",
}  # fmt: skip
_OUTCOMES = ("failure", "partial", "success")
_AN = re.compile(r"\b([Aa]) ([aeiou])")
_ROLES = "planner coder reviewer researcher operator tester".split()


class Zipf:
    """Draws from ``items`` with weight ``1 / rank ** s`` (the first item is the most popular)."""

    def __init__(self, items: Sequence[str], s: float = 1.0) -> None:
        self.items = list(items)
        self.cum = list(itertools.accumulate(1.0 / (r**s) for r in range(1, len(self.items) + 1)))

    def draw(self, rng: random.Random, k: int = 1) -> list[str]:
        return rng.choices(self.items, cum_weights=self.cum, k=k)

    def share(self, item: str) -> float:
        """The probability of ``item`` in one draw."""
        r = self.items.index(item) + 1
        return float((self.cum[r - 1] - (self.cum[r - 2] if r > 1 else 0.0)) / self.cum[-1])


def _shuffled(items: list[str], seed: int) -> list[str]:
    out = list(dict.fromkeys(items))
    random.Random(seed).shuffle(out)
    return out


_rest = [t for t in dict.fromkeys(_TAG_REST) if t not in _TAG_HEAD]
TAGS: tuple[str, ...] = tuple((_TAG_HEAD + _shuffled(_rest, SEED))[:200])
assert len(TAGS) == 200, len(TAGS)
PROJECTS: tuple[str, ...] = tuple(t for t in TAGS if t.startswith("project-"))
TOPICS: tuple[str, ...] = tuple(t for t in TAGS if not t.startswith("project-"))
NOUNS: tuple[str, ...] = tuple(_shuffled(_NOUNS, SEED + 1))
VERBS: tuple[str, ...] = tuple(_shuffled(_VERBS, SEED + 2))
ADJECTIVES: tuple[str, ...] = tuple(_shuffled(_ADJECTIVES, SEED + 3))

_PROJECT_Z = Zipf(PROJECTS, 1.1)
_TOPIC_Z = Zipf(TOPICS, 1.0)
_NOUN_Z = Zipf(NOUNS, 1.0)
_VERB_Z = Zipf(VERBS, 1.0)
_ADJ_Z = Zipf(ADJECTIVES, 1.0)


def tag_phrase(tag: str) -> str:
    """How a person writes a tag in a question: ``project-x`` -> ``Project X``."""
    return " ".join(w.upper() if len(w) == 1 else w.capitalize() for w in tag.split("-"))


# --- generation --------------------------------------------------------------------------------


class _Writer:
    """Sentence generation for one episode: words drawn in bulk, templates filled in order."""

    __slots__ = ("adjs", "nouns", "rng", "tag_words", "verbs")

    def __init__(self, rng: random.Random, tags: Sequence[str]) -> None:
        self.rng = rng
        self.nouns = iter(_NOUN_Z.draw(rng, 96))
        self.verbs = iter(_VERB_Z.draw(rng, 32))
        self.adjs = iter(_ADJ_Z.draw(rng, 24))
        words = [w for t in tags for w in t.split("-") if len(w) > 1 and w != "project"]
        self.tag_words = words or ["the service"]

    def fill(self, template: str) -> str:
        rng = self.rng
        out = []
        for part in template.split():
            if part[0] != "{":
                out.append(part)
                continue
            slot = part[1:-1]
            if slot == "N":
                out.append(next(self.nouns, "system"))
            elif slot == "V":
                out.append(next(self.verbs, "changed"))
            elif slot == "A":
                out.append(next(self.adjs, "odd"))
            elif slot == "T":
                out.append(rng.choice(self.tag_words))
            else:  # V0: base verb
                out.append(rng.choice(_BASE_VERBS))
        return _AN.sub(r"\1n \2", " ".join(out))

    def sentence(self, templates: Sequence[str] = _TEMPLATES) -> str:
        s = self.fill(self.rng.choice(templates))
        return s[0].upper() + s[1:] + "."

    def text(self, lo: int, hi: int) -> str:
        """Sentences up to a length drawn between lo and hi characters (cut at a word if over hi)."""
        target = int(self.rng.triangular(lo, hi, lo + (hi - lo) * 0.3))
        parts: list[str] = []
        size = 0
        while size < target:
            s = self.sentence()
            parts.append(s)
            size += len(s) + 1
        text = " ".join(parts)
        if len(text) > hi:
            text = text[:hi].rsplit(" ", 1)[0].rstrip(",") + "."
        return text


_ALPHABET = "abcdefghjkmnpqrstuvwxyz"


def _letters(value: int, width: int) -> str:
    """``value`` in base 23 with letters only: session ids with digits can look like phone numbers."""
    out: list[str] = []
    while value or len(out) < width:
        value, r = divmod(value, len(_ALPHABET))
        out.append(_ALPHABET[r])
    return "".join(reversed(out))


def _session_plan(n: int, rng: random.Random) -> list[int]:
    """Session lengths (1-40, mean about 8) summing to exactly ``n``."""
    lengths: list[int] = []
    total = 0
    while total < n:
        k = min(40, 1 + int(rng.expovariate(1 / 7.0)))
        k = min(k, n - total)
        lengths.append(k)
        total += k
    return lengths


def _session_starts(count: int, rng: random.Random, start: dt.datetime, days: int) -> list[float]:
    """Sorted session start offsets in seconds: more activity later, less at weekends and at night."""
    span = days * 86400.0
    start_wd = start.weekday()
    out: list[float] = []
    while len(out) < count:
        t = rng.random() * span
        growth = 0.35 + 0.65 * t / span
        day, sec = divmod(t, 86400.0)
        weekend = (start_wd + int(day)) % 7 >= 5
        hour = sec / 3600.0
        daytime = 1.0 if 7 <= hour < 19 else 0.25
        if rng.random() < growth * (0.3 if weekend else 1.0) * daytime:
            out.append(t)
    out.sort()
    return out


def episodes(n: int, seed: int = SEED, *, end: dt.datetime = END, days: int = SPAN_DAYS) -> Iterator[dict[str, Any]]:
    """``n`` synthetic episodes (import-ready dicts) over the ``days`` before ``end``, in session order."""
    rng = random.Random(seed)
    start = end - dt.timedelta(days=days)
    lengths = _session_plan(n, rng)
    starts = _session_starts(len(lengths), rng, start, days)
    kinds = list(KINDS)
    kind_cum = list(itertools.accumulate(KINDS[k][0] for k in kinds))
    limit = end - dt.timedelta(microseconds=1)
    for number, (length, offset) in enumerate(zip(lengths, starts, strict=True)):
        session = "sess-" + _letters(number, 4) + _letters(rng.getrandbits(32), 7)
        project = _PROJECT_Z.draw(rng)[0] if rng.random() < 0.75 else None
        topics = list(dict.fromkeys(_TOPIC_Z.draw(rng, rng.choice((1, 2, 2, 3)))))
        ts = start + dt.timedelta(seconds=offset)
        for _ in range(length):
            ts = min(ts + dt.timedelta(seconds=rng.expovariate(1 / 360.0), microseconds=rng.randrange(1_000_000)), limit)
            kind = rng.choices(kinds, cum_weights=kind_cum)[0]
            tags = [project] if project else []
            tags += [t for t in topics if rng.random() < 0.7] or topics[:1]
            if rng.random() < 0.25:
                tags += _TOPIC_Z.draw(rng)
            tags = list(dict.fromkeys(tags))[:4]
            yield _episode(rng, kind, tags, session, ts)


def _episode(rng: random.Random, kind: str, tags: list[str], session: str, ts: dt.datetime) -> dict[str, Any]:
    w = _Writer(rng, tags)
    topic = " ".join(tag_phrase(t) for t in tags[:2]) or "General"
    ep: dict[str, Any] = {"kind": kind, "ts": ts, "tags": tags, "session": session}
    if kind == "exchange":
        ask = w.fill(rng.choice(_USER_ASKS))
        ep["summary"] = ask[0].upper() + ask[1:] + "?"
        ep["content"] = f"user: {ep['summary']}\nassistant: {w.text(80, 520)}"
        return ep
    mix = KINDS[kind][1]
    assert mix is not None
    outcome = rng.choices(_OUTCOMES, weights=mix)[0]
    ep["outcome"] = outcome
    ep["summary"] = f"{_KIND_VERB[kind]} {topic}: {w.sentence()}"[:160]
    ep["content"] = w.text(100, 600)
    if rng.random() < (0.55 if outcome != "success" else 0.12):
        ep["lesson"] = w.sentence(_LESSONS)
    if kind == "debug":
        ep["what_we_tried"] = w.sentence()
        ep["what_happened"] = w.sentence()
    if kind == "roundtable":
        ep["participants"] = rng.sample(_ROLES, rng.randint(2, 4))
    if rng.random() < 0.04:
        ep["feedback"] = rng.choice((-1.0, -0.5, 0.5, 1.0))
    return ep


def batches(n: int, size: int = 5_000, seed: int = SEED, **kwargs: Any) -> Iterator[list[dict[str, Any]]]:
    """``episodes(n, seed)`` in lists of ``size``."""
    it = episodes(n, seed, **kwargs)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


_INDEXED_FIELDS = ("summary", "content", "what_we_tried", "what_happened", "why", "lesson", "artifact", "result")


def indexed_text(ep: dict[str, Any]) -> str:
    """The text memdb's inverted index holds for ``ep``: its text fields, then its tags, then the
    participants that are not among its tags (``memdb.memory.layout.terms_of``, layout 16)."""
    text = "\n".join(str(ep[f]) for f in _INDEXED_FIELDS if ep.get(f))
    tags = ep.get("tags", ())
    people = [p for p in ep.get("participants") or () if normalize_tag(p) not in tags]
    return text + "\n" + " ".join(tags) + "\n" + " ".join(people)


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 10_000
    eps = list(episodes(n))
    for ep in eps[:3] + eps[-2:]:
        print({k: (v.isoformat() if isinstance(v, dt.datetime) else v) for k, v in ep.items()}, end="\n\n")
    kinds = Counter(e["kind"] for e in eps)
    outcomes = Counter(e.get("outcome") or "-" for e in eps)
    tags = Counter(t for e in eps for t in e["tags"])
    sizes = sorted(len(e["content"]) for e in eps if e["kind"] != "exchange")
    print("kinds:", dict(kinds.most_common()))
    print("outcomes:", dict(outcomes.most_common()))
    print(f"tags used: {len(tags)}; top 12:", [(t, round(c / n, 3)) for t, c in tags.most_common(12)])
    print(f"tags per episode: {sum(len(e['tags']) for e in eps) / n:.2f}; sessions: {len({e['session'] for e in eps})}")
    print(f"content chars p5/p50/p95: {sizes[len(sizes) // 20]}/{sizes[len(sizes) // 2]}/{sizes[len(sizes) * 19 // 20]}")
    lessons = sum(1 for e in eps if e.get("lesson")) / n
    print(f"with lesson: {lessons:.1%}; ts {eps[0]['ts']:%Y-%m-%d} .. {max(e['ts'] for e in eps):%Y-%m-%d}")
    last_week = sum(1 for e in eps if e["ts"] >= END - dt.timedelta(days=7))
    print(f"episodes in the last 7 days: {last_week} ({last_week / n:.2%}); per day on average {n / SPAN_DAYS:.1f}")
    words = Counter(w for e in eps[:2000] for w in indexed_text(e).lower().split())
    print("most common words:", [w for w, _ in words.most_common(15)])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
