"""Human decisions on drafts: accept, reject with a reason, or edit (which re-runs the checks); CSV round trip.

A draft that failed verification cannot be accepted as it is: edit it until the checks pass, or reject it.
Edits re-run the deterministic checks and the BM25 round trip; the dense rank, the parametric check and dedupe
need the model server and are not re-run (the draft's notes say so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from pdfrag.text import fold

from ..errors import InputError
from ..inputs import csv_text, open_csv
from ..records import QUESTION_CHARS
from .collection import Collection
from .records import Decision, Draft, Reason, Verification
from .unanswerable import bm25_check
from .verify import Limits, check_draft, is_deictic, too_long

CSV_COLUMNS = ("draft_id", "kind", "source_id", "type", "question", "quote", "facts", "checks", "decision",
               "reason", "reviewer", "resolution")
FACT_SEPARATOR = " | "
_LIMITS = Limits()


def decide(draft: Draft, status: str, *, by: str, at: str, reason: str | None = None) -> Draft:
    """Reviewer `by` accepts or rejects (with a reason), or withdraws their decision (pending); the other
    reviewers' decisions stay. Raises InputError for what cannot be."""
    if status not in ("pending", "accepted", "rejected"):
        raise InputError(f"{draft.draft_id}: decision {status!r} is not pending, accepted or rejected")
    if draft.kind == "error" and status != "pending":
        raise InputError(f"{draft.draft_id}: an error entry ({draft.error}) has nothing to decide; rerun "
                         "`rag-eval draft` to draft that page again")
    _check_settling(draft, status, reason)
    return draft.with_decision(Decision(status, reason.strip() if status == "rejected" and reason else None,
                                        by, at))


def resolve_disagreement(draft: Draft, status: str, *, by: str, at: str, reason: str | None = None) -> Draft:
    """Settle a disagreement between reviewers: `accepted`, or `rejected` with a reason, by resolver `by`. A
    later resolution replaces an earlier one. Raises InputError when the reviewers do not disagree."""
    if status not in ("accepted", "rejected"):
        raise InputError(f"{draft.draft_id}: resolution {status!r} is not accepted or rejected")
    if not draft.in_disagreement:
        raise InputError(f"{draft.draft_id}: its reviewers do not disagree, so there is nothing to resolve; "
                         "leave resolution blank")
    _check_settling(draft, status, reason)
    return draft.with_resolution(Decision(status, reason.strip() if status == "rejected" and reason else None,
                                          by, at))


def _check_settling(draft: Draft, status: str, reason: str | None) -> None:
    if status == "rejected" and not (reason or "").strip():
        raise InputError(f"{draft.draft_id}: a rejection needs a reason")
    if status == "accepted" and not draft.verification.passed:
        raise InputError(f"{draft.draft_id}: failed verification ({failures(draft)}); edit it until the checks "
                         "pass, or reject it")


def edit(draft: Draft, collection: Collection, *, question: str, quote: str, facts: Sequence[str], by: str, at: str,
         limits: Limits = _LIMITS, abstain_below: float = 2.5) -> Draft:
    """The draft with a human's question, quote and facts, checked again; `by`'s decision becomes `edited` (an
    acceptance of the edited draft). Other reviewers' decisions stay: they were about the earlier text, and a
    rejection among them shows as a disagreement to resolve."""
    if draft.kind == "error":
        raise InputError(f"{draft.draft_id}: an error entry cannot be edited; rerun `rag-eval draft`")
    original = draft.original or {"question": draft.question, "quote": draft.quote, "facts": list(draft.facts)}
    question, quote, facts = question.strip(), quote.strip(), tuple(f.strip() for f in facts if f.strip())
    if draft.kind == "unanswerable":
        verification = _recheck_unanswerable(draft, question, collection, abstain_below,
                                             "edited by a human: the changed-term check was not re-run")
        evidence: tuple[str, ...] = ()
    else:
        checked = check_draft(question, quote, facts, draft.source_id, collection.view, limits)
        bm25 = collection.bm25_rank(question, quote, checked.evidence) if checked.evidence else None
        verification = Verification(not checked.reasons, checked.reasons, checked.tags, round(checked.overlap, 4),
                                    checked.longest_ngram, checked.language, None, bm25,
                                    notes=("edited by a human: dense rank, parametric check and dedupe not re-run",))
        evidence = checked.evidence
    return replace(draft, question=question, quote=quote if draft.kind == "answerable" else "", facts=facts,
                   evidence=evidence, verification=verification,
                   original=original).with_decision(Decision("edited", None, by, at))


