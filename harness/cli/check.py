"""`rag-eval check`: validate a cases file against the documents, with no model calls."""

from __future__ import annotations

import argparse

from ..evaluate import prepare
from ..settings import RunSettings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="check a cases file against the documents (no model calls)")
    p.add_argument("--docs", default=RunSettings.docs, help="PDF file or folder (default: sample_docs)")
    p.add_argument("--cases", default=RunSettings.cases, help="cases JSONL (default: sample_docs/cases.jsonl)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    documents, cases = prepare(RunSettings(docs=args.docs, cases=args.cases))
    pages = sum(len(d.pages) for d in documents)
    print(f"{args.cases}: {len(cases)} cases OK against {len(documents)} documents ({pages} pages)")
    return 0
