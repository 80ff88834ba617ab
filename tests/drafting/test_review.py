"""Human decisions on drafts: CSV export/import, the terminal walk, edits re-running the checks, decisions kept
across a rerun, and `rag-eval draft cases` writing only what a human accepted.

The drafts come from the test server with the scripted rule of tests/support/draft_rules.py
(see tests/drafting/test_draft.py)."""

from __future__ import annotations

import json
import re

from harness.cli import main
from harness.drafting.records import read_drafts
from pdfrag.pdfs import read_documents
from pdfrag.text import fold
from tests.conftest import HANDBOOK
from tests.support import draft_rules as rules


def test_csv_round_trip_accept_reject_edit_then_cases(drafts_file, tmp_path, capsys):
    sheet = tmp_path / "review.csv"
    assert main(["draft", "review", str(drafts_file), "--export", str(sheet)]) == 0
    rows = rules.csv_rows(sheet)
    assert len(rows) == 12 and all(r["decision"] == "" for r in rows)
    rules.find_row(rows, rules.GOOD_HOTEL)["decision"] = "accepted"
    rules.find_row(rows, rules.GOOD_LAPTOP).update(decision="rejected", reason="too easy")
    carry = rules.find_row(rows, rules.GOOD_CARRY)
    carry.update(decision="accepted", question="Until when can leave from the previous year still be taken?")
    rules.write_csv(sheet, rows)
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet), "--reviewer", "ann"]) == 0
    drafts = {d.question: d for d in read_drafts(drafts_file)}
    assert drafts[rules.GOOD_HOTEL["question"]].decision.status == "accepted"
    assert drafts[rules.GOOD_HOTEL["question"]].decision.by == "ann"
    assert drafts[rules.GOOD_LAPTOP["question"]].decision.reason == "too easy"
    edited = drafts["Until when can leave from the previous year still be taken?"]
    assert edited.decision.status == "edited" and edited.original["question"] == rules.GOOD_CARRY["question"]
    assert edited.verification.passed and edited.verification.bm25_rank is not None
    # issue #30 item 7: an import prints one line of counts; the coverage report only with --verbose
    out = capsys.readouterr().out.split("\n", 1)[1]  # after the export's line
    assert out == (f"imported {sheet} into {drafts_file}: 3 draft(s) changed; now 1 accepted, 1 edited, 1 rejected, "
                   f"9 pending of 12 (coverage: `rag-eval draft report {drafts_file}`, or --verbose here)\n")
    assert "coverage by document" not in out

    cases = tmp_path / "cases.jsonl"
    assert main(["draft", "cases", str(drafts_file), "--out", str(cases)]) == 0
    written = [json.loads(line) for line in cases.read_text().splitlines()]
    assert sorted(c["question"] for c in written) == sorted([rules.GOOD_HOTEL["question"], edited.question])
    assert all("unreviewed" not in c["tags"] for c in written)
    assert main(["check", "--docs", str(HANDBOOK), "--cases", str(cases)]) == 0


def test_csv_problems_are_all_reported_and_nothing_changes(drafts_file, tmp_path, capsys):
    sheet = tmp_path / "review.csv"
    main(["draft", "review", str(drafts_file), "--export", str(sheet)])
    before = drafts_file.read_text()
    rows = rules.csv_rows(sheet)
    rules.find_row(rows, rules.GOOD_HOTEL)["decision"] = "rejected"  # no reason
    rules.find_row(rows, rules.INVENTED)["decision"] = "accepted"  # failed verification
    rules.find_row(rows, rules.GOOD_LAPTOP).update(decision="accepted",
                                                   question="What does this document say about laptops?")
    rules.find_row(rows, rules.GOOD_PASSWORD)["decision"] = "maybe"
    rules.find_row(rows, rules.NEAR_DUPLICATE)["decision"] = "edited"  # unchanged: dedupe would not be re-run
    rows[0]["draft_id"] = "no-such-draft"
    rules.write_csv(sheet, rows)
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet), "--reviewer", "ann"]) == 2
    err = capsys.readouterr().err
    assert "6 problem(s)" in err and "needs a reason" in err and "quote_not_found" in err
    assert "`edited` but question, quote and facts are as drafted, and it failed verification (near_duplicate: " \
           "cosine" in err
    assert "deictic_question" in err and "'maybe'" in err and "no-such-draft" in err
    assert drafts_file.read_text() == before


