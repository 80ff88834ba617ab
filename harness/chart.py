"""Dependency-free bar charts of values in [0, 1] (text for the terminal, SVG for files and the report), and the
one number format every output uses.

A value of None is drawn as no bar and shown as "n/a".
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

__all__ = ["floor_text", "fmt", "p_text", "svg_bars", "svg_grouped_bars", "text_bars"]

Bars = Sequence[tuple[str, float | None]]
Series = Sequence[tuple[str, Sequence[float | None]]]
COLOURS = ("#4a78b5", "#d08c2e", "#5b9a5b", "#9a5b9a")


def fmt(value: float | None) -> str:
    """A score as shown everywhere: three decimals, or n/a."""
    return "n/a" if value is None else f"{value:.3f}"


def p_text(value: float | None, *, floor_of: int | None = None) -> str:
    """A p-value as shown everywhere: four decimals from 0.0001 up (`0.0490`, `0.0007`), two significant digits
    below (`2.3e-5`), never `0.000`. `floor_of`: the resamples of a Monte-Carlo p that is at its floor 1 / (1 + R) (no
    random draw was as extreme), shown as `< 1/R` (`< 1e-4` at 10,000), since the p is below about that."""
    if value is None:
        return "n/a"
    if floor_of is not None:
        return floor_text(floor_of)
    return f"{value:.4f}" if value >= 1e-4 else _scientific(value)


def floor_text(resamples: int) -> str:
    """How a Monte-Carlo p at its floor is shown: `< 1/resamples` (`< 1e-4` at 10,000 resamples)."""
    return f"< {_scientific(1 / resamples)}"


def _scientific(value: float) -> str:
    """Two significant digits in scientific notation without padding (`1e-4`, `2.3e-5`); 0 as `0`."""
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa.removesuffix('.0')}e{int(exponent)}"


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value))


def text_bars(bars: Bars, *, width: int = 40) -> str:
    """Return one line per bar: label, a `#` bar `width` characters at 1.0, and the value to 3 decimals."""
    label_width = max((len(label) for label, _ in bars), default=0)
    lines = []
    for label, value in bars:
        filled = 0 if value is None else round(_clamp(value) * width)
        lines.append(f"{label:<{label_width}}  |{'#' * filled}{' ' * (width - filled)}|  {fmt(value)}")
    return "\n".join(lines)


def svg_bars(bars: Bars, *, title: str = "") -> str:
    """A standalone SVG document with one horizontal bar per (label, value) on a 0-1 scale."""
    return svg_grouped_bars(title, [label for label, _ in bars], [("", [v for _, v in bars])], standalone=True)


def svg_grouped_bars(title: str, labels: Sequence[str], series: Series, *, standalone: bool = False,
                     intervals: Sequence[Sequence[tuple[float, float] | None]] | None = None) -> str:
    """Horizontal bars on a 0-1 scale with a grid at 0, 0.5 and 1: one group per label, one bar per series
    (a legend when there are several). `intervals`, parallel to the series' values, draws each bar's interval
    as a whisker (none where it is None). All text is escaped."""
    left, width, gap = 170, 300, 8
    bar = 26 if len(series) == 1 else 14
    group = bar * len(series) + gap
    top = (30 if title else 10) + (16 if len(series) > 1 else 0)
    bottom = top + group * len(labels)
    height, total = bottom + 22, left + width + 70
    xmlns = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""
    out = [f'<svg{xmlns} width="{total}" height="{height}" viewBox="0 0 {total} {height}" role="img" '
           f'font-family="sans-serif" font-size="12"><title>{escape(title)}</title>',
           f'<rect width="{total}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="4" y="18" font-weight="bold">{escape(title)}</text>')
    if len(series) > 1:
        for i, (name, _) in enumerate(series):
            out.append(f'<rect x="{4 + i * 180}" y="26" width="10" height="10" fill="{COLOURS[i % len(COLOURS)]}"/>'
                       f'<text x="{18 + i * 180}" y="35">{escape(_short(name))}</text>')
    for tick in (0.0, 0.5, 1.0):
        x = left + tick * width
        out.append(f'<line x1="{x:g}" y1="{top - 4}" x2="{x:g}" y2="{bottom}" stroke="#ccc"/>'
                   f'<text x="{x:g}" y="{bottom + 14}" text-anchor="middle" fill="#555">{tick:g}</text>')
    for li, label in enumerate(labels):
        y0 = top + li * group
        out.append(f'<text x="{left - 6}" y="{y0 + bar * len(series) / 2 + 4:g}" text-anchor="end">'
                   f'{escape(label)}</text>')
        for si, (name, values) in enumerate(series):
            value, y = values[li], y0 + si * bar
            tip = f"{name} {label}".strip()
            span = intervals[si][li] if intervals is not None else None
            shown = fmt(value) + (f" [{fmt(span[0])}, {fmt(span[1])}]" if span and value is not None else "")
            if value is not None:
                out.append(f'<rect class="bar" x="{left}" y="{y}" width="{_clamp(value) * width:.1f}" '
                           f'height="{bar - 2}" fill="{COLOURS[si % len(COLOURS)]}"><title>{escape(tip)}: '
                           f'{shown}</title></rect>')
            if span is not None and value is not None:
                x1, x2, mid = left + _clamp(span[0]) * width, left + _clamp(span[1]) * width, y + (bar - 2) / 2
                out.append(f'<path class="interval" d="M{x1:.1f},{mid - 3:g}v6M{x1:.1f},{mid:g}H{x2:.1f}'
                           f'M{x2:.1f},{mid - 3:g}v6" stroke="#222" fill="none"><title>{escape(tip)}: {shown}'
                           '</title></path>')
            out.append(f'<text x="{left + width + 6}" y="{y + bar / 2 + 3:g}">{fmt(value)}</text>')
    return "\n".join(out) + "\n</svg>\n"


def _short(name: str, limit: int = 26) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"
