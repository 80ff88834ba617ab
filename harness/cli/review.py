"""`rag-eval review RUN`: review the claims of a run's answers in the terminal or through a CSV file, measure how
far reviewers agree, and resolve their disagreements.

Reviews are saved after every answer in `<cases stem>.reviews.jsonl` beside the run's cases file, one review per
answer and reviewer; afterwards the run's rows and summary are rewritten with the reviews applied. A claim on
which reviewers disagree keeps its answer pending until someone resolves it (`--resolve`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import cast

from chatbot.store import atomic_write_text
from chatbot.terminal import printable, say
from chatbot.text import cited_passage, find_quote

from ..errors import InputError, RunLocked
from ..judge.calibrate import CalibrationSample, draw_sample, read_sample, sample_path, write_sample
from ..judged import judge_agreement
from ..records import RetrievedPassage, Row, Summary, Verdict
from ..review.agreement import agreement_report
from ..review.agreement import verdict_text as _verdict_text
from ..review.csv_io import export_csv, export_disagreements_csv, import_csv, passages_by_answer
from ..review.reviewer import refuse_nameless
from ..review.store import (
    VERDICTS,
    Claim,
    ClaimState,
    Resolution,
    Review,
    ReviewBook,
    add_reviews,
    answer_key,
    apply_file_to_run,
    apply_reviews,
    distinct_answers,
    read_reviews,
    reviews_path,
    run_judge,
    sentence_split,
)
from ..runs import read_manifest, read_rows, utc_now
from ..stats.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED
from .common import agreement_text, judge_agreement_text, judged_passed_text, reviewer_name

_KEYS = """keys (type ? to see them again):
  on an answer:  Enter accept the offered claims · e edit them · k skip this answer
  on a claim:    s [ID|rank] supported (plain s: the cited passage) · u unsupported · c contradicted · n TEXT note
  anywhere:      p show the full passages · ? these keys · q quit (finished reviews are kept)"""
_CONTEXT_CHARS = 300


class _Quit(Exception):
    """The reviewer asked to stop (q, or end of input)."""


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
        rows = [r for r in rows if answer_key(r) in sampled]
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
        book = _walk_disagreements(rows, book, path, reviewer_name(args.reviewer))
    else:
        book = _walk(rows, book, path, reviewer_name(args.reviewer))
    say("\n" + _summary_line(run_dir, _apply(run_dir, path, args, saved="your reviews"), path))
    return 0


def _apply(run_dir: Path, path: Path, args: argparse.Namespace, *, saved: str) -> Summary:
    """The reviews file applied to the run; when the run stays locked, say plainly that the numbers are stale."""
    try:
        return apply_file_to_run(run_dir, path, wait_s=args.wait)
    except RunLocked as exc:
        raise RunLocked(f"{saved} are saved in {path}, but the run's rows and summary were NOT updated and still show "
                        f"the earlier reviews: {exc}. Apply them later with `rag-eval review {args.run} --reviews "
                        f"{path} --apply`") from None


def _agreement(args: argparse.Namespace, run_dir: Path, rows: list[Row], book: ReviewBook, path: Path) -> int:
    """Agreement between people, then (when a judge rated the answers) the judge against people."""
    manifest = read_manifest(run_dir)
    ks, judge = manifest.ks, run_judge(manifest) or next(iter(book.judges()), None)
    applied = [apply_reviews(r, book, ks, judge=judge) for r in rows]
    report = agreement_report(applied, seed=args.seed, resamples=args.resamples)
    sample = read_sample(path)
    judged = judge_agreement(applied, sample=None if sample is None else sample.answers(), seed=args.seed,
                             resamples=args.resamples)
    if args.json:
        data = report.to_json() | {"judges": [judged.to_json()] if judged else []}
        say(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        say(agreement_text(report) + (f"\n\n{judge_agreement_text(judged)}" if judged else ""))
    return 0


def _calibration(args: argparse.Namespace, run_dir: Path, rows: list[Row], book: ReviewBook,
                 path: Path) -> CalibrationSample:
    """The calibration sample of this run's judge: the one beside the reviews file if drawn with the same judge,
    N and seed, else a new one (written there)."""
    manifest = read_manifest(run_dir)
    judge = run_judge(manifest) or next(iter(book.judges()), None)
    if judge is None:
        raise InputError(f"no judge has rated {run_dir}'s answers; run `rag-eval judge {run_dir}` first")
    old = read_sample(path)
    if old is not None and (old.judge, old.n, old.seed) == (judge, args.calibrate, args.seed):
        sample = old
    else:
        applied = [apply_reviews(r, book, manifest.ks, judge=judge) for r in rows]
        sample = draw_sample(applied, judge, args.calibrate, args.seed)
        write_sample(path, sample)
    say(f"calibration sample: {len(sample.claims)} claims judged by {judge} (seed {sample.seed}, stratified by "
          f"its verdict), in {len(sample.answers())} answers; kept in {sample_path(path)}")
    return sample


def _export(args: argparse.Namespace, rows: list[Row], book: ReviewBook, reviewer: str) -> int:
    text = export_disagreements_csv(rows, book) if args.resolve else export_csv(rows, book, reviewer=reviewer)
    atomic_write_text(args.export, text)
    lines = text.count("\n") - 1
    if args.resolve:
        say(f"wrote {lines} claim(s) reviewers disagree on to {args.export}; fill in resolution (supported, "
              f"unsupported or contradicted; source_id for supported), then "
              f"`rag-eval review {args.run} --import {args.export} --reviewer YOU`")
    else:
        who = f"for reviewer {reviewer}" if reviewer else "with a blank reviewer column (the importer's name)"
        say(f"wrote {lines} claim line(s) {who} to {args.export}; fill in verdict "
              f"(supported, unsupported, contradicted, or none for an answer without claims) and source_id (an id "
              f"of cited_source_ids or retrieved_source_ids), then `rag-eval review {args.run} --import {args.export}`")
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



def default_reviews(run_dir: Path) -> Path:
    """The reviews file beside the run's cases file."""
    cases = read_manifest(run_dir).inputs.get("cases", {}).get("path")
    if not cases or not Path(cases).exists():
        raise InputError(f"cannot find the cases file {cases!r} of {run_dir} from here; run from the folder the "
                         "run was made in, or pass --reviews FILE")
    return reviews_path(cases)


