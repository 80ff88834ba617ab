"""Drafts -> cases: accepted (and edited) drafts become labelled cases that pass `rag-eval check`. With several
reviewers, what counts is the settled decision (`Draft.decision`: all agree, or a resolution).

Tags: `drafted`, `draft:<type>`, the verification tags (`lexical`/`paraphrase`, `hard`, `parametric`), and
`unreviewed` for drafts no human has seen (only with `include_unreviewed`). The type is the model's word for its
facts (a number, a date, a name...): a human who changed the facts wrote another answer, which the model's type
may not describe, so such a case has no `draft:<type>` tag (its notes say which was dropped). Never `heldout`:
which cases to hold out is a human's choice. Provenance goes into `notes`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pdfrag.text import fold

from ..cases import DRAFTED_TAG
from .records import Draft

EXPORTED = ("accepted", "edited")


@dataclass(frozen=True)
class Export:
    """The cases written, and why the other drafts were left out (reason -> count)."""

    cases: tuple[dict, ...]
    left_out: dict[str, int]


def to_case(draft: Draft) -> dict:
    """One draft as a case dict in the cases-file layout."""
    unreviewed = draft.decision.status == "pending"
    stale = _facts_changed(draft)
    tags = [DRAFTED_TAG, *([] if stale else [f"draft:{draft.type}"]),
            *(t for t in draft.verification.tags if t != "unanswerable"), *(["unreviewed"] if unreviewed else [])]
    p = draft.provenance
    origin = (f"drafted from {draft.source_id} by {p.model} (digest {p.model_digest[:12]}), prompt sha256 "
              f"{p.prompt_sha256[:12]}, seed {p.seed}, {p.drafted_at}") if p else f"drafted from {draft.source_id}"
    decision = draft.decision
    who = "not reviewed by a human" if unreviewed else f"{decision.status} by {decision.by or 'unknown'} at " \
                                                       f"{decision.at or '?'}"
    if draft.in_disagreement and draft.resolution is not None:
        who = "reviewers disagreed (" + ", ".join(f"{r.by or 'unknown'} {r.verdict}" for r in draft.reviews) + \
              f"); resolved {who}"
    edited = "; question/quote/facts edited by a human" if draft.original else ""
    edited += f" (the model's type draft:{draft.type} dropped: the facts changed)" if stale else ""
    case = {"id": f"draft-{draft.draft_id}", "question": draft.question,
            "evidence": [{"source_id": pid, "quote": draft.quote} for pid in draft.evidence],
            "facts": list(draft.facts), "abstain": draft.kind == "unanswerable", "tags": tags,
            "notes": f"{origin}; draft {draft.draft_id}; {who}{edited}"}
    if draft.kind == "unanswerable":
        case["evidence"], case["facts"] = [], []
    return case


def _facts_changed(draft: Draft) -> bool:
    """Whether a human edit changed the facts (after fold(): not for case or spacing alone)."""
    if draft.original is None:
        return False
    return [fold(f) for f in draft.original.get("facts", ())] != [fold(f) for f in draft.facts]


def to_cases(drafts: Sequence[Draft], *, include_unreviewed: bool = False) -> Export:
    """Accepted and edited drafts that pass verification (plus pending ones that pass, with
    `include_unreviewed`), in file order. A draft whose reviewers disagree stays out until it is resolved, even
    with `include_unreviewed`: a human has seen it."""
    cases: list[dict] = []
    left_out: Counter[str] = Counter()
    for draft in drafts:
        status = draft.decision.status
        if draft.kind == "error":
            left_out["error entry"] += 1
        elif status == "rejected":
            left_out["rejected by a human"] += 1
        elif status == "pending" and draft.in_disagreement:
            left_out["reviewers disagree (settle with `rag-eval draft review --resolve`)"] += 1
        elif not draft.verification.passed:
            left_out["failed verification"] += 1
        elif status in EXPORTED or (status == "pending" and include_unreviewed):
            cases.append(to_case(draft))
        else:
            left_out["pending (no human decision; --include-unreviewed adds them)"] += 1
    return Export(tuple(cases), dict(left_out))
