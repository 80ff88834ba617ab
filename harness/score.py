"""Offline scoring of saved outputs: five separate checks per case, never merged into one score.

The checks are pure functions (plain data in, a float in [0, 1] or None for "not applicable" out);
`SCORE_CHECKS` is the one list of their names. Every case yields a `ScoreRow`; `summarize` aggregates the rows
with counts of scored and not-applicable values; `score_saved` is the whole path from files to a `ScoreResult`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from chatbot import __version__
from chatbot.store import atomic_write_text
from chatbot.text import normalize

from .metrics import fact_found
from harness.chart import svg_bars
from harness.lexical import LexicalIndex
from harness.saved import InputFile, SavedCase, SavedClaim, SavedOutputs, load_saved

__all__ = [
    "SCORE_CHECKS", "CheckSummary", "ScoreCheck", "ScoreResult", "ScoreRow", "ScoreSummary",
    "abstention_correctness", "chart_bars", "citation_precision", "claim_support", "key_point_coverage", "point_found",
    "retrieval_recall", "score_case", "score_outputs", "score_saved", "summarize", "write_outputs",
]


@dataclass(frozen=True)
class ScoreCheck:
    """A check's `name` (the key in rows and summaries), its printed `label` and its table `short` header."""

    name: str
    label: str
    short: str


SCORE_CHECKS: tuple[ScoreCheck, ...] = (
    ScoreCheck("retrieval_recall", "retrieval recall", "recall"),
    ScoreCheck("citation_precision", "citation precision", "citation"),
    ScoreCheck("claim_support", "claim support", "claims"),
    ScoreCheck("key_point_coverage", "key-point coverage", "points"),
    ScoreCheck("abstention", "abstention", "abstain"),
)


# ---------------------------------------------------------------- the five checks


def retrieval_recall(expected: Collection[str], retrieved: Collection[str]) -> float | None:
    """Share of the distinct expected chunk ids that are among the retrieved ids.

    None (not applicable) when nothing is expected, e.g. for a question the documents do not answer.
    """
    wanted = set(expected)
    if not wanted:
        return None
    return len(wanted & set(retrieved)) / len(wanted)


def citation_precision(
    cited: Sequence[str], retrieved: Collection[str], expected: Collection[str], *, should_abstain: bool
) -> float:
    """Share of the distinct cited chunk ids that were both retrieved and expected.

    With no citation: 1.0 for a case that should abstain (citing nothing is right), 0.0 otherwise.
    """
    distinct = list(dict.fromkeys(cited))
    if not distinct:
        return 1.0 if should_abstain else 0.0
    good = set(retrieved) & set(expected)
    return sum(c in good for c in distinct) / len(distinct)


def claim_support(supported: Sequence[bool], *, candidate_abstains: bool) -> float:
    """Share of the annotated claims of an answer that have at least one supporting chunk.

    With no annotated claim: 1.0 if the candidate abstained (nothing was claimed), 0.0 otherwise, so an answer
    nobody reviewed never passes silently.
    """
    if not supported:
        return 1.0 if candidate_abstains else 0.0
    return sum(bool(s) for s in supported) / len(supported)


def point_found(answer: str, alternatives: Sequence[str]) -> bool:
    """True when any alternative occurs in `answer` on word boundaries, after `normalize()` and casefold on
    both sides (so case and runs of whitespace do not matter, and "15" does not match inside "150").
    The same rule as the harness's fact check, so both kinds of evaluation match text alike."""
    return fact_found(answer, alternatives)


def key_point_coverage(answer: str, required_points: Sequence[Sequence[str]]) -> float | None:
    """Share of the required points found in the answer (see `point_found`); each point is a sequence of
    accepted alternative phrasings. None (not applicable) when no point is required."""
    if not required_points:
        return None
    return sum(point_found(answer, p) for p in required_points) / len(required_points)


def abstention_correctness(should_abstain: bool, candidate_abstains: bool) -> float:
    """1.0 when the observed abstention equals the expected one, else 0.0."""
    return 1.0 if should_abstain == candidate_abstains else 0.0


# ---------------------------------------------------------------- one row per case


@dataclass(frozen=True)
class ScoreRow:
    """The five check values of one case (None = not applicable), whether all applicable ones are 1.0, short
    reasons for every value below 1.0, and the retrieved ids scored with their source ("saved" or "lexical")."""

    case_id: str
    retrieval_recall: float | None
    citation_precision: float
    claim_support: float
    key_point_coverage: float | None
    abstention: float
    pass_all: bool
    failures: tuple[str, ...]
    retrieved_chunk_ids: tuple[str, ...]
    retrieved_by: str

    def value(self, name: str) -> float | None:
        """The value of the check called `name` (one of SCORE_CHECKS)."""
        return getattr(self, name)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScoreRow:
        names = {f.name for f in fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names})


