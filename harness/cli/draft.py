"""`rag-eval draft`: draft test cases from your PDFs, verify them, decide on them, and write them as cases.

  rag-eval draft --docs DIR --out drafts.jsonl        draft and verify (one chat call per page; cached)
  rag-eval draft review drafts.jsonl                  accept / reject / edit pending drafts in the terminal
  rag-eval draft review drafts.jsonl --failed         edit (until the checks pass) or reject the failed ones
  rag-eval draft review drafts.jsonl --export d.csv   ... or in a spreadsheet, then --import d.csv
  rag-eval draft review drafts.jsonl --agreement      how far reviewers agree (--json), and where they disagree
  rag-eval draft review drafts.jsonl --resolve        settle the drafts reviewers disagree on
  rag-eval draft report drafts.jsonl                  drafts per page and document, reasons, acceptance rate
  rag-eval draft cases drafts.jsonl --out cases.jsonl [--include-unreviewed]
  rag-eval draft judge drafts.jsonl                   a model proposes accept/reject, as a measured reviewer

Each reviewer (--reviewer, default the name given once and remembered) has their own decision on a draft;
reviewing again replaces only yours. When reviewers disagree the draft stays pending, and out of `draft cases`,
until it is resolved.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pdfrag.model_server import BACKENDS
from pdfrag.pdfs import page_texts, read_documents
from pdfrag.safe_files import atomic_write_text
from pdfrag.terminal import ProgressBar, Stages, say

from ..drafting.agreement import draft_agreement_report
from ..drafting.decisions import export_csv
from ..drafting.files import (
    draft_into_file,
    failed_again_text,
    import_sheet,
    judge_into_file,
    left_out_text,
    open_documents,
    recorded_settings,
    skipped_pages,
    write_cases,
)
from ..drafting.judging import draft_judge_agreement, draft_judge_settings
from ..drafting.pipeline import DraftRun
from ..drafting.records import Draft, read_drafts
from ..drafting.report import build_report, render_draft_report
from ..drafting.settings import UNANSWERABLE_EVERY, UNANSWERABLE_SHARE, DraftSettings, resolve
from ..errors import InputError, command, shell_words
from ..settings import host_flags
from .common import agreement_text, draft_judges_text, reviewer_name
from .draft_walk import walk, walk_disagreements
from .flags import add_quiet

_ACTIONS = ("cases", "review", "report", "judge")
_CUT_OFF = "cut off at num_predict"  # in the error of a reply that reached --num-predict (pdfrag.asking)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("draft", help="draft verified test cases from your PDFs for a human to accept",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", nargs="?", choices=_ACTIONS, metavar="ACTION",
                   help="cases | review | report | judge (none: draft)")
    p.add_argument("drafts", nargs="?", metavar="DRAFTS", help="the drafts file (for cases, review, report)")
    p.add_argument("--config", help="a TOML file of the drafting settings (flags given here win)")
    p.add_argument("--docs", help="PDF file or folder (default: sample_docs; for review/cases: the one drafted)")
    p.add_argument("--out", help="drafting: the drafts file (default drafts.jsonl); cases: the cases file")
    p.add_argument("--per-page", type=int, help="drafts asked for per page (default 3)")
    p.add_argument("--pages", nargs="+", metavar="PAGE_ID", help="draft only these pages (e.g. handbook.pdf#p2)")
    p.add_argument("--max-pages", type=int, help="draft at most this many pages (round robin over documents)")
    p.add_argument("--unanswerable", type=int, metavar="N",
                   help=f"unanswerable drafts to add, so that the cases test abstention (default: one for every "
                        f"{UNANSWERABLE_EVERY} answerable drafts asked, {UNANSWERABLE_SHARE} of all; 0 for none)")
    p.add_argument("--seed", type=int, help="page order and sampling seed (default 42)")
    p.add_argument("--min-page-words", type=int, help="skip pages with fewer words (default 20)")
    p.add_argument("--min-quote-words", type=int, help="shortest quote (default 4)")
    p.add_argument("--top-k", type=int, help="round trips that miss the top k are tagged hard (default 4)")
    p.add_argument("--no-parametric", dest="parametric", action="store_false", default=None,
                   help="skip the check that asks each question without its page")
    p.add_argument("--chunk-size", type=int, help="characters per chunk, for the fits-one-chunk check (default 2000)")
    p.add_argument("--chunk-overlap", type=int, help="default 200")
    p.add_argument("--chat-model", help="default qwen3:4b")
    p.add_argument("--embed-model", help="default nomic-embed-text")
    p.add_argument("--host", action="append", help="server address (Ollama's, or with --backend openai the base URL "
                                                  "ending in /v1); give it once per server to spread pages over "
                                                  "several (default: $OLLAMA_HOST, else http://127.0.0.1:11434)")
    p.add_argument("--backend", choices=list(BACKENDS), help="the API the server speaks (default ollama)")
    p.add_argument("--embed-host", help="a separate server for embeddings (default: the chat server)")
    p.add_argument("--embed-backend", choices=list(BACKENDS), help="the API of --embed-host (default: --backend)")
    p.add_argument("--api-key-env", help="name of the environment variable holding the API key (openai backend)")
    p.add_argument("--workers", type=int, help="pages drafted at once, per server (default 1)")
    p.add_argument("--timeout", type=float, help="seconds per HTTP call (default 300)")
    p.add_argument("--retries", type=int, help="retries on 503 and dropped connections (default 3)")
    p.add_argument("--max-body-bytes", type=int, help="most decoded bytes of one reply from the model server; past it "
                                                      "the reply is refused "
                                                      f"(default {DraftSettings.max_body_bytes})")
    p.add_argument("--num-ctx", type=int, help=f"model context in tokens (default {DraftSettings.num_ctx})")
    p.add_argument("--num-predict", type=int, help="most tokens the model may write per phase: a thinking model "
                                                   "writes up to twice this (default 4096; on an OpenAI-compatible "
                                                   "server a quarter of its per-slot window, an eighth for a thinking "
                                                   "model, at most 4096)")
    p.add_argument("--think", choices=["auto", "on", "off"], help="default auto")
    p.add_argument("--cache-dir", help="cache root for replies and embeddings (default: $PDF_RAG_EVAL_CACHE)")
    p.add_argument("--include-unreviewed", action="store_true",
                   help="cases: also write drafts that passed verification but no human has seen (tagged unreviewed)")
    p.add_argument("--reviewer", help="review: your name on the decisions (default: the name you gave once, "
                                      "remembered in the cache folder; asked on a terminal the first time, never "
                                      "your login name)")
    io_group = p.add_mutually_exclusive_group()
    io_group.add_argument("--export", metavar="FILE.csv", help="review: write every draft to a CSV and stop")
    io_group.add_argument("--import", dest="import_", metavar="FILE.csv",
                          help="review: read decisions (and resolutions) from a CSV")
    io_group.add_argument("--agreement", action="store_true",
                          help="review: how far reviewers agree on the drafts, and every disagreement")
    io_group.add_argument("--resolve", action="store_true",
                          help="review: walk the drafts reviewers disagree on and settle each")
    io_group.add_argument("--failed", action="store_true",
                          help="review: walk the drafts that failed verification, to edit each until its checks "
                               "pass or to reject it (without it the terminal walks the drafts that passed)")
    p.add_argument("--json", action="store_true", help="with review --agreement: print JSON")
    p.add_argument("--verbose", action="store_true",
                   help="review --import: also print the coverage report (`draft report`), not only the counts")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.failed and args.action != "review":
        raise InputError("--failed goes with `rag-eval draft review DRAFTS --failed`")
    if args.action is None:
        if args.drafts is not None:
            raise InputError(f"unknown action {args.drafts!r}; choose one of {', '.join(_ACTIONS)}, or none to draft")
        return _draft(args)
    if args.drafts is None:
        raise InputError(f"`rag-eval draft {args.action}` needs the drafts file: rag-eval draft {args.action} "
                         "drafts.jsonl")
    return {"cases": _cases, "review": _review, "report": _report, "judge": _judge}[args.action](args)


def _judge(args: argparse.Namespace) -> int:
    """A model's accept/reject on each answerable draft that passed verification, saved in the drafts file."""
    settings = recorded_settings(args.drafts, args.docs)
    pages = page_texts(read_documents(settings.docs))
    judging = draft_judge_settings(settings, {k: v for k, v in vars(args).items() if v is not None})
    with ProgressBar("judging drafts", quiet=bool(args.quiet)) as bar:
        judged = judge_into_file(args.drafts, pages, judging,
                                 progress=lambda done, total, cached: bar(done, total, reused=cached))
    say(f"{judged.judge}: {judged.asked} draft(s) judged; {judged.chat_calls} chat call(s), {judged.from_cache} "
          f"from the cache, {len(judged.errors)} error(s); decisions in {args.drafts} (judge_reviews)")
    for draft_id, error in judged.errors:
        say(f"warning: draft {draft_id}: not judged: {error}", file=sys.stderr)
    say(f"next: {command('draft', 'review', args.drafts)} (blind), then --agreement")
    return 1 if judged.errors and len(judged.errors) == judged.asked else 0