def test_terminal_review_saves_each_decision(drafts_file, monkeypatch, capsys):
    answers = iter(["a", "r duplicate of a hand-written case", "e", "How often is a laptop replaced?", "", "", "s",
                    "q"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    assert main(["draft", "review", str(drafts_file), "--reviewer", "bob"]) == 0
    out = capsys.readouterr().out
    assert "»" in out and "«" in out  # the quote is highlighted in the page text
    decided = [d for d in read_drafts(drafts_file) if d.decision.status != "pending"]
    assert [d.decision.status for d in decided] == ["accepted", "rejected", "edited"]
    assert decided[1].decision.reason == "duplicate of a hand-written case"
    assert decided[2].question == "How often is a laptop replaced?" and decided[2].original is not None


def test_an_import_prints_the_coverage_report_only_with_verbose(drafts_file, tmp_path, capsys):
    sheet = tmp_path / "review.csv"
    assert main(["draft", "review", str(drafts_file), "--export", str(sheet)]) == 0
    rows = rules.csv_rows(sheet)
    rules.find_row(rows, rules.GOOD_HOTEL)["decision"] = "accepted"
    rules.write_csv(sheet, rows)
    capsys.readouterr()
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet), "--reviewer", "ann", "--verbose"]) == 0
    first, rest = capsys.readouterr().out.split("\n", 1)
    assert first.startswith(f"imported {sheet} into {drafts_file}: 1 draft(s) changed; now 1 accepted, 0 edited")
    assert "coverage by document" in rest and "accepted by a human: 100.0% of 1 decided" in rest
    assert main(["draft", "review", str(drafts_file), "--import", str(sheet), "--reviewer", "ann"]) == 0
    assert "0 draft(s) changed; now 1 accepted" in capsys.readouterr().out  # the same sheet again changes nothing


