"""The autouse fixture of the test folders whose code registers secrets of the process (the
model adapters register their client's key at its first call, memdb.llm.client): each test's
secrets are unregistered after it, so no test sanitizes with another's (as test_random_tokens.py
and test_mcp_tokens.py do by hand). A folder's conftest imports it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memdb.memory.sanitize import unregister_secrets
from memdb.memory.sanitize.known import known_secrets


@pytest.fixture(autouse=True)
def known_secrets_restored() -> Iterator[None]:
    before = set(known_secrets())
    yield
    while added := [value for value in known_secrets() if value not in before]:
        unregister_secrets(added)
