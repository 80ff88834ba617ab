"""Where each case was lost: its failure reasons sorted into kinds, and the case placed at one funnel stage.

The funnel reads only what a row stores (its `failure_reasons`, `error`, answer status and the system's answer
text), so it can be redone by hand from rows.jsonl. A case counts at the FIRST stage it fails, in this order:

1. `retrieval`: an evidence item was not among the passages retrieved (a reason "expected X, not retrieved in the
   top N"). An item whose first rank exceeds the number of evidence items ("first retrieved at rank N": two items
   cannot both be first) is noted, but is not a loss: the passage reached the answerer.
2. `facts`: the system wrote an answer (its answer text, shown or not, is not empty) and a labelled fact is
   missing from it ("fact … not in answer"), or a human-reviewed claim is not supported ("claim … unsupported",
   "answered, but no claim is annotated").
3. `citation`: a citation failed quote validation ("citation: …", status `invalid_citation`), a cited page was
   not retrieved ("cited X, not retrieved"), or, for an answerable case, not an evidence page ("cited X, not
   expected"); or the system wrote an answer without citing a passage ("no passage cited"); or a fact the answer
   states is in none of its valid cited quotes ("fact … is in the answer but in no valid cited quote", `grounded`).
   Citing a page that is not evidence is left to the next stage when the case should abstain: there, no page is
   evidence.
4. `decision`: the answer/abstain decision was wrong ("answered an unanswerable question", "gave no answer to an
   answerable question"), or the reply was malformed (status `malformed_output`), so nothing could be shown.
5. `errored`: answering failed ("error: …"; the row has no metrics). An errored row carries no other reason.
6. `passed`: none of the above. Such a case can still carry a note ("first retrieved at rank 2").

`other` collects rows whose only failing reasons are of a kind this module does not know (a reason added to
`harness.rows` later), and rows whose `passed` is 0 for a reason no stage names (a judge's verdict under
`--judged-passed`: the reasons are the people's), so that no failure is counted as a pass. A claim reviewers
disagree on is a note, not a failure: it is pending, and counts in no claim metric until it is resolved. The
`passed` stage holds exactly the rows whose `passed` metric is 1.0 (a malformed reply is no abstention: it fails
`passed` too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..records import AnyRow

__all__ = ["KINDS", "STAGES", "Kind", "Stage", "documents_of", "funnel", "kind_label", "reason_kind", "reason_kinds",
           "stage", "stage_index", "stage_of"]


@dataclass(frozen=True)
class Kind:
    """One kind of failure reason: a key for anchors, a label, and whether it fails the case by itself."""

    key: str
    label: str
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class Stage:
    key: str
    label: str
    definition: str


def _k(key: str, label: str, pattern: str) -> Kind:
    return Kind(key, label, re.compile(pattern, re.S))


# The sentences `harness.rows.failure_reasons` writes, matched from their fixed parts. Order matters: first match.
KINDS: tuple[Kind, ...] = (
    _k("error", "answering failed (error)", r"^error: "),
    _k("not-retrieved", "evidence not retrieved", r"^expected .*, not retrieved in the top \d+$"),
    _k("low-rank", "evidence ranked below the number of evidence items (a note)",
       r"^expected .*, first retrieved at rank \d+$"),
    _k("answered-unanswerable", "answered an unanswerable question", r"^answered an unanswerable question$"),
    _k("no-answer", "no answer to an answerable question", r"^gave no answer to an answerable question"),
    _k("quote-invalid", "citation failed quote validation", r"^citation: "),
    _k("cited-not-retrieved", "cited a page that was not retrieved", r"^cited .*, not retrieved( or expected)?$"),
    _k("cited-not-expected", "cited a page that is not evidence", r"^cited .*, not expected$"),
    _k("no-citation", "no passage cited", r"^no passage cited$"),
    _k("malformed", "malformed reply", r"^the system's reply was malformed$"),
    _k("not-grounded", "fact in the answer but in no valid cited quote", r"^fact .* in no valid cited quote"),
    _k("fact-missing", "fact missing from the answer", r"^fact .*not in answer"),
    _k("claim-disagreement", "claim reviewers disagree on (pending; a note)",
       r"^claim .* in disagreement between reviewers$"),
    _k("claim", "claim not supported (human review)", r"^(claim .* (unsupported|contradicted)|answered, but no "
                                                       r"claim is annotated)$"),
)
_OTHER = Kind("other", "other reason", re.compile(""))

STAGES: tuple[Stage, ...] = (
    Stage("retrieval", "lost at retrieval", "an evidence item was not among the retrieved passages"),
    Stage("facts", "lost at the answer's facts", "the system wrote an answer and a labelled fact is missing from "
                                                 "it, or a human-reviewed claim is not supported"),
    Stage("citation", "lost at citation validation",
          "a citation failed quote validation, cites a page that was not retrieved or (for an answerable case) "
          "is not evidence, an answer was written without citing any passage, or a fact the answer states is in "
          "none of its valid cited quotes"),
    Stage("decision", "lost at the answer/abstain decision",
          "answered an unanswerable question, gave no answer to an answerable one, or the reply was malformed"),
    Stage("errored", "errored", "answering failed: the row has an error and no metrics"),
    Stage("other", "other failure", "a failure reason of a kind this report does not know"),
    Stage("passed", "passed every check", "none of the above (a passing case may carry the note that its "
                                          "evidence ranked below the number of evidence items)"),
)
_STAGE_KEYS = [s.key for s in STAGES]


@lru_cache(maxsize=65536)  # reasons repeat across rows ("no passage cited"): a run's report asks millions of times
def reason_kind(reason: str) -> Kind:
    """The kind of one failure reason (`other` for a sentence this module does not know)."""
    return next((k for k in KINDS if k.pattern.search(reason)), _OTHER)


def stage_of(row: AnyRow) -> str:
    """The key of the first funnel stage `row` fails, or "passed" (see the module docstring)."""
    if row.error is not None:
        return "errored"
    kinds = {reason_kind(r).key for r in row.failure_reasons}
    wrote = bool(row.answer.model_answer.strip())
    if "not-retrieved" in kinds:
        return "retrieval"
    if wrote and kinds & {"fact-missing", "claim"}:
        return "facts"
    if (kinds & {"quote-invalid", "cited-not-retrieved", "not-grounded"} or row.answer.status == "invalid_citation"
            or ("cited-not-expected" in kinds and not row.expected.abstain) or (wrote and "no-citation" in kinds)):
        return "citation"
    if kinds & {"answered-unanswerable", "no-answer", "malformed"} or row.answer.status == "malformed_output":
        return "decision"
    if "other" in kinds or row.metrics.get("passed") == 0.0:
        return "other"  # a failure the stages do not name is never counted as a pass
    return "passed"


def funnel(rows: Iterable[AnyRow]) -> dict[str, int]:
    """Stage key -> number of rows lost there (every stage present, in funnel order)."""
    counts = dict.fromkeys(_STAGE_KEYS, 0)
    for row in rows:
        counts[stage_of(row)] += 1
    return counts


def stage_index(key: str) -> int:
    return _STAGE_KEYS.index(key)


def stage(key: str) -> Stage:
    return STAGES[stage_index(key)]


def documents_of(row: AnyRow) -> tuple[str, ...]:
    """The documents a case's evidence is on, in label order; empty for an unanswerable case."""
    return tuple(dict.fromkeys(e.source_id.rsplit("#p", 1)[0] for e in row.expected.evidence))


def reason_kinds(rows: Sequence[AnyRow]) -> dict[str, list[int]]:
    """Kind key -> indexes (into `rows`) of the rows with a reason of that kind, in KINDS order."""
    out: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        for key in dict.fromkeys(reason_kind(r).key for r in row.failure_reasons):
            out.setdefault(key, []).append(i)
    order = [k.key for k in KINDS] + [_OTHER.key]
    return {k: out[k] for k in order if k in out}


def kind_label(key: str) -> str:
    return next((k.label for k in KINDS if k.key == key), _OTHER.label)
