"""The leaderboard as files and text: leaderboard.json, leaderboard.md, leaderboard.svg and a terminal table.

Numbers are rounded here only; the JSON keeps them whole. Every label that reaches the SVG is XML-escaped, and
Markdown cells and lines go through `report.markup.md` (HTML and Markdown punctuation escaped), since labels come
from user files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from pdfrag.safe_files import atomic_write_text

from ..chart import floor_text, p_text
from ..errors import InputError
from ..report.markup import md
from ..stats.paired import at_floor
from .leaderboard import CellSelection, Entry, Leaderboard

__all__ = ["LEADERBOARD_FORMAT", "leaderboard_json", "leaderboard_markdown", "leaderboard_svg", "leaderboard_text",
           "read_leaderboard", "write_leaderboard"]

LEADERBOARD_FORMAT = 1
_HEADERS = ("cell", "n", "errored", "mean", "delta", "95% CI of delta", "p", "p (Holm)", "verdict",
            "latency p50 ms", "latency p90 ms", "tokens/case", "front")


def write_leaderboard(directory: str | Path, board: Leaderboard, selection: CellSelection | None = None
                      ) -> dict[str, Path]:
    """Write leaderboard.json, leaderboard.md and leaderboard.svg into `directory` (atomically, each)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files = {"json": directory / "leaderboard.json", "md": directory / "leaderboard.md",
             "svg": directory / "leaderboard.svg"}
    atomic_write_text(files["json"], leaderboard_json(board, selection))
    atomic_write_text(files["md"], leaderboard_markdown(board, selection, chart=files["svg"].name))
    atomic_write_text(files["svg"], leaderboard_svg(board))
    return files


def leaderboard_json(board: Leaderboard, selection: CellSelection | None = None) -> str:
    """Deterministic JSON (no times, sorted keys): the same results give the same bytes."""
    data = {"format": LEADERBOARD_FORMAT, "leaderboard": board.to_dict(),
            "selection": selection.to_dict() if selection else None}
    return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"


def read_leaderboard(path: str | Path) -> tuple[Leaderboard, CellSelection | None]:
    """Read a leaderboard.json back into records (for the HTML report and for comparing two sweeps)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != LEADERBOARD_FORMAT:
            raise ValueError(f"format {data.get('format')!r} is not {LEADERBOARD_FORMAT}")
        board = _board(data["leaderboard"])
        picked = data.get("selection")
        selection = None if picked is None else CellSelection(
            picked["select_on"], picked["confirm_on"], picked["selected"], _board(picked["select"]),
            _board(picked["confirm"]) if picked["confirm"] else None)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{path}: not a readable leaderboard ({exc})") from exc
    return board, selection


def _board(data: dict) -> Leaderboard:
    return Leaderboard(**(data | {"entries": tuple(Entry(**e) for e in data["entries"])}))


def _num(value: float | None, digits: int = 3, *, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _p(value: float | None, entry: Entry, resamples: int) -> str:
    """A p as compare shows it; a Monte-Carlo p at its floor as `< 1e-4`, and its Holm-adjusted value as below the
    adjusted figure (`< 0.0003`): the raw p is below its floor, not equal to it."""
    if not at_floor(entry.p_value, entry.p_method, resamples) or value is None:
        return p_text(value)
    return floor_text(resamples) if value == entry.p_value else f"< {p_text(value)}"


def _cells(entry: Entry, resamples: int) -> list[str]:
    ci = "n/a" if entry.ci_low is None else f"[{_num(entry.ci_low, signed=True)}, {_num(entry.ci_high, signed=True)}]"
    return [entry.label + (" (baseline)" if entry.is_baseline else ""), str(entry.n), str(entry.errored),
            _num(entry.mean),
            "-" if entry.is_baseline else _num(entry.delta, signed=True), "-" if entry.is_baseline else ci,
            _p(entry.p_value, entry, resamples), _p(entry.p_holm, entry, resamples), entry.verdict,
            _num(entry.latency_p50_ms, 0), _num(entry.latency_p90_ms, 0), _num(entry.tokens_mean, 1),
            "yes" if entry.pareto else ""]


def _about(board: Leaderboard) -> str:
    direction = "higher" if board.higher_is_better else "lower"
    subset = f" on the {board.cases} baseline cases tagged {board.tag!r}" if board.tag else f" on {board.cases} cases"
    return (f"primary metric {board.primary} ({direction} is better){subset}; baseline {board.baseline}; "
            f"alpha {board.alpha:g} after Holm's correction over {sum(not e.is_baseline for e in board.entries)} "
            f"comparisons; 95% score intervals (Tango's for 0/1 metrics, scaled for the others) and sign-flip "
            f"p-values, seed {board.seed}, "
            f"{board.resamples} resamples; an errored case counts 0 on {board.primary} (column errored)")


def leaderboard_text(board: Leaderboard, selection: CellSelection | None = None) -> str:
    """A fixed-width table for the terminal, then the selection, if any."""
    rows = [list(_HEADERS), *(_cells(e, board.resamples) for e in board.entries)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADERS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join([_about(board), *lines, *_judge_lines(board), *_selection_lines(selection)]) + "\n"


def _judge_lines(board: Leaderboard) -> list[str]:
    """Beside a primary metric that reads judged verdicts: each cell's judge agreement with people."""
    return [f"judge of {e.label}: {e.judge}" for e in board.entries if e.judge]


