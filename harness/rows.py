"""One row per case: the harness scores what a system returned, computes every metric and says why it failed.

What the harness concludes (status, quote validity, retrieval metrics) it computes itself from the system's
`SystemAnswer`; a system never grades itself. `rescore` recomputes a stored row through the same functions.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from pdfrag.citations import check_quote
from pdfrag.text import fold, normalize

from . import metrics as m
from .cases import Case, Evidence
from .records import (
    AnswerRecord,
    CitationResult,
    ClaimRecord,
    EvidenceItem,
    Expected,
    FactResult,
    JudgedClaim,
    QuoteStatus,
    QuoteValidation,
    RetrievedPassage,
    Row,
    Status,
    SystemAnswer,
)

if TYPE_CHECKING:
    import jsonschema

_SOURCE_ID = re.compile(r"^(?P<doc>.+)#p(?P<page>\d+)(?:\.\d+)?$")


def answer_sha256(text: str) -> str:
    """Key for human reviews: the normalised answer text, so whitespace changes do not reopen a review."""
    return hashlib.sha256(normalize(text).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ScoringRules:
    """How answers are scored in a run: the rules the harness applies itself, no model involved (the model judge
    is `harness/judge/`). `pages` (page id -> folded text) enables the check that each retrieved passage's text
    occurs on the page it names; `check_quotes` False only for saved outputs without quotes."""

    ks: tuple[int, ...]
    min_quote_words: int = 4
    pages: Mapping[str, str] | None = None
    check_quotes: bool = True


def build_row(case: Case, answer: SystemAnswer, rules: ScoringRules, *, elapsed_ms: float, repeat: int = 0,
              host: str | None = None, warnings: Sequence[str] = (),
              claims: Sequence[ClaimRecord] | None = None) -> Row:
    """The row of one case. An answer with an error still gets a row, whose metrics are all null."""
    retrieved = tuple(_retrieved(p.rank, p.source_id, p.score, p.text) for p in answer.retrieved)
    passages = [(p.source_id, p.text) for p in answer.retrieved]
    citations = tuple(_check_citation(c.source_id, c.quote, passages, rules) for c in answer.citations)
    status = _status(answer, citations)
    record = AnswerRecord(
        status=status, text=answer.details.get("shown", "" if answer.abstains else answer.answer),
        model_answer=answer.answer, answer_sha256=answer_sha256(answer.answer), raw=answer.raw,
        citations=citations, reasons=tuple(answer.details.get("reasons", ())) or _reasons(answer, citations),
        thinking_chars=answer.details.get("thinking_chars", 0), done_reason=answer.details.get("done_reason"),
        abstained=decided_abstain(status, answer.abstains))
    page_warnings = _page_warnings(answer, rules.pages) if rules.pages is not None else []
    page_warnings += _duplicate_id_warnings(answer)
    page_warnings += reviewer_warnings(answer.answer, status, citations, quotes=rules.check_quotes)
    reviewed_claims = tuple(claims) if claims is not None and answer.error is None else None
    row = Row(
        format=1, case_id=case.id, repeat=repeat, question=case.question, tags=case.tags,
        expected=expected_of(case), retrieved=retrieved, answer=record,
        usage=dict(answer.usage) | {"elapsed_ms": round(elapsed_ms, 3)}, error=answer.error,
        human_claim_review="reviewed" if reviewed_claims is not None else "pending", claims=reviewed_claims,
        metrics={}, fact_results=(), quote_validation=_NOT_APPLICABLE, failure_reasons=(),
        warnings=(*warnings, *page_warnings), host=host)
    return score_row(row, case, rules.ks)


def guarded_row(case: Case, result: SystemAnswer, rules: ScoringRules, **where: Any) -> Row:
    """The row of `result`, built (every record validated as it is made) and serialized as the RowWriter will;
    anything that fails while building or serializing it (a lone surrogate, NaN, an object JSON cannot hold) makes
    it an error row instead (the run goes on, and a resume does not stop at this case again). What was built and
    serialized is not parsed back: the records' own checks ran as they were made."""
    try:
        row = build_row(case, result, rules, **where)
        row.line()
        return row
    except Exception as exc:  # whatever a system's output breaks here is that case's failure alone
        cause = f"{type(exc).__name__}: {exc}".encode("utf-8", "backslashreplace").decode("utf-8")
        return build_row(case, SystemAnswer(error=f"the system's answer could not be stored as a row ({cause[:500]})"),
                         rules, **where)


