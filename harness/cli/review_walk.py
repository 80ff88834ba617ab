"""`rag-eval review` in the terminal: show each answer with its passages, take the reviewer's verdict on every
claim, and walk the claims reviewers disagree on; each decision is saved at once. Only the CLI talks to the
terminal; this is its claim-review part."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import cast

from pdfrag.terminal import printable, say
from pdfrag.text import cited_passage, find_quote

from ..records import RetrievedPassage, Row, Verdict
from ..review.agreement import verdict_text as _verdict_text
from ..review.book import VERDICTS, Claim, ClaimState, Resolution, Review, ReviewBook
from ..review.store import add_reviews, distinct_answers, offered_claims, review_key, withheld
from ..runs import utc_now

__all__ = ["quote_context", "walk", "walk_disagreements"]

_KEYS = """keys (type ? to see them again):
  on an answer:  Enter accept the offered claims · e edit them · k skip this answer
  on a claim:    s [ID|rank] supported (plain s: the cited passage) · u unsupported · c contradicted · n TEXT note
  anywhere:      p show the full passages · ? these keys · q quit (finished reviews are kept)"""
_CONTEXT_CHARS = 300


class _Quit(Exception):
    """The reviewer asked to stop (q, or end of input)."""


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
    if withheld(row):
        say(f"shown:    {ans.text or '(nothing)'} (the user was shown this, not the answer above: "
            f"{'; '.join(ans.reasons) or ans.status})")
    passages = [(p.source_id, p.text) for p in _passages(row)]
    say("citations:" if ans.citations else "citations: none")
    for i, c in enumerate(ans.citations, start=1):
        state = "valid" if c.valid else c.reason
        text = cited_passage(passages, c.source_id, c.quote)
        if text is None:
            body = printable(f"\"{c.quote}\" (passage not retrieved)")
        elif c.valid is False:  # the quote itself, then where it is not (or, too short, where it is)
            body = printable(f"\"{c.quote}\"; the passage: ") + quote_context(text, c.quote)
        else:
            body = quote_context(text, c.quote)
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
    return [row for row in distinct_answers(rows) if book.review_of(review_key(row), reviewer) is None
            and (row.human_claim_review != "reviewed" or book.for_answer(review_key(row)))]


def walk(rows: list[Row], book: ReviewBook, path: Path, reviewer: str) -> ReviewBook:
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
    offered = offered_claims(row)
    say("offered claims (sentence split):" if offered else
        "no claims offered (the answer was withheld from the user; e types claims)" if withheld(row) else
        "no claims offered (empty answer)")
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
    return [(row, s) for row in distinct_answers(rows) for s in book.claim_states(review_key(row)) or []
            if s.status == "disagreement"]


def walk_disagreements(rows: list[Row], book: ReviewBook, path: Path, resolver: str) -> ReviewBook:
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