def _draft(args: argparse.Namespace) -> int:
    skip = {"config", "func", "command", "action", "drafts", "include_unreviewed", "reviewer", "export", "import_",
            "agreement", "resolve", "failed", "json", "quiet", "verbose"}
    flags = {k: v for k, v in vars(args).items() if k not in skip} | host_flags(args.host)
    settings = resolve(flags, args.config)
    with Stages(lambda stage: ProgressBar(stage, quiet=bool(args.quiet))) as progress:
        run_, manifest = draft_into_file(settings, progress=progress)
    say(render_draft_report(build_report(run_.drafts, run_.selection)))
    errors = sum(d.kind == "error" for d in run_.drafts)
    say(f"\n{len(run_.drafts)} drafts from {len(run_.selection.pages)} pages written to {settings.out} "
          f"(manifest {manifest}); {run_.chat_calls} chat calls, {run_.pages_from_cache} pages from the cache")
    say(_unanswerable_line(run_, given=settings.unanswerable is not None))
    if errors:
        say(f"warning: {_retry_line(run_.drafts)}", file=sys.stderr)
    failed = sum(d.kind != "error" and not d.verification.passed for d in run_.drafts)
    say(f"next: {command('draft', 'review', settings.out)}" + (f" (then --failed, to fix or reject the {failed} "
                                                              "that failed verification)" if failed else ""))
    return 1 if errors == len(run_.drafts) else 0