@lru_cache(maxsize=4096)
def expected_of(case: Case) -> Expected:
    return Expected(
        abstain=case.abstain, facts=case.facts,
        evidence=tuple(EvidenceItem(source_id=e.source_id, quote=e.quote) for e in case.evidence))


_NOT_APPLICABLE = QuoteValidation(status="not_applicable")


# Records are frozen, so one made for the same fields is shared: a run's cases repeat facts, verdicts and passages,
# and `rag-eval score` builds a row per line of a log (bench/bench_scale.py). Each cache is bounded.
@lru_cache(maxsize=4096)
def _fact_result(fact: tuple[str, ...], found: bool) -> FactResult:
    return FactResult(fact=fact, found=found)


@lru_cache(maxsize=1024)
def _quote_validation(status: QuoteStatus, reasons: tuple[str, ...]) -> QuoteValidation:
    return QuoteValidation(status=status, reasons=reasons)


def score_row(row: Row, case: Case, ks: Sequence[int]) -> Row:
    """`row` with its labels, metrics, fact results, quote validation and failure reasons derived from `case`
    and the row's own stored outputs; the human review it carries stays."""
    refs = tuple(m.Retrieved(r.rank, r.page_id, r.text) for r in row.retrieved)
    checked = [c for c in row.answer.citations if c.valid is not None]
    # grounding needs the quotes: none when a citation went unchecked or no citation carries a quote (CSV layout)
    unchecked = len(checked) < len(row.answer.citations) or not any(c.quote for c in row.answer.citations)
    obs = m.Observation(
        evidence=case.evidence, facts=case.facts, should_abstain=case.abstain, retrieved=refs,
        answer=row.answer.model_answer, answered=row.answer.status == "answered", abstained=_abstained(row),
        cited=tuple(m.page_of(c.source_id) for c in row.answer.citations),
        quotes_valid=all(c.valid for c in checked) if checked else None,
        claims=_claim_flags(row), judged_claims=_judged_flags(row), broken=row.answer.status in BROKEN,
        quotes=None if unchecked else tuple(c.quote for c in checked if c.valid))
    metrics = dict.fromkeys(m.metric_names(ks)) if row.error is not None else m.compute(obs, ks)
    # one reason per citation: the same source id and quote cited twice is one citation (and a warning)
    bad = tuple(dict.fromkeys((c.source_id, c.quote, c.reason) for c in checked if not c.valid and c.reason))
    verdicts: dict[float | None, QuoteStatus] = {None: "not_applicable", 1.0: "passed", 0.0: "failed"}
    quote = verdicts[metrics["quote_valid"]]
    facts = tuple(_fact_result(f, found) for f, found in zip(case.facts, obs.facts_found))
    return row.model_copy(update={
        "question": case.question, "tags": case.tags, "expected": expected_of(case), "metrics": metrics,
        "fact_results": facts,
        "quote_validation": _quote_validation(quote, tuple(r for *_, r in bad) if quote == "failed" else ()),
        "failure_reasons": failure_reasons(case, row, obs, facts, bad),
        "warnings": negated_facts(row.warnings, case, obs) if row.error is None else row.warnings})


def _claim_flags(row: Row) -> tuple[bool, ...] | None:
    """Each claim supported or not; None while the row is unreviewed or reviewers disagree on a claim."""
    if row.claims is None or not all(c.settled for c in row.claims):
        return None
    return tuple(c.verdict == "supported" for c in row.claims)


def _judged_flags(row: Row) -> tuple[bool, ...] | None:
    """Each judged claim supported or not (the human verdict, else the judge's; `unverified` is not supported);
    the human flags when no judge rated the answer."""
    if row.judged_claims is None:
        return _claim_flags(row)
    return tuple(c.verdict == "supported" for c in row.judged_claims)


# A reply that could not be produced or parsed: no decision to answer or to abstain was made, so it is never an
# abstention. A model's
# malformed, cut, refused or tool-calling reply is `malformed_output`; `error` is a failure of the harness or the
# server (its row has no metrics at all).
BROKEN: frozenset[Status] = frozenset({"malformed_output", "error"})


