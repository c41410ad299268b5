"""A title before a name ("Dr. Patel", "Mrs. Okafor") is no name of its own, and its full stop
ends no sentence: the name after it is the one the question asks about."""

from __future__ import annotations

import pytest
from query_times import NOW, at

import memdb
from memdb.query.question import name_terms

pytestmark = pytest.mark.usefixtures("backend")  # every test here runs on LMDB and on PostgreSQL (tests/conftest.py)


@pytest.mark.parametrize(
    ("question", "name"), [("What did Dr. Patel say about the deploy?", "Patel"), ("Did Mrs. Okafor sign the lease?", "Okafor")]
)
def test_the_name_after_a_title_is_the_name_asked_about(question: str, name: str) -> None:
    # "Dr" was the name (written in capitals past the start), and "Patel" none: the full stop
    # after "Dr" read as a sentence's end, so "Patel" as the next sentence's first word
    assert set(name_terms(question).values()) == {name}


def test_a_memory_naming_the_person_without_the_title_answers(qdb: memdb.Database) -> None:
    """ "Would Caroline likely have Dr. Seuss books?" was empty, "no memory mentions 'Dr'": the
    memories say "Patel", not "Dr. Patel". The title is a word no memory holds: partial."""
    mem = qdb.owner("ana")
    said = mem.record("exchange", "Patel said the deploy can wait until Monday", ts=at(20, 10))
    mem.record("exchange", "The deploy window moved to Friday", ts=at(21, 10))
    r = mem.ask("What did Dr. Patel say about the deploy?", now=NOW)
    assert r.found and r.interpretation.missing_names == () and r.partial
    assert r.memories[0].id == said.id


def test_a_name_after_a_title_that_no_memory_holds_empties_the_answer(qdb: memdb.Database) -> None:
    """The name after the title read as a sentence's first word, so a question about a person no
    memory names was answered with Dr. Kim's memory, which holds the title and the other words."""
    mem = qdb.owner("ana")
    mem.record("exchange", "Dr. Kim said the deploy window moved to Friday", ts=at(21, 10))
    r = mem.ask("What did Dr. Patel say about the deploy?", now=NOW)
    assert not r.found and r.interpretation.missing_names == ("Patel",)
    assert "no memory mentions 'Patel'" in r.note


def test_a_title_in_capitals_is_an_acronym() -> None:
    """ "MS" and "DR" are acronyms (a company, a disaster recovery plan): names, as before."""
    assert set(name_terms("What did MS announce about the DR plan?").values()) == {"MS", "DR"}
