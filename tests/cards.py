"""Card numbers for the sanitizer's tests."""

from __future__ import annotations


def luhn_complete(body: str) -> str:
    """``body`` and the check digit that makes it Luhn-valid."""
    total = 0
    for i, c in enumerate(reversed(body)):
        d = int(c)
        if i % 2 == 0:  # these positions are doubled once the check digit is appended
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return body + str((10 - total % 10) % 10)
