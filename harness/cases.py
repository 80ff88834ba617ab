"""Labelled cases: loading, schema validation, and the label check against the documents."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

from chatbot.chunking import Chunk
from chatbot.pdfs import Document
from chatbot.text import fold

from .inputs import Problems, schema_lines

DRAFTED_TAG = "drafted"  # cases written by `rag-eval draft cases`
ORIGINS = ("hand-written", "drafted")


def origin(tags: tuple[str, ...] | list[str]) -> str:
    """`drafted` for a case carrying the drafted tag, else `hand-written`: the model that drafted a case may be
    the one answering it, so the two are summarised apart."""
    return ORIGINS[1] if DRAFTED_TAG in tags else ORIGINS[0]


@dataclass(frozen=True)
class Evidence:
    """A page that answers the case; `quote`, when given, must be inside a retrieved chunk for it to count."""

    source_id: str
    quote: str | None = None


@dataclass(frozen=True)
class Case:
    id: str
    question: str
    evidence: tuple[Evidence, ...]
    facts: tuple[tuple[str, ...], ...]  # each fact as its accepted alternatives
    abstain: bool
    notes: str = ""
    tags: tuple[str, ...] = ()
    line: int = 0

    def to_dict(self) -> dict:
        return {"id": self.id, "question": self.question,
                "evidence": [{k: v for k, v in asdict(e).items() if v is not None} for e in self.evidence],
                "facts": [list(f) if len(f) > 1 else f[0] for f in self.facts], "abstain": self.abstain,
                "notes": self.notes, "tags": list(self.tags)}


def case_schema() -> dict:
    return json.loads(resources.files("harness").joinpath("schemas/case.schema.json").read_text(encoding="utf-8"))


def load_cases(path: str | Path) -> list[Case]:
    """Parse and schema-check a cases JSONL file; every problem is reported at once with its line."""
    problems = Problems(str(path))
    cases = _parse(Path(path), problems)
    problems.raise_if_any("the cases file")
    return cases


def load_checked_cases(path: str | Path, documents: list[Document], chunks: list[Chunk] | None = None) -> list[Case]:
    """load_cases and check_labels together, so schema and label problems are all reported in one go.
    With `chunks`, also check that every evidence quote fits inside one chunk of its page: a retrieved chunk
    only counts when it holds the quote, so a quote cut by a chunk boundary could never be found."""
    problems = Problems(str(path))
    cases = _parse(Path(path), problems)
    _check(cases, documents, problems)
    if chunks is not None and not problems.items:
        _check_quotes_fit(cases, chunks, problems)
    problems.raise_if_any("the cases file")
    return cases


def _check_quotes_fit(cases: list[Case], chunks: list[Chunk], problems: Problems) -> None:
    by_page: dict[str, list[str]] = {}
    for chunk in chunks:
        by_page.setdefault(chunk.page_id, []).append(fold(chunk.text))
    for case in cases:
        for i, item in enumerate(case.evidence):
            if item.quote is not None and not any(fold(item.quote) in t for t in by_page.get(item.source_id, ())):
                problems.add(case.line, f"evidence/{i}/quote: {item.quote!r} is cut by a chunk boundary on "
                                        f"{item.source_id} with these chunk settings; shorten the quote or raise "
                                        "--chunk-overlap / --chunk-size")


def _parse(path: Path, problems: Problems) -> list[Case]:
    cases: list[Case] = []
    for number, data in schema_lines(path, case_schema(), problems, what="cases file", record="case",
                                     id_field="id"):
        case = _case(data, number)
        if case.abstain and case.evidence:
            problems.add(number, "evidence: a case that should abstain cannot have evidence; empty it or set "
                                 "abstain to false")
        for i, item in enumerate(case.evidence):
            if item in case.evidence[:i]:
                problems.add(number, f"evidence/{i}: the same evidence item twice ({item.source_id}); it would "
                                     "count that page twice in recall, so remove one")
        cases.append(case)
    if not cases and not problems.items:
        problems.add(1, "no cases in the file")
    return cases


def _case(data: dict, line: int) -> Case:
    evidence = tuple(Evidence(e) if isinstance(e, str) else Evidence(e["source_id"], e.get("quote"))
                     for e in data["evidence"])
    facts = tuple((f,) if isinstance(f, str) else tuple(f) for f in data["facts"])
    return Case(data["id"], data["question"], evidence, facts, data["abstain"], data.get("notes", ""),
                tuple(data.get("tags", ())), line)


def check_labels(cases: list[Case], documents: list[Document], *, cases_path: str) -> None:
    """Every evidence page exists and every evidence quote occurs on its page; all problems at once."""
    problems = Problems(cases_path)
    _check(cases, documents, problems)
    problems.raise_if_any("the case labels")


def _check(cases: list[Case], documents: list[Document], problems: Problems) -> None:
    pages = {p.source_id: fold(p.text) for d in documents for p in d.pages}
    doc_ids = sorted({d.doc_id for d in documents})
    for case in cases:
        for i, item in enumerate(case.evidence):
            text = pages.get(item.source_id)
            if text == "":
                problems.add(case.line, f"evidence/{i}/source_id: {item.source_id} has no text layer (a scanned "
                                        "page?); OCR it first, or label the case unanswerable for a text-only "
                                        "pipeline (evidence [], abstain true)")
            elif text is None:
                doc = item.source_id.rsplit("#p", 1)[0]
                hint = (f"{doc} has {sum(1 for s in pages if s.startswith(doc + '#p'))} pages"
                        if doc in doc_ids else f"known documents: {', '.join(doc_ids)}")
                problems.add(case.line, f"evidence/{i}/source_id: no page {item.source_id!r} ({hint}); "
                                        "`rag-chat pages DOCS` lists every id")
            elif item.quote is not None and fold(item.quote) not in text:
                problems.add(case.line, f"evidence/{i}/quote: {item.quote!r} does not occur on {item.source_id}")