def _quote(text: str, limit: int = 60) -> str:
    text = normalize(text)
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _failures(case: SavedCase, claims: Sequence[SavedClaim], retrieved: Sequence[str]) -> list[str]:
    """Short deterministic reasons, in check order, for every check below 1.0."""
    expected = case.expected_chunk_ids
    reasons = [f"expected chunk {c} not retrieved" for c in dict.fromkeys(expected) if c not in retrieved]
    for chunk in dict.fromkeys(case.cited_chunk_ids):
        missing = [word for word, ok in (("retrieved", chunk in retrieved), ("expected", chunk in expected)) if not ok]
        if missing:
            reasons.append(f"cited chunk {chunk} not {' or '.join(missing)}")
    if not case.cited_chunk_ids and not case.should_abstain:
        reasons.append("no chunk cited")
    reasons += [f"claim {_quote(c.claim)} unsupported" for c in claims if not c.supported]
    if not claims and not case.candidate_abstains:
        reasons.append("answered, but no claim is annotated")
    reasons += [
        f"required point {_quote(p[0])} missing"
        for p in case.required_points if not point_found(case.candidate_answer, p)
    ]
    if case.should_abstain != case.candidate_abstains:
        reasons.append(
            "answered although it should abstain" if case.should_abstain else "abstained although it should answer")
    return reasons


def score_case(
    case: SavedCase, claims: Sequence[SavedClaim], retrieved: Sequence[str], *, retrieved_by: str = "saved"
) -> ScoreRow:
    """Run the five checks on one case, given its annotated claims and the retrieved chunk ids to score."""
    values = {
        "retrieval_recall": retrieval_recall(case.expected_chunk_ids, retrieved),
        "citation_precision": citation_precision(
            case.cited_chunk_ids, retrieved, case.expected_chunk_ids, should_abstain=case.should_abstain
        ),
        "claim_support": claim_support([c.supported for c in claims], candidate_abstains=case.candidate_abstains),
        "key_point_coverage": key_point_coverage(case.candidate_answer, case.required_points),
        "abstention": abstention_correctness(case.should_abstain, case.candidate_abstains),
    }
    return ScoreRow(
        case_id=case.case_id,
        **values,
        pass_all=all(v is None or v == 1.0 for v in values.values()),
        failures=tuple(_failures(case, claims, retrieved)),
        retrieved_chunk_ids=tuple(retrieved),
        retrieved_by=retrieved_by,
    )


# ---------------------------------------------------------------- aggregation


@dataclass(frozen=True)
class CheckSummary:
    """Mean of one check over the cases, with how many cases were scored and how many were not applicable.

    `mean` is over scored cases only, or over all cases with not-applicable counted as 1.0 when the summary's
    `na_as_pass` is set; None when there is nothing to average.
    """

    name: str
    mean: float | None
    scored: int
    not_applicable: int


def _summarize_check(name: str, values: Sequence[float | None], *, na_as_pass: bool) -> CheckSummary:
    scored = [v for v in values if v is not None]
    not_applicable = len(values) - len(scored)
    total, count = sum(scored), len(scored)
    if na_as_pass:
        total, count = total + not_applicable, len(values)
    return CheckSummary(name, total / count if count else None, len(scored), not_applicable)


@dataclass(frozen=True)
class ScoreSummary:
    """Means with counts per check, the number of cases and of cases passing every applicable check, the
    settings (`k` is the lexical retriever's depth, used for `lexical_case_ids`) and the input files."""

    cases: int
    passes: int
    checks: tuple[CheckSummary, ...]
    na_as_pass: bool
    k: int
    lexical_case_ids: tuple[str, ...]
    inputs: tuple[InputFile, ...]

    def check(self, name: str) -> CheckSummary:
        return next(c for c in self.checks if c.name == name)

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "passes": self.passes,
            "checks": {
                c.name: {"mean": c.mean, "scored": c.scored, "not_applicable": c.not_applicable} for c in self.checks
            },
            "settings": {
                "na_as_pass": self.na_as_pass,
                "k": self.k,
                "retrieved_by_lexical_retriever": list(self.lexical_case_ids),
            },
            "inputs": [f.to_json() for f in self.inputs],
            "version": __version__,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScoreSummary:
        settings = data["settings"]
        return cls(
            cases=data["cases"],
            passes=data["passes"],
            checks=tuple(CheckSummary(name, **values) for name, values in data["checks"].items()),
            na_as_pass=settings["na_as_pass"],
            k=settings["k"],
            lexical_case_ids=tuple(settings["retrieved_by_lexical_retriever"]),
            inputs=tuple(InputFile.from_json(f) for f in data["inputs"]),
        )


