"""The harness's typed records: what a system returns, what a run writes, and nothing else.

Every record is a frozen pydantic model that rejects unknown fields, so a reply or a file of the wrong shape
fails in one place with a message naming the field. The published JSON Schemas under `harness/schemas/` are
generated from these classes (`python -m harness.records`), and a test keeps them equal.
Units are in the names: `*_ms` milliseconds, `*_tokens` tokens, `*_chars` characters.

The records live in one small module per file they describe: `answers` (what a system returns), `row` (one row
per case; `report_row`: what the report reads of one), `run_files` (summary.json, manifest.json), `schemas` (the
published schemas), `case_line` (a line of the cases file), `saved_lines` (a line of saved outputs, `rag-eval
score`'s input), `drafts` and `drafts_manifest` (the drafts file and the manifests `rag-eval draft` writes),
`reviews` (a line of the reviews file); `base` holds the record base. Import them from here, except those of the
drafts and reviews files: from their modules, which their readers (`harness.drafting`, `harness.review`) name.
"""

from .answers import Citation, Passage, SystemAnswer, SystemReply
from .base import (
    NOTE_CHARS,
    QUESTION_CHARS,
    QUOTE_CHARS,
    SOURCE_ID_CHARS,
    TERM_CHARS,
    field_problem,
    format_problem,
    in_bulk,
)
from .case_line import CaseEvidence, CaseLine
from .report_row import AnyRow, ReportAnswer, ReportRow
from .row import (
    CLAIM_STATUSES,
    JUDGE_VERDICTS,
    REVIEW_WARNINGS,
    STATUSES,
    VERDICTS,
    AnswerRecord,
    CitationResult,
    ClaimRecord,
    ClaimResolution,
    ClaimStatus,
    EvidenceItem,
    Expected,
    FactResult,
    JudgedClaim,
    JudgeVerdict,
    QuoteStatus,
    QuoteValidation,
    RetrievedPassage,
    ReviewerVerdict,
    Row,
    RowScores,
    Score,
    Status,
    Verdict,
    metric_problem,
    review_kinds,
)
from .run_files import (
    MANIFEST_FORMAT,
    ClaimCounts,
    CollectionRecord,
    JudgedPassedSummary,
    JudgeRecord,
    JudgeSummary,
    Manifest,
    MetricSummary,
    PromptTemplateRecord,
    RerunRecord,
    RescoredFromRecord,
    RunSettingsRecord,
    SelectionRecord,
    Summary,
    SystemRecord,
    VersionsRecord,
)
from .saved_lines import InputFile, SavedCase, SavedChunk, SavedClaim, SavedLine
from .schemas import published_schemas

__all__ = ["AnyRow", "CLAIM_STATUSES", "JUDGE_VERDICTS", "MANIFEST_FORMAT", "NOTE_CHARS", "QUESTION_CHARS",
           "QUOTE_CHARS", "REVIEW_WARNINGS", "SOURCE_ID_CHARS", "STATUSES", "TERM_CHARS", "VERDICTS", "AnswerRecord",
           "CaseEvidence", "CaseLine", "Citation",
           "CitationResult", "ClaimCounts", "ClaimRecord", "ClaimResolution", "ClaimStatus", "CollectionRecord",
           "EvidenceItem", "Expected", "FactResult", "InputFile", "JudgeRecord", "JudgeSummary", "JudgeVerdict",
           "JudgedClaim",
           "JudgedPassedSummary", "Manifest", "MetricSummary", "Passage", "PromptTemplateRecord", "QuoteStatus",
           "QuoteValidation", "RerunRecord", "ReportAnswer", "ReportRow", "RescoredFromRecord", "RetrievedPassage",
           "ReviewerVerdict", "Row", "RowScores", "RunSettingsRecord", "SavedCase", "SavedChunk", "SavedClaim",
           "SavedLine", "Score", "SelectionRecord", "Status",
           "Summary", "SystemAnswer", "SystemRecord", "SystemReply", "Verdict", "VersionsRecord", "field_problem",
           "format_problem", "in_bulk", "metric_problem", "published_schemas", "review_kinds"]
