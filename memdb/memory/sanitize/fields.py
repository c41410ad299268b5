"""Every string of an episode through the sanitizer and back: nested values, dict keys, long
ints and a tag's normalised form included; and cuts made after sanitizing, checked again.

A value under a secret-looking key (``{"password": "xkcd936q"}``, ``DB_PASSWORD``, ``X-Api-Key``;
``memdb.memory.sanitize.detect.is_secret_key``) is a secret whatever it looks like: its slot is
named with ``SECRET_FIELD``, so the sanitizer sees the key's verdict with the value and replaces
it whole, numbers and nested values included; whatever a sanitizer returns for it, what is kept
is one ``<SECRET_n>`` (fail closed). A key that is a label (``{"cvc": "947"}``, ``{"routing_number":
...}``; ``memdb.memory.sanitize.detect.label_of_key``) ends its value's slot name with ``LABEL_FIELD``
and the kind, so the value is read as "cvc 947" is (short ints under it are carried as text too);
the name still starts with the field's, so a sanitizer routing by field name scrubs it as before.

Capture (``memdb.memory.episodes``) and the layers that derive text from episodes (knowledge,
patterns) use these, so every path to disk sanitizes the same way.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple

from memdb.errors import ValidationError
from memdb.memory.models import MAX_DEPTH, truncation_marker
from memdb.memory.sanitize.detect import LABEL_FIELD, PLACEHOLDER, SECRET_FIELD, argv_secrets, is_secret_key, label_of_key
from memdb.memory.sanitize.messages import redacted, shown
from memdb.memory.text import normalize_tag, normalize_tags

__all__ = [
    "TAG_MARKER",
    "StoredTags",
    "as_plain",
    "as_text",
    "bound_sanitized",
    "flatten_texts",
    "given_tags",
    "identifier_texts",
    "marked_tag",
    "placeholders_in",
    "strings_in",
    "tag_marker",
    "tags_as_stored",
]


def as_text(value: Any) -> str:
    """A value as the text the sanitizer reads: itself if a str, else canonical JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def as_plain(value: Any, depth: int = 0) -> Any:
    """A tool's input or result as plain JSON values (str-keyed dicts, lists, str, finite floats,
    ints within 64 bits, bool, None), so ``flatten_texts`` walks it and the sanitizer reads each
    string as written: sanitized as one JSON text, a line break was the two characters ``\\n``,
    and ``n10.20.30.40`` hid the address. What JSON cannot hold becomes its text, as ``as_text``
    wrote it, but a non-finite float, which is its repr ("nan": another type, an int beyond 64
    bits, nesting past ``MAX_DEPTH``),
    and so does a value that is no dict or list: a number alone is read as text too."""
    if depth == 0 and not isinstance(value, (str, Mapping, list, tuple)):
        return as_text(value)
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return value if -(1 << 63) <= value < 1 << 64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if depth >= MAX_DEPTH:
        return as_text(value)
    if isinstance(value, Mapping):
        return {k if isinstance(k, str) else str(k): as_plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_plain(v, depth + 1) for v in value]
    return str(value)


def strings_in(value: Any) -> Iterator[str]:
    """Every str in a stored record, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from strings_in(k)
            yield from strings_in(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from strings_in(v)


_INT_AS_TEXT = 10**6  # a number this large may be a card, phone or account number: it is sanitized as its digits
_NOT_WALKED = frozenset({"kind", "session", "tool", "cites"})  # checked as identifiers, never rewritten
_HAS_DIGIT = re.compile(r"\d")
_THREE_DIGITS = re.compile(r"\d(?:\D*\d){2}")  # the fewest a value holds: a CVC after its label, "cvc-947"


class _Slot:
    """Where a sanitized string goes back. ``alts`` name a tag's or a participant's other forms
    (``TAG_FORMS``), sanitized too: normalising makes ``4111_1111_1111_1111`` a card
    (``4111-1111-1111-1111``). ``number`` is the int or float read as its digits, given back if
    they held nothing. ``tag``: one of the episode's tags, given back as ``marked_tag`` makes it."""

    __slots__ = ("alts", "name", "number", "tag")

    def __init__(self, name: str, number: float | None = None) -> None:
        self.name = name
        self.number = number
        self.alts: tuple[str, ...] = ()
        self.tag = False


class _Dict:
    """A mapping of the input, as (key slot, value) pairs: keys are sanitized like values."""

    __slots__ = ("items", "path")

    def __init__(self, items: list[tuple[_Slot, Any]], path: tuple[str | int, ...]) -> None:
        self.items = items
        self.path = path


def flatten_texts(
    raw: Mapping[str, Any], where: str = "episode", payloads: Iterable[str] = ()
) -> tuple[dict[str, str], Callable[[dict[str, str]], dict[str, Any]]]:
    """Every string of an input, keyed by a unique name, and the inverse that puts the
    sanitized strings back. Nested strings in decisions and lists count, and so do dict keys
    and ints (and integral floats) of seven digits or more; a value the store cannot keep as given (bytes, NaN, a
    naive datetime, an int beyond 64 bits, another type) is refused naming its path; so are two
    keys of one dict that read the same once sanitized, but in ``payloads`` (a tool's data, where
    the second is numbered: ``<EMAIL_1>#2``)."""
    flat, rebuild = _flatten(raw, where, payloads)
    return flat, lambda clean: rebuild(clean, False).record


class _Rebuilt(NamedTuple):
    """An input with its sanitized strings put back (``_flatten``)."""

    record: dict[str, Any]
    said: dict[str, str]
    """What each tag keeps, sanitized, by its slot as the Sanitizer protocol names it (``tags[0]``)."""
    clean: dict[str, str]
    """The sanitized texts put back, secrets whole (``_secrets_whole``)."""


