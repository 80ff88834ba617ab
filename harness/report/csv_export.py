"""`rag-eval export RUN --csv rows.csv`: one line per row of a run, for a spreadsheet or pandas.

Columns: case_id, repeat, question, tags (joined by ` | `), status (the answer's status), error, then every metric
of the run in the manifest's order (empty when not applicable, as in the rows; errored rows have none), then
failure_stage (the first funnel stage the case fails, `harness.report.funnel.stage_of`; empty when `passed` is 1),
failure_reasons (joined by ` | `; a passing case may carry notes) and warnings (the row's warnings joined by ` | `:
the reviewer warnings `harness.records.REVIEW_WARNINGS` and the page checks; never a failed check). Text comes
from outside (questions, tags, reasons quoting answers), so every text cell that a spreadsheet would read as a
formula (starting with = + - @, a tab or a carriage return) gets a leading `'` (`harness.inputs.guard`, the rule of
every CSV the harness writes for people).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from ..inputs import guard
from ..records import Row
from .funnel import stage_of

__all__ = ["rows_csv"]

_JOIN = " | "


def _number(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _stage(row: Row) -> str:
    """The funnel stage a failing row is lost at; empty for a row that passed."""
    return "" if row.metrics.get("passed") == 1.0 else stage_of(row)


def rows_csv(rows: Sequence[Row], metrics: Sequence[str]) -> str:
    """The CSV text (header first, `\\n` line ends) of `rows`, with one column per name in `metrics`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["case_id", "repeat", "question", "tags", "status", "error", *metrics, "failure_stage",
                     "failure_reasons", "warnings"])
    for row in rows:
        text = [row.case_id, str(row.repeat), row.question, _JOIN.join(row.tags), row.answer.status,
                row.error or ""]
        writer.writerow([*map(guard, text), *(_number(row.metrics.get(name)) for name in metrics),
                         _stage(row), guard(_JOIN.join(row.failure_reasons)), guard(_JOIN.join(row.warnings))])
    return out.getvalue()