def _retry_line(drafts: Sequence[Draft]) -> str:
    """How to retry the pages that could not be drafted. A reply cut off at --num-predict needs a higher one, and
    --num-predict is part of every cached reply's key: raised for the whole command, every page is drafted again,
    so the line names --pages for those pages alone (earlier drafts of the other pages stay in the file)."""
    failed = [d for d in drafts if d.kind == "error"]
    cut = list(dict.fromkeys(d.source_id for d in failed if _CUT_OFF in (d.error or "")))
    line = f"{len(failed)} page(s) could not be drafted (see `error` entries)"
    if len(cut) < len(failed):
        line += "; run the same command again to retry them, finished pages come from the cache"
    if cut:
        line += (f"; {len(cut)} were cut off at --num-predict: a higher --num-predict is another cache key, so "
                 "given to the whole command it drafts every page again; to draft only those again, add "
                 f"--num-predict N --pages {shell_words(*cut)} to the same command")
    return line


def _unanswerable_line(run_: DraftRun, *, given: bool) -> str:
    """How many unanswerable drafts were asked for and why that many: abstention is tested only if some are."""
    asked = run_.settings.unanswerable or 0
    made = sum(d.kind == "unanswerable" for d in run_.drafts)
    why = ("as --unanswerable asked" if given else
           f"the default: one for every {UNANSWERABLE_EVERY} answerable drafts asked, {UNANSWERABLE_SHARE} of all; "
           "--unanswerable N to choose, 0 for none")
    if not asked:
        return "unanswerable drafts: none asked (--unanswerable 0): these cases will not test abstention"
    return f"unanswerable drafts: {asked} asked ({why}), {made} written; they stay pending until a person " \
           "confirms that no page answers them"