def _flatten(
    raw: Mapping[str, Any], where: str, payloads: Iterable[str]
) -> tuple[dict[str, str], Callable[[dict[str, str], bool], _Rebuilt]]:
    """``flatten_texts``, whose inverse also tells what each tag keeps (``tags_as_stored``)."""
    flattening = _Flattening(raw, where, payloads)
    return flattening.flat, flattening.rebuild


class _Flattening:
    """``_flatten``'s state and steps, as methods: as closures that called themselves (``walk``,
    ``fill``) they made 16 objects of cyclic garbage a capture, which only the cyclic GC frees and
    which count toward its next pass (test_a_capture_leaves_no_cyclic_garbage)."""

    __slots__ = ("data", "flat", "skeleton", "where")

    def __init__(self, raw: Mapping[str, Any], where: str, payloads: Iterable[str]) -> None:
        self.flat: dict[str, str] = {}
        self.data = frozenset(payloads)  # fields holding a tool's payload (``as_plain``), kept whole
        self.where = where
        self.skeleton: dict[str, Any] = {}
        for k, v in raw.items():
            if k in _NOT_WALKED or not isinstance(v, (str, Mapping, list, tuple)):
                self.skeleton[k] = v  # identifiers, timestamps, numbers: the model checks them
            else:
                self.skeleton[k] = self._walk(v, (k,), k)
        tags = self.skeleton.get("tags")
        if isinstance(tags, list):
            for tag in tags:
                if type(tag) is not _Slot:
                    continue
                tag.tag = True
                if _HAS_DIGIT.search(text := self.flat[tag.name]):
                    try:
                        forms = _tag_forms(text)
                    except ValidationError:
                        continue  # the model names the bad tag
                    tag.alts = tuple(self._slot(form, f"{tag.name}{suffix}").name for suffix, form in forms.items())
        people = self.skeleton.get("participants")
        if isinstance(people, list):
            # stored as given, but read as a tag is with its separators as spaces too: "415-200-0000_ref"
            # kept the phone glued to "_" (a participant withheld as a secret is one placeholder already)
            for person in people:
                if (
                    type(person) is _Slot
                    and not person.name.startswith(SECRET_FIELD)
                    and _THREE_DIGITS.search(text := self.flat[person.name])
                ):
                    if (spaced := _spaced(text)) != text:
                        person.alts = (self._slot(spaced, f"{person.name}~spaced").name,)

    def _slot(self, text: str, name: str, number: float | None = None) -> _Slot:
        name = name if name not in self.flat else f"{name}#{len(self.flat)}"
        self.flat[name] = text
        return _Slot(name, number)

    def _digits(self, value: int | float, name: str, label: str | None) -> Any:
        """A whole number read as its digits where a label key names it ({"pin": 4821}: any
        size) or where it is long enough to be a card, a phone or an account number; else as is."""
        long = abs(value) >= _INT_AS_TEXT
        if label is None and not long:  # most numbers
            return value
        text = str(int(value))
        if label is not None and (kind := label_of_key(label, text)) is not None:
            return self._slot(text, f"{name}{LABEL_FIELD}{kind}", value)
        return self._slot(text, name, value) if long else value

    def _walk(
        self, value: Any, path: tuple[str | int, ...], name: str, secret: bool = False, depth: int = 0, label: str | None = None
    ) -> Any:
        """``path`` names the value for errors (``decisions.when``, ``_path_text``); ``name`` is its key in the
        flat texts, by position below the top level so no key's text reaches a sanitizer's
        field names (they may be shown in its errors). ``secret``: under a secret-looking key;
        ``label``: a key that is a label (``{"pin": ...}``), for it and a list's items: the kind it
        names for each value (``label_of_key``) ends the value's name."""
        if isinstance(value, str):
            kind = label_of_key(label, value) if label is not None and not secret else None
            return self._slot(value, SECRET_FIELD + name if secret else f"{name}{LABEL_FIELD}{kind}" if kind else name)
        if depth > MAX_DEPTH and isinstance(value, (Mapping, list, tuple)):  # nested past reason (or holding itself)
            # containers only, as models.unstorable counts: a number there was refused and a str kept (test_mcp_depth.py)
            raise ValidationError(f"{self.where}: {redacted(str(path[0]))} is nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, Mapping):
            items = []
            named = _names_a_secret(value)
            for i, (k, v) in enumerate(value.items()):
                if not isinstance(k, str):
                    raise ValidationError(f"{self.where}: {_path_text(path)} key {shown(k)}: keys must be str")
                key = self._slot(k, f"{name}.{i}:key")  # a key is text of its own, never a secret whole
                hidden = secret or is_secret_key(k) or (named and k.lower() in _VALUE_KEYS)
                labels = not hidden and not isinstance(v, Mapping) and label_of_key(k) is not None
                items.append((key, self._walk(v, (*path, k), f"{name}.{i}", hidden, depth + 1, k if labels else None)))
            return _Dict(items, path)
        if isinstance(value, (list, tuple)) and (rule := _LIST_RULES.get(path)) is not None:
            # tags and participants are no argv nor header pairs: an item naming a secret hides only
            # those in its reach that are no tag word or name (``_held_after_labels``): ["api-key", "billing"]
            # kept "withheld-secret" for "billing", ["bob", "password", "hunter2"] kept "hunter2"
            held = _held_after_labels(value, rule)
            return [self._walk(v, (*path, i), f"{name}[{i}]", secret or i in held, depth + 1, label) for i, v in enumerate(value)]
        if isinstance(value, (list, tuple)):
            # ["X-Api-Key", "..."]: a pair whose first item names a secret holds one (headers as pairs)
            pair = len(value) == 2 and isinstance(value[0], str) and _names_a_header_secret(value[0])
            argv = argv_secrets(value) if any(isinstance(v, str) and v.startswith("-") for v in value) else set()  # a tool's argv
            return [
                self._walk(v, (*path, i), f"{name}[{i}]", secret or (pair and i == 1) or i in argv, depth + 1, label)
                for i, v in enumerate(value)
            ]
        if value is None or isinstance(value, bool):
            return value
        if secret and isinstance(value, (int, float)):
            return self._slot(repr(value), SECRET_FIELD + name)  # a PIN or password of digits: kept as its placeholder
        if isinstance(value, int):
            if not -(1 << 63) <= value < 1 << 64:
                at = _path_text(path)
                # the value is never shown: digits under any key may be a card or an account (a final read's find)
                raise ValidationError(
                    f"{self.where}: {at}: an integer of {len(str(abs(value)))} digits, beyond 64 bits, is not stored (give it as str)"
                )
            return self._digits(value, name, label)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValidationError(
                    f"{self.where}: {_path_text(path)}: {'NaN' if math.isnan(value) else 'an infinity'}, not a finite number"
                )
            return self._digits(value, name, label) if value.is_integer() else value  # a card from a float64 column
        if isinstance(value, dt.datetime):
            if value.tzinfo is None or value.utcoffset() is None:
                # not shown: a naive datetime may be a date of birth
                raise ValidationError(f"{self.where}: {_path_text(path)}: a naive datetime (give a timezone, e.g. UTC)")
            return value
        raise ValidationError(
            f"{self.where}: {_path_text(path)}: {type(value).__name__} is not stored "
            "(use str, numbers, bool, None, lists, dicts or aware datetimes)"
        )

    def _fill(self, value: Any, clean: dict[str, str], said: dict[str, str] | None) -> Any:
        """``said``, if given, takes what each tag keeps (``_Rebuilt.said``)."""
        if type(value) is _Slot:
            text = clean[value.name]
            if value.tag:
                if value.alts or text != self.flat[value.name]:  # else, as for most tags, it is kept as given
                    text = _said_of_forms(self.flat, clean, value.name, value.alts)
                if said is not None:
                    said[value.name.removeprefix(SECRET_FIELD)] = text or (TAG_MARKER if value.alts else "")
                return TAG_MARKER if not text and value.alts else marked_tag(text, self.flat[value.name])  # "": the model names it
            if value.alts:  # a participant: the form that found every value, placeholders kept
                return _said_of_forms(self.flat, clean, value.name, value.alts) or TAG_MARKER
            if value.number is not None and text == self.flat[value.name]:
                return value.number
            return text
        if type(value) is _Dict:
            out: dict[str, Any] = {}
            for key, v in value.items:
                name = self._fill(key, clean, said)
                if name in out and value.path[0] in self.data:  # a tool's payload is data: keep both, numbered
                    name = next(f"{name}#{n}" for n in itertools.count(2) if f"{name}#{n}" not in out)
                elif name in out:
                    raise ValidationError(f"{self.where}: {_path_text(value.path)}: two keys read {name!r} once sanitized (merge them)")
                out[name] = self._fill(v, clean, said)
            return out
        if type(value) is list:
            return [self._fill(v, clean, said) for v in value]
        return value

    def rebuild(self, clean: dict[str, str], tell: bool = False) -> _Rebuilt:
        """``tell``: fill ``_Rebuilt.said`` too."""
        clean = _secrets_whole(self.flat, clean)
        said: dict[str, str] | None = {} if tell else None
        return _Rebuilt({k: self._fill(v, clean, said) for k, v in self.skeleton.items()}, said or {}, clean)


TAG_MARKER: Final = "withheld"
"""What a tag holding personal data or a secret keeps of it: ``withheld-email`` for memdb's
placeholders (``tag_marker``), ``withheld`` for another sanitizer's marks."""

# memdb's placeholder in any case: a custom sanitizer that lower-cases the text memdb's wrote
# ("<email_1>") withheld a value of that kind all the same, and its tags keep the kind's marker
# (test_a_sanitizer_that_lower_cases_keeps_the_markers_of_kinds)
_ANY_CASE_PLACEHOLDER: Final = re.compile(PLACEHOLDER.pattern, re.IGNORECASE)


def tag_marker(mark: str) -> str:
    """The fixed tag that stands for a value the sanitizer marked ``mark``: "<EMAIL_1>" (or
    "<email_1>") is "withheld-email", "<GOV_ID_2>" "withheld-gov-id", a custom sanitizer's
    "[REDACTED]" "withheld"."""
    m = _ANY_CASE_PLACEHOLDER.fullmatch(mark)
    return f"{TAG_MARKER}-{m.group(1).lower().replace('_', '-')}" if m is not None else TAG_MARKER


def marked_tag(sanitized: str, given: str) -> str:
    """A tag as capture keeps it, from its text as sanitized and as ``given``: each placeholder, in
    any case, made the fixed marker of its kind ("bob@example.com" is "withheld-email", "customer
    <EMAIL_1>" "customer withheld-email", and so is "customer <email_1>" of a sanitizer that
    lower-cases); a tag another sanitizer changed otherwise than by folding case or width is
    "withheld" whole.

    A placeholder's number is its record's, so "email-1" was a different person in each record and
    a filter by it joined strangers' memories; a marker says only that a value was withheld, and a
    hash of the value (of a phone number, a card) could be reversed by trying them all."""
    if sanitized == given:
        # a placeholder typed as a tag, in memdb's own shape ("<EMAIL_1>"), was kept as "email-1"
        # (revS); one in another case ("<step_2>", "<Table_12>") is a tag's own text (revQ)
        if "<" in sanitized and PLACEHOLDER.search(sanitized) is not None:
            return PLACEHOLDER.sub(lambda m: f" {tag_marker(m.group())} ", sanitized).strip()
        return sanitized
    if "<" in sanitized and _ANY_CASE_PLACEHOLDER.search(sanitized) is not None:
        return _ANY_CASE_PLACEHOLDER.sub(lambda m: f" {tag_marker(m.group())} ", sanitized).strip()
    try:
        folded = normalize_tag(sanitized) == normalize_tag(given)
    except ValidationError:
        return sanitized  # the model names the bad tag
    return sanitized if folded else TAG_MARKER  # no placeholder: a change of case or width alone withheld nothing


def given_tags(values: Iterable[str], what: str) -> tuple[str, ...]:
    """Tags as given, read once (a generator too), each a str that normalises: ValidationError
    names ``what`` or the bad tag, as ``normalize_tags`` does; one string is one tag."""
    if values == ():
        return ()
    if isinstance(values, str):
        values = (values,)
    elif isinstance(values, Iterable) and not isinstance(values, (bytes, Mapping)):
        values = tuple(values)
    normalize_tags(values, what)
    return tuple(values)


class StoredTags(NamedTuple):
    """Tags read as capture reads an episode's (``tags_as_stored``)."""

    stored: list[Any]
    """Each tag as capture stores it, before normalising (``marked_tag``: "bob@example.com" is
    "withheld-email")."""
    said: list[str]
    """What the sanitizer wrote for each: its text as given, or its normal form's where only that
    held a value ("4111_1111_1111_1111" is "<CARD_1>"): a tag shown in a message names no value."""
    clean: dict[str, str]
    """Every text as sanitized, by slot: ``tags[i]``, and ``tags[i]~normalised`` where the normal
    form was read too."""


def tags_as_stored(sanitize: Callable[[dict[str, str]], dict[str, str]], tags: Sequence[Any], after: str = "") -> StoredTags:
    """``tags`` through ``sanitize`` as capture puts an episode's through it (``flatten_texts``:
    each as given and in its normal form), so that what settings, erasure and tag filters hold
    of a tag is what memories carry: its normal form, sanitized first, read "daveexample-com",
    the address on disk. ``after``: placeholders the sanitizer numbers after (a query's text)."""
    flat, rebuild = _flatten({"tags": list(tags)}, "tags", ())
    read = rebuild(sanitize({**flat, "~placeholders": after} if after else flat), True)
    # a tag held as a secret (``_held_after_labels``) is named as any other: ``tags[1]``
    clean = {name.removeprefix(SECRET_FIELD): text for name, text in read.clean.items()}
    return StoredTags(read.record["tags"], [read.said.get(f"tags[{i}]", "") for i in range(len(tags))], clean)


TAG_FORMS: Final = ("~normalised", "~spaced")
"""The other forms of a tag holding a digit that capture sanitizes too, by the suffix of their
slot's name (``tags[0]~normalised``): its normal form, where "4111_1111_1111_1111" is a card, and
its separators read as spaces but a date's, parted from its neighbours by two (``_spaced``), where "415/200/0000" is a phone (no
phone in text or in the normal form, which keeps the "/": test_joined_ids.py). A participant is
read in its spaced form too (it is stored as given, never normalised)."""

# Separators between a tag's numbers: the spaced form reads each run of them as one space, but a
# date's, which is kept whole: spaced, a range "2024-06-01-2024-06-30" read "06 01 2024 06 30" a phone
_TAG_SEPARATORS: Final = re.compile(
    r"(?P<date>(?<![0-9])(?:(?:19|20)[0-9]{2}(?P<s>[./_-])(?:0[1-9]|1[0-2])(?P=s)(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[1-9]|[12][0-9]|3[01])(?P<t>[./_-])(?:0[1-9]|1[0-2])(?P=t)(?:19|20)[0-9]{2}"
    # the day before the month after a year and after the month before one, where the day says so: spaced,
    # "born 1985-14-03 219 09 9999" read "03 219 09 9999" a phone dialled with a trunk 0
    r"|(?:19|20)[0-9]{2}(?P<u>[./_-])(?:1[3-9]|2[0-9]|3[01])(?P=u)(?:0[1-9]|1[0-2])"
    r"|(?:0[1-9]|1[0-2])(?P<v>[./_-])(?:1[3-9]|2[0-9]|3[01])(?P=v)(?:19|20)[0-9]{2})(?![0-9]))|[\s_./-]+"
)
# Digits a stored tag could still name a person or an account by: seven or more, however parted
# (normalising drops or dashes whatever is no letter or digit between them)
_LONG_NUMBER: Final = re.compile(r"\d(?:[\W_]*\d){6,}")


def _tag_forms(tag: str) -> dict[str, str]:
    """The forms of ``tag`` other than as given, by ``TAG_FORMS`` suffix, each once and unlike
    ``tag``. Raises ValidationError if the tag does not normalise."""
    forms = {"~normalised": normalize_tag(tag), "~spaced": _spaced(tag)}
    kept: dict[str, str] = {}
    for suffix, form in forms.items():
        if form != tag and form not in kept.values():
            kept[suffix] = form
    return kept


# Two spaces part a date kept whole from the groups beside it: after one, "1985-03-14 219 09 9999"
# read the digits before the SSN as more of its groups (a spaced SSN is not after a digit and a space)
_BESIDE_A_DATE: Final = re.compile(" {3,}")


def _spaced(text: str) -> str:
    """``text`` with each run of separators one space, dates aside, kept whole and parted by two
    spaces from what is beside them (``_TAG_SEPARATORS``)."""
    spaced = _TAG_SEPARATORS.sub(lambda m: f"  {m.group()}  " if m.group("date") else " ", text)
    return _BESIDE_A_DATE.sub("  ", spaced).strip()


def identifier_texts(idents: Mapping[str, str]) -> dict[str, str]:
    """The texts capture sanitizes for identifiers (``{"session": ...}``; a tool, a fact's key),
    each kept as given or refused whole: ``@session`` as given and, holding three digits or more,
    ``@session~spaced`` read as a tag is, with its separators as spaces (``_spaced``): text keeps a
    value "_" or "/" glues into a word, so "415-200-0000_ref" and "bob_4111_1111_1111_1111" were
    stored as sessions while a tag or a participant withheld them."""
    texts: dict[str, str] = {}
    for name, text in idents.items():
        texts[f"@{name}"] = text
        if _THREE_DIGITS.search(text) and (spaced := _spaced(text)) != text:
            texts[f"@{name}~spaced"] = spaced
    return texts


def _said_of_forms(flat: Mapping[str, str], clean: Mapping[str, str], name: str, alts: Sequence[str]) -> str:
    """What the tag or participant of slot ``name`` keeps, sanitized: its text as given or another form's (slots
    ``alts``), the first that found every value the others did, counted by kind and place; else
    the placeholders of all; and those alone when what is kept still holds a long number beside a
    withheld value. Each form can miss a value another finds, and some none finds:
    "4111-1111-1111-1111.4111_1111_1111_1111" kept the card written with "_" (one card, counted
    once), "..415.555.0100_ -123-45-6789-" the phone glued to "_" as given and joined to the SSN
    in the normal form (test_tag_leaks.py)."""
    names = (name, *alts)
    forms = [clean[n] for n in names]
    changed = [form != flat[n] for form, n in zip(forms, names, strict=True)]
    if not any(changed):  # a tag with digits holding no value
        return forms[0]
    found = [Counter(_kinds(form)) if c else Counter() for form, c in zip(forms, changed, strict=True)]
    if not any(found):  # no placeholder: another sanitizer's marks, in the first form it changed
        return next(form for form, c in zip(forms, changed, strict=True) if c)
    text = next((form for form, kinds in zip(forms, found, strict=True) if all(other <= kinds for other in found)), None)
    if text is None or _LONG_NUMBER.search(_ANY_CASE_PLACEHOLDER.sub(" x ", text)):
        return _placeholders_of(forms)
    return text


def _placeholders_of(texts: Iterable[str]) -> str:
    """The placeholders of ``texts``, each once, in order ("" when a sanitizer wrote none)."""
    return " ".join(dict.fromkeys(m.group() for t in texts for m in _ANY_CASE_PLACEHOLDER.finditer(t)))


def _kinds(text: str) -> Iterator[str]:
    """The kind of each placeholder in ``text``, in any case (``marked_tag``: read
    case-sensitively, a lower-casing sanitizer's tag "4111_1111_1111_1111 ana@example.com" kept the
    card its normal form had found), once per place: a value written twice has one number, and
    counted once, "4111-1111-1111-1111.4111_1111_1111_1111" read as found whole as given."""
    return (m.group(1).upper() for m in _ANY_CASE_PLACEHOLDER.finditer(text))


_NAME_KEYS = frozenset({"name", "key"})
_VALUE_KEYS = frozenset({"value", "val"})


def _names_a_secret(mapping: Mapping[Any, Any]) -> bool:
    """Whether a mapping is a named value whose name is secret-looking: {"name": "DB_PASSWORD",
    "value": ...} (a Kubernetes env entry, a HAR header): its value is a secret whole."""
    return any(isinstance(k, str) and k.lower() in _NAME_KEYS and isinstance(v, str) and is_secret_key(v) for k, v in mapping.items())


_HEADER_SECRETS = frozenset({"authorization", "cookie", "password", "passwd", "secret", "token", "apikey"})


def _names_a_header_secret(name: str) -> bool:
    """Whether the first of a [name, value] pair names a secret as a header or an environment
    variable does ("Authorization", "X-Api-Key", "DB_PASSWORD"): a list of two words, ["auth",
    "profile"], is no pair."""
    camel = any(a.islower() and b.isupper() for a, b in itertools.pairwise(name))  # "authToken", "clientSecret"
    return is_secret_key(name) and ("-" in name or "_" in name or camel or name.lower() in _HEADER_SECRETS)


# A tag naming a secret holds none ("password", "api-key", "token", "smtp pass", "auth:", "pin";
# ``_names_a_secret_label``), but the tags after it may: ["password", "hunter2"] is a label and its
# value, ["password", "bob@example.com", "hunter2"] an account and its password, ["pin", "visa",
# "4821"] a value after a word of its own. So each tag after it until three are kept
# (``_held_after_labels``), ordinary ones between included, is withheld unless it reads as an ordinary tag
# (``_ordinary_tag``): one or two words (parted by "-", "_", ".", "/" or spaces) of ASCII letters only, at most 14 a word, each
# either of at most four letters ("jwt", "ssh", "iOS") or with a vowel, no five consonants in a
# row and at most one step from a small letter to a capital ("reset", "GitHub", "OpenAI",
# "macOS"). So a digit ("hunter2"), another character ("P@ss"), another script, three words
# ("correct-horse-battery-staple"), a run of consonants ("zkqpxlmnvb") or mixed case
# ("XkQpLmNzRt", "MySecretPass") is withheld: fail closed, at a known cost, as ["token", "k8s"],
# ["api-key", "v2"], ["auth", "oauth2"] and ["password", "reset", "k8s"] lose their last tag too, and so
# do the tags after one that only reads as a label ("tests pass" is "tests-pass" stored,
# "version-pin"); a password of one plain word ("dragon") cannot be told from a tag and is kept.
_TAG_PARTS: Final = re.compile(r"[\s_./-]+")
_TAG_WORD: Final = re.compile("[A-Za-z]{1,14}")
_FIVE_CONSONANTS: Final = re.compile("[b-df-hj-np-tv-xz]{5}", re.IGNORECASE)
_SMALL_TO_CAPITAL: Final = re.compile("[a-z][A-Z]")
_SECRET_MARKER: Final = f"{TAG_MARKER}-secret"  # what capture stored for a secret: it names none
# A PIN is no secret key in text ("pin: 3.2" pins a version) but is one as a tag: ["pin", "4821"]
_PIN_TAG: Final = re.compile("(?:.*[-/:])?pin(?:-?code)?")


def _ordinary_word(word: str) -> bool:
    if not _TAG_WORD.fullmatch(word):
        return False
    if len(word) <= 4:
        return True
    vowel = any(c in "aeiouyAEIOUY" for c in word)
    return vowel and not _FIVE_CONSONANTS.search(word) and len(_SMALL_TO_CAPITAL.findall(word)) <= 1


_ORDINARY_TAGS: Final[set[str]] = set()  # tags _ordinary_tag read as ordinary (bounded by _ORDINARY_KEPT)
_ORDINARY_KEPT: Final = 1 << 12


def _ordinary_tag(tag: str) -> bool:
    """Whether ``tag`` reads as an ordinary tag, not a value (the rule above). Every tag of a
    capture is read (3-5 us an episode) and tags repeat: those that read as ordinary are kept,
    and only those, since any other may be a secret, which this process then holds no longer."""
    if tag in _ORDINARY_TAGS:
        return True
    words = _TAG_PARTS.split(tag.strip())
    ordinary = 1 <= len(words) <= 2 and all(_ordinary_word(w) for w in words)
    if ordinary:
        if len(_ORDINARY_TAGS) >= _ORDINARY_KEPT:
            _ORDINARY_TAGS.clear()
        _ORDINARY_TAGS.add(tag)
    return ordinary


def _names_a_secret_label(label: str) -> bool:
    """Whether the tag or participant ``label`` names a secret the next item may hold: as typed, in its normal form
    ("smtp pass" is "smtp-pass", as stored: read as typed only, the value was stored raw and
    withheld when the stored tags were recorded again) and without a trailing ":" or "="
    ("password:", "pin :"); capture's own marker names none."""
    try:
        normal = normalize_tag(label)
    except ValidationError:  # refused later as a tag; here it names nothing
        return False
    bare = normal.rstrip(":=-")
    if bare == _SECRET_MARKER:
        return False
    forms = (label, label.strip().rstrip(":=").rstrip(), normal, bare)
    return _PIN_TAG.fullmatch(bare) is not None or any(is_secret_key(form) for form in forms)


# A participant within the reach of one naming a secret (["bob", "api-key", "zk3qp9xl2mn8"]) is
# withheld the same way unless it has a name's shape, in any script (``_ordinary_name``): one to three words parted by
# spaces (four or five when each but a particle, "de", "van", "bin", is capitalised: "Martin Luther
# King Jr.", "María José de la Cruz"), each of one or two parts joined by "-", ".", an apostrophe or
# a "・" (initials aside: "J.R.R.", six parts at most), each part a name's (``_name_part``). A passphrase of three plain
# words ("correct horse battery") is kept, as "dragon" is.
_NAME_JOINS: Final = re.compile("[-.'’ʻʼ・]")  # "O'Brien", "ʻIolani", "カール・シュヴァルツシルト"
_NAME_PARTICLES: Final = frozenset("al bin bint da das de del della der di do dos du el ibn la le ter van von y zu".split())
# Latin letters NFKD leaves as they are, as the ASCII they are read as: "QzXwvkTrmpLsß" is random letters too
_LATIN_FOLD: Final = str.maketrans(
    {"ß": "ss", "ẞ": "SS", "ø": "o", "Ø": "O", "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "æ": "ae", "Æ": "AE"}
    | {"œ": "oe", "Œ": "OE", "þ": "th", "Þ": "Th", "ı": "i", "ŋ": "ng", "Ŋ": "Ng", "ħ": "h", "Ħ": "H"}
)
# The vowels of the scripts whose names are read as Latin ones are (NFKD: "ё" is "е"); another
# script's part is bounded by its length alone: a Han name is at most six characters ("李雷",
# "勅使河原三郎"), one with kana or Hangul ten, any other 24 letters
_VOWELS: Final = {"LATIN": "aeiouyɛɔə", "CYRILLIC": "аеиоуыэюяіє", "GREEK": "αεηιουω"}
_CONSONANTS: Final = {script: re.compile(f"[^{vowels}]+") for script, vowels in _VOWELS.items()}
_SCRIPT_LONGEST: Final = {"HAN": 6, "KANA": 10, "HANGUL": 10}
_NAME_PART_LONGEST: Final = 24  # "Wolfeschlegelsteinhausen"
_PLAIN_NAME_PART: Final = 14  # longer, a part is capitalised and a quarter of it vowels ("Balasubramanian")
_THRICE: Final = re.compile(r"(.)\1\1")


def _script_of(letter: str) -> str:
    """The script of a letter, from its Unicode name ("CYRILLIC SMALL LETTER ZHE"); Japanese kana
    one script with Han, as names mix them ("長谷川まりこ")."""
    word = unicodedata.name(letter, "").split(" ", 1)[0]
    if word == "CJK":
        return "HAN"
    return "KANA" if word in {"HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA"} else word


def _name_part(part: str) -> bool:
    """Whether one part of a participant's word has a name's shape: letters of one script, no
    letter thrice in a row, at most one step from a small letter to a capital ("McDonald"), of a
    bounded length; in Latin, Cyrillic and Greek letters also a vowel (but in four letters or
    fewer: "Lj", "Wm") and no five consonants in a row, six if capitalised ("Schwarzschild" has
    five), or, past 14 letters, capitalised with a quarter of them vowels and no five consonants
    in a row."""
    letters = part
    if not part.isascii():
        decomposed = unicodedata.normalize("NFKD", part.translate(_LATIN_FOLD))
        letters = unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.category(c).startswith("M")))
    if letters.isascii():  # most names, "María" too once folded: one script
        script = "LATIN"
        if not letters.isalpha() or len(_SMALL_TO_CAPITAL.findall(letters)) > 1:
            return False
    else:
        if not letters.isalpha():
            return False
        scripts = {_script_of(c) for c in letters}
        if len(scripts) > 1:
            return scripts <= {"HAN", "KANA"} and len(letters) <= _SCRIPT_LONGEST["KANA"] and not _THRICE.search(letters)
        script = scripts.pop()
        if sum(a.islower() and b.isupper() for a, b in itertools.pairwise(letters)) > 1:
            return False
    if len(letters) > _SCRIPT_LONGEST.get(script, _NAME_PART_LONGEST) or _THRICE.search(letters.lower()):
        return False
    if script not in _VOWELS or len(letters) <= 4:
        return True
    lower = letters.lower()
    consonants = max((len(run) for run in _CONSONANTS[script].findall(lower)), default=0)
    capitalised = letters[0].isupper() and letters[1:].islower()
    if len(letters) <= _PLAIN_NAME_PART:
        return consonants < (6 if capitalised or letters.isupper() else 5) and consonants < len(letters)
    return capitalised and consonants < 5 and 4 * sum(c in _VOWELS[script] for c in lower) >= len(letters)


