"""`evaluate_rag.py` / `rag-eval run` end to end against the test server (chat rule stated per test)."""

import json
import subprocess
import sys

import pytest

from harness.cli import main as rag_eval
from harness.errors import RunStopped
from harness.evaluate import run_evaluation
from harness.rows import validate_row
from harness.runs import read_rows
from harness.settings import RunSettings
from pdfrag.errors import InputError, ModelMissing, ServerUnreachable
from tests.conftest import HANDBOOK, REPO, SAMPLE_DOCS, sample_cases

HOTEL = "Hotel costs are reimbursed up to EUR 160 per night, including breakfast."


def settings_for(server, tmp_path, **kw):
    base = dict(docs=str(HANDBOOK), cases=sample_cases(tmp_path), out=str(tmp_path / "results"),
                host=server.url)
    return RunSettings(**(base | kw))


def by_hand(row):
    """Recompute retrieval metrics from the row's own retrieved list and labels, independently of harness code."""
    evidence = row["expected"]["evidence"]
    if not evidence:
        return {"rr": None, **{f"{m}@{k}": None for m in ("hit", "recall") for k in (1, 2, 4)}}

    def relevant(r, e):
        return r["page_id"] == e["source_id"] and ("quote" not in e or
                                                    " ".join(e["quote"].lower().split()) in r["text"].lower())
    out = {}
    for k in (1, 2, 4):
        top = [r for r in row["retrieved"] if r["rank"] <= k]
        covered = [any(relevant(r, e) for r in top) for e in evidence]
        out[f"hit@{k}"] = float(any(covered))
        out[f"recall@{k}"] = sum(covered) / len(covered)
    ranks = [r["rank"] for r in row["retrieved"] if any(relevant(r, e) for e in evidence)]
    out["rr"] = 1 / min(ranks) if ranks else 0.0
    return out


