"""`rag-eval run` (and `python evaluate_rag.py`): evaluate labelled cases end to end."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chatbot.errors import InputError, ServerUnreachable
from chatbot.terminal import ProgressBar

from ..evaluate import run_evaluation
from ..chart import fmt
from ..metrics import describe, is_retrieval, parse_metric
from ..records import Manifest, Summary
from ..runs import MANIFEST, read_json
from ..settings import resolve

EXIT_BELOW_THRESHOLD = 3


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="evaluate labelled cases end to end (same as python evaluate_rag.py)",
                       description="Rebuild a fresh index, answer every case through the real answer path, and "
                                   "write rows, manifest and summary under --out.")
    add_run_args(p)
    p.set_defaults(func=run)


def add_run_args(p: argparse.ArgumentParser) -> None:
    """Every flag defaults to None so that a --config file can fill what was not given."""
    p.add_argument("--config", help="a TOML file of these settings (flags given here win)")
    p.add_argument("--docs", help="PDF file or folder (default: sample_docs)")
    p.add_argument("--cases", help="cases JSONL (default: sample_docs/cases.jsonl)")
    p.add_argument("--out", help="where run directories go (default: results)")
    p.add_argument("--label", help="a name for this run, part of its directory name")
    p.add_argument("--k", type=int, nargs="+", help="cut-offs for Hit@k and Recall@k (default: 1 2 4)")
    p.add_argument("--top-k", type=int, help="passages retrieved and given to the model (default 4)")
    p.add_argument("--chunk-size", type=int, help="characters per chunk (default 2000)")
    p.add_argument("--chunk-overlap", type=int, help="characters repeated between chunks (default 200)")
    p.add_argument("--prompt", help="prompt template file (default: the bundled one)")
    p.add_argument("--chat-model", help="default qwen3:4b")
    p.add_argument("--embed-model", help="default nomic-embed-text")
    p.add_argument("--doc-prefix", help="embedding prefix for chunks (default: the model's own)")
    p.add_argument("--query-prefix", help="embedding prefix for questions (default: the model's own)")
    p.add_argument("--batch-size", type=int, help="texts per embedding request (default 32)")
    p.add_argument("--host", help="Ollama address (default: $OLLAMA_HOST, else http://127.0.0.1:11434)")
    p.add_argument("--timeout", type=float, help="seconds per HTTP call (default 300)")
    p.add_argument("--retries", type=int, help="retries on 503 and dropped connections (default 3)")
    p.add_argument("--backoff", type=float, help="seconds before the first retry, doubling after (default 1)")
    p.add_argument("--num-ctx", type=int, help="model context in tokens (default 8192)")
    p.add_argument("--num-predict", type=int, help="most tokens the model may write, thinking included (default 4096)")
    p.add_argument("--seed", type=int, help="sampling seed (default 42)")
    p.add_argument("--temperature", type=float, help="default 0")
    p.add_argument("--think", choices=["auto", "on", "off"], help="default auto")
    p.add_argument("--min-quote-words", type=int, help="shortest valid quote (default 4)")
    p.add_argument("--cache-dir", help="embedding cache directory")
    p.add_argument("--workers", type=int, help="cases answered in parallel (default 1)")
    p.add_argument("--repeat", type=int, help="answer each case N times (default 1)")
    p.add_argument("--system", help="what to evaluate: chatbot (default), offline, a plug-in name, "
                                    "package.module:factory, or an http(s):// address (README: 'Evaluate your own "
                                    "RAG system')")
    p.add_argument("--offline", action="store_true", default=None,
                   help="same as --system offline: BM25 retrieval and an extractive baseline, no model server")
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="finish an interrupted run (its saved settings are used; changed inputs are refused)")
    p.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE",
                   help=f"exit {EXIT_BELOW_THRESHOLD} when a mean is below VALUE (repeatable), e.g. recall@4=0.8")


def run(args: argparse.Namespace) -> int:
    flags = {k: v for k, v in vars(args).items() if k not in ("config", "fail_under", "func", "command", "resume")}
    saved = read_json(Path(args.resume) / MANIFEST)["settings"] if args.resume else None
    settings = resolve(flags, args.config, base=saved)
    thresholds = _thresholds(args.fail_under, settings.k)
    bars: dict[str, ProgressBar] = {}

    def progress(stage: str, done: int, total: int) -> None:
        bars.setdefault(stage, ProgressBar(stage))(done, total)

    try:
        result = run_evaluation(settings, progress=progress, argv=sys.argv, resume=args.resume)
    except ServerUnreachable as exc:  # before any row: no server at all
        if settings.system == "chatbot":
            raise type(exc)(f"{exc}\n(no model server? `--offline` evaluates a BM25 + extractive baseline "
                            "instead; it is a different system)") from exc
        raise
    summary = result.summary
    for warning in result.manifest.system.get("warnings", ()):
        print(f"warning: {warning}", file=sys.stderr)
    print(render_summary(summary, result.manifest))
    print(f"\nrun written to {result.run_dir}")
    failed = [f"{name} mean {fmt(summary.mean(name))} < {value}"
              for name, value in thresholds if (summary.mean(name) or 0.0) < value]
    if summary.errored:
        print(f"warning: {summary.errored} of {summary.rows} rows errored; their metrics are "
              "missing from the means", file=sys.stderr)
        if thresholds:  # a gate cannot pass on rows it could not score
            failed.append(f"{summary.errored} rows errored")
    for line in failed:
        print(f"below threshold: {line}", file=sys.stderr)
    return EXIT_BELOW_THRESHOLD if failed else 0


def _thresholds(specs: list[str], ks: tuple[int, ...]) -> list[tuple[str, float]]:
    out = []
    for spec in specs:
        name, sep, value = spec.partition("=")
        try:
            out.append((parse_metric(name.strip(), ks), float(value)))
        except ValueError as exc:
            raise InputError(f"--fail-under {spec!r}: {exc if sep else 'expected METRIC=VALUE'}") from exc
        if not 0.0 <= out[-1][1] <= 1.0:
            raise InputError(f"--fail-under {spec!r}: every metric lies in [0, 1]; give a value in that range")
    return out


def render_summary(summary: Summary, manifest: Manifest) -> str:
    """The summary as a table: mean, then scored / not applicable / errored counts, then what it means."""
    c = summary.collection
    chunks = (f"{c['chunks']} chunks; top-k {manifest.settings.get('top_k')}" if c.get("chunks")
              else "chunks: the system's own")
    lines = [f"system: {manifest.system.get('system', manifest.system.get('name', '?'))}",
             f"cases: {summary.rows} rows ({summary.errored} errored), {summary.passes} passed every check; "
             f"collection: {c.get('documents', '?')} documents, {c.get('pages', '?')} pages, {chunks}",
             "", f"{'metric':<20}{'mean':>7}{'scored':>8}{'n/a':>6}{'error':>7}  definition"]
    for name, m in summary.metrics.items():
        where = f" [of {c['chunks']} chunks]" if is_retrieval(name) and c.get("chunks") else ""
        lines.append(f"{name:<20}{fmt(m.mean):>7}{m.scored:>8}{m.not_applicable:>6}{m.errored:>7}  "
                     f"{describe(name)}{where}")
    if summary.repeat_stability:
        flips = [f"{n} {v['flipped']}/{v['cases']}" for n, v in summary.repeat_stability.items() if v["cases"]]
        lines += ["", "verdicts that changed between repeats (cases flipped / cases): " + ", ".join(flips)]
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary.answer_statuses.items()))
    review = summary.human_claim_review
    lines += ["", f"answer statuses: {statuses}",
              f"human claim review: {review['pending']} pending, {review['reviewed']} reviewed "
              "(`rag-eval review RUN`)"]
    return "\n".join(lines)