def _ordinary_name(name: str) -> bool:
    """Whether a participant reads as a name, not a value (the rule above)."""
    words = name.split()
    if not 1 <= len(words) <= 5:
        return False
    if len(words) > 3 and any(not w[0].isupper() and w.lower() not in _NAME_PARTICLES for w in words):
        return False
    for word in words:
        parts = [part for part in _NAME_JOINS.split(word) if part]
        if not 1 <= len(parts) <= 6 or sum(len(part) > 1 for part in parts) > 2 or not all(_name_part(part) for part in parts):
            return False
    return True


# Participants are people and agents, so a word that names a secret but also a person, a service
# or an agent ("Pin" a surname, "auth" a service, "Token" a bot) is a label among them only when
# written as one ("token:", "PIN="); bare, the participant after it is kept if it reads as a name
# or as an agent's id (``_agent_id``: ["auth", "gpt-4o"]), and withheld otherwise (["Pin",
# "4821"], ["token", "zk3qp9xl2mn8"]); "hunter2" reads as an id ("bob2") and is kept there. The
# words for a password in any language, "secret", "passphrase", "credentials" and the compound
# keys ("api-key", "access_token", "pin-code") are labels as typed.
_WEAK_LABELS: Final = frozenset({"pin", "auth", "token", "cookie", "pass", "pw", "creds"})
_ID_PARTS: Final = re.compile("[-_./:]")
_ID_RUNS: Final = re.compile(r"[^\W\d_]+|\d+")