def summarize(
    rows: Sequence[ScoreRow], *, na_as_pass: bool = False, k: int = 2, inputs: Sequence[InputFile] = ()
) -> ScoreSummary:
    """Aggregate rows: a mean per check in SCORE_CHECKS order (see CheckSummary) and the count of passes."""
    checks = tuple(
        _summarize_check(c.name, [r.value(c.name) for r in rows], na_as_pass=na_as_pass) for c in SCORE_CHECKS
    )
    return ScoreSummary(
        cases=len(rows),
        passes=sum(r.pass_all for r in rows),
        checks=checks,
        na_as_pass=na_as_pass,
        k=k,
        lexical_case_ids=tuple(r.case_id for r in rows if r.retrieved_by == "lexical"),
        inputs=tuple(inputs),
    )


# ---------------------------------------------------------------- from files to a result


@dataclass(frozen=True)
class ScoreResult:
    """One row per case, in the cases file's order, and their summary."""

    rows: tuple[ScoreRow, ...]
    summary: ScoreSummary

    @property
    def failed(self) -> tuple[ScoreRow, ...]:
        return tuple(r for r in self.rows if not r.pass_all)


def score_outputs(saved: SavedOutputs, *, k: int = 2, na_as_pass: bool = False) -> ScoreResult:
    """Score loaded outputs; cases without saved retrieved ids get the top `k` chunks of the lexical retriever."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    claims = saved.claims_by_case()
    rows = [
        score_case(case, claims.get(case.case_id, ()), retrieved, retrieved_by=source)
        for case, (retrieved, source) in zip(saved.cases, _retrievals(saved, k))
    ]
    return ScoreResult(tuple(rows), summarize(rows, na_as_pass=na_as_pass, k=k, inputs=saved.files))


def _retrievals(saved: SavedOutputs, k: int) -> list[tuple[tuple[str, ...], str]]:
    """The retrieved ids to score for each case: the saved ones, else the lexical retriever's top k."""
    index: LexicalIndex | None = None
    retrievals = []
    for case in saved.cases:
        if case.retrieved_chunk_ids is not None:
            retrievals.append((case.retrieved_chunk_ids, "saved"))
            continue
        if index is None:
            index = LexicalIndex([c.text for c in saved.chunks])
        retrievals.append((tuple(saved.chunks[i].chunk_id for i, _ in index.search(case.question, k)), "lexical"))
    return retrievals


def score_saved(
    cases_path: str | Path,
    chunks_path: str | Path | None = None,
    claims_path: str | Path | None = None,
    *,
    k: int = 2,
    na_as_pass: bool = False,
) -> ScoreResult:
    """Load saved outputs (CSV or JSONL, see `harness.saved`) and score every case; no model is called."""
    return score_outputs(load_saved(cases_path, chunks_path, claims_path), k=k, na_as_pass=na_as_pass)


def write_outputs(result: ScoreResult, out_dir: str | Path) -> tuple[Path, ...]:
    """Write `score_rows.jsonl`, `score_summary.json` and `score_chart.svg` into `out_dir` (created if needed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows_path, summary_path, chart_path = out / "score_rows.jsonl", out / "score_summary.json", out / "score_chart.svg"
    rows = "".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in result.rows)
    atomic_write_text(rows_path, rows)
    atomic_write_text(summary_path, json.dumps(result.summary.to_json(), indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(chart_path, svg_bars(chart_bars(result.summary), title=_chart_title(result.summary)))
    return rows_path, summary_path, chart_path


def chart_bars(summary: ScoreSummary) -> list[tuple[str, float | None]]:
    """One (label, mean) bar per check, in SCORE_CHECKS order."""
    return [(c.label, summary.check(c.name).mean) for c in SCORE_CHECKS]


def _chart_title(summary: ScoreSummary) -> str:
    na = "n/a counted as 1.0" if summary.na_as_pass else "n/a left out"
    return f"{summary.cases} cases, {summary.passes} pass every check ({na})"
