"""Small charts as inline SVG built on the server: no script, no asset from elsewhere.

Every label is escaped here, since the SVG is placed into the page as markup. Each series has a
colour of at least 3:1 against the white background (WCAG 1.4.11) and a pattern of its own drawn
over it, so series differ by more than colour (1.4.1); the legend wraps onto as many rows as it
needs. The numbers themselves are a table beside the picture (overview.html; WCAG 1.1.1).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from html import escape

__all__ = ["PALETTE", "PATTERNS", "histogram", "stacked_bars"]

# contrast on white 4.4 to 6.4 (tests/surfaces/web/test_a11y.py computes it)
PALETTE = ("#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#c53030", "#975a16", "#b83280", "#4a5568", "#0e7490", "#5f7f0e")
_LINE = 'stroke="#fff" stroke-width="1.2" fill="none"'
# drawn in white over a series' colour on a 6 x 6 tile: solid, diagonals either way, horizontal,
# vertical, cross-hatched, grid, dots, rings, zigzag (one per series of up to ten, as colours)
PATTERNS = (
    "",
    f'<path d="M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2" {_LINE}/>',
    f'<path d="M-1,5 l2,2 M0,0 l6,6 M5,-1 l2,2" {_LINE}/>',
    f'<path d="M0,3 h6" {_LINE}/>',
    f'<path d="M3,0 v6" {_LINE}/>',
    f'<path d="M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2 M-1,5 l2,2 M0,0 l6,6 M5,-1 l2,2" {_LINE}/>',
    f'<path d="M0,3 h6 M3,0 v6" {_LINE}/>',
    '<circle cx="3" cy="3" r="1.4" fill="#fff"/>',
    '<circle cx="3" cy="3" r="1.8" stroke="#fff" stroke-width="0.9" fill="none"/>',
    f'<path d="M0,4 l1.5,-2 l1.5,2 l1.5,-2 l1.5,2" {_LINE}/>',
)
_W, _H, _LEFT, _BOTTOM, _TOP = 640, 220, 36, 28, 12
_ROW = 18  # a legend row's height
_CHAR = 7.0  # a generous width of a legend character at font-size 11 (a wider guess wraps sooner, never clips)


def _legend(names: Sequence[str]) -> list[tuple[float, float, str]]:
    """Where each legend entry goes: (x, y of its row's top, name), wrapping onto new rows."""
    out, x, y = [], float(_LEFT), float(_H + 4)
    for name in names:
        width = 14 + _CHAR * len(name) + 12
        if x > _LEFT and x + width > _W:
            x, y = float(_LEFT), y + _ROW
        out.append((x, y, name))
        x += width
    return out


def stacked_bars(labels: Sequence[str], series: Mapping[str, Sequence[int]], title: str, key: str = "") -> str:
    """Bars per label, stacked by series (e.g. episodes per day by kind), with a legend.

    ``key`` names the chart's patterns (ids unique in the page; by default from ``title``)."""
    key = key or re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    totals = [sum(s[i] for s in series.values()) for i in range(len(labels))]
    peak = max([*totals, 1])
    names = sorted(series)
    legend = _legend(names) if len(names) > 1 else []
    height = _H + (legend[-1][1] - _H + _ROW + 2 if legend else 0)
    fills = {name: f"url(#{key}-{k})" for k, name in enumerate(names)}
    label = escape(f"{title} (the numbers are in the table below)")
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {height:.0f}" role="img" aria-label="{label}">',
        f"<title>{escape(title)}</title><defs>",
        *(
            f'<pattern id="{key}-{k}" width="6" height="6" patternUnits="userSpaceOnUse">'
            f'<rect width="6" height="6" fill="{PALETTE[k % len(PALETTE)]}"/>{PATTERNS[k % len(PATTERNS)]}</pattern>'
            for k in range(len(names))
        ),
        "</defs>",
        f'<line x1="{_LEFT}" y1="{_H - _BOTTOM}" x2="{_W}" y2="{_H - _BOTTOM}" stroke="#767676"/>',
        f'<text x="{_LEFT - 6}" y="{_TOP + 4}" font-size="10" text-anchor="end">{peak}</text>',
        f'<text x="{_LEFT - 6}" y="{_H - _BOTTOM}" font-size="10" text-anchor="end">0</text>',
    ]
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
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot - 4:.1f}" height="{h:.1f}" fill="{fills[name]}" '
                    f'stroke="{PALETTE[k % len(PALETTE)]}"><title>{escape(label)} {escape(name)}: {n}</title></rect>'
                )
        out.append(f'<text x="{x + (slot - 4) / 2:.1f}" y="{_H - _BOTTOM + 14}" font-size="10" text-anchor="middle">{escape(label)}</text>')
    if legend:
        out.append('<g class="legend">')
        for x, y, name in legend:
            k = names.index(name)
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="12" height="12" fill="{fills[name]}" stroke="{PALETTE[k % len(PALETTE)]}"/>')
            out.append(f'<text x="{x + 16:.1f}" y="{y + 10:.1f}" font-size="11">{escape(name)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def histogram(labels: Sequence[str], counts: Sequence[int], title: str, key: str = "") -> str:
    """One bar per bin (e.g. the relevance distribution)."""
    return stacked_bars(labels, {"episodes": list(counts)}, title, key)
