"""One settings model for a database, saved in the database (``^META("settings")``).

A reopened database keeps its rules: typed kinds, digest caps, tag weights, relevance
weights and lifecycle thresholds travel with the data, not with the process.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from memdb.errors import ConfigError, ValidationError
from memdb.memory.models import check_ident, check_owner, personal_data_in, shown_name
from memdb.memory.sanitize import shown
from memdb.memory.sanitize.messages import redacted
from memdb.memory.text import normalize_tag

__all__ = ["BUILTIN_KINDS", "DEFAULT_TYPED_KINDS", "FACT_KIND", "MAX_TYPED_KINDS", "OUTCOMES", "Settings"]

DEFAULT_TYPED_KINDS: tuple[str, ...] = ("sprint", "routine", "roundtable", "research", "debug", "review")
FACT_KIND = "fact"  # a durable fact or preference under a key; recording the key again supersedes it
BUILTIN_KINDS: tuple[str, ...] = ("exchange", "tool_call", "summary", FACT_KIND)
OUTCOMES: tuple[str, ...] = ("success", "partial", "failure")
MAX_TYPED_KINDS = 6
_CENTURY = 36_525.0  # days: the upper bound of every day-valued rule (a timedelta holds it; inf would not)
_KIND = re.compile(r"[a-z][a-z0-9_]{0,31}\Z")
_TEAM = re.compile(r"[A-Za-z0-9_.:@/+-]{1,64}\Z")


class Settings(BaseModel):
    """Database-wide rules, with documented defaults; validated on every change."""

    # no inf or NaN anywhere: "never" is a missing value (retention_days=None), not an infinite one
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=True, allow_inf_nan=False)

    typed_kinds: tuple[str, ...] = Field(DEFAULT_TYPED_KINDS, description="at most six kinds whose episodes need an honest outcome")
    digest_chars: int = Field(2000, ge=64, le=100_000, description="cap on each captured text side; longer text is cut with a marker")
    tag_weights: dict[str, float] = Field(default_factory=lambda: {"urgent": 1.0}, description="tag -> weight in [0, 1]")
    default_tag_weight: float = Field(0.5, ge=0.0, le=1.0, description="weight of a tag not in tag_weights")
    # relevance (lifecycle layer): weights sum to 1, components on 0-10
    w_frequency: float = Field(0.4, ge=0.0, le=1.0)
    w_tags: float = Field(0.3, ge=0.0, le=1.0)
    w_age: float = Field(0.2, ge=0.0, le=1.0)
    w_feedback: float = Field(0.1, ge=0.0, le=1.0)
    frequency_saturation: float = Field(20.0, ge=1.0, le=1e9, description="accesses at which the frequency component reaches 10")
    age_half_life_days: float = Field(14.0, gt=0.0, le=_CENTURY, description="days since last access that halve the age component")
    access_flush_every: int = Field(256, ge=1, description="buffered accesses flushed in one write transaction")
    access_flush_seconds: float = Field(
        1.0, ge=0.0, le=3600.0, description="seconds a full batch of accesses waits after the last flush (one fsync a second, at most)"
    )
    capture_tolerance_minutes: float = Field(
        5.0, ge=0.0, le=24 * 60, description="how far a live capture's ts may stray from the clock; older history goes through import"
    )
    # lifecycle thresholds
    burst_events: int = Field(5, ge=1, description="a burst is more than this many events within burst_window_hours")
    burst_window_hours: float = Field(24.0, gt=0.0, le=24 * 366)
    archive_below_relevance: float = Field(
        3.0,
        ge=0.0,
        le=10.0,
        description="an idle episode whose relevance is below this is archived; relevance is kept to 1/25 of a point, "
        "the value users see, so a threshold between two levels acts as the upper one (3.02 acts as 3.04)",
    )
    archive_after_days: float = Field(
        30.0, gt=0.0, le=_CENTURY, description="days without access before a low-relevance episode is archived"
    )
    retention_days: float | None = Field(
        None,
        gt=0.0,
        le=_CENTURY,
        description="opt-in: erase episodes (hot or archived) older than this many days (audited); approved knowledge citing them stays",
    )
    # query
    week_starts_on: int = Field(0, ge=0, le=6, description="0 = Monday")
    timezone: str = Field("UTC", description="IANA time zone (e.g. Europe/Berlin) where the days, weeks and months of time phrases begin")
    slow_query_ms: float = Field(
        500.0, ge=0.0, le=3_600_000.0, description="a recall, ask or history taking longer is logged (WARNING on memdb.query.engine)"
    )
    # governance: reflection, review, sharing, decay, patterns
    teams: dict[str, list[str]] = Field(
        default_factory=dict, description="team -> member owners; empty means every owner is in one team, 'all'"
    )
    reflection_window_days: float = Field(3.0, gt=0.0, le=_CENTURY, description="days of episodes the daily reflection reads")
    lessons_per_day: int = Field(8, ge=0, le=1000, description="hard cap on reflected lessons per owner per local day")
    reflection_calls_per_day: int = Field(
        3, ge=0, le=1000, description="hard cap on the model calls reflection makes per owner per local day (offline: none)"
    )
    duplicate_threshold: float = Field(0.6, gt=0.0, le=1.0, description="shingle Jaccard at or above which a proposal is a near duplicate")
    decay_flags_per_week: int = Field(
        5, ge=0, le=1000, description="hard cap on idle entries the weekly decay pass flags (per local week: timezone, week_starts_on)"
    )
    decay_idle_days: float = Field(
        90.0, gt=0.0, le=_CENTURY, description="days without retrieval after which a never-injected entry looks idle"
    )
    pattern_every: int = Field(5, ge=1, le=1000, description="pattern extraction runs on every this many records of a typed kind")
    # governance: sessions distilled into typed episodes (memdb.governance.distill)
    session_idle_minutes: float = Field(
        60.0, gt=0.0, le=_CENTURY * 24 * 60, description="minutes without capture after which close_idle_sessions closes a session"
    )
    session_kinds: dict[str, str] = Field(
        default_factory=dict,
        description="rules 'tool:NAME' (the session called that tool) or 'tag:TAG' (one of its events has the tag) -> the typed "
        "kind close_idle_sessions gives the session; the first rule that matches wins",
    )
    session_default_kind: str | None = Field(
        "routine", description="the kind of an idle session no rule maps; None, or a kind that is not typed, leaves it waiting"
    )

    @field_validator("typed_kinds")
    @classmethod
    def _check_kinds(cls, kinds: tuple[str, ...]) -> tuple[str, ...]:
        if len(kinds) > MAX_TYPED_KINDS:
            raise ValueError(f"{len(kinds)} typed kinds: at most {MAX_TYPED_KINDS} are allowed (keep the schema small)")
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"typed kinds {shown(list(kinds))}: duplicates")
        for k in kinds:
            if not _KIND.match(k):
                raise ValueError(f"typed kind {shown(k)}: use lower-case letters, digits and _ (max 32 chars)")
            if k in BUILTIN_KINDS:
                raise ValueError(f"typed kind {k!r}: is a built-in kind")
        return kinds

    @field_validator("session_kinds")
    @classmethod
    def _check_session_kinds(cls, rules: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        out: dict[str, str] = {}
        for rule, kind in rules.items():
            what, _, name = rule.partition(":")
            # every value shown sanitized: a rule is a caller's text (test_session_rules_are_checked_and_shown_sanitized)
            if what not in ("tool", "tag") or not name:
                raise ValueError(f"session rule {shown(rule)}: write 'tool:NAME' or 'tag:TAG'")
            try:
                # tags as episodes' tags are, or "tag:Chore" would never match
                key = f"tool:{check_ident('tool', name)}" if what == "tool" else f"tag:{normalize_tag(name)}"
            except ValidationError as exc:
                raise ValueError(f"session rule {shown(rule)}: {exc}") from None
            # capture refuses such a tool name: no rule can match it
            if what == "tool" and _held_to_capture(info, "session_kinds") and (kinds := personal_data_in(name)):
                raise ValueError(f"session rule for tool {shown_name(name)}: the tool name looks like personal data ({', '.join(kinds)})")
            if key in out:
                raise ValueError(f"session rules {shown(rule)} and another key are both {shown(key)} once normalised")
            if not _KIND.match(kind):
                raise ValueError(f"session rule {shown(rule)} -> {shown(kind)}: not a kind name")
            out[key] = kind
        return out

    @field_validator("session_default_kind")
    @classmethod
    def _check_default_kind(cls, kind: str | None) -> str | None:
        if kind is not None and not _KIND.match(kind):
            raise ValueError("not a kind name (lower-case letters, digits and _), or null for none")
        return kind

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (KeyError, ValueError, OSError):  # ZoneInfoNotFoundError is a KeyError; "Europe" is a directory
            raise ValueError("not an IANA time zone name (e.g. UTC, Europe/Berlin, America/New_York; case matters)") from None
        if name == "localtime":  # the machine's zone: the database would change its days with the machine
            raise ValueError("the machine's zone, not a name: give the IANA name (e.g. Europe/Berlin)")
        return name

    @field_validator("tag_weights")
    @classmethod
    def _check_tag_weights(cls, weights: dict[str, float]) -> dict[str, float]:
        out: dict[str, float] = {}
        for tag, w in weights.items():
            if not 0.0 <= w <= 1.0:
                raise ValueError(f"tag weight {shown(tag)}={w!r}: must be in [0, 1]")
            try:
                normal = normalize_tag(tag)  # as episodes' tags are, or "Urgent" would never match
            except ValidationError as exc:
                raise ValueError(f"tag weight: {exc}") from None  # exc names the tag, sanitized
            if normal in out:
                raise ValueError(f"tag weights {shown(tag)} and another key are both the tag {shown(normal)} once normalised")
            out[normal] = w
        return out

    @field_validator("teams")
    @classmethod
    def _check_teams(cls, teams: dict[str, list[str]], info: ValidationInfo) -> dict[str, list[str]]:
        for team, members in teams.items():
            if not _TEAM.match(team):
                raise ValueError(f"team {shown(team)}: use 1-64 letters, digits or _.:@/+- (no spaces)")
            # a team name is kept as a key (^KNS, ^KNC): held to what its members are
            if _held_to_capture(info, "teams") and (kinds := personal_data_in(team)):
                raise ValueError(f"team {shown_name(team)}: looks like personal data ({', '.join(kinds)}); use an opaque name")
            if len(set(members)) != len(members):
                raise ValueError(f"team {shown(team)} members {shown(members)}: duplicates")
            for m in members:
                try:
                    check_owner(m)  # a member is an owner name: what db.owner() refuses cannot be one
                except ValidationError as exc:
                    raise ValueError(f"team {shown(team)} member: {exc}") from None
        return teams

    @model_validator(mode="after")
    def _session_rules_give_typed_kinds(self) -> Settings:
        # the default kind is not held to this: the default "routine" must not stop a database
        # from configuring typed kinds without it (then idle sessions no rule maps wait)
        wrong = {rule: kind for rule, kind in self.session_kinds.items() if kind not in self.typed_kinds}
        if wrong:
            rule, kind = next(iter(wrong.items()))
            raise ValueError(f"session_kinds {shown(rule)} -> {kind!r}: not one of the typed kinds {list(self.typed_kinds)}")
        return self

    @model_validator(mode="after")
    def _weights_sum_to_one(self) -> Settings:
        total = self.w_frequency + self.w_tags + self.w_age + self.w_feedback
        if abs(total - 1.0) > 1e-9:
            raise ValueError(
                f"relevance weights frequency={self.w_frequency}, tags={self.w_tags}, age={self.w_age}, "
                f"feedback={self.w_feedback} sum to {total}: they must sum to 1"
            )
        return self

    @classmethod
    def parse(cls, data: dict[str, Any], *, changed: Iterable[str] | None = None) -> Settings:
        """Validate a settings dict, raising ConfigError that names the field and value. Only the
        ``changed`` fields (all, by default) are held to the personal-data checks of names:
        settings saved before a check existed still load, and the next change of another field
        still saves (test_settings_saved_before_a_check_still_load)."""
        from pydantic import ValidationError as PydanticError

        try:
            return cls.model_validate(data, context={"changed": None if changed is None else frozenset(changed)})
        except PydanticError as exc:
            raise ConfigError(f"settings: {_describe(exc)}") from None

    def updated(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied and validated as a whole."""
        return Settings.parse({**self.model_dump(), **changes}, changed=changes)

    def tag_weight(self, tags: list[str] | tuple[str, ...]) -> float:
        """The highest configured weight among ``tags`` (0 for no tags)."""
        if not tags:
            return 0.0
        return max(self.tag_weights.get(t, self.default_tag_weight) for t in tags)


def _held_to_capture(info: ValidationInfo, field: str) -> bool:
    """Whether ``field`` is being set now, so held to the personal-data checks capture applies."""
    changed = (info.context or {}).get("changed")
    return changed is None or field in changed


def _describe(exc: Any) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ())) or "value"
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        if "input" in err and not isinstance(err["input"], dict):
            parts.append(f"{redacted(loc)}={shown(err['input'])}: {msg}")
        else:
            parts.append(f"{redacted(loc)}: {msg}")
    return "; ".join(parts)