def decided_abstain(status: Status, abstains: bool) -> bool:
    """Whether the system decided to give no answer: never for a broken reply (`BROKEN`), whatever it says."""
    return abstains and status not in BROKEN


def _abstained(row: Row) -> bool:
    """The row's decision to abstain, by `decided_abstain`; rows written before the `abstained` field (or before a
    broken reply stopped counting as one) are read by the same rule, so a rescore of an old run applies it."""
    stored = row.answer.abstained if row.answer.abstained is not None else row.answer.status != "answered"
    return decided_abstain(row.answer.status, stored)


def failure_reasons(case: Case, row: Row, obs: m.Observation, facts: Sequence[FactResult],
                    bad_citations: Sequence[tuple[str, str, str]]) -> tuple[str, ...]:
    """Short sentences, always in the same order: error, retrieval, behaviour, citations, grounding, claims, facts;
    one per evidence item, citation and fact. `bad_citations` are (source id, quote, reason) of the citations
    that failed quote validation, each once. An evidence item is "ranked low" when its first rank exceeds the
    number of evidence items (two items cannot both be first: ranks 1 and 2 of two are a perfect retrieval)."""
    if row.error is not None:
        return (f"error: {row.error}",)
    reasons = []
    for item, rank in zip(case.evidence, obs.first_ranks):
        what = item.source_id + (f" containing {item.quote!r}" if item.quote else "")
        if rank is None:
            reasons.append(f"expected {what}, not retrieved in the top {len(obs.retrieved)}")
        elif rank > len(case.evidence):
            reasons.append(f"expected {what}, first retrieved at rank {rank}")
    abstained, status = _abstained(row), row.answer.status
    if status in BROKEN:  # no decision was made: behaviour fails whatever the label (the cause: answer.reasons)
        reasons.append("the system's reply was malformed")
    elif case.abstain and not abstained:
        reasons.append("answered an unanswerable question")
    elif not case.abstain and abstained:
        reasons.append(f"gave no answer to an answerable question (status {status})")
    reasons.extend(f"citation: {r}" for *_, r in bad_citations)
    retrieved_ids = {r.source_id for r in row.retrieved}  # a citation of another id was said not retrieved
    unretrieved = {m.page_of(sid) for sid, _, _ in bad_citations if sid not in retrieved_ids}
    reasons.extend(_citation_precision_reasons(case, row, unretrieved))
    reasons.extend(_grounding_reasons(case, obs))
    reasons.extend(_claim_reasons(row, abstained or status in BROKEN))
    if not case.abstain:
        reasons.extend(_missed(f.fact) for f in facts if not f.found)
    return tuple(reasons)


def _citation_precision_reasons(case: Case, row: Row, said: set[str]) -> list[str]:
    """Per cited page not both retrieved and expected, what it is not; "not retrieved" only where the citation's
    own reason (`said`: pages whose quote check said so) did not already say it."""
    expected = {m.page_of(e.source_id) for e in case.evidence}
    retrieved = {r.page_id for r in row.retrieved}
    out = []
    for page in dict.fromkeys(m.page_of(c.source_id) for c in row.answer.citations):
        missing = [word for word, ok in (("retrieved", page in retrieved or page in said),
                                         ("expected", page in expected)) if not ok]
        if missing:
            out.append(f"cited {page}, not {' or '.join(missing)}")
    if not row.answer.citations and not case.abstain:
        out.append("no passage cited")
    return out


def _grounding_reasons(case: Case, obs: m.Observation) -> list[str]:
    """One reason per fact the answer states that no valid cited quote holds (`metrics.grounded`)."""
    out = []
    for fact, grounded in zip(case.facts, obs.facts_grounded):
        if grounded is False:
            quotes = "; ".join(_short(q, 80) for q in obs.quotes or ()) or "none"
            out.append(f"fact {_alternatives(fact)} is in the answer but in no valid cited quote (valid quotes: "
                       f"{quotes})")
    return out


def _alternatives(fact: Sequence[str]) -> str:
    return " / ".join(repr(a) for a in fact)


