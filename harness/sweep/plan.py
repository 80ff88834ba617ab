"""A sweep's plan: the sweep file and `--grid` arguments expanded into ordered, labelled cells.

A sweep file is a `rag-eval run --config` file in which any run setting may hold a list of values, plus five
sweep keys:

    chunk-size = [600, 1000]      # an axis: one cell per value
    top-k = [2, 4]
    chat-model = "qwen3:4b"       # a single value: the base of every cell
    k = [[1, 2], [1, 4]]          # a setting that is itself a list sweeps over a list of lists (k=1+2)
    baseline = "chunk-size=1000,top-k=4"   # a cell label or a table {chunk-size = 1000, top-k = 4}; default: first
    primary = "passed"            # the metric the leaderboard ranks by
    alpha = 0.05                  # family-wise error rate for the Holm-adjusted verdicts
    select-on = "dev"             # optional, together: choose the best cell on cases tagged dev,
    confirm-on = "heldout"        #   then confirm it against the baseline on cases tagged heldout

Cells are the cartesian product of the axes, the first axis varying slowest; `--grid key=v1,v2` adds an axis or
replaces the file's values for that key. A cell's label names its axis values in axis order, e.g.
`chunk-size=600,top-k=2`, so labels are stable across reruns; its slug is the label made safe as a folder name.
Values are checked by the same code as `rag-eval run --config` (`harness.settings.check_config`), and every cell
is built as a `RunSettings`, so a cell that `rag-eval run` would refuse is refused here, before any model call.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..metrics.registry import metric_names
from ..settings import AT_LEAST_ONE, FIELDS, RunSettings, check_config, docs_without_cases
from ..stats.defaults import DEFAULT_PRIMARY

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["DEFAULT_ALPHA", "DEFAULT_MAX_CELLS", "DEFAULT_PRIMARY", "SWEEP_KEYS", "Cell", "SweepPlan",
           "count_cells", "load_sweep", "parse_grid"]

DEFAULT_ALPHA = 0.05
SWEEP_KEYS = ("baseline", "primary", "alpha", "select-on", "confirm-on")
_SLUG_MAX = 100
# one per sweep: the sweep directory names the cells; the servers and the cache serve every cell alike
_NOT_SWEPT = frozenset({"out", "label", "cache_dir", "hosts", "answer_cache"})
# how fast cells run, not what they measure: with the answer cache, cells differing only in these are identical
_NOT_AXES = frozenset({"workers", "timeout"})
_GRID = Path("--grid")  # the "file" named in messages about --grid arguments
DEFAULT_MAX_CELLS = 256  # a bigger grid needs --max-cells: it is counted before any cell is built


@dataclass(frozen=True)
class Cell:
    """One combination of the swept values. `values` holds the swept settings only (field names, in axis order);
    `settings` is the whole run configuration of the cell."""

    label: str
    values: tuple[tuple[str, Any], ...]
    settings: RunSettings
    slug: str  # the label made safe as a folder name, unique within the sweep

    def to_dict(self) -> dict:
        return {"label": self.label, "slug": self.slug, "values": {_dashed(k): v for k, v in self.values},
                "settings": self.settings.to_dict()}


@dataclass(frozen=True)
class SweepPlan:
    """The expanded sweep. `sha256` identifies the definition: the sweep file's parsed content plus the --grid
    arguments (comments and spacing do not count), so a resumed sweep can refuse a changed definition."""

    source: str | None  # the sweep file, or None when only --grid was given
    sha256: str
    axes: tuple[tuple[str, tuple[Any, ...]], ...]  # (field name, values) in axis order
    cells: tuple[Cell, ...]
    baseline: str  # a cell label
    primary: str
    alpha: float
    select_on: str | None
    confirm_on: str | None
    definition: dict = field(default_factory=dict)  # the sweep file as parsed: a resume works without the file

    def cell(self, label: str) -> Cell:
        """The cell with this label (KeyError if none)."""
        for cell in self.cells:
            if cell.label == label:
                return cell
        raise KeyError(label)

    def to_dict(self) -> dict:
        return {"source": self.source, "sha256": self.sha256,
                "axes": {_dashed(k): list(v) for k, v in self.axes}, "baseline": self.baseline,
                "primary": self.primary, "alpha": self.alpha, "select_on": self.select_on,
                "confirm_on": self.confirm_on, "cells": [c.to_dict() for c in self.cells]}


def load_sweep(path: str | Path | None, *, grid: Sequence[str] = (), flags: Mapping[str, Any] | None = None,
               known_metrics: Collection[str] | None = None, max_cells: int | None = DEFAULT_MAX_CELLS,
               definition: Mapping[str, Any] | None = None) -> SweepPlan:
    """Read the sweep file (if any), add the `--grid` arguments and expand the cells. `flags` are the run flags
    given on the command line (field names; None = not given): they override the file's base values and may not
    name a swept setting. `known_metrics` checks `primary` (default: every metric name plus `passed`).
    The cells are counted before any is built: more than `max_cells` (None: no limit) is refused. `definition`,
    when given, is the file's parsed content (saved in sweep.json), used instead of reading `path`.
    Every problem found is reported at once; each names the file (or --grid) and the key."""
    if path is None:
        data, source = {}, _GRID
    else:
        data, source = (dict(definition), Path(path)) if definition is not None else _read(Path(path))
    sweep_keys = {raw.replace("_", "-"): data.pop(raw) for raw in list(data) if raw.replace("_", "-") in SWEEP_KEYS}
    problems: list[str] = []
    base, axes = _split(data, source, problems)
    for text in grid:
        try:
            name, values = _grid_axis(text)
        except InputError as exc:
            problems.append(str(exc))
            continue
        axes[name] = values
        base.pop(name, None)
    given = {k: v for k, v in (flags or {}).items() if v is not None and k in FIELDS}
    problems += [f"--{_dashed(k)} is swept in {source} and cannot also be given as a flag; drop the flag or use "
                 f"--grid {_dashed(k)}=..." for k in given if k in axes]
    if not axes and not problems:
        problems.append(f"{source}: no setting has a list of values, so there is nothing to sweep; give one a list "
                        "(e.g. top-k = [2, 4]) or pass --grid top-k=2,4")
    problems += _too_many(axes, max_cells)
    if "docs" not in axes and (refusal := docs_without_cases(base | given)) is not None:
        problems.append(refusal)
    if problems:
        raise InputError("\n".join(problems))
    cells = _cells(source, base | given, axes)
    options = _sweep_options(sweep_keys, source, cells, known_metrics)
    digest = hashlib.sha256(json.dumps({"file": data | sweep_keys, "grid": list(grid)}, sort_keys=True,
                                       default=str).encode("utf-8")).hexdigest()
    # labels show values as written; the plan keeps the checked ones (relative paths resolved)
    checked = tuple((name, tuple(v.value for v in values)) for name, values in axes.items())
    return SweepPlan(None if source is _GRID else str(source), digest, checked, cells, **options,
                     definition=data | sweep_keys)


def count_cells(axes: Mapping[str, Sequence[Any]]) -> int:
    """How many cells the axes make (their sizes multiplied), without making any."""
    return math.prod(len(values) for values in axes.values())


def _too_many(axes: Mapping[str, Sequence[Any]], max_cells: int | None) -> list[str]:
    count = count_cells(axes)
    if max_cells is None or count <= max_cells:
        return []
    sizes = " x ".join(f"{len(v)} {_dashed(k)}" for k, v in axes.items())
    return [f"the sweep has {count} cells ({sizes}), more than --max-cells {max_cells}; narrow the axes, or pass "
            f"--max-cells {count} if you mean it (each cell is a whole run)"]


def parse_grid(text: str) -> tuple[str, list[Any]]:
    """`key=v1,v2` -> (field name, checked values). Values are read as the setting's type (integers, numbers,
    true/false, or text; text values cannot contain commas here, put those in the sweep file)."""
    name, values = _grid_axis(text)
    return name, [v.value for v in values]


def _grid_axis(text: str) -> tuple[str, list[_Value]]:
    key, sep, raw = text.partition("=")
    key = key.strip()
    name = key.replace("-", "_")
    if not sep or not key or not raw.strip():
        raise InputError(f"--grid {text!r}: write key=value1,value2 (e.g. --grid top-k=2,4)")
    if name not in FIELDS:
        raise InputError(f"--grid {text!r}: unknown setting {key!r}; known: {', '.join(sorted(map(_dashed, FIELDS)))}")
    if name in _NOT_SWEPT:
        raise InputError(f"--grid {text!r}: {key} says where the sweep goes, not what it measures; give it once")
    if name in _NOT_AXES:
        raise InputError(f"--grid {text!r}: {_not_axis(key)}")
    if _is_list_setting(name):
        raise InputError(f"--grid {text!r}: {key} takes a list per cell; sweep it in a sweep file as "
                         f"{key} = [[1, 2], [1, 4]]")
    problems: list[str] = []
    values = _checked_axis(key, [_typed(part.strip()) for part in raw.split(",")], _GRID, problems)
    if problems:
        raise InputError("\n".join(problems))
    return name, values


# -- reading and checking -------------------------------------------------------------------------------------
def _read(path: Path) -> tuple[dict, Path]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")), path
    except OSError as exc:
        raise InputError(f"{path}: cannot read the sweep file ({exc.strerror})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from exc


def _split(data: dict, source: Path, problems: list[str]) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """Base values and axes (field name -> checked values) of the file's run settings."""
    base, axes = {}, {}
    for key, value in data.items():
        name = key.replace("-", "_")
        if name not in FIELDS:
            problems.append(f"{source}: unknown key {key!r}; sweep keys: {', '.join(SWEEP_KEYS)}; run settings: "
                            f"{', '.join(sorted(map(_dashed, FIELDS)))}")
        elif _is_axis(name, value) and name in _NOT_SWEPT:
            problems.append(f"{source}: {key} says where the sweep goes, not what it measures; give one value")
        elif _is_axis(name, value) and name in _NOT_AXES:
            problems.append(f"{source}: {_not_axis(key)}")
        elif _is_axis(name, value):
            axes[name] = _checked_axis(key, value, source, problems)
        else:
            base.update(_check(key, value, source, problems))
    return base, axes


