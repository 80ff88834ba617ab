"""The judge measured against people: `rag-eval review --agreement` with a scripted judge and a scripted human,
the "not measured yet" rule, and the calibration sample."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.cli.run import render_summary
from harness.judge.calibrate import _allocate, read_sample
from harness.records import Summary
from harness.review.store import Claim, Review, add_reviews, sentence_split
from harness.runs import read_json, read_manifest, read_rows
from tests.judge.test_judge import JUDGE, judge, run_dir  # noqa: F401  (the run fixture)
from tests.support.judge_rules import judge_rule


def one_claim_rows(run: Path) -> list:
    """Answered rows whose answer is one claim, in case order; each claim text once (two cases may get the same
    answer, and the scripted judge goes by the claim's text)."""
    out, seen = [], set()
    for r in read_rows(run):
        claims = sentence_split(r.answer.model_answer)
        if len(claims) == 1 and claims[0] not in seen:
            seen.add(claims[0])
            out.append(r)
    return out


def human_reviews(run: Path, verdicts: list[str], reviewer: str = "ann") -> None:
    """`reviewer` rates the one claim of the first len(verdicts) one-claim answers."""
    rows = one_claim_rows(run)[:len(verdicts)]
    reviews = [Review(r.case_id, r.answer.answer_sha256,
                      (Claim(sentence_split(r.answer.model_answer)[0], v, None, ""),), reviewer, "2026-01-01T00:00:00Z")
               for r, v in zip(rows, verdicts)]
    add_reviews(run.parent.parent / "cases.reviews.jsonl", reviews)


def test_agreement_json_has_the_judge_and_its_hand_worked_kappa(run_dir, server, capsys):  # noqa: F811
    rows = one_claim_rows(run_dir)[:4]
    claims = [sentence_split(r.answer.model_answer)[0] for r in rows]
    # judge: S U U U (the first by the rule's overlap: the extractive answer is its own passage's sentence)
    server.chat_rule = judge_rule({c: ("unsupported", "") for c in claims[1:]})
    assert judge(run_dir, server) == 0
    human_reviews(run_dir, ["supported", "supported", "unsupported", "unsupported"])  # human: S S U U
    capsys.readouterr()
    assert main(["review", str(run_dir), "--agreement", "--json", "--resamples", "200"]) == 0
    data = json.loads(capsys.readouterr().out)
    (j,) = data["judges"]
    assert JUDGE in j["reviewers"] and j["reviewer"] == JUDGE and j["claims"] == 4
    # p_o = 3/4; p_e = P(S)h P(S)j + P(U)h P(U)j = 0.5 * 0.25 + 0.5 * 0.75 = 0.5; kappa = (0.75 - 0.5) / 0.5
    assert j["kappa"] == pytest.approx(0.5)
    assert j["percent_agreement"] == pytest.approx(0.75)
    assert j["confusion"]["supported"]["supported"] == 1 and j["confusion"]["unsupported"]["supported"] == 1
    assert j["confusion"]["unsupported"]["unsupported"] == 2
    assert j["measured"] is False and j["text"].startswith("judge not measured yet: review 26 more claims")
    # per verdict: the judge's one "supported" is the people's (1/1) and finds 1 of their 2; its three
    # "unsupported" are the people's 2 times and find both of theirs
    supported, unsupported, contradicted = j["per_verdict"]
    assert (supported["precision"], supported["recall"], unsupported["precision"], unsupported["recall"]) == (
        1.0, 0.5, pytest.approx(2 / 3), 1.0)
    assert supported["recall_interval"] == pytest.approx([0.0945, 0.9055], abs=1e-4)  # Wilson, 1 of 2
    assert (contradicted["judged"], contradicted["reference"], contradicted["precision"]) == (0, 0, None)
    (d,) = j["disagreements"]
    assert d["human"] == "supported" and d["judge"] == "unsupported" and d["claim"] == claims[1]
    assert data["claims"] == 0  # people's agreement among themselves: one reviewer, nothing shared
    assert main(["review", str(run_dir), "--agreement", "--resamples", "200"]) == 0
    text = capsys.readouterr().out
    assert f"judge {JUDGE} against people: 4 shared claims; the reviewers' own choice" in text
    assert "human: supported" in text and f"{JUDGE}: unsupported" in text
    assert "  unsupported   0.667 [0.208, 0.939] (2/3)    1.000 [0.342, 1.000] (2/2)" in text


def test_ten_shared_claims_are_not_measured_yet_in_every_view(run_dir, server, tmp_path, capsys):  # noqa: F811
    server.chat_rule = judge_rule()
    human_reviews(run_dir, ["supported"] * 10)
    assert judge(run_dir, server) == 0
    not_yet = "judge not measured yet: review 20 more claims"
    summary = read_json(run_dir / "summary.json")
    assert summary["judge"]["shared_claims"] == 10 and summary["judge"]["measured"] is False
    assert summary["judge"]["text"].startswith(not_yet)
    assert summary["metrics"]["claims_supported"]["scored"] == 10  # people's verdicts alone
    assert not_yet in render_summary(Summary.model_validate(summary), read_manifest(run_dir))
    capsys.readouterr()
    assert main(["compare", str(run_dir), str(run_dir), "--resamples", "50"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("claims_supported_judged"))
    assert lines[at + 1].strip().startswith(f"A: {not_yet}") and lines[at + 2].strip().startswith(f"B: {not_yet}")
    # a judge not measured never fills in `passed`: --judged-passed is refused, with the numbers, not ignored
    assert main(["compare", str(run_dir), str(run_dir), "--resamples", "50", "--judged-passed"]) == 6
    out, err = capsys.readouterr()
    assert not out and "refused: only 10 claims shared with people, 30 needed" in err
    assert main(["report", str(run_dir), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert not_yet in page and "judge against people" in page
    # per verdict: the rule's judge and the person agree on all 10 "supported" (Wilson: 10 / (10 + z**2) = 0.722)
    assert "<tr><th>supported</th><td>1.000 [0.722, 1.000] (10/10)</td><td>1.000 [0.722, 1.000] (10/10)</td>" in page


@pytest.mark.parametrize("sizes, n, expected", [
    ({"supported": 80, "unsupported": 15, "unverified": 5}, 20, {"supported": 16, "unsupported": 3,
                                                                   "unverified": 1}),
    ({"supported": 98, "unverified": 2}, 10, {"supported": 9, "unverified": 1}),  # every verdict seen at least once
    ({"supported": 3, "unsupported": 1}, 10, {"supported": 3, "unsupported": 1}),  # fewer claims than asked
])
def test_stratified_allocation(sizes, n, expected):
    assert _allocate(sizes, min(n, sum(sizes.values()))) == expected


def test_calibrate_offers_the_sample_first_and_the_report_says_random(run_dir, server, monkeypatch,  # noqa: F811
                                                                       capsys):
    server.chat_rule = judge_rule()
    assert judge(run_dir, server) == 0
    reviews = run_dir.parent.parent / "cases.reviews.jsonl"
    monkeypatch.setattr("sys.stdin", io.StringIO("\ns\n" * 40))  # accept the split, supported by the cited passage
    assert main(["review", str(run_dir), "--calibrate", "3", "--reviewer", "ann"]) == 0
    out = capsys.readouterr().out
    sample = read_sample(reviews)
    assert sample is not None and len(sample.claims) == 3 and sample.judge == JUDGE
    assert f"{len(sample.answers())} answer(s) to review as ann" in out  # only the sampled answers
    again = [(c, s, t) for c, s, t in sample.claims]
    assert main(["review", str(run_dir), "--calibrate", "3", "--reviewer", "bob", "--export",
                 str(run_dir / "b.csv")]) == 0
    assert read_sample(reviews).claims == tuple(again)  # same judge, N and seed: the same sample
    capsys.readouterr()
    assert main(["review", str(run_dir), "--agreement", "--json", "--resamples", "100"]) == 0
    (j,) = json.loads(capsys.readouterr().out)["judges"]
    assert j["random_sample"] == j["claims"] >= 3 and j["sample"].startswith("a random calibration sample")


def test_a_judge_quote_cannot_drive_the_terminal(run_dir, server, capsys):  # noqa: F811
    rows = one_claim_rows(run_dir)[:1]
    claim = sentence_split(rows[0].answer.model_answer)[0]
    server.chat_rule = judge_rule({claim: ("contradicted", "\x1b[2J\x1b[31mAll of this is false, trust me.")})
    assert judge(run_dir, server) == 0
    human_reviews(run_dir, ["supported"])
    capsys.readouterr()
    assert main(["review", str(run_dir), "--agreement", "--resamples", "20"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\u001b[2J\\u001b[31mAll of this is false" in out


def test_a_judge_that_always_says_one_verdict_has_no_interval_in_any_view():
    """30 shared claims, the judge "supported" on all, people split 15/15: kappa is 0 and every bootstrap
    resample gives 0, so the interval says nothing; the text views and summary.json say so instead of
    printing [0.000, 0.000]."""
    from harness.cli.common import judge_agreement_text
    from harness.judged.standing import JudgeAgreement, Shared
    from harness.records import JudgedClaim
    from harness.stats.agreement import NO_VARIATION, measure_agreement
    humans = ["supported", "unsupported"] * 15
    shared = tuple(Shared(f"c{i}", "sha", "q?", JudgedClaim(claim=f"claim {i}", verdict=h, by="human", judge="j",
                                                              judge_verdict="supported"))
                   for i, h in enumerate(humans))
    agreement = measure_agreement([{"ann": h, "j": "supported"} for h in humans], resamples=200)
    judged = JudgeAgreement("j", agreement, shared)
    assert judged.headline() == f"judge j: kappa 0.000 {NO_VARIATION} vs people over 30 shared claims"
    text = judge_agreement_text(judged)
    assert judged.summary_json()["interval_note"] == NO_VARIATION and "[0.000, 0.000]" not in text
    # its recall of "unsupported" is 0 of 15, and Wilson's interval still says how far that may be from 0
    assert "  unsupported   n/a (0/0)                     0.000 [0.000, 0.204] (0/15)" in text


def test_a_judge_agreeing_on_every_mixed_verdict_shows_its_interval():
    """Zero width from perfect agreement over varied verdicts is a result, not a lack of variation: shown as
    [1.000, 1.000] with no note (the review's reviewer found it misread as "undefined")."""
    from harness.cli.common import judge_agreement_text
    from harness.judged.standing import JudgeAgreement, Shared
    from harness.records import JudgedClaim
    from harness.stats.agreement import NO_VARIATION, measure_agreement
    humans = ["supported", "unsupported"] * 20
    shared = tuple(Shared(f"c{i}", "sha", "q?", JudgedClaim(claim=f"claim {i}", verdict=h, by="human", judge="j",
                                                              judge_verdict=h)) for i, h in enumerate(humans))
    judged = JudgeAgreement("j", measure_agreement([{"ann": h, "j": h} for h in humans], resamples=200), shared)
    assert judged.headline() == "judge j: kappa 1.000 [1.000, 1.000] vs people over 40 shared claims"
    assert judged.summary_json()["interval_note"] is None and NO_VARIATION not in judge_agreement_text(judged)
