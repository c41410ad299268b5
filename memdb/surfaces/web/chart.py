"""Small charts as inline SVG built on the server: no script, no asset from elsewhere.

Every label is escaped here, since the SVG is placed into the page as markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

__all__ = ["PALETTE", "histogram", "stacked_bars"]

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac")
_W, _H, _LEFT, _BOTTOM, _TOP = 640, 220, 36, 28, 12


def _axis(peak: int, title: str, legend: str = "") -> list[str]:
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H + (18 if legend else 0)}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<line x1="{_LEFT}" y1="{_H - _BOTTOM}" x2="{_W}" y2="{_H - _BOTTOM}" stroke="#888"/>',
        f'<text x="{_LEFT - 6}" y="{_TOP + 4}" font-size="10" text-anchor="end">{peak}</text>',
        f'<text x="{_LEFT - 6}" y="{_H - _BOTTOM}" font-size="10" text-anchor="end">0</text>',
    ]
    return out


def stacked_bars(labels: Sequence[str], series: Mapping[str, Sequence[int]], title: str) -> str:
    """Bars per label, stacked by series (e.g. episodes per day by kind), with a legend."""
    totals = [sum(s[i] for s in series.values()) for i in range(len(labels))]
    peak = max([*totals, 1])
    names = sorted(series)
    legend = "  ".join(names)
    out = _axis(peak, title, legend)
    slot = (_W - _LEFT) / max(len(labels), 1)
    scale = (_H - _BOTTOM - _TOP) / peak
    for i, label in enumerate(labels):
        x, y = _LEFT + i * slot + 2, float(_H - _BOTTOM)
        for k, name in enumerate(names):
            n = series[name][i]
            if n:
                h = n * scale
                y -= h
                out.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot - 4:.1f}" height="{h:.1f}" fill="{PALETTE[k % len(PALETTE)]}">'
                    f"<title>{escape(label)} {escape(name)}: {n}</title></rect>"
                )
        out.append(f'<text x="{x + (slot - 4) / 2:.1f}" y="{_H - _BOTTOM + 14}" font-size="10" text-anchor="middle">{escape(label)}</text>')
    x = float(_LEFT)
    for k, name in enumerate(names):
        out.append(f'<rect x="{x:.1f}" y="{_H + 4}" width="10" height="10" fill="{PALETTE[k % len(PALETTE)]}"/>')
        out.append(f'<text x="{x + 14:.1f}" y="{_H + 13}" font-size="11">{escape(name)}</text>')
        x += 24 + 7 * len(name)
    out.append("</svg>")
    return "".join(out)


def histogram(labels: Sequence[str], counts: Sequence[int], title: str) -> str:
    """One bar per bin (e.g. the relevance distribution)."""
    return stacked_bars(labels, {"episodes": list(counts)}, title)
