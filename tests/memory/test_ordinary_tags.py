"""Ordinary tags with numbers stay as they are: versions, dates and date ranges are no values. A
tag is read with its separators as spaces too, and a date range was read so as a trunk phone."""

from __future__ import annotations

import pytest
from test_tag_leaks import stored

from memdb.memory.text import normalize_tag


@pytest.mark.parametrize(
    "tag",
    [
        "release-2024-06",
        "v2.3.1",
        "k8s",
        "py311",
        "2024-06-01",
        "2024/06/01",
        "01.06.2024",
        "q3-2024",
        "rfc-7231",
        "cve-2024-3094",
        "ubuntu-22.04",
        "python-3.11.9",
        "v10.0.19045.3803",
        "build-2026-07-01-1234",
        "run-2024-06-01-0930",
        "2024-06-01-09-30-00",
        "sprint-2024-06-03-2024-06-14",
        "2024-06-01_2024-06-30",
        "2024/06/01-2024/06/30",
        "05.12.2024-06.12.2024",
        "2024-06-01..2024-06-30",
    ],
)
def test_ordinary_numbered_tags_stay(tag: str) -> None:
    """A date range was read with its separators as spaces, "06 01 2024 06 30", a trunk phone:
    "sprint-2024-06-03-2024-06-14" was stored "sprint-2024-withheld-phone"."""
    assert stored(tag) == normalize_tag(tag)
