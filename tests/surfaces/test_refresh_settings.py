"""``Database.refresh_settings`` gives the settings as saved now, whatever this process holds in memory."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import memdb
from memdb.errors import ValidationError


class Abort(Exception):
    """Rolls the outer transaction back."""


@pytest.mark.usefixtures("backend")
def test_refresh_settings_drops_a_configure_rolled_back(tmp_path: Path) -> None:
    """configure() inside an outer transaction that rolls back left its settings in memory; a
    server's per-request refresh compared only the saved value with the last one it read, so it
    served the unsaved timezone for good."""
    with memdb.open(tmp_path / "db") as db:
        db.configure(timezone="Europe/Paris")
        assert db.refresh_settings().timezone == "Europe/Paris"
        with pytest.raises(Abort), db.transaction():
            db.configure(timezone="Asia/Tokyo")
            raise Abort
        assert db.refresh_settings().timezone == "Europe/Paris"
        assert db.settings.timezone == "Europe/Paris"
        db.configure(timezone="Asia/Tokyo")  # a committed one is what refresh gives from then on
        assert db.refresh_settings().timezone == "Asia/Tokyo"
        assert db.refresh_settings() is db.refresh_settings()  # unchanged: not parsed again


@pytest.mark.usefixtures("backend")
def test_settings_after_a_configure_rolled_back(tmp_path: Path) -> None:
    """``db.settings`` itself (the rules capture and maintain read) kept a configure() whose
    outer transaction rolled back until something refreshed them: an archive threshold or a
    timezone nobody saved ruled this process. Inside the transaction they are its own; once it
    ends they are what it left saved, whether it committed, rolled back, or only a savepoint did."""
    with memdb.open(tmp_path / "db") as db:
        with pytest.raises(Abort), db.transaction():
            db.configure(session_idle_minutes=5)
            assert db.settings.session_idle_minutes == 5  # the transaction reads its own change
            raise Abort
        assert db.settings.session_idle_minutes == 60
        with db.transaction():
            with pytest.raises(Abort), db.transaction():  # a savepoint rolls back, the outer commits
                db.configure(session_idle_minutes=7, typed_kinds=[*db.settings.typed_kinds[:5], "incident"])
                assert db.settings.session_idle_minutes == 7
                raise Abort
            assert db.settings.session_idle_minutes == 60  # the rest of the outer reads what it holds
            with pytest.raises(ValidationError, match="incident"):  # a kind never saved takes no record
                db.owner("ana").record("incident", "the pager went off", outcome="failure")
        assert db.settings.session_idle_minutes == 60
        with pytest.raises(Abort), db.transaction():
            db.configure(session_idle_minutes=5)
            raise Abort
        with db.transaction():  # the thread's next transaction reads what is saved, not the rolled-back one
            assert db.settings.session_idle_minutes == 60
        with db.transaction():
            db.configure(session_idle_minutes=9)
        assert db.settings.session_idle_minutes == 9
    with memdb.open(tmp_path / "db") as db:
        assert db.settings.session_idle_minutes == 9


@pytest.mark.usefixtures("backend")
def test_settings_a_thread_configures_in_a_transaction(tmp_path: Path) -> None:
    """One thread's configure() inside its transaction: another thread reading the settings
    meanwhile reset a shared mark, so the first no longer read its own change and, after it
    committed, the process kept the old settings until something refreshed them. Another
    thread reads what is committed; the configuring thread its own change; after the commit,
    every thread the new settings."""
    with memdb.open(tmp_path / "db") as db:
        configured, read = threading.Event(), threading.Event()
        seen: dict[str, float] = {}

        def writer() -> None:
            with db.transaction():
                db.configure(session_idle_minutes=9)
                configured.set()
                assert read.wait(10)
                seen["own, after the other read"] = db.settings.session_idle_minutes

        t = threading.Thread(target=writer)
        t.start()
        assert configured.wait(10)
        seen["other, during"] = db.settings.session_idle_minutes
        read.set()
        t.join(10)
        seen["after the commit"] = db.settings.session_idle_minutes
        assert seen == {"other, during": 60.0, "own, after the other read": 9.0, "after the commit": 9.0}
