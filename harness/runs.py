"""Run directories: rows.jsonl (appended, flushed per case), manifest.json and summary.json (written atomically)."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Iterable, Sequence

from chatbot.errors import InputError
from chatbot.store import atomic_write_text

from .metrics import REGISTRY, RETRIEVAL_FAMILIES
from .rows import validate_row

ROWS, MANIFEST, SUMMARY = "rows.jsonl", "manifest.json", "summary.json"


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def new_run_dir(out: str | Path, label: str | None) -> Path:
    """results/<UTC time>-<label>, made unique with a counter if two runs start in the same second."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", label or "run").strip("-") or "run"
    base = Path(out) / f"{stamp}-{slug}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    path.mkdir(parents=True)
    return path


class RowWriter:
    """Appends schema-checked rows, one line each, flushed and fsynced so a crash leaves whole lines only."""

    def __init__(self, run_dir: Path, *, append: bool = False):
        self.path = run_dir / ROWS
        self._fh = open(self.path, "a" if append else "w", encoding="utf-8")

    def write(self, row: dict) -> None:
        validate_row(row)
        self._fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()


def write_json(path: Path, data: dict) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror}); is this a run directory?") from exc
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON ({exc})") from exc


def read_rows(run_dir: str | Path) -> list[dict]:
    """Rows of a run. A last line cut by a crash is ignored; any other bad line is an error naming it."""
    path = Path(run_dir) / ROWS
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror}); is {run_dir} a run directory?") from exc
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError as exc:
            if number == len(lines):  # no newline after it: a write cut short
                break
            raise InputError(f"{path}:{number}: not valid JSON ({exc})") from exc
    return rows


def summarize(rows: Sequence[dict], metric_names: Iterable[str], collection: dict) -> dict:
    """Per metric: the mean over rows where it applies, with counts of scored, not applicable and errored rows.
    Retrieval metrics sit beside the collection size, since Recall@4 over four chunks says nothing."""
    errored = sum(1 for r in rows if r.get("error") is not None)
    out = {}
    for name in metric_names:
        values = [r["metrics"].get(name) for r in rows if r.get("error") is None]
        scored = [v for v in values if v is not None]
        out[name] = {"mean": sum(scored) / len(scored) if scored else None, "scored": len(scored),
                     "not_applicable": len(values) - len(scored), "errored": errored}
    pending = sum(1 for r in rows if r.get("human_claim_review") != "reviewed")
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r["answer"]["status"]] = statuses.get(r["answer"]["status"], 0) + 1
    summary = {"rows": len(rows), "errored": errored, "metrics": out, "answer_statuses": statuses,
               "human_claim_review": {"pending": pending, "reviewed": len(rows) - pending},
               "collection": collection}
    if any(r.get("repeat", 0) > 0 for r in rows):
        summary["repeat_stability"] = repeat_stability(rows, out)
    return summary


def repeat_stability(rows: Sequence[dict], metric_names: Iterable[str]) -> dict:
    """Per metric, over cases answered more than once: how many cases got differing verdicts across repeats.
    A CI gate can then tell a regression from the noise of the model itself."""
    by_case: dict[str, list[dict]] = {}
    for r in rows:
        by_case.setdefault(r["case_id"], []).append(r)
    out = {}
    for name in metric_names:
        # An error and "not applicable" are verdicts too: answered once and abstained once is a flip.
        seen = [{"error" if r.get("error") is not None else r["metrics"].get(name) for r in group}
                for group in by_case.values() if len(group) > 1]
        seen = [values for values in seen if values != {None}]
        flipped = sum(1 for values in seen if len(values) > 1)
        out[name] = {"cases": len(seen), "flipped": flipped, "flip_rate": flipped / len(seen) if seen else None}
    return out


def family(name: str) -> str:
    return name.split("@", 1)[0]


def is_retrieval(name: str) -> bool:
    return family(name) in RETRIEVAL_FAMILIES


def describe(name: str) -> str:
    return REGISTRY[family(name)].description