def _claim_reasons(row: Row, abstained: bool) -> list[str]:
    if row.claims is None:
        return []
    out = [f"claim {_short(c.claim)} {c.verdict or 'in disagreement between reviewers'}" for c in row.claims
           if c.verdict != "supported"]
    if not row.claims and not abstained:
        out.append("answered, but no claim is annotated")
    return out


def _short(text: str, limit: int = 60) -> str:
    text = normalize(text)
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _missed(alternatives: Sequence[str]) -> str:
    if len(alternatives) == 1:
        return f"fact {alternatives[0]!r} not in answer"
    return "fact not in answer: none of " + ", ".join(repr(a) for a in alternatives)


def with_review(row: Row, claims: Sequence[ClaimRecord] | None, ks: Sequence[int], *,
                judged: Sequence[JudgedClaim] | None = None) -> Row:
    """`row` reviewed with `claims` (None: pending again) and `judged` claims (None: not judged), its metrics
    recomputed. A claim in disagreement between reviewers keeps the row pending, its claims shown."""
    if row.error is not None:
        return row
    state = "reviewed" if claims is not None and all(c.settled for c in claims) else "pending"
    updated = row.model_copy(update={"human_claim_review": state, "claims": None if claims is None else tuple(claims),
                                     "judged_claims": None if judged is None else tuple(judged)})
    return score_row(updated, case_of(row), ks)


def case_of(row: Row) -> Case:
    """The case a row was scored against, from the labels it stores."""
    return Case(id=row.case_id, question=row.question, abstain=row.expected.abstain, facts=row.expected.facts,
                evidence=tuple(Evidence(e.source_id, e.quote) for e in row.expected.evidence), tags=row.tags)


def _retrieved(rank: int, source_id: str, score: float | None, text: str) -> RetrievedPassage:
    # a passage without a score (saved outputs) recurs across cases; a live run's scores make each one new
    return _unscored(rank, source_id, text) if score is None else _passage(rank, source_id, round(score, 6), text)


@lru_cache(maxsize=4096)
def _unscored(rank: int, source_id: str, text: str) -> RetrievedPassage:
    return _passage(rank, source_id, None, text)


def _passage(rank: int, source_id: str, score: float | None, text: str) -> RetrievedPassage:
    match = _SOURCE_ID.match(source_id)
    doc, page = (match["doc"], int(match["page"])) if match else (source_id, None)
    page_id = f"{doc}#p{page}" if page is not None else source_id
    return RetrievedPassage(rank=rank, source_id=source_id, page_id=page_id, doc_id=doc, page=page or None,
                            score=score, text=text)


def _check_citation(source_id: str, quote: str, passages: Sequence[tuple[str, str]],
                    rules: ScoringRules) -> CitationResult:
    if not rules.check_quotes and not quote:
        known = any(sid == source_id for sid, _ in passages)
        return CitationResult(
            source_id=source_id, quote=quote, valid=None if known else False,
            reason=None if known else f"cited {source_id!r} was not among the retrieved passages")
    verdict = check_quote(source_id, quote, passages, min_words=rules.min_quote_words)
    return CitationResult(source_id=source_id, quote=quote, valid=verdict.valid, reason=verdict.reason)


def _status(answer: SystemAnswer, citations: Sequence[CitationResult]) -> Status:
    """error, malformed_output, invalid_citation (a citation failed), no_answer (abstained), else answered."""
    if answer.error is not None:
        return "error"
    if answer.malformed is not None:
        return "malformed_output"
    if any(c.valid is False for c in citations):
        return "invalid_citation"
    return "no_answer" if answer.abstains else "answered"


def _reasons(answer: SystemAnswer, citations: Sequence[CitationResult]) -> tuple[str, ...]:
    reasons = [r for r in (answer.error, answer.malformed) if r]
    return (*reasons, *(c.reason for c in citations if c.reason))


def _duplicate_id_warnings(answer: SystemAnswer) -> list[str]:
    """One warning when retrieved passages share a source id: quotes are then checked against all of them, and
    retrieval metrics cannot tell the passages apart."""
    counts: dict[str, int] = {}
    for p in answer.retrieved:
        counts[p.source_id] = counts.get(p.source_id, 0) + 1
    shared = [f"{sid} ({n} passages)" for sid, n in counts.items() if n > 1]
    if not shared:
        return []
    return [f"retrieved passages share a source id: {', '.join(shared)}; a quote counts if it occurs in any "
            "passage with its id (give each chunk its own id, e.g. <file>#p<page>.<n>)"]


