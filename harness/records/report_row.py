"""What the report reads of every row of rows.jsonl: all but the passages, the answer's texts, usage and the
per-fact and per-quote details, which it shows only for the cases its case tables list (those it reads whole).

The fields kept are validated as `Row` validates them; the others are parsed as JSON but not built into records
(as `RowScores` does for compare), so a run of 100k rows is held in a fraction of the memory and time. Read with
`context={"known": {}}`, rows share one copy of each metrics dict that repeats (a metric is mostly 0, 1 or null:
rows repeat their metrics, a sixth of a light row's memory, far more than their texts).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from .row import CaseFields, ClaimRecord, JudgedClaim, Row, Score, Status


class ReportAnswer(BaseModel):
    """What the report's counts read of a row's answer: its status, the system's answer (written or not) and the
    hash that tells two answers of a case apart."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    status: Status
    model_answer: str
    answer_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class ReportRow(CaseFields):
    """A row as the report's sections, summary and agreement read it (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    answer: ReportAnswer
    error: str | None = None
    human_claim_review: Literal["pending", "reviewed"] = "pending"
    claims: tuple[ClaimRecord, ...] | None = None
    judged_claims: tuple[JudgedClaim, ...] | None = None
    metrics: dict[str, Score]
    failure_reasons: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    @field_validator("metrics")
    @classmethod
    def _shared(cls, value: Any, info: ValidationInfo) -> Any:
        """The copy of an equal value read before (per `known` table of the context), else this one."""
        known = info.context.get("known") if isinstance(info.context, dict) else None
        if known is None:
            return value
        return known.setdefault(tuple(value.items()), value)

    @property
    def key(self) -> tuple[str, int]:
        """(case id, repeat): a row's identity within a run."""
        return (self.case_id, self.repeat)


AnyRow = Row | ReportRow  # a row read whole, or as the report reads it
