"""The report starts with what failed: funnel stages from real failure reasons, failing cases first, a table of
contents with anchors that resolve, and the per-tag / per-document breakdown; on the bundled collection too."""

from __future__ import annotations

import re

import pytest

from harness.cases import Case, Evidence
from harness.evaluate import run_evaluation
from harness.records import Citation, Manifest, Passage, SystemAnswer
from harness.report.funnel import KINDS, documents_of, funnel, reason_kind, stage_of
from harness.report.html import render_report
from harness.report.sections import breakdown_metrics, index_cases
from harness.rows import ScoringRules, build_row
from harness.runs import LoadedRun, load_run
from harness.settings import RunSettings
from harness.summary import summarize
from tests.conftest import SAMPLE_DOCS

P1 = "Hotel costs are reimbursed up to EUR 160 per night, including breakfast."
P2 = "Meals are reimbursed at EUR 45 per day during business travel."
RULES = ScoringRules(ks=(1, 2, 4))


def _case(*, abstain: bool = False, evidence: str | None = "h.pdf#p1", quote: str | None = None) -> Case:
    return Case(id="c", question="What is the hotel limit?", abstain=abstain,
                facts=() if abstain else (("160",),), tags=("t",),
                evidence=() if abstain or evidence is None else (Evidence(evidence, quote),))


def _answer(text: str = "", *, retrieved=("h.pdf#p1", "h.pdf#p2"), cite: tuple[str, str] | None = None,
            **extra) -> SystemAnswer:
    texts = {"h.pdf#p1": P1, "h.pdf#p2": P2, "h.pdf#p3": "Unrelated words about nothing in particular here."}
    passages = tuple(Passage(source_id=s, text=texts[s], rank=i) for i, s in enumerate(retrieved, start=1))
    citations = (Citation(source_id=cite[0], quote=cite[1]),) if cite else ()
    return SystemAnswer(answer=text, retrieved=passages, citations=citations, **extra)


GOOD_CITE = ("h.pdf#p1", "reimbursed up to EUR 160 per night")
SCENARIOS = {
    "retrieval": (_case(), _answer("EUR 45", retrieved=("h.pdf#p2", "h.pdf#p3"), cite=("h.pdf#p2", P2))),
    "facts": (_case(), _answer("EUR 45 a day", cite=GOOD_CITE)),
    "citation-quote": (_case(), _answer("EUR 160", cite=("h.pdf#p1", "up to EUR 999 per night"))),
    "citation-page": (_case(), _answer("EUR 160", cite=("h.pdf#p2", P2))),
    "citation-none": (_case(), _answer("EUR 160", abstained=True)),
    # a valid quote of the right page that does not hold the fact the answer states (`grounded`)
    "citation-grounding": (_case(), _answer("EUR 160", cite=("h.pdf#p1", "Hotel costs are reimbursed"))),
    "decision-silent": (_case(), _answer("")),
    "decision-answered": (_case(abstain=True), _answer("EUR 45", cite=("h.pdf#p2", P2))),
    "decision-malformed": (_case(abstain=True), _answer("", malformed="not JSON")),
    "errored": (_case(), _answer("", error="timeout after 300 s")),
    "passed-low-rank": (_case(), _answer("EUR 160", retrieved=("h.pdf#p2", "h.pdf#p1"), cite=GOOD_CITE)),
    "passed-abstained": (_case(abstain=True), _answer("")),
    # two evidence pages at ranks 2 and 1: a perfect retrieval, no rank note
    "passed-two-pages": (Case(id="c", question="What is the hotel limit?", abstain=False, facts=(("160",),),
                              tags=("t",), evidence=(Evidence("h.pdf#p1"), Evidence("h.pdf#p2"))),
                         _answer("EUR 160", retrieved=("h.pdf#p2", "h.pdf#p1"), cite=GOOD_CITE)),
}


def _row(name: str):
    case, answer = SCENARIOS[name]
    return build_row(case, answer, RULES, elapsed_ms=1.0)


@pytest.mark.parametrize("name", SCENARIOS)
def test_each_row_lands_at_its_first_failing_stage(name):
    row = _row(name)
    assert stage_of(row) == name.split("-")[0], row.failure_reasons
    # "passed every check" agrees with the `passed` metric, a malformed reply included
    if row.error is None:
        assert (stage_of(row) == "passed") == (row.metrics["passed"] == 1.0)


def test_a_malformed_reply_fails_the_decision_even_where_abstaining_was_right():
    row = _row("decision-malformed")
    assert row.answer.status == "malformed_output" and row.metrics["behaviour"] == 0.0 == row.metrics["passed"]
    assert stage_of(row) == "decision"