def _cases(args: argparse.Namespace) -> int:
    if not args.out:
        raise InputError("`rag-eval draft cases` needs --out cases.jsonl")
    settings = recorded_settings(args.drafts, args.docs)
    opened = open_documents(settings)
    if opened.cache_problem:
        say(f"warning: {opened.cache_problem}", file=sys.stderr)
    written = write_cases(args.drafts, Path(args.out), settings, opened, include_unreviewed=args.include_unreviewed)
    say(f"wrote {written.cases} case(s) to {args.out} (label check OK against {settings.docs}); left out: "
          f"{left_out_text(written.left_out)}")
    if written.failed_again:
        say(f"warning: {failed_again_text(written.failed_again, args.drafts, settings.docs)}", file=sys.stderr)
    return 0


def _imported_line(sheet: str, path: str, before: list[Draft], after: list[Draft]) -> str:
    """One line for an import: what changed, then where the drafts stand (the full report is `draft report`)."""
    def said(d: Draft) -> tuple:  # who decided what, and the draft's text: a re-import of the same sheet is no change
        decisions = [d.resolution, *d.reviews]
        return (d.question, d.quote, d.facts, [(x.status, x.reason, x.by) for x in decisions if x is not None])

    earlier = {d.draft_id: said(d) for d in before}
    changed = [d for d in after if earlier.get(d.draft_id) != said(d)]
    status = Counter(d.decision.status for d in after if d.kind != "error")
    stand = ", ".join(f"{status[s]} {s}" for s in ("accepted", "edited", "rejected", "pending"))
    return (f"imported {sheet} into {path}: {len(changed)} draft(s) changed; now {stand} of "
            f"{sum(status.values())} (coverage: `{command('draft', 'report', path)}`, or --verbose here)")


def _report(args: argparse.Namespace) -> int:
    skipped = skipped_pages(args.drafts)  # read first: a broken manifest is named before the drafts
    say(render_draft_report(build_report(read_drafts(args.drafts), skipped=skipped)))
    return 0


def _review(args: argparse.Namespace) -> int:
    if args.json and not args.agreement:
        raise InputError("--json goes with `rag-eval draft review DRAFTS --agreement`")
    drafts = read_drafts(args.drafts)
    if args.agreement:
        report, judges = draft_agreement_report(drafts), draft_judge_agreement(drafts)
        if args.json:
            extra = {"judges": judges} if judges else {}  # the figures' keys stay as they were without a judge
            say(json.dumps(report.to_json() | extra, indent=2, ensure_ascii=False))
        else:
            say(agreement_text(report) + (f"\n\n{draft_judges_text(judges)}" if judges else ""))
        return 0
    if args.export:
        name = reviewer_name(args.reviewer, required=False)  # blank: the sheet's reviewer column names the importer
        atomic_write_text(args.export, export_csv(drafts, reviewer=name, name_column=args.reviewer or ""))
        whose = f"the decisions of {name} filled in" if name else "no one's decisions filled in"
        say(f"wrote {sum(d.kind != 'error' for d in drafts)} draft(s) with {whose} to "
              f"{args.export}; fill in decision (accepted, rejected with a reason, or leave blank), change "
              f"question/quote/facts to edit, or fill in resolution on a draft reviewers disagree on; then "
              f"`{command('draft', 'review', args.drafts, '--import', args.export)}`")
        return 0
    by = reviewer_name(args.reviewer, required=not args.import_)  # an import's sheet may name each line's reviewer
    settings = recorded_settings(args.drafts, args.docs)
    opened = open_documents(settings)
    if args.import_:
        before = drafts
        drafts = import_sheet(args.drafts, args.import_, drafts, opened.collection, settings, by=by,
                              by_is_given=args.reviewer is not None)
        say(_imported_line(args.import_, args.drafts, before, drafts))
        if args.verbose:
            say(render_draft_report(build_report(drafts)))
        return 0
    else:
        pages = page_texts(opened.documents)
        if args.resolve:
            walk_disagreements(drafts, args.drafts, pages, by)
        else:
            walk(drafts, args.drafts, pages, opened.collection, settings, by, failed=args.failed)
    say(render_draft_report(build_report(read_drafts(args.drafts))))
    return 0