def _not_axis(key: str) -> str:
    return (f"{key} changes how fast cells run, not what they measure (with the answer cache such cells would be "
            f"identical); give one value, e.g. --{key} 4")


def _is_list_setting(name: str) -> bool:
    return isinstance(FIELDS[name].default, tuple)  # e.g. k = [1, 2, 4]


def _is_axis(name: str, value: Any) -> bool:
    if not isinstance(value, list):
        return False
    return not _is_list_setting(name) or any(isinstance(v, list) for v in value)


def _checked_axis(key: str, values: list[Any], source: Path, problems: list[str]) -> list[Any]:
    if not values:
        problems.append(f"{source}: {key} is an empty list; give at least one value")
        return []
    name = key.replace("-", "_")
    checked = [_check(key, v, source, problems).get(name) for v in values]
    if name in AT_LEAST_ONE:  # RunSettings checks this per cell; per value here, so every bad one shows at once
        problems += [f"{source}: {key} must be at least 1, got {raw}" for raw, ok in zip(values, checked)
                     if isinstance(ok, int) and ok < 1]
    seen: set[str] = set()
    for value in values:
        shown = _show(value)
        if shown in seen:
            problems.append(f"{source}: {key} lists {shown} twice; each value makes one cell")
        seen.add(shown)
    # keep the value as written (for labels) beside the checked one (relative paths resolved)
    return [_Value(raw, ok) for raw, ok in zip(values, checked)]