def _agent_id(item: str) -> bool:
    """Whether a participant reads as an agent's or a model's id: at most six parts parted by "-",
    "_", ".", "/" or ":", each of at most three runs of letters (a name's part) and of eight
    digits or fewer ("gpt-4o", "agent-007", "claude-3-5-sonnet-20241022", "k8s"), a letter in all."""
    parts = _ID_PARTS.split(item)
    if len(parts) > 6 or not any(c.isalpha() for c in item):
        return False
    for part in parts:
        runs = _ID_RUNS.findall(part)
        if not 1 <= len(runs) <= 3 or "".join(runs) != part:
            return False
        if not all(len(run) <= 8 if run.isdigit() else _name_part(run) for run in runs):
            return False
    return True


def _name_or_agent(item: str) -> bool:
    return _ordinary_name(item) or _agent_id(item)


def _after_a_participant(label: str) -> Callable[[str], bool] | None:
    """What a participant after ``label`` must read as to be kept, if ``label`` names a secret
    among participants (the rule above); else None."""
    if not _names_a_secret_label(label):
        return None
    return _name_or_agent if label.strip().lower() in _WEAK_LABELS else _ordinary_name


def _after_a_tag(label: str) -> Callable[[str], bool] | None:
    """What a tag after ``label`` must read as to be kept, if ``label`` names a secret; else None."""
    return _ordinary_tag if _names_a_secret_label(label) else None


