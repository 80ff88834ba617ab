"""`rag-eval draft judge`: a scripted judge's accept/reject on drafts, kept apart from people's decisions and
measured against them by `draft review --agreement`."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.drafting.decisions import decide
from harness.drafting.records import read_drafts, write_drafts
from tests.judge.test_judge import JUDGE
from tests.support.judge_rules import draft_judge_rule


def judgeable(drafts):
    return [d for d in drafts if d.kind == "answerable" and d.verification.passed]


def test_draft_judge_is_a_measured_reviewer_never_a_decision(drafts_file, server, capsys):
    drafts = read_drafts(drafts_file)
    four = judgeable(drafts)[:4]
    assert len(four) == 4
    # people: accepted, accepted, rejected, rejected; the judge: accepted, rejected, rejected, rejected
    decided = {d.draft_id: decide(d, status, by="ann", at="2026-01-01T00:00:00Z",
                                  reason="scripted" if status == "rejected" else None)
               for d, status in zip(four, ["accepted", "accepted", "rejected", "rejected"])}
    write_drafts(drafts_file, [decided.get(d.draft_id, d) for d in drafts])
    server.chat_rule = draft_judge_rule({d.question for d in four[1:]})
    before = len(server.chat_bodies())
    assert main(["draft", "judge", str(drafts_file), "--host", server.url]) == 0
    assert len(server.chat_bodies()) - before == len(judgeable(drafts))  # one call per draft that passed
    after = read_drafts(drafts_file)
    for d in after:
        if d.draft_id in decided:
            assert d.decision == decided[d.draft_id].decision  # the people's decision is untouched
        elif d in judgeable(after):
            assert d.decision.status == "pending" and d.judge_reviews[0].by == JUDGE  # the judge decides nothing
    capsys.readouterr()
    assert main(["draft", "review", str(drafts_file), "--agreement", "--json"]) == 0
    (j,) = json.loads(capsys.readouterr().out)["judges"]
    assert j["reviewer"] == JUDGE and JUDGE in j["reviewers"] and j["drafts"] == 4
    # p_o = 3/4; p_e = 0.5 * 0.25 + 0.5 * 0.75 = 0.5; kappa = (0.75 - 0.5) / (1 - 0.5)
    assert j["kappa"] == pytest.approx(0.5)
    assert [(d["human"], d["judge"], d["reason"]) for d in j["disagreements"]] == [("accepted", "rejected",
                                                                                     "scripted")]
    assert main(["draft", "review", str(drafts_file), "--agreement"]) == 0
    assert f"judge {JUDGE} against people: 4 drafts both decided; kappa 0.500" in capsys.readouterr().out
    calls = len(server.chat_bodies())
    assert main(["draft", "judge", str(drafts_file), "--host", server.url]) == 0
    assert len(server.chat_bodies()) == calls  # a rerun asks nothing
