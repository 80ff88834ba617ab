"""`rag-eval check`: validate a cases file against the documents, with no model calls."""

from __future__ import annotations

import argparse
import sys

from pdfrag.page_cache import PageCache
from pdfrag.terminal import say

from ..cases import describe_selection
from ..evaluate import prepare
from ..settings import RunSettings, resolve_noting
from ..systems import traits_for
from .flags import add_chunk_flags, add_selection_args


def register(sub: argparse._SubParsersAction) -> None:
    d = RunSettings()
    p = sub.add_parser("check", help="check a cases file against the documents (no model calls)",
                       description="The label check a run does before any model call, with the run's settings: "
                                   "when it says OK, `rag-eval run` with the same settings accepts the labels.")
    p.add_argument("--config", help="the run's TOML config file (flags given here win)")
    p.add_argument("--docs", help=f"PDF file or folder (default {d.docs})")
    p.add_argument("--cases", help=f"cases JSONL (default {d.cases})")
    p.add_argument("--system", help=f"the system the run evaluates (default {d.system}); for a system of your own "
                                    "the check that quotes fit one of our chunks is skipped")
    p.add_argument("--cache-dir", help="cache folder; extracted page text is kept in its pages/ (default: "
                                       "$PDF_RAG_EVAL_CACHE or ~/.cache/pdf-rag-eval)")
    add_chunk_flags(p)
    add_selection_args(p)
    p.add_argument("--seed", type=int, help=f"the seed of --sample (default {d.seed}, the run's seed)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    flags = {k: v for k, v in vars(args).items() if k not in ("config", "func", "command")}
    settings, notes = resolve_noting(flags, args.config)
    for note in notes:
        say(f"note: {note}", file=sys.stderr)
    cache = PageCache.at(settings.cache_dir)
    documents, cases, selection = prepare(settings, cache=cache)
    if cache.problem:
        say(f"warning: {cache.problem}", file=sys.stderr)
    pages = sum(len(d.pages) for d in documents)
    fit = (f"; quotes fit chunks of {settings.chunk_size} characters (overlap {settings.chunk_overlap})"
           if traits_for(settings.system).label_checks_chunks else "")
    total = selection.get("of", len(cases))
    say(f"{settings.cases}: {total} cases OK against {len(documents)} documents ({pages} pages){fit}")
    if selection:
        say(f"selected: {describe_selection(selection)}")
    return 0
