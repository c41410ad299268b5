"""Ids are the one id format (``memdb.memory.ids``): made without ``strftime`` for speed, they
must stay the bytes ``strftime`` gave, whatever the datetime's zone (its own fields are used)."""

from __future__ import annotations

import datetime as dt
import itertools

from hypothesis import given
from hypothesis import strategies as st

from memdb.memory.ids import from_micros, id_at, is_id, new_id, time_prefix, time_prefix_at, ts_micros

ZONES: st.SearchStrategy[dt.tzinfo] = st.one_of(
    st.just(dt.UTC), st.integers(-23 * 60, 23 * 60).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))
)
TIMES = st.one_of(st.datetimes(min_value=dt.datetime(1000, 1, 1)), st.datetimes(min_value=dt.datetime(1000, 1, 1), timezones=ZONES))


@given(TIMES, st.sampled_from(["", "ana", "bob"]))
def test_new_id_is_what_strftime_gave(ts: dt.datetime, scope: str) -> None:
    made = new_id(ts, scope)
    assert made[:-6] == ts.strftime("%Y%m%dT%H%M%S%fZ-") == time_prefix(ts) + "-"
    assert is_id(made) and int(made[-6:], 16) < 1 << 24


@given(st.datetimes(min_value=dt.datetime(1000, 1, 1), timezones=st.just(dt.UTC)))
def test_an_id_from_a_column_is_the_id_made(ts: dt.datetime) -> None:
    made = new_id(ts, "ana")
    assert id_at(ts_micros(ts), int(made[-6:], 16)) == made
    assert time_prefix_at(ts_micros(ts)) == time_prefix(from_micros(ts_micros(ts)))


def test_ids_of_one_scope_keep_their_creation_order() -> None:
    ts = dt.datetime(2026, 6, 1, 9, 0, tzinfo=dt.UTC)
    made = [new_id(ts, "order") for _ in range(100)]
    suffixes = [int(m[-6:], 16) for m in made]
    assert all(b == (a + 1) & 0xFFFFFF for a, b in itertools.pairwise(suffixes))  # 24 bits, wrapping