def test_the_terminal_review_says_which_drafts_it_shows_and_why(drafts_file, monkeypatch, capsys):
    """Issue #30 item 4: the terminal shows only drafts that passed verification (and that you have not decided
    on); it says so, with the counts of the others, while the CSV export has every draft."""
    drafts = read_drafts(drafts_file)
    passed = sum(d.verification.passed for d in drafts)
    assert 0 < passed < len(drafts)
    answers = iter(["a", "q"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    assert main(["draft", "review", str(drafts_file), "--reviewer", "ann"]) == 0
    assert (f"showing {passed} of {len(drafts)} draft(s): those that passed verification and ann has not decided "
            f"on (not shown: {len(drafts) - passed} failed verification (--failed walks them, to edit or reject), 0 "
            f"already decided by ann; `rag-eval draft "
            f"review {drafts_file} --export FILE.csv` lists every draft") in capsys.readouterr().out
    monkeypatch.setattr("builtins.input", lambda prompt="": "q")
    assert main(["draft", "review", str(drafts_file), "--reviewer", "ann"]) == 0
    again = capsys.readouterr().out
    assert f"showing {passed - 1} of {len(drafts)} draft(s)" in again and "1 already decided by ann" in again
    sheet = drafts_file.with_name("all.csv")
    assert main(["draft", "review", str(drafts_file), "--export", str(sheet), "--reviewer", "ann"]) == 0
    assert len(rules.csv_rows(sheet)) == len(drafts)


def test_decisions_survive_a_rerun_into_the_same_file(drafts_file, server, tmp_path):
    sheet = tmp_path / "review.csv"
    main(["draft", "review", str(drafts_file), "--export", str(sheet)])
    rows = rules.csv_rows(sheet)
    rules.find_row(rows, rules.GOOD_HOTEL)["decision"] = "accepted"
    rules.write_csv(sheet, rows)
    main(["draft", "review", str(drafts_file), "--import", str(sheet), "--reviewer", "ann"])
    calls = len(server.chat_bodies())
    assert main(["draft", "--docs", str(HANDBOOK), "--out", str(drafts_file), "--host", server.url,
                 "--unanswerable", "0"]) == 0  # the fixture's command again
    assert len(server.chat_bodies()) == calls
    hotel = next(d for d in read_drafts(drafts_file) if d.question == rules.GOOD_HOTEL["question"])
    assert hotel.decision.status == "accepted"


def test_actions_need_the_drafts_file(capsys):
    assert main(["draft", "cases"]) == 2
    assert "needs the drafts file" in capsys.readouterr().err


def test_an_edit_survives_a_rerun_and_other_pages_are_kept_when_drafting_a_subset(drafts_file, server, tmp_path):
    sheet = tmp_path / "review.csv"
    main(["draft", "review", str(drafts_file), "--export", str(sheet)])
    rows = rules.csv_rows(sheet)
    rules.find_row(rows, rules.GOOD_CARRY).update(decision="accepted",
                                                  question="Until when may last year's leave be taken?")
    rules.write_csv(sheet, rows)
    main(["draft", "review", str(drafts_file), "--import", str(sheet), "--reviewer", "ann"])
    before = {d.draft_id: d for d in read_drafts(drafts_file)}
    assert main(["draft", "--docs", str(HANDBOOK), "--out", str(drafts_file), "--host", server.url,
                 "--pages", "handbook.pdf#p2", "--unanswerable", "0"]) == 0
    after = {d.draft_id: d for d in read_drafts(drafts_file)}
    assert after.keys() == before.keys()  # pages 1, 3 and 4 kept, page 2 drafted again (from the cache)
    edited = next(d for d in after.values() if d.decision.status == "edited")
    assert edited.question == "Until when may last year's leave be taken?"
    assert main(["draft", "--docs", str(HANDBOOK), "--out", str(drafts_file), "--host", server.url,
                 "--unanswerable", "0"]) == 0
    assert next(d for d in read_drafts(drafts_file) if d.decision.status == "edited").question == edited.question


def test_config_file_settings_and_flags_win(server, tmp_path):
    server.chat_rule = rules.draft_rule
    config = tmp_path / "draft.toml"
    config.write_text('per-page = 2\nmax-pages = 1\nseed = 3\nout = "from-config.jsonl"\n', encoding="utf-8")
    assert main(["draft", "--config", str(config), "--docs", str(HANDBOOK), "--host", server.url,
                 "--no-parametric", "--seed", "5"]) == 0
    body = server.chat_bodies()[0]
    assert body["format"]["properties"]["drafts"]["maxItems"] == 2 and body["options"]["seed"] == 5
    # the page, then one unanswerable draft: the default share, 1 page x 2 asked / 4, rounded up
    assert len(server.chat_bodies()) == 2 and (tmp_path / "from-config.jsonl").exists()
    assert "does not mention" in server.chat_bodies()[1]["messages"][-1]["content"]
    config.write_text("per-pages = 2\n", encoding="utf-8")
    assert main(["draft", "--config", str(config), "--host", server.url]) == 2


def test_report_command_shows_coverage_reasons_and_skipped_pages(server, tmp_path, make_pdf, capsys):
    server.chat_rule = rules.draft_rule
    security = read_documents(HANDBOOK)[0].pages[3].text  # a page the scripted rule knows
    docs = make_pdf("short.pdf", ["Only a cover page.", security]).parent
    out = tmp_path / "d.jsonl"
    assert main(["draft", "--docs", str(docs), "--out", str(out), "--host", server.url, "--no-parametric"]) == 0
    capsys.readouterr()
    assert main(["draft", "report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "skipped short.pdf#p1: 4 words, fewer than --min-page-words 20" in text
    assert "short.pdf#p2" in text and "coverage by document" in text


def test_importing_the_same_sheet_twice_keeps_an_edit_an_edit(drafts_file, tmp_path):
    """The sheet that made an edit (decision `accepted`, a changed question) imported a second time changes
    nothing: the draft stays `edited` by that reviewer with its original kept, not turned into a plain accept."""
    sheet = tmp_path / "review.csv"
    assert main(["draft", "review", str(drafts_file), "--export", str(sheet)]) == 0
    rows = rules.csv_rows(sheet)
    new_question = "Until when can leave from the previous year still be taken?"
    rules.find_row(rows, rules.GOOD_CARRY).update(decision="accepted", question=new_question)
    rules.write_csv(sheet, rows)
    for _ in range(2):
        assert main(["draft", "review", str(drafts_file), "--import", str(sheet), "--reviewer", "ann"]) == 0
        edited = {d.question: d for d in read_drafts(drafts_file)}[new_question]
        assert (edited.decision.status, edited.decision.by) == ("edited", "ann")
        assert edited.original["question"] == rules.GOOD_CARRY["question"]


def test_the_terminal_review_opens_failed_drafts_to_fix_or_reject_them(drafts_file, monkeypatch, capsys):
    """Issue #44 item 6: `--failed` walks the drafts that failed verification. Accepting one as it is is refused
    with what the checks found; an edit that still fails is not saved and the next edit starts from it; an edit
    that passes is saved as the reviewer's edit; a rejection needs a reason."""
    failed = [d for d in read_drafts(drafts_file) if d.kind != "error" and not d.verification.passed]
    at = next(i for i, d in enumerate(failed) if d.question == rules.DEICTIC["question"])  # walked in file order
    assert at >= 1
    fixed = "How far ahead must holidays be requested?"
    answers = iter(["r the quote is not on the page"] + ["s"] * (at - 1) + ["a",  # refused: it failed
                    "e", "", "", "",  # nothing changed: not an edit
                    "e", fixed, "Leave must be requested at least 3 weeks in advance", "",  # a typo: still fails
                    "e", "", rules.DEICTIC["quote"], "",  # Enter keeps the question typed before
                    "q"])
    prompts: list[str] = []

    def answer(prompt=""):
        prompts.append(prompt)
        return next(answers)

    monkeypatch.setattr("builtins.input", answer)
    assert main(["draft", "review", str(drafts_file), "--reviewer", "bob", "--failed"]) == 0
    out = capsys.readouterr().out
    assert (f"showing {len(failed)} of {len(read_drafts(drafts_file))} draft(s): those that failed verification, "
            "to edit until the checks pass or to reject, and bob has not decided on") in out
    assert prompts[0].startswith("e edit (until the checks pass) · r REASON reject")
    assert (f"{failed[at].draft_id}: failed verification (deictic_question: the question says 'According to the "
            "text', which only makes sense to someone looking at the page); edit it until the checks pass, or "
            "reject it") in out
    assert "nothing changed, so nothing to save: change a field, or reject or skip" in out
    assert "quote_not_found" in out and "is not saved; edit again (Enter keeps what you typed)" in out
    assert f"question [{fixed}]> " in prompts  # the second edit offers the first edit's question
    after = {d.draft_id: d for d in read_drafts(drafts_file)}
    edited = after[failed[at].draft_id]
    assert (edited.decision.status, edited.decision.by, edited.question) == ("edited", "bob", fixed)
    assert edited.verification.passed and edited.original["question"] == rules.DEICTIC["question"]
    rejected = after[failed[0].draft_id]
    assert (rejected.decision.status, rejected.decision.reason) == ("rejected", "the quote is not on the page")
    assert all(after[d.draft_id].decision.status == "pending" for d in failed[1:at] + failed[at + 1:])
    capsys.readouterr()
    monkeypatch.setattr("builtins.input", lambda prompt="": "q")
    assert main(["draft", "review", str(drafts_file), "--reviewer", "bob", "--failed"]) == 0
    again = capsys.readouterr().out
    # the fixed draft passes now, so it is among the passed ones; the rejected one is decided
    total = len(read_drafts(drafts_file))
    assert (f"showing {len(failed) - 2} of {total} draft(s): those that failed verification, to edit until the "
            f"checks pass or to reject, and bob has not decided on (not shown: {total - len(failed) + 1} passed "
            "verification (without --failed), 1 already decided by bob;") in again


def test_failed_goes_only_with_review(drafts_file, capsys):
    assert main(["draft", "report", str(drafts_file), "--failed"]) == 2
    assert "--failed goes with `rag-eval draft review DRAFTS --failed`" in capsys.readouterr().err


def test_a_refused_edit_says_what_the_checks_found(server, tmp_path, capsys):
    """Issue #44 item 7: an edited unanswerable draft refused on import names the score, the threshold, the page
    and the sentence the BM25 check found, not only its code."""
    server.chat_rule = rules.draft_rule
    drafts, sheet = tmp_path / "d.jsonl", tmp_path / "d.csv"
    assert main(["draft", "--docs", str(HANDBOOK), "--out", str(drafts), "--host", server.url, "--unanswerable",
                 "4", "--no-parametric"]) == 0
    assert main(["draft", "review", str(drafts), "--export", str(sheet)]) == 0
    rows = rules.csv_rows(sheet)
    row = next(r for r in rows if r["question"] == rules.UNANSWERABLE["Section 1: Annual Leave"]["question"])
    row.update(decision="accepted", question="What is the hotel limit per night in London and Paris?")
    rules.write_csv(sheet, rows)
    capsys.readouterr()
    assert main(["draft", "review", str(drafts), "--import", str(sheet), "--reviewer", "ann"]) == 2
    err = capsys.readouterr().err
    found = re.search(r"the edited draft fails verification \(bm25_above_threshold: score (\d+\.\d\d) >= "
                      r"threshold 2\.5 on (handbook\.pdf#p\d): '([^']+)'\)", err)
    assert found, err
    score, page, sentence = float(found[1]), found[2], found[3]
    assert score >= 2.5 and page == "handbook.pdf#p2"  # "London and Paris" is on page 2 alone
    pages = {p.source_id: fold(p.text) for p in read_documents(HANDBOOK)[0].pages}
    assert "london and paris" in fold(sentence) and fold(sentence) in pages[page]