class _ListRule(NamedTuple):
    """How a list is read item after item (``_held_after_labels``): ``plain``, an item kept after
    any label (most items: no label is looked for); ``after``, what one after a label must be;
    ``form``, what an item is stored as, each once (a tag's normal form)."""

    plain: Callable[[str], bool]
    after: Callable[[str], Callable[[str], bool] | None]
    form: Callable[[str], str]


_LABEL_REACH: Final = 3  # the items kept after a label that end its values (``_held_after_labels``)


def _held_after_labels(items: Sequence[Any], rule: _ListRule) -> set[int]:
    """The places of ``items`` (tags or participants) within the reach of one naming a secret that
    are not what ``rule`` keeps after it (the rules above): each is a secret whole, as a header's
    value is. A label reaches each item after it until three are kept, an ordinary one between
    included, since a value may follow a word of its own: ["password", "bob", "hunter2"] and
    ["pin", "visa", "4821"] were stored raw when the first kept ended it. Fail closed, at a known
    cost: ["password", "reset", "k8s"] loses "k8s". An item held, a value withheld already (a
    placeholder, "withheld-secret") or one stored already (a tag is stored once) ends no reach, so
    the stored items recorded again are read as they were: ["password", "bob@example.com",
    "hunter2", ...] holds both, and its stored ["password", "withheld-secret", ...] reads the same.

    One pass, each item read once: each item scanning back to the labels reaching it took
    quadratic time, 13 s for a label and 2,000 tags (test_label_reach_linear.py)."""
    # most lists hold no item a label could hold back, and then no label is looked for
    open_to = [i for i in range(1, len(items)) if not (isinstance(items[i], str) and rule.plain(items[i]))]
    if not open_to:
        return set()
    last = open_to[-1]
    afters = [rule.after(item) if isinstance(item, str) else None for item in items[:last]]
    if not any(afters):
        return set()
    held: set[int] = set()
    seen: set[str] = set()  # the stored forms read so far: an item stored already ends no reach
    # the labels reaching the next item, by how many items were kept since each (0, 1, 2): what an
    # item after them must be, each check once (labels repeat, and their checks are few)
    reaching: list[dict[Callable[[str], bool], None]] = [{} for _ in range(_LABEL_REACH)]
    candidates = iter(open_to)
    candidate = next(candidates)
    for i, item in enumerate(items):
        if i == candidate:
            checks = [after for group in reaching for after in group]
            if checks and not (isinstance(item, str) and all(after(item) for after in checks)):
                held.add(i)
            if i == last:
                break
            candidate = next(candidates)
        form = rule.form(item) if isinstance(item, str) else repr(item)
        withheld = i in held or (isinstance(item, str) and PLACEHOLDER.fullmatch(item) is not None) or form == _SECRET_MARKER
        if not withheld and form not in seen:  # kept, no value withheld, and stored first here
            reaching = [{}, *reaching[:-1]]  # the third item kept after a label ends its reach
        seen.add(form)
        if (after := afters[i]) is not None:
            reaching[0][after] = None
    return held