def test_every_reason_written_in_the_scenarios_has_a_known_kind():
    reasons = {r for name in SCENARIOS for r in _row(name).failure_reasons}
    kinds = {reason_kind(r).key for r in reasons}
    assert "other" not in kinds, [r for r in reasons if reason_kind(r).key == "other"]
    assert kinds >= {"error", "not-retrieved", "low-rank", "answered-unanswerable", "no-answer", "quote-invalid",
                     "cited-not-expected", "no-citation", "fact-missing", "not-grounded"}


def test_a_perfect_two_page_retrieval_carries_no_rank_reason_and_a_low_one_does():
    assert _row("passed-two-pages").failure_reasons == ()
    assert _row("passed-low-rank").failure_reasons == ("expected h.pdf#p1, first retrieved at rank 2",)


@pytest.mark.parametrize("reason, key", [
    ("expected a.pdf#p1 containing 'x, not retrieved in the top 9 words', first retrieved at rank 3", "low-rank"),
    ("cited a.pdf#p2, not retrieved or expected", "cited-not-retrieved"),
    ("fact not in answer: none of '1 hour', 'one hour'", "fact-missing"),
    ("the system's reply was malformed", "malformed"),
    ("claim '160 a night' contradicted", "claim"),
    ("answered, but no claim is annotated", "claim"),
    ("a sentence written by a later version", "other"),
])
def test_kind_of(reason, key):
    assert reason_kind(reason).key == key


def test_an_unknown_reason_is_never_a_pass():
    row = _row("passed-abstained")
    assert stage_of(row) == "passed"
    assert stage_of(row.model_copy(update={"failure_reasons": ("a sentence written by a later version",)})) == "other"


def test_a_claim_in_disagreement_is_a_note_and_a_failure_no_stage_names_is_never_a_pass():
    # A row whose only reason is a claim reviewers disagree on: the claim is pending, `passed` is 1, and so is its
    # stage (it was "other", and the export wrote passed 1.0 beside failure_stage "other").
    row = _row("passed-abstained")
    noted = row.model_copy(update={"failure_reasons": ("claim 'x' in disagreement between reviewers",)})
    assert reason_kind(noted.failure_reasons[0]).key == "claim-disagreement" and stage_of(noted) == "passed"
    # `passed` 0 for a reason no stage names (a judge's verdict under --judged-passed): "other", never a pass
    judged = row.model_copy(update={"metrics": row.metrics | {"passed": 0.0}})
    assert stage_of(judged) == "other"


def test_kind_keys_are_unique():
    assert len({k.key for k in KINDS}) == len(KINDS)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> LoadedRun:
    """The offline baseline on the default cases (handbook + collection)."""
    out = tmp_path_factory.mktemp("bundle")
    settings = RunSettings(system="offline", out=str(out), label="bundle", docs=str(SAMPLE_DOCS),
                           cases=str(SAMPLE_DOCS / "all_cases.jsonl"))
    return load_run(run_evaluation(settings).run_dir)


def test_offline_baseline_on_the_bundle_is_informative(bundle):
    summary = summarize(bundle.rows, bundle.manifest.metrics, {})
    assert len(bundle.rows) == 195
    assert summary.mean("hit@1") < summary.mean("hit@4") < 1.0
    counts = funnel(bundle.rows)
    assert sum(counts.values()) == 195
    lost = [stage for stage, n in counts.items() if n and stage != "passed"]
    assert {"retrieval", "facts", "decision"} <= set(lost), counts  # several kinds of failure
    assert 0 < counts["passed"] < 195
    assert counts["passed"] == sum(1 for r in bundle.rows if r.metrics["passed"] == 1.0)


def test_report_opens_with_the_funnel_and_lists_failing_cases_first(bundle):
    page = render_report(bundle)
    counts = funnel(bundle.rows)
    order = [page.index(marker) for marker in ('id="funnel"', 'id="contents"', 'id="breakdown"', 'id="summary"',
                                               'id="failing"', 'id="passing"')]
    assert order == sorted(order)
    for stage, n in counts.items():
        if stage != "other":
            assert re.search(rf'<tr class="stage-{stage}"><td><b>[^<]+</b></td><td class="num">{n} ', page), stage
    failing, passing = page[page.index('id="failing"'):page.index('id="passing"')], page[page.index('id="passing"'):]
    assert len(re.findall(r'<tr id="case-', failing)) == 195 - counts["passed"]
    assert len(re.findall(r'<tr id="case-', passing)) == counts["passed"]
    assert 'class="stage good"' not in failing and 'class="stage bad"' not in passing