def leaderboard_markdown(board: Leaderboard, selection: CellSelection | None = None, *,
                         chart: str | None = None) -> str:
    """A Markdown page: what was compared, the table, the chart (when a file name is given), the selection."""
    def row(cells: Sequence[str]) -> str:
        return "| " + " | ".join(md(c) for c in cells) + " |"

    parts = ["# Sweep leaderboard", "", md(_about(board)) + ".", "", row(_HEADERS), row(["---"] * len(_HEADERS)),
             *(row(_cells(e, board.resamples)) for e in board.entries), "",
             *(f"- {md(line)}" for line in _judge_lines(board)), ""]
    if chart:
        parts += [f"![{board.primary} against median latency per case]({chart})", ""]
    lines = _selection_lines(selection)
    if lines:
        parts += ["## Selection", "", *(f"- {md(line)}" for line in lines), ""]
    return "\n".join(parts)


def _selection_lines(selection: CellSelection | None) -> list[str]:
    if selection is None:
        return []
    if selection.baseline_kept:
        best = next((e for e in selection.select.entries if not e.is_baseline and e.delta is not None), None)
        closest = f" (closest: {best.label}, delta {_num(best.delta, signed=True)})" if best else ""
        return [f"no cell beats the baseline {selection.selected} on cases tagged {selection.select_on!r}{closest}; "
                f"the baseline stays and nothing is confirmed on {selection.confirm_on!r}"]
    if selection.selected is None or selection.confirm is None:
        return [f"no cell shares a case with the baseline on cases tagged {selection.select_on!r}; nothing selected"]
    chosen = selection.select.entry(selection.selected)
    confirmed = selection.confirm.entry(selection.selected)
    chose = (f"selected on {selection.select_on!r}: {selection.selected} (delta {_num(chosen.delta, signed=True)}, "
             f"{chosen.verdict} after Holm over {len(selection.select.entries) - 1} cells)")
    p = _p(confirmed.p_value, confirmed, selection.confirm.resamples)
    held = (f"confirmed on {selection.confirm_on!r} against the baseline: delta "
            f"{_num(confirmed.delta, signed=True)} [{_num(confirmed.ci_low, signed=True)}, "
            f"{_num(confirmed.ci_high, signed=True)}], p {p} over {confirmed.n} cases: {confirmed.verdict}")
    return [chose, held]


# -- chart ------------------------------------------------------------------------------------------------------
_W, _H, _LEFT, _RIGHT, _TOP, _BOTTOM = 680, 420, 70, 190, 40, 50


@dataclass(frozen=True)
class _Plotted:
    """A cell the chart can place: its median latency and mean, and the mean's interval (the mean itself at an
    end the entry lacks)."""

    entry: Entry
    latency: float
    mean: float
    low: float
    high: float


def _plotted(entries: Sequence[Entry]) -> list[_Plotted]:
    """The entries with both a mean and a median latency, in board order; the others are not drawn."""
    out = []
    for e in entries:
        if e.mean is None or e.latency_p50_ms is None:
            continue
        out.append(_Plotted(e, e.latency_p50_ms, e.mean, e.mean if e.mean_ci_low is None else e.mean_ci_low,
                            e.mean if e.mean_ci_high is None else e.mean_ci_high))
    return out