def _stored_tag(tag: str) -> str:
    try:
        return normalize_tag(tag)
    except ValidationError:  # refused later as a tag
        return tag


# The lists read item after item (``_held_after_labels``), by their path
_LIST_RULES: Final[dict[tuple[str | int, ...], _ListRule]] = {
    ("tags",): _ListRule(_ordinary_tag, _after_a_tag, _stored_tag),
    ("participants",): _ListRule(_ordinary_name, _after_a_participant, str),
}


def _path_text(path: tuple[str | int, ...]) -> str:
    """Where a value is, for a message (``decisions.when``, ``input[2]``): each key sanitized on its
    own, since a dot joining two hid an IP address or a phone number from the sanitizer
    (``decisions.192.168.1.10``); the first part is a field's name, or any key an import gave."""
    return redacted(str(path[0])) + "".join(f"[{part}]" if isinstance(part, int) else "." + redacted(part) for part in path[1:])


def _secrets_whole(flat: Mapping[str, str], clean: dict[str, str]) -> dict[str, str]:
    """``clean`` with every value under a secret key as one ``<SECRET_n>``: the built-in
    sanitizer does this already; another one may not know ``SECRET_FIELD``, and its result is
    overruled, numbered after the secrets it placed (the same value, the same number)."""
    missed = [n for n in clean if n.startswith(SECRET_FIELD) and flat[n].strip() and PLACEHOLDER.fullmatch(clean[n]) is None]
    if not missed:
        return clean
    last = max((int(m.group(2)) for t in clean.values() if "<" in t for m in PLACEHOLDER.finditer(t) if m.group(1) == "SECRET"), default=0)
    out = dict(clean)
    numbers: dict[str, str] = {}
    for name in missed:
        if flat[name] not in numbers:
            last += 1
            numbers[flat[name]] = f"<SECRET_{last}>"
        out[name] = numbers[flat[name]]
    return out


