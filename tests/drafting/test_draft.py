"""`rag-eval draft` against the test server (tests/fake_ollama.py) on the bundled handbook.

Chat rule (tests/support/draft_rules.py, `draft_rule`): a drafting prompt gets the scripted drafts of the page whose
section title it contains (SCRIPT); a parametric prompt gets PARAMETRIC[question] or "I do not know."; an
unanswerable prompt gets UNANSWERABLE[title]. The scripted drafts include an invented quote, a quote from another
page, a fact missing from its quote, a question copying its quote, a near duplicate, a repeated question and a
deictic question; the tests check that each is rejected with its reason, and that the good ones pass.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from harness.cases import load_checked_cases
from harness.cli import main
from harness.drafting.pipeline import run_drafting
from harness.drafting.records import DRAFTS_FORMAT, Decision, DraftLine, draft_schema, read_drafts, write_drafts
from harness.drafting.settings import DraftSettings
from harness.records.drafts_manifest import DRAFTS_MANIFEST_FORMAT
from pdfrag.chunking import ChunkSettings, chunk_pages
from pdfrag.pdfs import read_documents
from pdfrag.text import fold
from tests.conftest import HANDBOOK, REPO, SAMPLE_DOCS
from tests.fake_ollama import ChatReply, FakeOllama
from tests.support import draft_rules as rules


@pytest.fixture
def drafting(server):
    server.chat_rule = rules.draft_rule
    return server


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory):
    """One drafting run over the handbook, shared by the read-only tests (its own server and cache)."""
    root = tmp_path_factory.mktemp("scripted")
    with FakeOllama() as fake:
        fake.chat_rule = rules.draft_rule
        yield run_drafting(DraftSettings(docs=str(HANDBOOK), out=str(root / "drafts.jsonl"), host=fake.url,
                                         cache_dir=str(root / "cache")))


def _settings(server, tmp_path: Path, **kw) -> DraftSettings:
    """Settings for the tests of the page pipeline, which count its calls and drafts: no unanswerable drafts
    unless asked (their default share is tested on its own, with no flag)."""
    return DraftSettings(docs=str(HANDBOOK), out=str(tmp_path / "drafts.jsonl"), host=server.url, retries=0,
                         **({"unanswerable": 0} | kw))


def _by_question(drafts, draft: dict):
    return [d for d in drafts if d.question == draft["question"] and d.quote == draft["quote"]]


def test_good_drafts_pass_with_verbatim_quotes_and_provenance(scripted_run):
    run = scripted_run
    pages = {p.source_id: fold(p.text) for d in read_documents(HANDBOOK) for p in d.pages}
    good = [rules.GOOD_LEAVE, rules.GOOD_CARRY, rules.GOOD_HOTEL, rules.GOOD_LAPTOP, rules.GOOD_PASSWORD]
    passed = [d for d in run.drafts if d.verification.passed and d.kind == "answerable"]
    assert sorted(d.question for d in passed) == sorted(g["question"] for g in good)
    for d in passed:
        assert fold(d.quote) in pages[d.source_id] and d.evidence[0] == d.source_id
        assert d.provenance.model == "qwen3:4b" and len(d.provenance.model_digest) == 64
        assert len(d.provenance.prompt_sha256) == 64 and len(d.provenance.page_sha256) == 64
        assert d.verification.dense_rank is not None and d.verification.bm25_rank is not None
        assert {"lexical", "paraphrase"} & set(d.verification.tags)
    leave = _by_question(run.drafts, rules.GOOD_LEAVE)[0]
    assert "parametric" in leave.verification.tags  # the rule answers 25 days without the page
    assert "parametric" not in _by_question(run.drafts, rules.GOOD_HOTEL)[0].verification.tags


@pytest.mark.parametrize("scripted, code", [
    (rules.INVENTED, "quote_not_found"),
    (rules.WRONG_PAGE, "quote_on_wrong_page"),
    (rules.FACT_MISSING, "fact_not_in_quote"),
    (rules.COPY, "question_copies_quote"),
    (rules.NEAR_DUPLICATE, "near_duplicate"),
    (rules.SAME_QUESTION, "duplicate_question"),
    (rules.DEICTIC, "deictic_question"),
])
def test_bad_drafts_are_rejected_with_their_reason(scripted_run, scripted, code):
    found = _by_question(scripted_run.drafts, scripted)
    assert len(found) == 1
    assert not found[0].verification.passed
    assert [r.code for r in found[0].verification.reasons] == [code]


def test_one_chat_call_per_page_and_a_rerun_makes_none(drafting, tmp_path):
    settings = _settings(drafting, tmp_path)
    first = run_drafting(settings)
    passed = sum(d.verification.passed for d in first.drafts)
    assert len(drafting.chat_bodies()) == first.chat_calls == 4 + passed  # pages + parametric checks
    before = len(drafting.chat_bodies())
    second = run_drafting(DraftSettings(**(settings.to_dict() | {"pages": (), "out": str(tmp_path / "other.jsonl")})))
    assert len(drafting.chat_bodies()) == before and second.chat_calls == 0
    assert second.pages_from_cache == 4
    assert [DraftLine.of(d).to_json() | {"provenance": None} for d in second.drafts] == \
        [DraftLine.of(d).to_json() | {"provenance": None} for d in first.drafts]


def test_requests_ask_for_the_schema_with_temperature_0_and_a_fixed_seed(drafting, tmp_path):
    run_drafting(_settings(drafting, tmp_path, per_page=2, seed=7, parametric=False))
    bodies = drafting.chat_bodies()
    assert len(bodies) == 4
    for body in bodies:
        assert body["options"]["temperature"] == 0 and body["options"]["seed"] == 7
        assert body["format"]["properties"]["drafts"]["maxItems"] == 2
        assert body["think"] is True and body["stream"] is False
        assert "[page start]" in body["messages"][0]["content"]


def test_changed_page_is_drafted_again_and_unchanged_ones_come_from_the_cache(drafting, tmp_path, make_pdf):
    from tests.conftest import pdfgen
    texts = [p.text for p in read_documents(HANDBOOK)[0].pages]
    docs = tmp_path / "docs"
    make_pdf("handbook.pdf", texts)
    settings = DraftSettings(docs=str(docs), out=str(tmp_path / "d.jsonl"), host=drafting.url, parametric=False,
                             unanswerable=0)
    run_drafting(settings)
    assert len(drafting.chat_bodies()) == 4
    pdfgen.write_text_pdf(docs / "handbook.pdf", texts[:3] + [texts[3] + " Badges must be worn at all times."])
    again = run_drafting(settings)
    assert len(drafting.chat_bodies()) == 5 and again.chat_calls == 1 and again.pages_from_cache == 3


def test_malformed_output_timeouts_and_a_dead_server_become_error_entries(drafting, tmp_path):
    calls = {"n": 0}

    def flaky(body):
        calls["n"] += 1
        if calls["n"] == 1:
            return "this is not JSON"
        return rules.draft_rule(body)

    drafting.chat_rule = flaky
    settings = _settings(drafting, tmp_path, parametric=False)
    run = run_drafting(settings)
    errors = [d for d in run.drafts if d.kind == "error"]
    assert len(errors) == 1 and "not JSON" in errors[0].error
    assert errors[0].verification.reasons[0].code == "draft_error"
    assert len({d.source_id for d in run.drafts}) == 4  # the command went on
    again = run_drafting(settings)  # the failed page is asked again; the others come from the cache
    assert not [d for d in again.drafts if d.kind == "error"] and again.chat_calls == 1


def test_a_timeout_is_an_error_entry(drafting, tmp_path):
    drafting.delay_s = 1.0
    run = run_drafting(_settings(drafting, tmp_path, timeout=0.3, max_pages=1, parametric=False))
    assert [d.kind for d in run.drafts] == ["error"] and "ServerTimeout" in run.drafts[0].error


def test_the_server_dying_mid_run_leaves_error_entries_and_a_rerun_resumes(drafting, tmp_path):
    settings = _settings(drafting, tmp_path, parametric=False)
    seen = {"n": 0}

    def dies_after_two(body):
        seen["n"] += 1
        if seen["n"] > 2:
            drafting.fail_next(500, count=100, error="llama runner process has terminated")
            raise RuntimeError("runner died")
        return rules.draft_rule(body)

    drafting.chat_rule = dies_after_two
    run = run_drafting(settings)
    errors = [d for d in run.drafts if d.kind == "error"]
    assert len(errors) == 2 and all("500" in d.error for d in errors)
    drafting.reset()
    drafting.chat_rule = rules.draft_rule
    again = run_drafting(settings)
    assert again.chat_calls == 2 and not [d for d in again.drafts if d.kind == "error"]


def test_unanswerable_drafts_must_use_new_terms_and_stay_below_the_abstain_threshold(drafting, tmp_path):
    run = run_drafting(_settings(drafting, tmp_path, unanswerable=4, parametric=False))
    un = {d.source_id: d for d in run.drafts if d.kind == "unanswerable"}
    assert len(un) == 4
    tokyo = un["handbook.pdf#p2"]  # "hotel limit per night" is all over page 2
    assert [r.code for r in tokyo.verification.reasons] == ["bm25_above_threshold"]
    for sid in ("handbook.pdf#p1", "handbook.pdf#p3", "handbook.pdf#p4"):
        v = un[sid].verification
        assert v.passed and v.best_bm25 < 2.5 and un[sid].decision.status == "pending"


def test_drafts_file_matches_its_schema_and_round_trips(drafting, tmp_path):
    settings = _settings(drafting, tmp_path, unanswerable=2)
    assert main(["draft", "--docs", settings.docs, "--out", settings.out, "--host", drafting.url,
                 "--unanswerable", "2"]) == 0
    validator = jsonschema.Draft202012Validator(draft_schema())
    lines = Path(settings.out).read_text(encoding="utf-8").splitlines()
    for line in lines:
        validator.validate(json.loads(line))
    assert all(json.loads(line)["format"] == DRAFTS_FORMAT for line in lines)  # every new line says its format
    assert [json.dumps(DraftLine.of(d).to_json()) for d in read_drafts(settings.out)] == lines


def test_page_selection_is_seeded_round_robin_and_skips_short_pages(make_pdf):
    from harness.drafting.select import select_pages
    make_pdf("a.pdf", [f"alpha page {i} " + "word " * 30 for i in range(1, 5)])
    make_pdf("b.pdf", ["beta page one " + "word " * 30, "too short"])
    docs = read_documents(Path(make_pdf("c.pdf", ["gamma " + "word " * 30]).parent))
    sel = select_pages(docs, seed=1, min_words=20)
    assert sel.skipped == (("b.pdf#p2", "2 words, fewer than --min-page-words 20"),)
    first_three = {pid.split("#")[0] for pid in sel.page_ids()[:3]}
    assert first_three == {"a.pdf", "b.pdf", "c.pdf"}  # one page of each document first
    assert sel.page_ids() == select_pages(docs, seed=1, min_words=20).page_ids()
    assert len(select_pages(docs, seed=1, max_pages=2).pages) == 2
    orders = {tuple(select_pages(docs, seed=s).page_ids()) for s in range(6)}
    assert len(orders) > 1  # the seed matters


def test_draft_cases_include_unreviewed_passes_check_and_runs_offline(drafting, tmp_path, capsys):
    out, cases = tmp_path / "drafts.jsonl", tmp_path / "cases.jsonl"
    assert main(["draft", "--docs", str(HANDBOOK), "--out", str(out), "--host", drafting.url,
                 "--unanswerable", "4"]) == 0
    assert "coverage by page" in capsys.readouterr().out
    assert main(["draft", "cases", str(out), "--out", str(cases)]) == 2  # nothing accepted yet
    assert main(["draft", "cases", str(out), "--out", str(cases), "--include-unreviewed"]) == 0
    rows = [json.loads(line) for line in cases.read_text().splitlines()]
    assert len(rows) == 8  # 5 answerable + 3 unanswerable drafts passed verification
    for row in rows:
        assert {"drafted", "unreviewed"} <= set(row["tags"]) and "heldout" not in row["tags"]
        assert any(t.startswith("draft:") for t in row["tags"]) and "qwen3:4b" in row["notes"]
    assert sum(r["abstain"] for r in rows) == 3
    docs = read_documents(HANDBOOK)
    load_checked_cases(cases, docs, chunk_pages([p for d in docs for p in d.pages], ChunkSettings()))
    assert main(["check", "--docs", str(HANDBOOK), "--cases", str(cases)]) == 0
    done = subprocess.run([sys.executable, "evaluate_rag.py", "--offline", "--docs", str(HANDBOOK), "--cases",
                           str(cases), "--out", str(tmp_path / "results")], check=False, cwd=REPO, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    rows_file = next((tmp_path / "results").glob("*/rows.jsonl"))
    assert len(rows_file.read_text().splitlines()) == 8


@pytest.mark.parametrize("reply, expected", [
    ("not JSON at all", "reply is not JSON"),
    ({"drafts": [{"question": "q"}]}, "does not match the schema at drafts/0"),
    (ChatReply('{"drafts": [', done_reason="length"), "cut off at num_predict"),
    ("<think>hmm</think>" + json.dumps({"drafts": [rules.GOOD_LEAVE]}), None),
])
def test_reply_problems_are_named_on_the_error_entry(drafting, tmp_path, reply, expected):
    drafting.chat_rule = lambda body: reply
    run = run_drafting(_settings(drafting, tmp_path, pages=("handbook.pdf#p1",), parametric=False))
    if expected is None:  # leaked thinking is cut off, the JSON after it is used
        assert [d.question for d in run.drafts] == [rules.GOOD_LEAVE["question"]]
    else:
        assert [d.kind for d in run.drafts] == ["error"] and expected in run.drafts[0].error


def test_a_first_draft_with_only_docs_and_out_writes_unanswerable_drafts(drafting, tmp_path, monkeypatch, capsys):
    """Issue #30 item 3: the docs' first line, `rag-eval draft --docs DIR --out FILE` (the server from
    OLLAMA_HOST), adds unanswerable drafts, 1 in 5 of all (one per 4 answerable asked), and says so."""
    monkeypatch.setenv("OLLAMA_HOST", drafting.url)
    out = tmp_path / "drafts" / "drafts.jsonl"  # a folder that does not exist yet is made
    assert main(["draft", "--docs", str(HANDBOOK), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    drafts = read_drafts(out)
    unanswerable = [d for d in drafts if d.kind == "unanswerable"]
    asked = 4 * DraftSettings().per_page  # the handbook's 4 pages x 3 drafts asked per page
    assert len(unanswerable) == -(-asked // 4) == 3
    assert any(d.verification.passed for d in unanswerable)  # sound ones among them, pending a person
    assert ("unanswerable drafts: 3 asked (the default: one for every 4 answerable drafts asked, 1 in 5 of all; "
            "--unanswerable N to choose, 0 for none), 3 written") in printed
    manifest = json.loads(out.with_name("drafts.manifest.json").read_text())
    assert manifest["settings"]["unanswerable"] == 3  # the number used, not "the default"
    assert main(["draft", "--docs", str(HANDBOOK), "--out", str(tmp_path / "none.jsonl"), "--unanswerable", "0"]) == 0
    assert "none asked (--unanswerable 0): these cases will not test abstention" in capsys.readouterr().out


def test_the_drafts_manifest_records_its_folders_absolute(drafting, tmp_path, monkeypatch):
    """Issue #30 item 5: relative --docs and --out are recorded absolute in the drafts manifest (and the cases
    manifest), so `draft cases` run from another folder still finds the documents the drafts came from."""
    monkeypatch.setenv("OLLAMA_HOST", drafting.url)
    work = tmp_path / "work"
    (work / "pdfs").mkdir(parents=True)
    (work / "pdfs" / HANDBOOK.name).write_bytes(HANDBOOK.read_bytes())
    monkeypatch.chdir(work)
    assert main(["draft", "--docs", "pdfs", "--out", "drafts.jsonl", "--unanswerable", "0"]) == 0
    written = json.loads((work / "drafts.manifest.json").read_text())
    settings = written["settings"]
    assert written["format"] == DRAFTS_MANIFEST_FORMAT  # a new manifest says its format
    assert settings["docs"] == str(work / "pdfs") and settings["out"] == str(work / "drafts.jsonl")
    drafts = read_drafts(work / "drafts.jsonl")
    write_drafts(work / "drafts.jsonl", [d.with_decision(Decision("accepted", None, "ann", "2026-12-02T00:00:00Z"))
                                         if d.verification.passed and d.kind != "error" else d
                                         for d in drafts])
    monkeypatch.chdir(tmp_path)  # elsewhere: no pdfs/ folder here
    assert main(["draft", "cases", str(work / "drafts.jsonl"), "--out", "cases.jsonl"]) == 0
    cases_manifest = json.loads((tmp_path / "cases.manifest.json").read_text())
    assert cases_manifest["docs"] == str(work / "pdfs") and cases_manifest["format"] == DRAFTS_MANIFEST_FORMAT
    assert cases_manifest["drafts"] == str(work / "drafts.jsonl")


def test_more_unanswerable_drafts_than_pages_ask_again_and_repeats_are_rejected(drafting, tmp_path):
    run = run_drafting(_settings(drafting, tmp_path, pages=("handbook.pdf#p3",), unanswerable=2, parametric=False))
    un = [d for d in run.drafts if d.kind == "unanswerable"]
    assert run.chat_calls == 3  # the page, then two unanswerable prompts (the second asks for another term)
    assert un[0].verification.passed  # the scripted rule gives the same question twice
    assert [r.code for r in un[1].verification.reasons] == ["duplicate_question"]


def test_draft_cases_leaves_no_file_when_the_label_check_fails(drafting, tmp_path, make_pdf, capsys):
    out, cases = tmp_path / "drafts.jsonl", tmp_path / "cases.jsonl"
    main(["draft", "--docs", str(HANDBOOK), "--out", str(out), "--host", drafting.url, "--no-parametric",
          "--unanswerable", "0"])  # an unanswerable draft stays sound against documents that do not answer it
    other = make_pdf("other.pdf", ["Nothing of the handbook is here, only this one sentence of words."]).parent
    assert main(["draft", "cases", str(out), "--out", str(cases), "--include-unreviewed", "--docs", str(other)]) == 2
    err = capsys.readouterr().err
    # the checks, run again against these documents, already fail every draft (#19 item 9): nothing to write
    assert "no draft to write" in err and f"failed the checks against {other}" in err
    assert not cases.exists() and not list(tmp_path.glob(".cases.jsonl.*"))


def test_a_server_that_goes_away_mid_run_leaves_error_entries_and_notes(drafting, tmp_path):
    seen = {"n": 0}

    def stops_on_the_third_page(body):
        seen["n"] += 1
        if seen["n"] == 3:
            drafting.stop()  # like a killed `ollama serve`: this and every later request fail to connect
        return rules.draft_rule(body)

    drafting.chat_rule = stops_on_the_third_page
    run = run_drafting(_settings(drafting, tmp_path, backoff=0.0))
    errors = [d for d in run.drafts if d.kind == "error"]
    assert len(errors) == 2 and all("ServerUnreachable" in d.error for d in errors)
    drafted = [d for d in run.drafts if d.kind == "answerable" and d.verification.passed]
    assert drafted and all(d.verification.dense_rank is None and d.verification.bm25_rank is not None
                           for d in drafted)
    assert all(any("dense round trip not computed" in n for n in d.verification.notes) for d in drafted)
    assert all(any("parametric check failed" in n for n in d.verification.notes) for d in drafted)


def test_no_server_at_all_is_a_clear_error(tmp_path, capsys):
    assert main(["draft", "--docs", str(HANDBOOK), "--out", str(tmp_path / "d.jsonl"), "--host",
                 "http://127.0.0.1:9", "--retries", "0"]) == 1
    assert "ollama serve" in capsys.readouterr().err and not (tmp_path / "d.jsonl").exists()


def test_runaway_draft_replies_fail_and_the_drafts_file_stays_small(drafting, tmp_path):
    # Issue #27 item 6: 2.5 MB questions, quotes, facts, terms and parametric answers (each one "token" to the test
    # server, which would cut a reply of more than --num-predict whitespace tokens) beside one good draft a page.
    huge = "Hotel-costs-are-reimbursed-up-to-EUR-160-per-night." * 50_000  # three in a reply fit the 10 MB body cap

    def runaway(body: dict) -> dict:
        reply = rules.draft_rule(body)
        if "drafts" in reply:  # a page: a runaway quote, question and fact, then the page's first good draft
            return {"drafts": [{"question": huge, "quote": "x", "facts": ["25"], "type": "number"},
                               {"question": "How long is the notice?", "quote": huge, "facts": ["2"], "type": "rule"},
                               {**reply["drafts"][0], "facts": [huge]}, reply["drafts"][0]]}
        if "answer" in reply:
            return {"answer": huge}
        return reply | {"question": huge, "changed": huge}

    drafting.chat_rule = runaway
    run = run_drafting(_settings(drafting, tmp_path, unanswerable=2, per_page=4))
    assert not [d for d in run.drafts if d.kind == "error"]
    runaway_drafts = [d for d in run.drafts if d.kind == "answerable"
                      and any(r.code.endswith("_too_long") for r in d.verification.reasons)]
    assert len(runaway_drafts) == 3 * 4 and not any(d.verification.passed for d in runaway_drafts)
    assert {r.code for d in runaway_drafts for r in d.verification.reasons} == {"question_too_long", "quote_too_long",
                                                                                "fact_too_long"}
    unanswerable = [d for d in run.drafts if d.kind == "unanswerable"]
    assert len(unanswerable) == 2 and all({"question_too_long", "term_too_long"} <= {r.code for r in
                                                                                    d.verification.reasons}
                                          and not d.verification.passed for d in unanswerable)
    assert all(len(d.question) <= 1_000 and len(d.quote) <= 5_000 and all(len(f) <= 200 for f in d.facts)
               for d in run.drafts)
    passed = [d for d in run.drafts if d.verification.passed]  # a page's good draft: its parametric answer cut
    assert passed and all(len(d.verification.parametric_answer or "") == 2_000 for d in passed)
    write_drafts(tmp_path / "drafts.jsonl", list(run.drafts))  # as `rag-eval draft` writes them
    assert (tmp_path / "drafts.jsonl").stat().st_size < 100_000


def test_a_page_without_a_text_layer_says_ocr_it_first(server, tmp_path, make_pdf, capsys):
    """Issue #44: a scanned page (one picture and no text layer: pages of the bundled facilities-notices.pdf) is
    skipped with "OCR it first", even with --min-page-words 0; when nothing else is left the command says to OCR,
    not to lower --min-page-words; a page with a few words still gets that advice."""
    server.chat_rule = rules.draft_rule
    scanned = SAMPLE_DOCS / "collection" / "facilities-notices.pdf"
    empty = read_documents(scanned)[0].empty_pages
    assert empty
    docs = make_pdf("short.pdf", ["Only a cover page.", read_documents(HANDBOOK)[0].pages[3].text]).parent
    shutil.copy(scanned, docs / scanned.name)
    scans = [f"{scanned.name}#p{n}" for n in empty]
    out = tmp_path / "d.jsonl"
    base = ["draft", "--docs", str(docs), "--out", str(out), "--host", server.url, "--no-parametric",
            "--unanswerable", "0"]
    for extra in ([], ["--min-page-words", "0"]):
        assert main([*base, "--pages", *scans, *extra]) == 2
        err = capsys.readouterr().err
        assert (f"{docs}: none of its {len(scans)} page(s) has a text layer to draft from (scanned or image-only "
                "PDFs?); OCR them first, e.g. `ocrmypdf in.pdf out.pdf`, and draft from the copies") in err
        assert "--min-page-words" not in err
    assert main([*base, "--pages", "short.pdf#p1", *scans]) == 2
    assert (f"no page has at least 20 words; lower --min-page-words ({len(scans)} page(s) have no text layer at all: "
            "OCR them first") in capsys.readouterr().err
    assert main([*base, "--pages", "short.pdf#p2", *scans]) == 0
    report = capsys.readouterr().out
    for page in scans:
        assert (f"skipped {page}: no text layer (a scanned or image-only page?): OCR it first, e.g. `ocrmypdf "
                "in.pdf out.pdf`, and draft from the copy") in report
    assert "drafts from 1 pages" in report
    failed = sum(not d.verification.passed for d in read_drafts(out))
    assert failed and (f"next: rag-eval draft review {out} (then --failed, to fix or reject the {failed} that failed "
                       "verification)") in report


def test_the_hint_after_a_reply_cut_off_at_num_predict_is_true(drafting, tmp_path, capsys):
    """Issue #44: --num-predict is part of each cached reply's key, so the hint after a cut-off reply says that
    raising it redrafts every page, and names --pages for the cut-off ones; followed, it drafts only those."""
    def cut_on_page_2(body):
        reply = rules.draft_rule(body)
        if "Section 2: Business Travel" in body["messages"][-1]["content"] and "drafts" in reply:
            return ChatReply(json.dumps(reply), done_reason="length")
        return reply

    drafting.chat_rule = cut_on_page_2
    out = tmp_path / "d.jsonl"
    command = ["draft", "--docs", str(HANDBOOK), "--out", str(out), "--host", drafting.url, "--no-parametric",
               "--unanswerable", "0"]
    assert main(command) == 0
    err = capsys.readouterr().err
    assert ("warning: 1 page(s) could not be drafted (see `error` entries); 1 were cut off at --num-predict: a "
            "higher --num-predict is another cache key, so given to the whole command it drafts every page again; "
            "to draft only those again, add --num-predict N --pages 'handbook.pdf#p2' to the same command") in err
    assert "finished pages come from the cache" not in err
    drafting.chat_rule = rules.draft_rule
    assert main([*command, "--num-predict", "6000", "--pages", "handbook.pdf#p2"]) == 0  # as the hint says
    assert "; 1 chat calls, 0 pages from the cache" in capsys.readouterr().out
    drafts = read_drafts(out)
    assert {d.source_id for d in drafts} == {f"handbook.pdf#p{n}" for n in range(1, 5)}
    assert not [d for d in drafts if d.kind == "error"]
    assert main([*command, "--num-predict", "5000", "--out", str(tmp_path / "all.jsonl")]) == 0
    assert "; 4 chat calls, 0 pages from the cache" in capsys.readouterr().out  # what the hint warns of