def leaderboard_svg(board: Leaderboard) -> str:
    """Primary metric (mean, with its 95 % interval) against median latency per case, one point per cell.
    Cells on the Pareto front are filled and joined by a dashed line; the baseline is drawn as a square."""
    points = _plotted(board.entries)
    x_max = max([p.latency for p in points] + [1.0]) * 1.1
    y_low, y_high = min([0.0, *(p.low for p in points)]), max([1.0, *(p.high for p in points)])

    def x(v: float) -> float:
        return _LEFT + v / x_max * (_W - _LEFT - _RIGHT)

    def y(v: float) -> float:
        return _H - _BOTTOM - (v - y_low) / (y_high - y_low) * (_H - _TOP - _BOTTOM)

    title = f"{board.primary} against median latency per case (Pareto front filled)"
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" '
            'font-family="sans-serif" font-size="12">')
    parts = [head, f'<rect width="{_W}" height="{_H}" fill="white"/>',
             f'<text x="{_LEFT}" y="22" font-weight="bold">{escape(title)}</text>',
             *_axes(x, y, x_max, y_low, y_high, escape(board.primary))]
    front = sorted((p for p in points if p.entry.pareto), key=lambda p: p.latency)
    if len(front) > 1:
        path = " ".join(f"{x(p.latency):.1f},{y(p.mean):.1f}" for p in front)
        parts.append(f'<polyline class="front" points="{path}" fill="none" stroke="#c0392b" stroke-dasharray="4 3"/>')
    anchors = [(x(p.latency), y(p.mean)) for p in points]
    for p, (px, py), (lx, ly) in zip(points, anchors, label_positions(anchors, [p.entry.label for p in points])):
        parts += _point(p.entry, px, py, y(p.low), y(p.high))
        if abs(ly - (py + 4)) > 6:  # moved away from its point: a thin line back to it
            parts.append(f'<line class="leader" x1="{px + 5:.1f}" y1="{py:.1f}" x2="{lx - 2:.1f}" y2="{ly - 4:.1f}" '
                         'stroke="#bbb"/>')
        parts.append(f'<text class="label" x="{lx:.1f}" y="{ly:.1f}">{escape(p.entry.label)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _axes(x: Callable[[float], float], y: Callable[[float], float], x_max: float, y_low: float, y_high: float,
          y_name: str) -> list[str]:
    bottom, right = _H - _BOTTOM, _W - _RIGHT
    out = [f'<line x1="{_LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#333"/>',
           f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{bottom}" stroke="#333"/>']
    for i in range(5):
        xv, yv = x_max * i / 4, y_low + (y_high - y_low) * i / 4
        out.append(f'<text x="{x(xv):.1f}" y="{bottom + 16}" text-anchor="middle" fill="#555">{xv:.0f}</text>')
        out.append(f'<line x1="{_LEFT}" y1="{y(yv):.1f}" x2="{right}" y2="{y(yv):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{_LEFT - 6}" y="{y(yv) + 4:.1f}" text-anchor="end" fill="#555">{yv:.2f}</text>')
    out.append(f'<text x="{(_LEFT + right) / 2:.0f}" y="{_H - 12}" text-anchor="middle">median latency per case '
               '(ms)</text>')
    out.append(f'<text x="16" y="{(_TOP + bottom) / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(_TOP + bottom) / 2:.0f})">{y_name}</text>')
    return out


_CHAR_W, _LINE_H = 7.0, 14.0  # a 12 px sans-serif character's width (generous) and a label's line height


def label_positions(anchors: Sequence[tuple[float, float]], labels: Sequence[str], *, top: float = _TOP + 12,
                    bottom: float = _H - _BOTTOM - 4) -> list[tuple[float, float]]:
    """Where each point's label goes (text x, baseline y): right of its point, at the first line (its own, then
    one up, one down, two up, ...) where it overlaps no label placed before it, kept between `top` and
    `bottom` (the plot area) so none is cut off or written over the axis (points taken from the top down)."""
    placed: list[tuple[float, float, float]] = []  # x0, x1, baseline of the labels placed so far
    out: dict[int, tuple[float, float]] = {}
    offsets = [0] + [d for k in range(1, len(anchors) + 1) for d in (-k, k)]  # in lines from a label's own
    for i in sorted(range(len(anchors)), key=lambda i: (anchors[i][1], anchors[i][0])):
        (px, py), width = anchors[i], _CHAR_W * len(labels[i])
        lx, home = px + 8, min(max(py + 4, top), bottom)
        lines = [home + d * _LINE_H for d in offsets]
        free = (ly for ly in lines if top <= ly <= bottom
                and not any(x0 < lx + width and lx < x1 and abs(b - ly) < _LINE_H for x0, x1, b in placed))
        ly = next(free, home)  # more labels than lines: the last ones overlap rather than leave the chart
        placed.append((lx, lx + width, ly))
        out[i] = (lx, ly)
    return [out[i] for i in range(len(anchors))]


def _point(e: Entry, px: float, py: float, low: float, high: float) -> list[str]:
    tip = escape(f"{e.label}: mean {_num(e.mean)} [{_num(e.mean_ci_low)}, {_num(e.mean_ci_high)}], "
                 f"median latency {_num(e.latency_p50_ms, 0)} ms, {e.verdict}")
    fill = "#c0392b" if e.pareto else "white"
    shape = (f'<rect x="{px - 5:.1f}" y="{py - 5:.1f}" width="10" height="10"' if e.is_baseline
             else f'<circle cx="{px:.1f}" cy="{py:.1f}" r="5"')
    mark = (f'{shape} class="{"cell front" if e.pareto else "cell"}" fill="{fill}" stroke="#c0392b">'
            f'<title>{tip}</title>{"</rect>" if e.is_baseline else "</circle>"}')
    return [f'<line class="interval" x1="{px:.1f}" y1="{low:.1f}" x2="{px:.1f}" y2="{high:.1f}" stroke="#888"/>',
            mark]
