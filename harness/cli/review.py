"""`rag-eval review RUN`: review the claims of a run's answers in the terminal or through a CSV file, measure how
far reviewers agree, and resolve their disagreements.

Reviews are saved after every answer in `<cases stem>.reviews.jsonl` beside the run's cases file, one review per
answer and reviewer; afterwards the run's rows and summary are rewritten with the reviews applied. A claim on
which reviewers disagree keeps its answer pending until someone resolves it (`--resolve`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pdfrag.safe_files import atomic_write_text
from pdfrag.terminal import say

from ..errors import InputError, RunLocked, command
from ..judge.calibrate import CalibrationSample, calibration_sample, run_agreement, sample_path
from ..records import Row, Summary
from ..review.csv_io import export_csv, export_disagreements_csv, import_csv, passages_by_answer
from ..review.reviewer import refuse_nameless
from ..review.store import (
    ReviewBook,
    add_reviews,
    apply_file_to_run,
    read_reviews,
    review_key,
)
from ..runs import read_rows, utc_now
from ..stats.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED
from .common import agreement_text, default_reviews, judge_agreement_text, judged_passed_text, reviewer_name
from .review_walk import walk, walk_disagreements


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("review", help="review the claims of a run's answers (terminal, or CSV export/import), "
                                      "measure reviewer agreement, resolve disagreements",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="run directory")
    p.add_argument("--reviews", metavar="FILE", help="reviews file (default: <cases stem>.reviews.jsonl beside the "
                                                     "run's cases file)")
    p.add_argument("--reviewer", help="your name in the reviews (default: the name you gave once, remembered in the "
                                      "cache folder; asked on a terminal the first time, never your login name)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--export", metavar="FILE.csv", help="write your claims (blank verdicts where you have not "
                                                           "reviewed) to a CSV and stop; with --resolve, the "
                                                           "claims reviewers disagree on")
    mode.add_argument("--import", dest="import_", metavar="FILE.csv", help="read verdicts and resolutions from a "
                                                                          "CSV and stop")
    mode.add_argument("--agreement", action="store_true", help="how far reviewers agree, and their disagreements")
    mode.add_argument("--apply", action="store_true", help="apply the saved reviews to the run's rows and summary, "
                                                           "and stop (after an import that could not update them)")
    p.add_argument("--wait", type=float, default=60.0, metavar="SECONDS",
                   help="how long to wait for the run while another import or a --resume writes it (default 60)")
    p.add_argument("--resolve", action="store_true", help="walk the claims reviewers disagree on and settle each")
    p.add_argument("--calibrate", type=int, metavar="N",
                   help="review first a seeded random sample of N claims the judge rated (stratified by its verdict), "
                        "so its measured agreement is unbiased; with --export, export only those answers")
    p.add_argument("--json", action="store_true", help="with --agreement: print JSON")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed for --agreement (default 0)")
    p.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                   help=f"bootstrap resamples for --agreement (default {DEFAULT_RESAMPLES})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run)
    rows = read_rows(run_dir)
    path = Path(args.reviews) if args.reviews else default_reviews(run_dir)
    book = read_reviews(path)
    if args.json and not args.agreement:
        raise InputError("--json goes with --agreement")
    if args.agreement:
        return _agreement(args, run_dir, rows, book, path)
    if args.calibrate is not None:
        if args.import_ or args.resolve:
            raise InputError("--calibrate goes with the terminal review or --export, not --import or --resolve")
        sampled = _calibration(args, run_dir, rows, book, path).answers()
        rows = [r for r in rows if review_key(r) in sampled]
    if args.export:  # a blank reviewer column on export means the one who imports it
        return _export(args, rows, book, reviewer_name(args.reviewer, required=False))
    if args.apply:
        say(_summary_line(run_dir, _apply(run_dir, path, args, saved="the reviews"), path))
        return 0
    if args.import_:
        new = import_csv(args.import_, reviewer=reviewer_name(args.reviewer, required=False), reviewed_at=utc_now(),
                         known=passages_by_answer(rows), book=book)
        refuse_nameless(args.import_, new)
        book = add_reviews(path, new.records())
        say(f"imported {len(new.reviews)} review(s) and {len(new.resolutions)} resolution(s) from "
              f"{args.import_} into {path}")
    elif args.resolve:
        book = walk_disagreements(rows, book, path, reviewer_name(args.reviewer))
    else:
        book = walk(rows, book, path, reviewer_name(args.reviewer))
    say("\n" + _summary_line(run_dir, _apply(run_dir, path, args, saved="your reviews"), path))
    return 0


def _apply(run_dir: Path, path: Path, args: argparse.Namespace, *, saved: str) -> Summary:
    """The reviews file applied to the run; when the run stays locked, say plainly that the numbers are stale."""
    try:
        return apply_file_to_run(run_dir, path, wait_s=args.wait)
    except RunLocked as exc:
        raise RunLocked(f"{saved} are saved in {path}, but the run's rows and summary were NOT updated and still show "
                        f"the earlier reviews: {exc}. Apply them later with "
                        f"`{command('review', args.run, '--reviews', path, '--apply')}`") from None


def _agreement(args: argparse.Namespace, run_dir: Path, rows: list[Row], book: ReviewBook, path: Path) -> int:
    """Agreement between people, then (when a judge rated the answers) the judge against people."""
    report, judged = run_agreement(run_dir, rows, book, path, seed=args.seed, resamples=args.resamples)
    if args.json:
        data = report.to_json() | {"judges": [judged.to_json()] if judged else []}
        say(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        say(agreement_text(report) + (f"\n\n{judge_agreement_text(judged)}" if judged else ""))
    return 0


def _calibration(args: argparse.Namespace, run_dir: Path, rows: list[Row], book: ReviewBook,
                 path: Path) -> CalibrationSample:
    sample = calibration_sample(run_dir, rows, book, path, args.calibrate, args.seed)
    say(f"calibration sample: {len(sample.claims)} claims judged by {sample.judge} (seed {sample.seed}, stratified "
          f"by its verdict), in {len(sample.answers())} answers; kept in {sample_path(path)}")
    return sample


def _export(args: argparse.Namespace, rows: list[Row], book: ReviewBook, reviewer: str) -> int:
    text = export_disagreements_csv(rows, book) if args.resolve else export_csv(rows, book, reviewer=reviewer)
    atomic_write_text(args.export, text)
    lines = text.count("\n") - 1
    if args.resolve:
        say(f"wrote {lines} claim(s) reviewers disagree on to {args.export}; fill in resolution (supported, "
              f"unsupported or contradicted; source_id for supported), then "
              f"`{command('review', args.run, '--import', args.export, '--reviewer', 'YOU')}`")
    else:
        who = f"for reviewer {reviewer}" if reviewer else "with a blank reviewer column (the importer's name)"
        say(f"wrote {lines} claim line(s) {who} to {args.export}; fill in verdict "
              f"(supported, unsupported, contradicted, or none for an answer without claims) and source_id (an id "
              f"of cited_source_ids or retrieved_source_ids), then "
              f"`{command('review', args.run, '--import', args.export)}`")
    return 0


def _summary_line(run_dir: Path, summary: Summary, path: Path) -> str:
    review, counts = summary.human_claim_review, summary.claims
    claims = summary.metrics.get("claims_supported")
    mean = "n/a" if claims is None or claims.mean is None else f"{claims.mean:.3f}"
    switched = judged_passed_text(summary)
    return (f"{run_dir}: {review['reviewed']} reviewed, {review['pending']} pending; claims supported {mean} "
            f"over {claims.scored if claims else 0} answers with claims; claims: {counts.agreed} agreed, "
            f"{counts.in_disagreement} in disagreement (pending), {counts.resolved} resolved, "
            f"{counts.one_reviewer} by one reviewer; reviews in {path}" + (f"\n{switched}" if switched else ""))