def reverify(draft: Draft, collection: Collection, *, limits: Limits = _LIMITS, abstain_below: float = 2.5) -> Draft:
    """`draft` with the deterministic checks run again on its question, quote and facts, since a drafts file is
    only a file: one marked passed that fails them now comes back failed, with the reasons found. The checks that
    need the model server (dense rank, parametric answer, dedupe) keep the file's verdict."""
    if draft.kind not in ("answerable", "unanswerable") or not draft.verification.passed:
        return draft
    if draft.kind == "unanswerable":
        reasons = _recheck_unanswerable(draft, draft.question, collection, abstain_below, "").reasons
    else:
        reasons = check_draft(draft.question, draft.quote, draft.facts, draft.source_id, collection.view,
                              limits).reasons
    if not reasons:
        return draft
    note = "checked again before writing cases: failed, although the drafts file said passed"
    return replace(draft, verification=replace(draft.verification, passed=False, reasons=tuple(reasons),
                                               notes=(*draft.verification.notes, note)))


def _recheck_unanswerable(draft: Draft, question: str, collection: Collection, abstain_below: float,
                          note: str) -> Verification:
    if (oversize := too_long("question", question, QUESTION_CHARS)) is not None:  # nothing more to check
        return replace(draft.verification, passed=False, reasons=(oversize,),
                       notes=draft.verification.notes + ((note,) if note else ()))
    reasons = []
    if not fold(question):
        reasons.append(Reason("question_missing", "the draft has no question"))
    if (phrase := is_deictic(question)) is not None:
        reasons.append(Reason("deictic_question", f"the question says {phrase!r}"))
    above, score = bm25_check(question, collection.sentences, abstain_below)
    reasons += [above] if above else []
    notes = draft.verification.notes + ((note,) if note else ())
    return replace(draft.verification, passed=not reasons, reasons=tuple(reasons), best_bm25=round(score, 4),
                   notes=notes)


def failures(draft: Draft) -> str:
    """Each failed check with what it found ("code: message; ..."): the numbers and the text the checker saw."""
    return "; ".join(f"{r.code}: {r.message}" for r in draft.verification.reasons)


def checks_summary(draft: Draft) -> str:
    """One line saying what the checks found, for the CSV and the terminal."""
    v = draft.verification
    if draft.kind == "error":
        return f"error: {draft.error}"
    head = "passed" if v.passed else f"FAILED {failures(draft)}"
    ranks = f"dense rank {v.dense_rank or '-'}, bm25 rank {v.bm25_rank or '-'}" if draft.kind == "answerable" \
        else f"best bm25 {v.best_bm25}"
    return f"{head} | tags {', '.join(v.tags) or '-'} | {ranks}"


def export_csv(drafts: Sequence[Draft], *, reviewer: str, name_column: str = "") -> str:
    """CSV text, one line per draft (error entries left out), with `reviewer`'s own decisions (blank where they
    have not decided) and `name_column` in the reviewer column. Change question, quote or facts to edit;
    `resolution` is left blank for a resolver to fill in on drafts whose reviewers disagree."""
    lines = []
    for d in drafts:
        if d.kind == "error":
            continue
        mine = next((r for r in d.reviews if r.by == reviewer), None)
        status = "" if mine is None else mine.status
        lines.append([d.draft_id, d.kind, d.source_id, d.type, d.question, d.quote, FACT_SEPARATOR.join(d.facts),
                      checks_summary(d), status, (mine and mine.reason) or "", name_column, ""])
    return csv_text(CSV_COLUMNS, lines)


