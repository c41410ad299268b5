"""A word of recall's text that names one of the owner's tags weighs ``NAME_WEIGHT`` times its
idf (``memdb.query.rank``): a conversation's turns are tagged with their speaker, so a name is
held by half the memories, and idf alone would read it as nearly worthless."""

from __future__ import annotations

import datetime as dt

import memdb

NOW = dt.datetime(2026, 7, 1, 12, tzinfo=dt.UTC)


def _talk(db: memdb.Database) -> memdb.Memory:
    """Melanie and Caroline talking, each turn tagged with its speaker (as a gateway records a
    conversation); Caroline's short turn about painting outweighs Melanie's longer one by the
    word alone."""
    mem = db.owner("chat")
    turns = [
        ("Caroline", "I painted again"),
        ("Melanie", "I painted the old fence last weekend"),
    ]
    chatter = ["the weather was lovely", "work was busy", "the kids are well", "we went for a walk", "dinner was great"]
    turns += [(speaker, line) for line in chatter for speaker in ("Caroline", "Melanie")]
    for i, (speaker, text) in enumerate(turns):
        mem.record("exchange", text, tags=[speaker], participants=[speaker], session="s1", ts=NOW - dt.timedelta(hours=1, minutes=i))
    return mem


def test_a_name_of_the_text_ranks_the_memories_about_it_first(tmp_path: object) -> None:
    with memdb.open(tmp_path / "db", clock=lambda: NOW) as db:  # type: ignore[operator]
        mem = _talk(db)
        found = mem.recall(text="What has Melanie painted?", now=NOW, limit=2, access=False)
        assert found.memories[0].episode.tags == ("melanie",)
        assert "painted" in found.memories[0].episode.summary
        # the words alone still rank Caroline's turn first: only the name turned it round
        plain = mem.recall(text="painted", now=NOW, limit=2, access=False)
        assert plain.memories[0].episode.tags == ("caroline",)
