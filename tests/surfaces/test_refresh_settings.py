"""``Database.refresh_settings`` gives the settings as saved now, whatever this process holds in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

import memdb


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