def test_run_writes_valid_rows_whose_metrics_recompute_by_hand(server, tmp_path):
    # Rule: overlap_rule (the default), quoting the passage sentence that shares most words with the question.
    result = run_evaluation(settings_for(server, tmp_path, chunk_size=700, chunk_overlap=100))
    rows = read_rows(result.run_dir)
    cases = [json.loads(line) for line in (SAMPLE_DOCS / "cases.jsonl").read_text().splitlines() if line.strip()]
    assert [r.case_id for r in rows] == [c["id"] for c in cases]
    for row in rows:
        data = row.to_json()  # by_hand reads the JSON a user's tool would read, not our records
        validate_row(data)
        assert row.human_claim_review == "pending"
        for name, value in by_hand(data).items():
            assert row.metrics[name] == pytest.approx(value) if value is not None else row.metrics[name] is None
    manifest = json.loads((result.run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["ended_at"]
    assert manifest["system"]["ollama"]["version"] == server.version
    assert len(manifest["system"]["ollama"]["models"]["qwen3:4b"]["digest"]) == 64
    assert manifest["inputs"]["documents"][0]["sha256"] and len(manifest["inputs"]["cases"]["sha256"]) == 64
    assert manifest["settings"]["chunk_size"] == 700 and manifest["prompt_template"]["sha256"]
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert summary["collection"]["chunks"] > summary["collection"]["pages"] == 4


def test_unanswerable_case_has_null_retrieval_and_is_excluded_with_its_count(server, tmp_path):
    result = run_evaluation(settings_for(server, tmp_path))
    rows = {r.case_id: r for r in read_rows(result.run_dir)}
    revenue = rows["company-revenue"]
    assert all(revenue.metrics[m] is None for m in ("hit@1", "hit@4", "recall@2", "rr", "facts"))
    unanswerable = sum(1 for r in rows.values() if r.expected.abstain)
    recall = result.summary.metrics["recall@4"]
    assert recall.not_applicable == unanswerable and recall.scored == len(rows) - unanswerable
    assert result.summary.metrics["behaviour"].scored == len(rows)


def test_known_limit_quote_passes_but_fact_fails(server, tmp_path):
    # Rule: every answer says EUR 999 while quoting the real EUR 160 sentence of page 2.
    server.chat_rule = lambda body: {"answer": "The limit is EUR 999 per night.",
                                     "citations": [{"source_id": "handbook.pdf#p2", "quote": HOTEL}]}
    result = run_evaluation(settings_for(server, tmp_path))
    row = next(r for r in read_rows(result.run_dir) if r.case_id == "hotel-limit")
    assert row.quote_validation.status == "passed" and row.answer.status == "answered"
    assert row.metrics["facts"] == 0.0
    assert "fact '160' not in answer" in row.failure_reasons


def test_failure_reasons_for_an_answered_unanswerable_question(server, tmp_path):
    server.chat_rule = lambda body: {"answer": "Lots.", "citations": [{"source_id": "handbook.pdf#p2", "quote": HOTEL}]}
    result = run_evaluation(settings_for(server, tmp_path))
    row = next(r for r in read_rows(result.run_dir) if r.case_id == "company-revenue")
    # Live runs now also score citation precision (#10): citing any page on an unanswerable case is wrong too.
    assert row.failure_reasons == ("answered an unanswerable question", "cited handbook.pdf#p2, not expected")
    assert row.metrics["behaviour"] == 0.0


def test_server_down_fails_before_indexing_and_mentions_offline(tmp_path, capsys):
    code = rag_eval(["run", "--host", "http://127.0.0.1:9", "--out", str(tmp_path / "r"),
                     "--docs", str(HANDBOOK), "--cases", str(SAMPLE_DOCS / "cases.jsonl")])
    err = capsys.readouterr().err
    assert code == 1 and "ollama serve" in err and "--offline" in err
    assert not (tmp_path / "r").exists()


def test_missing_model_fails_before_any_embedding(server, tmp_path):
    del server.models["nomic-embed-text:latest"]
    with pytest.raises(ModelMissing, match="ollama pull nomic-embed-text"):
        run_evaluation(settings_for(server, tmp_path))
    assert server.count("/api/embed") == 0 and server.count("/api/chat") == 0


def test_bad_cases_fail_before_any_model_call_listing_every_problem(server, tmp_path, capsys):
    bad = tmp_path / "cases.jsonl"
    bad.write_text('{"id": "a", "question": "q", "evidence": [{"source_id": "handbook.pdf#p9"}], "facts": [], '
                   '"abstain": false}\n{"id": "a"}\n')
    code = rag_eval(["run", "--host", server.url, "--cases", str(bad), "--docs", str(HANDBOOK),
                     "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and f"{bad}:1:" in err and f"{bad}:2:" in err
    assert server.count() == 0


def test_fail_under_exit_code_and_config_file(server, tmp_path, capsys):
    config = tmp_path / "small.toml"
    config.write_text(f'chunk-size = 600\nchunk-overlap = 50\nlabel = "small"\nhost = "{server.url}"\n'
                      f'docs = "{HANDBOOK}"\ncases = "{SAMPLE_DOCS / "cases.jsonl"}"\nout = "{tmp_path / "r"}"\n')
    code = rag_eval(["run", "--config", str(config), "--fail-under", "facts=0.99", "--fail-under", "rr=0"])
    captured = capsys.readouterr()
    assert code == 3 and "below threshold: facts" in captured.err and "rr" not in captured.err
    [run_dir] = (tmp_path / "r").iterdir()
    assert run_dir.name.endswith("-small")
    assert json.loads((run_dir / "manifest.json").read_text())["settings"]["chunk_size"] == 600
    assert "recall@4" in captured.out and "collection: 1 documents, 4 pages" in captured.out
    assert rag_eval(["run", "--config", str(config), "--fail-under", "nonsense=1"]) == 2
    assert rag_eval(["run", "--config", str(config), "--fail-under", "recall@4=1.5"]) == 2


def test_config_file_errors_name_the_key(tmp_path, capsys):
    config = tmp_path / "bad.toml"
    config.write_text('chunk-sise = 600\ntop-k = "four"\nchunk-size = 600.5\nk = [1, "2"]\nlabel = 5\n')
    assert rag_eval(["run", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "unknown setting 'chunk-sise'" in err and "'top-k' must be an integer" in err
    assert "'chunk-size' must be an integer" in err and "'k' must be a list of integers" in err
    assert "'label' must be a string" in err


def test_workers_keep_case_order(server, tmp_path):
    server.delay_s = 0.02
    result = run_evaluation(settings_for(server, tmp_path, workers=4))
    ids = [r.case_id for r in read_rows(result.run_dir)]
    cases = [json.loads(line)["id"] for line in (SAMPLE_DOCS / "cases.jsonl").read_text().splitlines() if line.strip()]
    assert ids == cases


def comparable(rows):
    return [r.model_copy(update={"usage": {}}) for r in rows]


def test_server_dying_mid_run_then_resume_equals_uninterrupted(server, tmp_path):
    full = read_rows(run_evaluation(settings_for(server, tmp_path, out=str(tmp_path / "a"))).run_dir)
    answered = {"n": 0}

    def dies_after_five(body):  # rule: overlap_rule, but from the 6th chat on the server is gone
        answered["n"] += 1
        if answered["n"] == 5:
            server.drop_next(count=1000)
        from tests.fake_ollama import overlap_rule
        return overlap_rule(body)

    dies_after_five.__name__ = "overlap_rule"  # the server names the rule in its stand-in thinking text
    server.chat_rule = dies_after_five
    with pytest.raises(RunStopped, match="rag-eval run --resume") as err:
        run_evaluation(settings_for(server, tmp_path, out=str(tmp_path / "b"), retries=1, backoff=0.01))
    run_dir = err.value.run_dir
    assert isinstance(err.value.cause, ServerUnreachable)
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "incomplete"
    assert len(read_rows(run_dir)) == 5
    with open(run_dir / "rows.jsonl", "a") as fh:  # a kill in the middle of a write leaves a partial line
        fh.write('{"case_id": "half')
    server.reset()
    resumed = run_evaluation(settings_for(server, tmp_path, out=str(tmp_path / "b")), resume=run_dir)
    assert resumed.run_dir == run_dir and resumed.manifest.status == "complete"
    assert comparable(read_rows(run_dir)) == comparable(full)


def test_resume_refuses_changed_settings(server, tmp_path):
    def ctrl_c_after_three(stage, done, total):  # Ctrl-C arrives in the main thread after three rows
        if stage == "cases" and done == 3:
            raise KeyboardInterrupt

    with pytest.raises(RunStopped) as err:
        run_evaluation(settings_for(server, tmp_path), progress=ctrl_c_after_three)
    assert err.value.exit_code == 130 and len(read_rows(err.value.run_dir)) == 3
    with pytest.raises(InputError, match="settings.top_k: 4 -> 5"):
        run_evaluation(settings_for(server, tmp_path, top_k=5), resume=err.value.run_dir)


def test_offline_run_from_the_command_line(tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "evaluate_rag.py"), "--offline", "--out",
                          str(tmp_path / "results")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    [run_dir] = (tmp_path / "results").iterdir()  # tmp_path also holds the test's cache folder (page text)
    rows = read_rows(run_dir)
    # the default cases: the handbook's, then the collection's
    assert len(rows) == len([line for line in (SAMPLE_DOCS / "all_cases.jsonl").read_text().splitlines()
                             if line.strip()])
    for row in rows:
        validate_row(row.to_json())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert "no language model" in manifest["system"]["system"] and manifest["system"]["model_server"] is None
    assert "offline extractive baseline" in out.stdout


def test_a_saved_review_applies_to_the_next_run_while_unchanged(server, tmp_path):
    import shutil

    from harness.review.store import Claim, Review, reviews_path, save_reviews
    cases = tmp_path / "cases.jsonl"
    shutil.copy(SAMPLE_DOCS / "cases.jsonl", cases)
    first = read_rows(run_evaluation(settings_for(server, tmp_path, cases=str(cases))).run_dir)
    row = next(r for r in first if r.answer.status == "answered")
    review = Review(row.case_id, row.answer.answer_sha256,
                    (Claim(row.answer.model_answer, "supported", row.answer.citations[0].source_id),
                     Claim("an extra claim", "unsupported")), "tester", "2026-11-29T12:00:00+00:00")
    save_reviews(reviews_path(cases), {review.key: review})
    second = run_evaluation(settings_for(server, tmp_path, cases=str(cases)))
    again = {r.case_id: r for r in read_rows(second.run_dir)}
    assert again[row.case_id].human_claim_review == "reviewed"
    assert again[row.case_id].metrics["claims_supported"] == 0.5
    assert second.summary.human_claim_review == {"pending": len(again) - 1, "reviewed": 1}
    # Rule change: every answer now differs, so the review no longer matches and the case is pending again.
    server.chat_rule = lambda body: {"answer": "Something else entirely.", "citations": []}
    third = {r.case_id: r for r in read_rows(run_evaluation(settings_for(server, tmp_path, cases=str(cases))).run_dir)}
    assert third[row.case_id].human_claim_review == "pending"
    assert third[row.case_id].metrics["claims_supported"] is None