def reviewer_warnings(text: str, status: Status, citations: Sequence[CitationResult], *,
                      quotes: bool = True) -> list[str]:
    """What no check fails but a reviewer should see in what the system returned, each beginning with its kind and a
    colon (`records.REVIEW_WARNINGS`): an empty answer not marked as abstaining; the same source id and quote cited
    twice; citations whose quotes the layout does not carry (`quotes` False: quote_valid and grounded cannot see
    them); text that speaks to a grader rather than the user. A negated fact depends on the labels too: it is
    `negated_facts`, renewed with every scoring."""
    out = []
    if status in ("answered", "invalid_citation") and not text.strip():
        out.append("empty answer: the answer is empty but not marked as abstaining")
    counts: dict[tuple[str, str], int] = {}
    for c in citations if len(citations) > 1 else ():
        counts[c.source_id, c.quote] = counts.get((c.source_id, c.quote), 0) + 1
    out += [f"duplicate citation: {sid} cited {n} times with the same quote {_short(quote, 60)}"
            for (sid, quote), n in counts.items() if n > 1]
    if citations and not quotes:
        out.append("quotes not checked: the saved layout carries no quotes, so quote_valid and grounded cannot see "
                   "whether the cited passages say what the answer says")
    instruction = m.instruction_like(text)
    if instruction is not None:
        out.append(f"instruction-like text: {_short(instruction, 80)} in the answer")
    return out


_NEGATED = "negated fact:"


def negated_facts(warnings: Sequence[str], case: Case, obs: m.Observation) -> tuple[str, ...]:
    """`warnings` with the `negated fact` ones renewed: one per fact the answer states with a negation within three
    words before it (`metrics.negation_before`); the fact rule finds it all the same."""
    kept = tuple(w for w in warnings if not w.startswith(_NEGATED))
    negated = []
    for fact, found in zip(case.facts, obs.facts_found):
        word = m.negation_before(obs.folded_answer, fact) if found else None
        if word is not None:
            negated.append(f"{_NEGATED} {word!r} shortly before fact {_alternatives(fact)} in the answer; the fact "
                           "rule finds it all the same")
    return (*kept, *negated)


def fold_pages(pages: Mapping[str, str]) -> dict[str, str]:
    """Page id -> folded text, for the page check (built once per run)."""
    return {page_id: fold(text) for page_id, text in pages.items()}


def _page_warnings(answer: SystemAnswer, pages: Mapping[str, str]) -> list[str]:
    """A warning for each retrieved passage whose source id names no page of the documents, or whose text does
    not occur on the page it names (0-based page numbers are the usual cause)."""
    out = []
    for p in answer.retrieved:
        page_id = m.page_of(p.source_id)
        if page_id not in pages:
            out.append(f"retrieved {p.source_id}: no such page in the documents (ids are <file>#p<page>, paths "
                       "relative to --docs, pages from 1)")
            continue
        text = fold(p.text)
        if text and text not in pages[page_id]:
            doc = page_id.rsplit("#p", 1)[0]
            found = [pid for pid, t in pages.items() if pid.startswith(doc + "#p") and text in t]
            hint = f"; it is on {found[0]} (0-based page numbers?)" if found else ""
            out.append(f"retrieved {p.source_id}: its text does not occur on that page{hint}")
    return out


@lru_cache(maxsize=1)
def _row_validator() -> jsonschema.Draft202012Validator:
    import jsonschema  # only where a row is checked against the published schema (tests, `rag-eval check`)

    text = resources.files("harness").joinpath("schemas/row.schema.json").read_text(encoding="utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


def validate_row(data: dict) -> None:
    """Check one rows.jsonl object against the *published* schema file (what users' tools read); raise
    ValueError naming the first field that breaks it."""
    error = next(iter(sorted(_row_validator().iter_errors(data), key=lambda e: list(e.absolute_path))), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "row"
        raise ValueError(f"row for case {data.get('case_id')!r} breaks the row schema at {where}: {error.message}")
