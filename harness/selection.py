"""Subsets of a cases file for a quick run: `--only-tag`, `--only-ids`, `--limit`, `--sample` (seeded by `--seed`).

Filters apply in this order: cases carrying any of the `--only-tag` tags, then those named by `--only-ids` (a
file of ids, one a line, or `id,id,...`), then the first `--limit` in file order or a seeded `--sample` of them
(kept in file order). The run's manifest records the selection (`selection`), and `rag-eval compare` refuses two
runs made with different selections unless `--shared-only`: a difference between two subsets is no finding.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chatbot.errors import InputError

if TYPE_CHECKING:  # annotations only: compare imports this module and must not pull in the model client
    from .cases import Case
    from .runs import LoadedRun
    from .settings import RunSettings

_CRITERIA = ("only_tag", "only_ids", "ids_sha256", "limit", "sample", "seed")


def read_ids(spec: str) -> list[str]:
    """The ids `--only-ids` names: a file's lines (blank lines and `#` comments skipped), else `id,id,...`."""
    path = Path(spec)
    if path.is_file():
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"--only-ids {spec}: cannot read the file ({exc})") from exc
        ids = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    else:
        ids = [part.strip() for part in spec.split(",") if part.strip()]
    if not ids:
        raise InputError(f"--only-ids {spec!r}: no case id in it; give a file of ids (one a line) or id,id,...")
    return ids


def select_cases(cases: Sequence[Case], s: RunSettings) -> tuple[list[Case], dict[str, Any]]:
    """The selected cases in file order, and the selection as the manifest records it ({} for all cases)."""
    chosen = list(cases)
    if s.only_tag:
        chosen = [c for c in chosen if set(c.tags) & set(s.only_tag)]
        if not chosen:
            known = sorted({t for c in cases for t in c.tags})
            raise InputError(f"--only-tag {' '.join(s.only_tag)}: no case carries it; tags in {s.cases}: "
                             f"{', '.join(known) or 'none'}")
    ids: list[str] = read_ids(s.only_ids) if s.only_ids else []
    if ids:
        unknown = sorted(set(ids) - {c.id for c in cases})
        if unknown:
            raise InputError(f"--only-ids: {len(unknown)} id(s) not in {s.cases}: {', '.join(unknown[:10])}"
                             + (" …" if len(unknown) > 10 else "") + "; correct or remove them")
        chosen = [c for c in chosen if c.id in set(ids)]
    if s.limit is not None:
        chosen = chosen[:s.limit]
    elif s.sample is not None and s.sample < len(chosen):
        keep = set(random.Random(s.seed).sample(range(len(chosen)), s.sample))
        chosen = [c for i, c in enumerate(chosen) if i in keep]
    return chosen, _record(s, ids, len(chosen), len(cases))


def _record(s: RunSettings, ids: list[str], selected: int, total: int) -> dict[str, Any]:
    criteria: dict[str, Any] = {"only_tag": list(s.only_tag), "only_ids": s.only_ids,
                                "ids_sha256": hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()
                                if ids else None,
                                "limit": s.limit, "sample": s.sample, "seed": s.seed if s.sample else None}
    given = {k: v for k, v in criteria.items() if v not in (None, [])}
    return given | {"selected": selected, "of": total} if given else {}


def describe_selection(selection: dict[str, Any]) -> str:
    """One line: `21 of 195 cases (only-tag dev, limit 21)`, the criteria alone without counts, or "all cases"."""
    parts = [f"{k.replace('_', '-')} {_short(' '.join(v) if isinstance(v, list) else str(v))}"
             for k, v in selection.items() if k in _CRITERIA and k != "ids_sha256"]
    if not parts:
        return "all cases"
    if "selected" not in selection:
        return ", ".join(parts)
    return f"{selection['selected']} of {selection['of']} cases ({', '.join(parts)})"


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def refuse_other_selections(a: LoadedRun, b: LoadedRun, *, shared_only: bool) -> None:
    """compare's rule: two runs made with different case selections are not compared unless `shared_only`."""
    sel_a, sel_b = ({k: v for k, v in (getattr(r.manifest, "selection", None) or {}).items() if k in _CRITERIA}
                    for r in (a, b))
    if sel_a != sel_b and not shared_only:
        raise InputError(f"{a.name} and {b.name} ran on different selections of cases (A: "
                         f"{describe_selection(sel_a)}; B: {describe_selection(sel_b)}); pass --shared-only to "
                         "compare the cases both have")
