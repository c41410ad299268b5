"""``erase(tags=...)`` of a tag holding personal data or a secret is refused, naming only its
placeholder and the marker memories carry for it. Capture stores such a tag as the marker of its
kind ("withheld-email"), shared by every value of the kind, so it names nobody's episodes; the
tag's normal form ("bobexample-com") was looked up, erased nothing, wrote an audit record of a
request met, and was echoed by the error of ``everything=True``."""

from __future__ import annotations

from pathlib import Path

import pytest

import memdb
from memdb.errors import ValidationError

pytestmark = pytest.mark.usefixtures("backend")  # LMDB and PostgreSQL (tests/conftest.py)

BOB = "bob@example.com"


def test_erase_refuses_a_tag_of_personal_data(tmp_path: Path) -> None:
    with memdb.open(tmp_path / "db") as db:
        mem = db.owner("ana")
        bob = mem.record("debug", "sent bob the invoice", outcome="success", tags=[BOB, "acme"]).id
        acme = mem.record("debug", "acme renewal", outcome="success", tags=["acme"]).id
        audits = len(mem.audit())
        refused = (
            ({"tags": [BOB]}, "<EMAIL_1>", "withheld-email"),
            ({"tags": ["acme", "4111_1111_1111_1111"]}, "<CARD_1>", "withheld-card"),  # a card in its normal form only
            ({"tags": [f"customer {BOB}"]}, "customer <EMAIL_1>", "customer-withheld-email"),
            ({"tags": [BOB], "everything": True}, "<EMAIL_1>", "withheld-email"),
        )
        for kwargs, said, marker in refused:
            with pytest.raises(ValidationError) as info:
                mem.erase(reason="asked to be forgotten", **kwargs)  # type: ignore[arg-type]
            message = str(info.value)
            assert message == (
                f"erase tags: tag {said!r} holds personal data or a secret: erase by ids, or by the stored marker "
                f"{marker!r} (every episode whose tag held such a value carries it); nothing erased"
            )
            assert "bob" not in message and "4111" not in message
        assert bob in mem and acme in mem and len(mem.audit()) == audits  # nothing erased, no request recorded as met
        assert mem.erase(tags=["withheld-email"], reason="every tag that held an address").ids == [bob]
        assert acme in mem and db.check().ok
