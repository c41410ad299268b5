"""Tags named by settings (``tag_weights`` keys, ``session_kinds`` "tag:" rules) are read as capture
reads an episode's, their normal form sanitized too: "4111_1111_1111_1111" normalises to a card
number, which capture stores as "withheld-card"; settings stored the number in ^META("settings"),
and its weight applied to no tag an episode can carry. Such a tag is refused (it can only mean
the marker every card shares)."""

from __future__ import annotations

from pathlib import Path

import pytest

import memdb
from memdb.errors import ConfigError
from memdb.memory.layout import GLOBALS

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)

CARD, PHONE = "4111_1111_1111_1111", "+1_415_555_0199"  # personal data in their normal form only


def test_a_settings_tag_is_sanitized_in_its_normal_form(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        with pytest.raises(ConfigError, match="tag_weights: tag '<CARD_1>': holds personal data"):
            db.configure(tag_weights={CARD: 0.9, "10_1_2_3": 0.2})
        with pytest.raises(ConfigError, match="session_kinds: tag '<PHONE_1>': holds personal data"):
            db.configure(session_kinds={f"tag:{PHONE}": "debug"})
        settings = db.configure(tag_weights={"10_1_2_3": 0.2})
        assert settings.tag_weights == {"10-1-2-3": 0.2}  # a version number is no address
        holding = [name for name in GLOBALS for raw in ("4111", "0199") if raw in repr(list(db.globals[name].items(())))]
        assert holding == []