def _check(key: str, value: Any, source: Path, problems: list[str]) -> dict[str, Any]:
    """One setting through the `--config` checks; a problem is collected, not raised."""
    try:
        return check_config({key: value}, source)
    except InputError as exc:
        problems.append(str(exc))
        return {}


@dataclass(frozen=True)
class _Value:
    raw: Any  # as written: shown in labels
    value: Any  # as checked: relative paths resolved against the sweep file

    def __str__(self) -> str:
        return _show(self.raw)


def _cells(source: Path, base: dict[str, Any], axes: Mapping[str, list[_Value]]) -> tuple[Cell, ...]:
    cells: list[Cell] = []
    problems: list[str] = []
    slugs: set[str] = set()
    for combo in itertools.product(*axes.values()):
        pairs = tuple(zip(axes, combo))
        label = ",".join(f"{_dashed(name)}={v}" for name, v in pairs)
        values = base | {name: v.value for name, v in pairs}
        for name in ("k", "hosts"):  # settings held as tuples
            if name in values:
                values[name] = tuple(values[name])
        slug = _slug(label, slugs)
        slugs.add(slug)
        try:
            cells.append(Cell(label, tuple((n, v.value) for n, v in pairs), RunSettings(**values), slug))
        except InputError as exc:
            problems.append(f"{source}: cell {label}: {exc}")
    if problems:
        raise InputError("\n".join(problems))
    return tuple(cells)


