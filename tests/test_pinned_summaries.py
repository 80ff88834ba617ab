"""The numbers stay the numbers: `rag-eval score` of the workshop set and the offline baseline over the bundle
give the summary (every digit) and the per-row verdicts pinned in `tests/fixtures/pinned_summaries.json`.

The fixture was written by the code before issue 31's speed work (streaming score, one-pass summaries, rows
serialised by their own records), so any optimisation that changes a mean, a count or a row's verdict fails here.
The row digest covers what scoring decides per row (status, metrics, fact results, quote validation, failure
reasons), not timings. Regenerate only for a change that is meant to change numbers, and say so in its commit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.evaluate import run_evaluation
from harness.records import Row
from harness.runs import read_rows
from harness.saved.score import score_saved
from harness.settings import RunSettings
from tests.conftest import SAMPLE_DOCS

PINNED = json.loads((Path(__file__).parent / "fixtures" / "pinned_summaries.json").read_text(encoding="utf-8"))


def rows_digest(rows: Sequence[Row]) -> str:
    keep = [{"case_id": r.case_id, "repeat": r.repeat, "status": r.answer.status, "metrics": r.metrics,
             "failure_reasons": list(r.failure_reasons), "facts": [f.found for f in r.fact_results],
             "quote": r.quote_validation.status} for r in rows]
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()


@pytest.mark.parametrize("na_as_pass", [False, True])
def test_workshop_score_keeps_its_pinned_summary_and_rows(na_as_pass):
    result = score_saved(SAMPLE_DOCS / "workshop" / "cases.csv", na_as_pass=na_as_pass)
    pinned = PINNED[f"workshop_na_as_pass_{na_as_pass}"]
    assert result.summary.to_json() == pinned["summary"]
    assert rows_digest(result.rows) == pinned["rows"]


def test_bundle_offline_run_keeps_its_pinned_summary_and_rows(tmp_path):
    result = run_evaluation(RunSettings(system="offline", out=str(tmp_path), docs=str(SAMPLE_DOCS),
                                        cases=str(SAMPLE_DOCS / "all_cases.jsonl")))
    pinned = PINNED["bundle_offline"]
    assert result.summary.to_json() == pinned["summary"]
    assert json.loads((result.run_dir / "summary.json").read_text(encoding="utf-8")) == pinned["summary"]
    assert rows_digest(read_rows(result.run_dir)) == pinned["rows"]