def import_csv(path: str | Path, drafts: Sequence[Draft], collection: Collection, *, by: str, at: str,
               limits: Limits = _LIMITS, abstain_below: float = 2.5, by_is_given: bool = False) -> list[Draft]:
    """The drafts with the decisions of a CSV in the export layout. A blank decision leaves a draft as it is;
    `accepted` (or `edited`) with a changed question, quote or facts is an edit. A filled `reviewer` column names
    whose decision a line holds (else `by`; `by_is_given` means `by` was asked for, and a different name in the
    column is a problem; a decision that names nobody, `by` being blank, is one too). `resolution` (accepted, or
    rejected with the reason in `reason`) settles a draft whose reviewers disagree; a line gives a decision or a
    resolution, not both. Every problem is reported at once as file:line: field: message, and then nothing is
    changed."""
    reader, problems = open_csv(path, ("draft_id", "question", "quote", "facts", "decision", "reason"), CSV_COLUMNS,
                                "the drafts CSV")
    by_id = {d.draft_id: i for i, d in enumerate(drafts)}
    out = list(drafts)
    line = 1
    for record in reader:
        line += 1
        ident = (record["draft_id"] or "").strip()
        if ident not in by_id:
            problems.add(line, f"draft_id: {ident!r} is not in the drafts file; export again")
            continue
        named = (record.get("reviewer") or "").strip()
        if named and by_is_given and named != by:
            problems.add(line, f"reviewer: the sheet says {named!r} but --reviewer says {by!r}; drop one")
            continue
        if not (named or by) and ((record.get("decision") or "").strip() or (record.get("resolution") or "").strip()):
            problems.add(line, "reviewer: blank, and no reviewer name is known; fill the column or give --reviewer "
                               "NAME")
        try:
            out[by_id[ident]] = _apply(out[by_id[ident]], record, collection, named or by, at, limits,
                                       abstain_below)
        except InputError as exc:
            field = "resolution" if (record.get("resolution") or "").strip() else "decision"
            problems.add(line, f"{field}: {exc}")
    problems.raise_if_any("the drafts CSV")
    return out


def _apply(draft: Draft, record: dict, collection: Collection, by: str, at: str, limits: Limits,
           abstain_below: float) -> Draft:
    status = (record["decision"] or "").strip().lower()
    resolution = (record.get("resolution") or "").strip().lower()
    if status and resolution:
        raise InputError(f"{draft.draft_id}: a line gives a decision or a resolution, not both (the reason column "
                         "belongs to one of them)")
    if resolution:
        return resolve_disagreement(draft, resolution, by=by, at=at, reason=record.get("reason"))
    if not status:
        return draft
    question, quote = (record["question"] or "").strip(), (record["quote"] or "").strip()
    facts = [f.strip() for f in (record["facts"] or "").split(FACT_SEPARATOR.strip()) if f.strip()]
    changed = (question, quote, tuple(facts)) != (draft.question, draft.quote, draft.facts)
    if status in ("accepted", "edited") and not changed and any(r.by == by and r.status == "edited"
                                                                for r in draft.reviews):
        return draft  # this reviewer's edit, imported again (the sheet it came from, or an export of it)
    if status == "edited" and not changed and not draft.verification.passed:
        raise InputError(f"{draft.draft_id}: `edited` but question, quote and facts are as drafted, and it failed "
                         f"verification ({failures(draft)}); change one of them, or reject it")
    if status in ("accepted", "edited") and (changed or status == "edited"):
        edited = edit(draft, collection, question=question, quote=quote, facts=facts, by=by, at=at, limits=limits,
                      abstain_below=abstain_below)
        if not edited.verification.passed:
            raise InputError(f"{draft.draft_id}: the edited draft fails verification ({failures(edited)})")
        return edited
    if status == "edited":
        status = "accepted"
    return decide(draft, status, by=by, at=at, reason=record.get("reason"))
