"""Dependency-free bar charts of values in [0, 1]: text for the terminal, SVG for files.

One bar per (label, value) pair, e.g. one per check; a value of None is drawn as no bar and labelled "n/a".
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

__all__ = ["svg_bars", "text_bars"]

Bars = Sequence[tuple[str, float | None]]


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def _shown(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def text_bars(bars: Bars, *, width: int = 40) -> str:
    """Return one line per bar: label, a `#` bar `width` characters at 1.0, and the value to 3 decimals."""
    label_width = max((len(label) for label, _ in bars), default=0)
    lines = []
    for label, value in bars:
        filled = 0 if value is None else round(_clamp(value) * width)
        lines.append(f"{label:<{label_width}}  |{'#' * filled}{' ' * (width - filled)}|  {_shown(value)}")
    return "\n".join(lines)


def svg_bars(bars: Bars, *, title: str = "", bar_width: int = 320) -> str:
    """Return a standalone SVG document with one horizontal bar per pair on a 0-1 scale, grid at 0, 0.5, 1."""
    left, top, row, gap = 170, 40 if title else 16, 26, 8
    height = top + len(bars) * (row + gap) + 24
    total_width = left + bar_width + 70
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_width}" height="{height}" '
        f'viewBox="0 0 {total_width} {height}" font-family="sans-serif" font-size="13">',
        f'<rect width="{total_width}" height="{height}" fill="white"/>',
    ]
    if title:
        parts.append(f'<text x="{left}" y="22" font-weight="bold">{escape(title)}</text>')
    axis_bottom = top + len(bars) * (row + gap)
    for tick in (0.0, 0.5, 1.0):
        x = left + tick * bar_width
        parts.append(f'<line x1="{x:g}" y1="{top - 4}" x2="{x:g}" y2="{axis_bottom}" stroke="#ccc"/>')
        parts.append(f'<text x="{x:g}" y="{axis_bottom + 16}" text-anchor="middle" fill="#555">{tick:g}</text>')
    for i, (label, value) in enumerate(bars):
        y = top + i * (row + gap)
        parts.append(f'<text x="{left - 8}" y="{y + row / 2 + 4:g}" text-anchor="end">{escape(label)}</text>')
        if value is not None:
            parts.append(
                f'<rect class="bar" x="{left}" y="{y}" width="{_clamp(value) * bar_width:.1f}" height="{row}" '
                f'fill="#4a78b5"><title>{escape(label)}: {_shown(value)}</title></rect>'
            )
        parts.append(f'<text x="{left + bar_width + 8}" y="{y + row / 2 + 4:g}">{_shown(value)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