def bound_sanitized(
    sanitize: Callable[[dict[str, str]], dict[str, str]], record: dict[str, Any], caps: Mapping[str, int], sanitized: Mapping[str, str]
) -> None:
    """Cut each field of ``record`` longer than its cap (keeping a truncation marker), after
    sanitizing: a value cut first is one the sanitizer can no longer recognise. A cut can also
    make a new value (the first 16 of 20 digits may pass Luhn), so what is kept goes through
    ``sanitize`` again, numbered after the placeholders in ``sanitized`` (the texts as sanitized)."""
    cut = {f: text for f, c in caps.items() if isinstance(text := record.get(f), str) and len(text) > c}
    if not cut:
        return
    rooms = {f: max(caps[f] - len(truncation_marker(len(text))), 0) for f, text in cut.items()}
    context = placeholders_in(sanitized.values())
    for _ in range(3):
        kept = sanitize({**{f: text[: rooms[f]] for f, text in cut.items()}, "~placeholders": context})
        grown = {f: len(kept[f]) - rooms[f] for f in cut if len(kept[f]) > rooms[f]}
        if not grown:
            break
        for f, extra in grown.items():  # a placeholder longer than the value it stands for
            rooms[f] = max(rooms[f] - extra, 0)
    else:
        kept = dict.fromkeys(cut, "")  # every cut makes a new value: keep only the marker (fail closed)
    for f, text in cut.items():
        record[f] = kept[f] + truncation_marker(len(text))


def placeholders_in(texts: Iterable[str]) -> str:
    """The placeholders of ``texts``, for a later sanitizer call to number after them."""
    return " ".join(m.group() for t in texts if "<" in t for m in PLACEHOLDER.finditer(t))
