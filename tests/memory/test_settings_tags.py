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
        # the values in any separated form; four digits alone matched an audit record's time by chance
        raws = [f"4111{sep}1111" for sep in "_- "] + ["41111111"] + [f"555{sep}0199" for sep in "_- "] + ["5550199"]
        holding = [name for name in GLOBALS for raw in raws if raw in repr(list(db.globals[name].items(())))]
        assert holding == []


def test_a_long_settings_tag_holding_personal_data_is_refused(tmp_path: Path) -> None:
    """Over the length limit as given, refused whatever capture would store: as "aaa…-withheld-card"
    it fit, slipped past the refusal of personal data, and one customer's card weighed another's
    memories (revE). Named sanitized."""
    long = "a" * 47 + " 4111 1111 1111 1111"
    with memdb.open(tmp_path / "db") as db:
        for changes in ({"tag_weights": {long: 1.0}}, {"session_kinds": {f"tag:{long}": "debug"}}):
            with pytest.raises(ConfigError, match=r"<CARD_1>'?: 67 characters after normalising, more than 64") as info:
                db.configure(**changes)
            assert "4111" not in str(info.value)
        assert db.settings.tag_weights == {"urgent": 1.0} and db.settings.session_kinds == {}
        holding = [name for name in GLOBALS if "4111" in repr(list(db.globals[name].items(())))]
        assert holding == []
