"""Fixtures of the governance tests."""

from __future__ import annotations

from known_secrets import known_secrets_restored as known_secrets_restored  # autouse: each test's registered secrets go
