"""Labelled cases: loading, schema validation, and the label check against the documents."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from pdfrag.text import fold
from pdfrag.versions import pypdf_version

from .errors import InputError
from .inputs import FileProblems, schema_lines
from .records import CaseLine, field_problem

if TYPE_CHECKING:  # types only: reading runs (compare, report) must not import pypdf or the model client
    from pdfrag.chunking import Chunk
    from pdfrag.pdfs import Document

    from .records import Manifest
    from .settings import RunSettings

class _NamedRun(Protocol):
    """A run as compare holds it: a name and its manifest (`harness.runs.LoadedRun`, `harness.report.columns`)."""

    @property
    def name(self) -> str: ...

    @property
    def manifest(self) -> Manifest: ...


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
    """The published schema of a cases line, generated from `harness.records.case_line.CaseLine`."""
    return json.loads(resources.files("harness").joinpath("schemas/case.schema.json").read_text(encoding="utf-8"))


def load_cases(path: str | Path) -> list[Case]:
    """Parse and schema-check a cases JSONL file; every problem is reported at once with its line."""
    problems = FileProblems(str(path))
    cases = _parse(Path(path), problems)
    problems.raise_if_any("the cases file")
    return cases


def load_checked_cases(path: str | Path, documents: list[Document], chunks: list[Chunk] | None = None, *,
                       written_by: str | Path | None = None) -> list[Case]:
    """load_cases and check_labels together, so schema and label problems are all reported in one go.
    With `chunks`, also check that every evidence quote fits inside one chunk of its page: a retrieved chunk
    only counts when it holds the quote, so a quote cut by a chunk boundary could never be found. When a check
    fails and the manifest that wrote the labels (`written_by`, default the one beside `path`) records another
    pypdf than this one, the error says so."""
    problems = FileProblems(str(path))
    cases = _parse(Path(path), problems)
    _check(cases, documents, problems)
    if chunks is not None and not problems.items:
        _check_quotes_fit(cases, chunks, problems)
    if problems.items:
        problems.raise_if_any("the cases file", note=pypdf_mismatch(written_by or manifest_beside(path)))
    return cases


def _check_quotes_fit(cases: list[Case], chunks: list[Chunk], problems: FileProblems) -> None:
    by_page: dict[str, list[str]] = {}
    for chunk in chunks:
        by_page.setdefault(chunk.page_id, []).append(fold(chunk.text))
    for case in cases:
        for i, item in enumerate(case.evidence):
            if item.quote is not None and not any(fold(item.quote) in t for t in by_page.get(item.source_id, ())):
                problems.add(case.line, f"evidence/{i}/quote: {item.quote!r} is cut by a chunk boundary on "
                                        f"{item.source_id} with these chunk settings; shorten the quote or raise "
                                        "--chunk-overlap / --chunk-size")


def _parse(path: Path, problems: FileProblems) -> list[Case]:
    cases: list[Case] = []
    for number, data in schema_lines(path, case_schema(), problems, what="cases file", record="case",
                                     id_field="id"):
        try:
            record = CaseLine.from_json(data)
        except ValidationError as exc:  # the schema is the record's own: only a check it cannot state
            problems.add(number, field_problem(exc))
            continue
        case = _case(record, number)
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


def _case(record: CaseLine, line: int) -> Case:
    evidence = tuple(Evidence(e.source_id, e.quote) for e in record.evidence)
    return Case(record.id, record.question, evidence, record.facts, record.abstain, record.notes, record.tags, line)


def check_labels(cases: list[Case], documents: list[Document], *, cases_path: str) -> None:
    """Every evidence page exists and every evidence quote occurs on its page; all problems at once."""
    problems = FileProblems(cases_path)
    _check(cases, documents, problems)
    problems.raise_if_any("the case labels")


def _check(cases: list[Case], documents: list[Document], problems: FileProblems) -> None:
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


# -- which versions wrote a file's labels ------------------------------------------------------------------------
# A manifest sits beside the file it describes, `<stem>.manifest.json`: `rag-eval draft` writes one beside the
# drafts file and `rag-eval draft cases` one beside the cases file, both with `versions` (this project, Python,
# pypdf). pypdf's version decides the extracted page text, so a quote on its page under one pypdf can be missing
# under another; a failing label check names the mismatch instead of leaving the user to guess.

def manifest_beside(path: str | Path) -> Path:
    """`<stem>.manifest.json` beside `path`."""
    path = Path(path)
    return path.with_name(f"{path.stem}.manifest.json")


def recorded_pypdf(manifest: str | Path) -> str | None:
    """The pypdf version a manifest records, or None (no manifest, unreadable, or written before versions)."""
    try:
        data = json.loads(Path(manifest).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    versions = data.get("versions") if isinstance(data, dict) else None
    found = versions.get("pypdf") if isinstance(versions, dict) else None
    return found if isinstance(found, str) else None


def pypdf_mismatch(manifest: str | Path) -> str | None:
    """A line for a failed label check when the labels were written under another pypdf, else None."""
    then, now = recorded_pypdf(manifest), pypdf_version()
    if then is None or then == now:
        return None
    return (f"note: these labels were written with pypdf {then} ({manifest}) and this is pypdf {now}; another "
            f"pypdf can extract other page text, so quotes may no longer be found: `pip install pypdf=={then}` "
            "(something you installed may have changed it), or check the labels again under this one")


# -- subsets of the cases ------------------------------------------------------------------------------------
# Subsets of a cases file for a quick run: `--only-tag`, `--only-ids`, `--limit`, `--sample` (seeded by `--seed`).
#
# Filters apply in this order: cases carrying any of the `--only-tag` tags, then those named by `--only-ids` (a
# file of ids, one a line, or `id,id,...`), then the first `--limit` in file order or a seeded `--sample` of them
# (kept in file order). The run's manifest records the selection (`selection`), and `rag-eval compare` refuses two
# runs made with different selections unless `--shared-only`: a difference between two subsets is no finding.

_CRITERIA = ("only_tag", "only_ids", "ids_sha256", "limit", "sample", "seed")


def read_ids(spec: str, known: Collection[str] = ()) -> tuple[list[str], str]:
    """The ids `--only-ids` names, and how it was read, for the manifest and the `selected:` line (`@FILE` for a
    file, else the list as given). `@FILE` is a file of ids, one a line (blank lines and `#` comments skipped, a
    UTF-8 byte-order mark dropped). A bare value is a file when one exists by that name, unless every part of it
    is also an id of the cases (`known`): then it is refused as ambiguous, naming both readings. Anything else is
    `id,id,...`. An empty value, or one naming no id, is refused."""
    value = spec.lstrip("\ufeff")
    if not value.strip():
        raise InputError("--only-ids is empty; give a file of case ids (@FILE, one a line) or id,id,...")
    listed = [part.strip() for part in value.split(",") if part.strip()]
    if value.startswith("@"):
        return _ids_in(Path(value[1:]), spec), value
    if Path(value).is_file():
        if listed and set(listed) <= set(known):
            raise InputError(f"--only-ids {spec!r} is both a file here and a list of {len(listed)} case id(s); write "
                             f"--only-ids @{value} for the file, or rename the file to select those ids")
        return _ids_in(Path(value), spec), f"@{value}"
    if not listed:
        raise InputError(f"--only-ids {spec!r}: no case id in it; give a file of ids (@FILE) or id,id,...")
    return listed, value


def _ids_in(path: Path, spec: str) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise InputError(f"--only-ids {spec}: cannot read the file ({why})") from exc
    ids = [line.strip().lstrip("\ufeff") for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not ids:
        raise InputError(f"--only-ids {spec}: the file names no case id (one a line; # starts a comment)")
    return ids


def select_cases(cases: Sequence[Case], s: RunSettings) -> tuple[list[Case], dict[str, Any]]:
    """The selected cases in file order, and the selection as the manifest records it ({} for all cases)."""
    chosen = list(cases)
    if s.only_tag:
        chosen = [c for c in chosen if set(c.tags) & set(s.only_tag)]
        if not chosen:
            known = sorted({t for c in cases for t in c.tags})
            raise InputError(f"--only-tag {' '.join(s.only_tag)}: no case carries it; tags in {s.cases}: "
                             f"{', '.join(known) or 'none'}")
    ids: list[str] = []
    shown = None
    if s.only_ids is not None:  # an empty value is refused, never "every case"
        ids, shown = read_ids(s.only_ids, {c.id for c in cases})
        unknown = sorted(set(ids) - {c.id for c in cases})
        if unknown:
            hint = " (and no file has that name; @FILE names a file)" if not shown.startswith("@") and len(ids) == 1 \
                else ""
            raise InputError(f"--only-ids: {len(unknown)} id(s) not in {s.cases}: {', '.join(map(repr, unknown[:10]))}"
                             + (" …" if len(unknown) > 10 else "") + f"{hint}; correct or remove them")
        chosen = [c for c in chosen if c.id in set(ids)]
    if s.limit is not None:
        chosen = chosen[:s.limit]
    elif s.sample is not None and s.sample < len(chosen):
        keep = set(random.Random(s.seed).sample(range(len(chosen)), s.sample))
        chosen = [c for i, c in enumerate(chosen) if i in keep]
    return chosen, _record(s, ids, shown, len(chosen), len(cases))


def _record(s: RunSettings, ids: list[str], shown: str | None, selected: int, total: int) -> dict[str, Any]:
    criteria: dict[str, Any] = {"only_tag": list(s.only_tag), "only_ids": shown,
                                "ids_sha256": hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()
                                if ids else None,
                                "limit": s.limit, "sample": s.sample, "seed": s.seed if s.sample else None}
    given = {k: v for k, v in criteria.items() if v not in (None, [])}
    return given | {"selected": selected, "of": total} if given else {}


def describe_selection(selection: dict[str, Any]) -> str:
    """One line: `21 of 195 cases (only-tag dev, limit 21)`, the criteria alone without counts, or "all cases"."""
    parts = [f"{k.replace('_', '-')} {_short(' '.join(v) if isinstance(v, list) else str(v))}"
             for k, v in selection.items() if k in _CRITERIA and k != "ids_sha256"]
    if not parts:
        return "all cases"
    if "selected" not in selection:
        return ", ".join(parts)
    return f"{selection['selected']} of {selection['of']} cases ({', '.join(parts)})"


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def refuse_other_selections(a: _NamedRun, b: _NamedRun, *, shared_only: bool) -> None:
    """compare's rule: two runs made with different case selections are not compared unless `shared_only`."""
    sel_a, sel_b = (r.manifest.selection.criteria() for r in (a, b))
    if sel_a != sel_b and not shared_only:
        raise InputError(f"{a.name} and {b.name} ran on different selections of cases (A: "
                         f"{describe_selection(sel_a)}; B: {describe_selection(sel_b)}); pass --shared-only to "
                         "compare the cases both have")
