"""`rag-eval review RUN`: review the claims of pending answers in the terminal, or through a CSV file.

Reviews are saved after every answer in `<cases stem>.reviews.jsonl` beside the run's cases file, keyed by case
id and answer hash; afterwards the run's rows and summary are rewritten with the reviews applied.
"""

from __future__ import annotations

import argparse
import getpass
from pathlib import Path

from chatbot.errors import InputError
from chatbot.store import atomic_write_text

from ..report import find_quote
from ..review import (VERDICTS, Claim, Review, ReviewKey, apply_to_run, export_csv, import_csv, passages_by_answer,
                      read_reviews, reviews_path, save_reviews, sentence_split)
from ..records import Row
from ..runs import read_manifest, read_rows, utc_now

_HELP_SPLIT = "[Enter] accept these claims · e edit them · k skip this answer · q quit"
_HELP_CLAIM = ("s ID supported by passage ID (or its rank: s 1; plain s = the cited passage) · u unsupported · "
               "c contradicted · n TEXT note · q quit")


class _Quit(Exception):
    """The reviewer asked to stop (q, or end of input)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("review", help="review the claims of a run's answers (terminal, or CSV export/import)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="run directory")
    p.add_argument("--reviews", metavar="FILE", help="reviews file (default: <cases stem>.reviews.jsonl beside the "
                                                     "run's cases file)")
    p.add_argument("--reviewer", help="your name in the reviews (default: your login name)")
    io_group = p.add_mutually_exclusive_group()
    io_group.add_argument("--export", metavar="FILE.csv", help="write every answer's claims to a CSV and stop")
    io_group.add_argument("--import", dest="import_", metavar="FILE.csv", help="read reviews from a CSV and stop")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run)
    rows = read_rows(run_dir)
    path = Path(args.reviews) if args.reviews else _default_reviews(run_dir)
    reviews = read_reviews(path)
    reviewer = args.reviewer or _user()
    if args.export:
        text = export_csv(rows, reviews)
        atomic_write_text(args.export, text)
        print(f"wrote {text.count(chr(10)) - 1} claim line(s) to {args.export}; fill in verdict (supported, "
              f"unsupported, contradicted, or none for an answer without claims) and source_id, then "
              f"`rag-eval review {args.run} --import {args.export}`")
        return 0
    if args.import_:
        new = import_csv(args.import_, reviewer=reviewer, reviewed_at=utc_now(), known=passages_by_answer(rows))
        reviews = reviews | new
        save_reviews(path, reviews)
        print(f"imported {len(new)} review(s) from {args.import_} into {path}")
    else:
        _walk(rows, reviews, path, reviewer)
    summary = apply_to_run(run_dir, reviews)
    review = summary.human_claim_review
    claims = summary.metrics.get("claims_supported")
    mean = "n/a" if claims is None or claims.mean is None else f"{claims.mean:.3f}"
    print(f"\n{run_dir}: {review['reviewed']} reviewed, {review['pending']} pending; claims supported {mean} "
          f"over {claims.scored if claims else 0} answers with claims; reviews in {path}")
    return 0


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _default_reviews(run_dir: Path) -> Path:
    cases = read_manifest(run_dir).inputs.get("cases", {}).get("path")
    if not cases or not Path(cases).exists():
        raise InputError(f"cannot find the cases file {cases!r} of {run_dir} from here; run from the folder the "
                         "run was made in, or pass --reviews FILE")
    return reviews_path(cases)


def _walk(rows: list[Row], reviews: dict[ReviewKey, Review], path: Path, reviewer: str) -> None:
    """Ask about every pending answer; each finished review is saved at once, so quitting loses nothing."""
    pending = [r for r in rows if not r.errored and r.human_claim_review != "reviewed"
               and (r.case_id, r.answer.answer_sha256) not in reviews]
    seen: set[ReviewKey] = set()
    print(f"{len(pending)} answer(s) to review; reviews go to {path}")
    try:
        for number, row in enumerate(pending, start=1):
            key = (row.case_id, row.answer.answer_sha256)
            if key in seen:  # the same answer in another repeat
                continue
            _show(row, number, len(pending))
            claims = _review_row(row)
            if claims is None:
                continue
            reviews[key] = Review(key[0], key[1], tuple(claims), reviewer, utc_now())
            seen.add(key)
            save_reviews(path, reviews)
            print(f"saved ({len(claims)} claim(s))")
    except _Quit:
        print("stopped; finished reviews are saved")


def _ask(prompt: str) -> str:
    try:
        answer = input(prompt)
    except (EOFError, KeyboardInterrupt):  # stop cleanly: finished reviews are saved and applied
        raise _Quit from None
    if answer.strip().lower() == "q":
        raise _Quit
    return answer.strip()


def _show(row: Row, number: int, total: int) -> None:
    ans = row.answer
    print(f"\n[{number}/{total}] case {row.case_id} (repeat {row.repeat}), status {ans.status}")
    print(f"question: {row.question}\nanswer:   {ans.model_answer or '(no answer)'}")
    quotes: dict[str, str] = {}
    for c in ans.citations:
        print(f"cites {c.source_id}: \"{c.quote}\" ({'valid' if c.valid else c.reason})")
        quotes.setdefault(c.source_id, c.quote)
    print("passages:")
    for p in row.retrieved:
        text, span = find_quote(p.text, quotes.get(p.source_id, ""))
        if span:
            text = f"{text[:span[0]]}»{text[span[0]:span[1]]}«{text[span[1]:]}"
        print(f"  [{p.rank}] {p.source_id} (page {p.page}): {text}")


def _review_row(row: Row) -> list[Claim] | None:
    """The claims and verdicts for one answer, or None to skip it."""
    offered = sentence_split(row.answer.model_answer)
    print("offered claims (sentence split):" if offered else "no claims offered (empty answer)")
    for i, claim in enumerate(offered, start=1):
        print(f"  {i}. {claim}")
    choice = _ask(f"{_HELP_SPLIT}\n> ").lower()
    while choice not in ("", "e", "k"):
        choice = _ask(f"unknown command {choice!r}; {_HELP_SPLIT}\n> ").lower()
    if choice == "k":
        return None
    texts = offered
    if choice == "e":
        print("type the claims, one a line; an empty line ends (none at all: the answer makes no claims)")
        texts = list(iter(lambda: _ask("claim> "), ""))
    return [_verdict(row, text, i, len(texts)) for i, text in enumerate(texts, start=1)]


def _verdict(row: Row, text: str, number: int, total: int) -> Claim:
    retrieved = [p.source_id for p in sorted(row.retrieved, key=lambda p: p.rank)]
    cited = next((c.source_id for c in row.answer.citations if c.source_id in retrieved), None)
    note = ""
    print(f"claim {number}/{total}: {text}")
    while True:
        command, _, rest = _ask(f"{_HELP_CLAIM}\n> ").partition(" ")
        command, rest = command.lower(), rest.strip()
        if command == "n":
            note = rest
            print(f"note: {note}")
        elif command in ("u", "c"):
            return Claim(text, VERDICTS[1] if command == "u" else VERDICTS[2], None, note)
        elif command == "s":
            source = _source(rest, retrieved, cited)
            if source is not None:
                return Claim(text, VERDICTS[0], source, note)
            print(f"which passage? one of {', '.join(retrieved) or 'none'} (or its rank)")
        else:
            print(f"unknown command {command!r}")


def _source(given: str, retrieved: list[str], cited: str | None) -> str | None:
    if not given:
        return cited
    if given.isdigit() and 1 <= int(given) <= len(retrieved):
        return retrieved[int(given) - 1]
    return given if given in retrieved else None
