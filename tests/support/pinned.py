"""The numbers that stay the numbers: the summaries (every digit) and per-row verdicts of `rag-eval score` over the
workshop set and of the offline baseline over the bundle, pinned in `tests/fixtures/pinned_summaries.json`.

The fixture was written by the code before issue 31's speed work (streaming score, one-pass summaries, rows
serialised by their own records), so an optimisation that changes a mean, a count or a row's verdict fails the
tests that read it (tests/saved/test_score.py, tests/systems/test_offline.py). The row digest covers what scoring
decides per row (status, metrics, fact results, quote validation, failure reasons), not timings. Regenerate only
for a change meant to change numbers, and say so in its commit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from harness.records import Row

PINNED = json.loads((Path(__file__).parents[1] / "fixtures" / "pinned_summaries.json").read_text(encoding="utf-8"))


def rows_digest(rows: Sequence[Row]) -> str:
    keep = [{"case_id": r.case_id, "repeat": r.repeat, "status": r.answer.status, "metrics": r.metrics,
             "failure_reasons": list(r.failure_reasons), "facts": [f.found for f in r.fact_results],
             "quote": r.quote_validation.status} for r in rows]
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()