# The terminal screen ---------------------------------------------------------------------------------------------

def _marked(text: str, a: int, b: int) -> str:
    """`text` with text[a:b] highlighted (reverse video on a terminal, »guillemets« when the output goes to a file
    or pipe), every piece made printable first: the highlight is ours, the text is not."""
    middle = printable(text[a:b])
    mark = f"\x1b[7m{middle}\x1b[0m" if sys.stdout.isatty() else f"»{middle}«"
    return printable(text[:a]) + mark + printable(text[b:])


def quote_context(passage: str, quote: str, chars: int = _CONTEXT_CHARS) -> str:
    """The normalised passage cut to about `chars` characters around the quote, the quote highlighted; the start
    of the passage when the quote is not in it. Printable: ready for the terminal."""
    text, span = find_quote(passage, quote)
    if span is None:
        return printable(text[:chars] + ("…" if len(text) > chars else "") + "  (quote not found in this passage)")
    a, b = span
    side = max(0, (chars - (b - a)) // 2)
    start, end = max(0, a - side), min(len(text), b + side)
    return (("…" if start else "") + _marked(text[start:end], a - start, b - start)
            + ("…" if end < len(text) else ""))


def _show_answer(row: Row, heading: str) -> None:
    ans = row.answer
    say(f"\n{heading} · case {row.case_id} (repeat {row.repeat}) · status {ans.status}")
    say(f"question: {row.question}\nanswer:   {ans.model_answer or '(no answer)'}")
    passages = [(p.source_id, p.text) for p in _passages(row)]
    say("citations:" if ans.citations else "citations: none")
    for i, c in enumerate(ans.citations, start=1):
        state = "valid" if c.valid else c.reason
        text = cited_passage(passages, c.source_id, c.quote)
        body = quote_context(text, c.quote) if text is not None else printable(f"\"{c.quote}\" (passage not retrieved)")
        print(printable(f"  {i}. {c.source_id} ({state}): ") + body)  # body is printable, with our highlight
    ids = ", ".join(sid for sid, _ in passages) or "none"
    say(f"passages: {len(passages)} retrieved ({ids}); p shows them in full")


def _passages(row: Row) -> list[RetrievedPassage]:
    return sorted(row.retrieved, key=lambda p: p.rank)


def _show_passages(row: Row) -> None:
    for p in _passages(row):
        hits = (find_quote(p.text, c.quote) for c in row.answer.citations if c.source_id == p.source_id)
        text, span = next((hit for hit in hits if hit[1] is not None), find_quote(p.text, ""))  # the first found
        shown = _marked(text, *span) if span else printable(text)
        print(printable(f"  [{p.rank}] {p.source_id} (page {p.page}): ") + shown)  # shown is printable


def _ask(prompt: str, row: Row) -> str:
    """One line of input; `p` and `?` are answered here and asked again, `q` or end of input stops."""
    while True:
        try:
            answer = input(printable(prompt)).strip()
        except (EOFError, KeyboardInterrupt):  # stop cleanly: finished reviews are saved and applied
            raise _Quit from None
        if answer.lower() == "q":
            raise _Quit
        if answer.lower() == "p":
            _show_passages(row)
        elif answer == "?":
            say(_KEYS)
        else:
            return answer


def _to_review(rows: list[Row], book: ReviewBook, reviewer: str) -> list[Row]:
    """The answers `reviewer` has not reviewed. A row reviewed without any review in the book (its claims came
    from a claims file) is left alone."""
    return [row for row in distinct_answers(rows) if book.review_of(answer_key(row), reviewer) is None
            and (row.human_claim_review != "reviewed" or book.for_answer(answer_key(row)))]


def _walk(rows: list[Row], book: ReviewBook, path: Path, reviewer: str) -> ReviewBook:
    """Ask `reviewer` about every answer they have not reviewed (other reviewers' verdicts are not shown);
    each finished review is saved at once, so quitting loses nothing."""
    todo = _to_review(rows, book, reviewer)
    say(f"{len(todo)} answer(s) to review as {reviewer or '(unnamed)'}; reviews go to {path}\n{_KEYS}")
    try:
        for number, row in enumerate(todo, start=1):
            _show_answer(row, f"answer {number} of {len(todo)}")
            claims = _review_row(row)
            if claims is None:
                continue
            book = add_reviews(path, [Review(row.case_id, row.answer.answer_sha256, tuple(claims), reviewer,
                                             utc_now())])
            say(f"saved ({len(claims)} claim(s))")
    except _Quit:
        say("stopped; finished reviews are saved")
    return book


def _review_row(row: Row) -> list[Claim] | None:
    """The claims and verdicts for one answer, or None to skip it."""
    offered = sentence_split(row.answer.model_answer)
    say("offered claims (sentence split):" if offered else "no claims offered (empty answer)")
    for i, claim in enumerate(offered, start=1):
        say(f"  {i}. {claim}")
    choice = _ask("accept / e / k > ", row).lower()
    while choice not in ("", "e", "k"):
        choice = _ask(f"unknown key {choice!r} (? lists the keys) > ", row).lower()
    if choice == "k":
        return None
    texts = offered
    if choice == "e":
        say("type the claims, one a line; an empty line ends (none at all: the answer makes no claims)")
        texts = list(iter(lambda: _ask("claim> ", row), ""))
    return [_verdict(row, text, i, len(texts)) for i, text in enumerate(texts, start=1)]


def _passage_ids(row: Row) -> tuple[list[str], str | None]:
    retrieved = [p.source_id for p in _passages(row)]
    cited = next((c.source_id for c in row.answer.citations if c.source_id in retrieved), None)
    return retrieved, cited


def _verdict(row: Row, text: str, number: int, total: int) -> Claim:
    retrieved, cited = _passage_ids(row)
    note = ""
    say(f"claim {number} of {total}: {text}")
    while True:
        command, _, rest = _ask("s/u/c/n > ", row).partition(" ")
        command, rest = command.lower(), rest.strip()
        if command == "n":
            note = rest
            say(f"note: {note}")
        elif command in ("u", "c"):
            return Claim(text, VERDICTS[1] if command == "u" else VERDICTS[2], None, note)
        elif command == "s":
            source = _source(rest, retrieved, cited)
            if source is not None:
                return Claim(text, VERDICTS[0], source, note)
            say(f"which passage? one of {', '.join(retrieved) or 'none'} (or its rank)")
        else:
            say(f"unknown key {command!r} (? lists the keys)")


def _source(given: str, retrieved: list[str], cited: str | None) -> str | None:
    if not given:
        return cited
    if given.isdigit() and 1 <= int(given) <= len(retrieved):
        return retrieved[int(given) - 1]
    return given if given in retrieved else None


# Resolving disagreements -----------------------------------------------------------------------------------------

def _open_disagreements(rows: list[Row], book: ReviewBook) -> list[tuple[Row, ClaimState]]:
    return [(row, s) for row in distinct_answers(rows) for s in book.claim_states(answer_key(row)) or []
            if s.status == "disagreement"]


def _walk_disagreements(rows: list[Row], book: ReviewBook, path: Path, resolver: str) -> ReviewBook:
    """Show each open disagreement with every reviewer's verdict and ask for the verdict that counts."""
    todo = _open_disagreements(rows, book)
    say(f"{len(todo)} claim(s) on which reviewers disagree; resolutions by {resolver or '(unnamed)'} go to "
          f"{path}\nkeys: s [ID|rank] supported · u unsupported · c contradicted · n TEXT note · k skip · "
          "p full passages · q quit")
    try:
        for number, (row, state) in enumerate(todo, start=1):
            _show_answer(row, f"disagreement {number} of {len(todo)}")
            say(f"claim: {state.claim}")
            for verdict in state.to_record().reviews:
                say(f"  {_verdict_text(verdict)}")
            claim = _resolution(row, state.claim)
            if claim is None:
                continue
            settled = cast(Verdict, claim.verdict)  # a person's: never unverified
            book = add_reviews(path, [Resolution(row.case_id, row.answer.answer_sha256, state.claim, settled,
                                                 claim.source_id, claim.note, resolver, utc_now())])
            say(f"resolved: {claim.verdict}")
    except _Quit:
        say("stopped; finished resolutions are saved")
    return book


def _resolution(row: Row, text: str) -> Claim | None:
    retrieved, cited = _passage_ids(row)
    note = ""
    while True:
        command, _, rest = _ask("resolve s/u/c/n/k > ", row).partition(" ")
        command, rest = command.lower(), rest.strip()
        if command == "k":
            return None
        if command == "n":
            note = rest
        elif command in ("u", "c"):
            return Claim(text, VERDICTS[1] if command == "u" else VERDICTS[2], None, note)
        elif command == "s" and (source := _source(rest, retrieved, cited)) is not None:
            return Claim(text, VERDICTS[0], source, note)
        else:
            say(f"unknown key {command!r}, or no such passage ({', '.join(retrieved) or 'none'})")
