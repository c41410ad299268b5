"""Fixtures of the model-call tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memdb.memory.sanitize import unregister_secrets
from memdb.memory.sanitize.known import known_secrets


@pytest.fixture(autouse=True)
def _known_secrets_restored() -> Iterator[None]:
    """An adapter registers its client's key as a secret of the process at its first call
    (memdb.llm.client._register_credentials): each test's keys are unregistered after it, so no
    test sanitizes with another's (as test_random_tokens.py and test_mcp_tokens.py do by hand)."""
    before = set(known_secrets())
    yield
    while added := [value for value in known_secrets() if value not in before]:
        unregister_secrets(added)
