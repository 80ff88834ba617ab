"""`rag-eval draft review` in the terminal: walk the drafts that passed verification, the ones that failed it
(`--failed`: to edit until the checks pass, or reject), or the ones reviewers disagree on, and save each decision
at once. Only the CLI talks to the terminal; this is its draft-review part."""

from __future__ import annotations

from pdfrag.terminal import printable, say
from pdfrag.text import find_quote

from ..drafting.agreement import decision_text
from ..drafting.decisions import Collection, checks_summary, decide, edit, resolve_disagreement
from ..drafting.records import Draft, write_drafts
from ..drafting.settings import DraftSettings
from ..errors import InputError, command
from ..runs import utc_now

__all__ = ["walk", "walk_disagreements"]

_HELP = "a accept · r REASON reject · e edit · s skip · q quit"
_HELP_FAILED = "e edit (until the checks pass) · r REASON reject · s skip · q quit"


class _Quit(Exception):
    pass


def _ask(prompt: str) -> str:
    try:
        answer = input(printable(prompt))
    except (EOFError, KeyboardInterrupt):
        raise _Quit from None
    if answer.strip().lower() == "q":
        raise _Quit
    return answer.strip()


def walk(drafts: list[Draft], path: str, pages: dict[str, str], collection: Collection, settings: DraftSettings,
         by: str, *, failed: bool = False) -> None:
    """Ask `by` about every draft that passed verification (with `failed`: that failed it) and that they have not
    decided on (other reviewers' decisions are not shown, so that each judges on their own); each decision is
    saved at once."""
    todo = [i for i, d in enumerate(drafts) if _walked(d, failed) and all(r.by != by for r in d.reviews)]
    say(_shown_line(drafts, len(todo), by, path, failed=failed))
    try:
        for n, i in enumerate(todo, start=1):
            _show(drafts[i], pages.get(drafts[i].source_id, ""), n, len(todo))
            decided = _decide(drafts[i], collection, settings, by)
            if decided is not None:
                drafts[i] = decided
                write_drafts(path, drafts)
                mine = next(r.status for r in decided.reviews if r.by == by)
                say(f"saved: {mine}" + ("; reviewers disagree, so the draft is pending until resolved "
                                          "(--resolve)" if decided.in_disagreement else ""))
    except _Quit:
        say("stopped; decisions made so far are saved")


def _walked(draft: Draft, failed: bool) -> bool:
    """Whether the walk (of passed drafts, or with `failed` of failed ones) shows `draft`; error entries never."""
    return draft.kind != "error" and draft.verification.passed != failed


def _shown_line(drafts: list[Draft], shown: int, by: str, path: str, *, failed: bool) -> str:
    """Which drafts the terminal review shows, and why the others are not shown (the CSV export has them all)."""
    other = sum(_walked(d, not failed) for d in drafts)
    decided = sum(_walked(d, failed) and any(r.by == by for r in d.reviews) for d in drafts)
    errors = sum(d.kind == "error" for d in drafts)
    left = ([f"{other} passed verification (without --failed)"] if failed else
            [f"{other} failed verification (--failed walks them, to edit or reject)"]) + \
           [f"{decided} already decided by {by}"] + \
           ([f"{errors} could not be drafted (run `rag-eval draft` again)"] if errors else [])
    which = ("failed verification, to edit until the checks pass or to reject," if failed
             else "passed verification")
    return (f"showing {shown} of {len(drafts)} draft(s): those that {which} and {by} has not decided on (not "
            f"shown: {', '.join(left)}; `{command('draft', 'review', path, '--export', 'FILE.csv')}` lists every "
            f"draft, and `draft report` the reasons); decisions are saved to {path} as you go")


def walk_disagreements(drafts: list[Draft], path: str, pages: dict[str, str], resolver: str) -> None:
    """Show each draft reviewers disagree on, with every reviewer's decision, and ask for the one that counts."""
    todo = [i for i, d in enumerate(drafts) if d.in_disagreement and d.resolution is None]
    say(f"{len(todo)} draft(s) on which reviewers disagree; resolutions by {resolver} are saved to {path} as you "
          "go")
    try:
        for n, i in enumerate(todo, start=1):
            _show(drafts[i], pages.get(drafts[i].source_id, ""), n, len(todo))
            for review in drafts[i].reviews:
                say(f"decision: {decision_text(review)}")
            settled = _settle(drafts[i], resolver)
            if settled is not None:
                drafts[i] = settled
                write_drafts(path, drafts)
                say(f"resolved: {settled.decision.status}")
    except _Quit:
        say("stopped; resolutions made so far are saved")


