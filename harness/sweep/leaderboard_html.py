"""The sweep leaderboard as one self-contained HTML page (no network, no scripts): what was compared, the table,
the chart inline, the selection, and each cell's run directory. Every label and value goes through
`report.markup.esc` (escaped, bidi isolated), the report's Content-Security-Policy applies; the chart
is `leaderboard_svg`, which escapes its own text."""

from __future__ import annotations

from pathlib import Path

from pdfrag.safe_files import atomic_write_text

from ..report.markup import CSP_META, WRAP_CSS, attr, esc
from .leaderboard import CellSelection, Leaderboard
from .leaderboard_files import _HEADERS, _about, _cells, _selection_lines, leaderboard_svg
from .plan import SweepPlan

__all__ = ["leaderboard_html", "write_leaderboard_html"]

_STYLE = ("body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
          "tr.baseline{background:#f4f4f4}td.better{color:#1a7f37}td.worse{color:#c0392b}")


def leaderboard_html(board: Leaderboard, selection: CellSelection | None, plan: SweepPlan) -> str:
    """The page's text."""
    head = "".join(f"<th>{esc(h)}</th>" for h in _HEADERS)
    rows = []
    for entry in board.entries:
        cells = _cells(entry, board.resamples)
        tds = "".join(f'<td class="{attr(entry.verdict)}">{esc(c)}</td>' if i == 8 else f"<td>{esc(c)}</td>"
                      for i, c in enumerate(cells))
        rows.append(f'<tr class="{"baseline" if entry.is_baseline else "cell"}">{tds}</tr>')
    slugs = {c.label: c.slug for c in plan.cells}
    runs = "".join(f"<li>{esc(label)}: <code>{esc(slug)}/</code></li>" for label, slug in slugs.items())
    picked = "".join(f"<li>{esc(line)}</li>" for line in _selection_lines(selection))
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             CSP_META, "<title>Sweep leaderboard</title>", f"<style>{_STYLE}{WRAP_CSS}</style></head><body>",
             "<h1>Sweep leaderboard</h1>", f"<p>{esc(_about(board))}.</p>",
             f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>",
             f"<div>{leaderboard_svg(board)}</div>"]
    if picked:
        parts.append(f"<h2>Selection</h2><ul>{picked}</ul>")
    parts += [f"<h2>Run directories</h2><p>Each cell is a normal run: <code>rag-eval report</code>, "
              f"<code>compare</code>, <code>review</code> and <code>rescore</code> work on it.</p><ul>{runs}</ul>",
              "</body></html>"]
    return "\n".join(parts) + "\n"


def write_leaderboard_html(path: str | Path, board: Leaderboard, selection: CellSelection | None,
                           plan: SweepPlan) -> Path:
    path = Path(path)
    atomic_write_text(path, leaderboard_html(board, selection, plan))
    return path