def test_every_contents_link_has_its_anchor(bundle):
    page = render_report(bundle)
    links = set(re.findall(r'href="#([^"]+)"', page))
    anchors = set(re.findall(r' id="([^"]+)"', page))
    assert len(links) > 195 and links <= anchors, links - anchors
    for tag in ("superseded-trap", "non-english", "scanned"):
        assert f"<summary>{tag}: " in page
    assert "<summary>collection/standort-hamburg-de.pdf: 9 cases" in page
    counts = funnel(bundle.rows)
    assert f"<summary>lost at retrieval: {counts['retrieval']} cases</summary>" in page  # the funnel's count
    assert "<summary>lost at citation validation:" not in page  # no case was lost there: no empty group


def test_breakdown_counts_match_the_rows(bundle):
    page = render_report(bundle)
    assert breakdown_metrics(bundle.manifest.metrics) == ["passed", "hit@1", "recall@4", "facts", "behaviour",
                                                          "quote_valid"]
    german = [r for r in bundle.rows if "collection/standort-hamburg-de.pdf" in documents_of(r)]
    hit1 = summarize(german, ["hit@1"], {}).mean("hit@1")
    assert (f'<tr><td>collection/standort-hamburg-de.pdf</td><td class="num">{len(german)}</td>' in page)
    row = page[page.index("<tr><td>collection/standort-hamburg-de.pdf</td>"):]
    assert f"{hit1:.3f} <span class=\"muted\">({len(german)})</span>" in row[:row.index("</tr>")]


def test_vs_keeps_a_as_the_baseline(bundle, tmp_path):
    settings = RunSettings(system="offline", out=str(tmp_path), label="small", docs=str(SAMPLE_DOCS),
                           cases=str(SAMPLE_DOCS / "all_cases.jsonl"), chunk_size=600, chunk_overlap=100)
    small = load_run(run_evaluation(settings).run_dir)
    page = render_report(small, vs=bundle)
    a, b = funnel(bundle.rows), funnel(small.rows)
    assert f"<th>A: {bundle.name}</th><th>B: {small.name}</th><th>definition</th>" in page
    assert re.search(rf'<tr class="stage-retrieval"><td><b>[^<]+</b></td><td class="num">{a["retrieval"]} .*?'
                     rf'<td class="num">{b["retrieval"]} ', page)
    index = index_cases([bundle, small])
    assert len(index.keys) == 195
    failing = [k for k in index.keys if index.failing(k)]
    assert list(index.keys[:len(failing)]) == failing  # failing in either run first
    # one count on one page: each group says per run what the funnel says, and names a union as one (issue #29:
    # "lost at retrieval 20" above "lost at retrieval: 25 cases, 21 / 21 failing" and "failing cases (29)")
    per_run = f"A {195 - a['passed']}, B {195 - b['passed']}"
    assert f'id="failing">Failing cases ({len(failing)}: failing in A or B ({per_run}))' in page
    assert f'failing cases ({len(failing)}: failing in A or B ({per_run}))</a>' in page
    lost = [k for k in index.keys if "retrieval" in index.stages[k]]
    assert (f"<summary>lost at retrieval: A {a['retrieval']}, B {b['retrieval']} ({len(lost)} cases lost there in A "
            "or B)</summary>") in page
    assert re.search(r"<summary>evidence not retrieved: \d+ cases with it in A or B; failing: A \d+, B \d+</summary>",
                     page)
    assert f'id="passing">Passing cases ({195 - len(failing)} passing in both)' in page


def test_hostile_case_ids_and_tags_are_escaped_in_anchors_and_contents(tmp_path):
    case = Case(id='x"><script>alert(1)</script>', question="q?", abstain=False, facts=(("160",),),
                evidence=(Evidence("<b>doc</b>.pdf#p1"),), tags=("<i>tag</i>",))
    row = build_row(case, _answer(""), RULES, elapsed_ms=1.0)
    run = LoadedRun("r", tmp_path, (row,), Manifest(run_id="r", metrics=list(row.metrics)))
    page = render_report(run)
    assert "<script" not in page.lower() and "<i>tag" not in page and "<b>doc" not in page
    assert 'id="case-x-script-alert-1-script-"' in page and 'href="#case-x-script-alert-1-script-"' in page
    assert "&lt;i&gt;tag&lt;/i&gt;" in page and "&lt;b&gt;doc&lt;/b&gt;.pdf" in page