def _sweep_options(keys: dict[str, Any], source: Path, cells: tuple[Cell, ...],
                   known_metrics: Collection[str] | None) -> dict[str, Any]:
    problems: list[str] = []
    baseline = _baseline(keys.get("baseline"), source, cells, problems)
    primary = keys.get("primary", DEFAULT_PRIMARY)
    known = set(known_metrics) if known_metrics is not None else {
        DEFAULT_PRIMARY, *metric_names(sorted({k for c in cells for k in c.settings.k}))}
    if not isinstance(primary, str) or primary not in known:
        problems.append(f"{source}: primary must be one of {', '.join(sorted(known))}; got {primary!r}")
    alpha = keys.get("alpha", DEFAULT_ALPHA)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not (0 < alpha < 1) or math.isnan(alpha):
        problems.append(f"{source}: alpha must be a number between 0 and 1 (e.g. 0.05); got {alpha!r}")
    select_on, confirm_on = keys.get("select-on"), keys.get("confirm-on")
    for key, tag in (("select-on", select_on), ("confirm-on", confirm_on)):
        if tag is not None and (not isinstance(tag, str) or not tag.strip()):
            problems.append(f"{source}: {key} must be a case tag (text), got {tag!r}")
    if (select_on is None) != (confirm_on is None) or (select_on is not None and select_on == confirm_on):
        problems.append(f"{source}: select-on and confirm-on go together and name two different tags "
                        f"(e.g. select-on = \"dev\", confirm-on = \"heldout\"); got {select_on!r} and {confirm_on!r}")
    if problems:
        raise InputError("\n".join(problems))
    return {"baseline": baseline, "primary": primary, "alpha": float(alpha), "select_on": select_on,
            "confirm_on": confirm_on}


def _baseline(value: Any, source: Path, cells: tuple[Cell, ...], problems: list[str]) -> str:
    """A label, or a table naming every swept setting's value as written in the file; default: the first cell."""
    labels = [c.label for c in cells]
    if value is None:
        return labels[0]
    label = value
    if isinstance(value, dict):
        wanted = {k.replace("-", "_"): v for k, v in value.items()}
        axes = [name for name, _ in cells[0].values]
        label = ",".join(f"{_dashed(n)}={_show(wanted[n])}" for n in axes) if set(wanted) == set(axes) else None
    if isinstance(label, str) and label in labels:
        return label
    problems.append(f"{source}: baseline {value!r} is not one of the cells; name one of: {', '.join(labels)}"
                    + (" (a baseline table must give every swept setting)" if isinstance(value, dict) else ""))
    return labels[0]


def _typed(text: str) -> Any:
    """A --grid value as TOML would read it: integer, number, true/false, else text."""
    for parse in (int, float):
        try:
            number = parse(text)
        except ValueError:
            continue
        if math.isfinite(number):  # "nan" and "inf" stay text, which the type check then refuses
            return number
    return {"true": True, "false": False}.get(text, text)


def _slug(label: str, taken: set[str]) -> str:
    """Characters a folder name may hold on every system; a long or clashing one gets a hash of the label."""
    slug = re.sub(r"[^A-Za-z0-9._=,+-]", "_", label)
    if len(slug) > _SLUG_MAX or slug in taken or slug.startswith("."):
        slug = f"{slug[:_SLUG_MAX - 9].lstrip('.')}-{hashlib.sha256(label.encode('utf-8')).hexdigest()[:8]}"
    return slug


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "+".join(_show(v) for v in value)
    return str(value)


def _dashed(name: str) -> str:
    return name.replace("_", "-")