def _settle(draft: Draft, resolver: str) -> Draft | None:
    while True:
        command, _, rest = _ask("resolve: a accept · r REASON reject · s skip · q quit\n> ").partition(" ")
        command = command.lower()
        try:
            if command == "a":
                return resolve_disagreement(draft, "accepted", by=resolver, at=utc_now())
            if command == "r":
                return resolve_disagreement(draft, "rejected", by=resolver, at=utc_now(),
                                            reason=rest or _ask("reason> "))
            if command == "s":
                return None
        except InputError as exc:
            say(exc)
            continue
        say(f"unknown command {command!r}")


def _show(draft: Draft, page: str, n: int, total: int) -> None:
    text, span = find_quote(page, draft.quote)
    if span:
        text = f"{text[:span[0]]}»{text[span[0]:span[1]]}«{text[span[1]:]}"
    say(f"\n[{n}/{total}] {draft.draft_id} ({draft.kind}, {draft.type}) from {draft.source_id}")
    say(f"page: {text}\n")
    say(f"question: {draft.question}")
    if draft.kind == "answerable":
        say(f"quote:    {draft.quote}\nfacts:    {' | '.join(draft.facts)}\nevidence: {', '.join(draft.evidence)}")
    say(f"checks:   {checks_summary(draft)}")
    for note in draft.verification.notes:
        say(f"note:     {note}")
    if draft.verification.parametric_answer is not None:
        say(f"without the page the model said: {draft.verification.parametric_answer}")


def _decide(draft: Draft, collection: Collection, settings: DraftSettings, by: str) -> Draft | None:
    shown = draft  # what an edit offers to keep: the last edit tried, so that editing again changes only what failed
    while True:
        command, _, rest = _ask(f"{_HELP if draft.verification.passed else _HELP_FAILED}\n> ").partition(" ")
        command = command.lower()
        try:
            if command == "a":
                return decide(draft, "accepted", by=by, at=utc_now())
            if command == "r":
                return decide(draft, "rejected", by=by, at=utc_now(), reason=rest or _ask("reason> "))
            if command == "s":
                return None
            if command == "e":
                edited = shown = _edit(draft, shown, collection, settings, by)
                if (edited.question, edited.quote, edited.facts) == (draft.question, draft.quote, draft.facts):
                    say("nothing changed, so nothing to save: change a field, or " +
                        ("accept, reject or skip" if draft.verification.passed else "reject or skip (an edit "
                         "re-runs the checks on what you change; dedupe and the dense rank need the model server "
                         "and are not re-run)"))
                    continue
                say(f"checks after the edit: {checks_summary(edited)}")
                if edited.verification.passed:
                    return edited
                say("the edited draft fails verification and is not saved; edit again (Enter keeps what you "
                    "typed), reject or skip")
                continue
        except InputError as exc:
            say(exc)
            continue
        say(f"unknown command {command!r}")


def _edit(draft: Draft, shown: Draft, collection: Collection, settings: DraftSettings, by: str) -> Draft:
    """`draft` edited, the prompts offering `shown`'s texts to keep (the draft's own, or the last edit tried)."""
    say("press Enter to keep a value")
    question = _ask(f"question [{shown.question}]> ") or shown.question
    quote, facts = shown.quote, list(shown.facts)
    if draft.kind == "answerable":
        quote = _ask(f"quote [{shown.quote}]> ") or shown.quote
        given = _ask(f"facts, separated by | [{' | '.join(shown.facts)}]> ")
        facts = [f.strip() for f in given.split("|")] if given else facts
    return edit(draft, collection, question=question, quote=quote, facts=facts, by=by, at=utc_now(),
                limits=settings.limits(), abstain_below=settings.abstain_below)
