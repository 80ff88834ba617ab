"""Metrics on hand-made retrieved lists. Expected values are worked out by hand in the comments."""

import pytest
from hypothesis import given, strategies as st

from harness import metrics as m
from harness.cases import Evidence

R = m.Retrieved
P2 = Evidence("h.pdf#p2")
P2Q = Evidence("h.pdf#p2", "EUR 160 per night")
P4 = Evidence("h.pdf#p4")
RUN = [R(1, "h.pdf#p1", "leave"), R(2, "h.pdf#p2", "meals EUR 45"), R(3, "h.pdf#p2", "Hotel: EUR 160 per  night."),
       R(4, "h.pdf#p3", "equipment")]


@pytest.mark.parametrize("evidence, k, hit, recall", [
    ([P2], 1, 0.0, 0.0),            # rank 1 is page 1
    ([P2], 2, 1.0, 1.0),            # rank 2 is page 2
    ([P2Q], 2, 0.0, 0.0),           # rank 2 is page 2 but lacks the quote
    ([P2Q], 4, 1.0, 1.0),           # rank 3 holds the quote (whitespace folded)
    ([P2, P4], 4, 1.0, 0.5),        # page 4 never retrieved: half the items covered
    ([], 4, None, None),            # unanswerable: not applicable, never 0 or 1
])
def test_hit_and_recall(evidence, k, hit, recall):
    assert m.hit_at_k(RUN, evidence, k) == hit
    assert m.recall_at_k(RUN, evidence, k) == recall


@pytest.mark.parametrize("evidence, rr", [([P2], 0.5), ([P2Q], 1 / 3), ([P4], 0.0), ([P4, P2Q], 1 / 3), ([], None)])
def test_reciprocal_rank(evidence, rr):
    assert m.reciprocal_rank(RUN, evidence) == rr


@pytest.mark.parametrize("answer, facts, abstain, expected", [
    ("Up to EUR 160 per night.", [["160"]], False, 1.0),
    ("Up to EUR 1600 per night.", [["160"]], False, 0.0),        # word boundary: 160 is not in 1600
    ("Report it within 1 hour.", [["one hour", "1 hour"]], False, 1.0),
    ("Report it within ONE  hour.", [["one hour"]], False, 1.0),  # case and whitespace folded
    ("25 days, carried over to 31 March", [["25"], ["31 March", "March 31"], ["5"]], False, 2 / 3),
    ("anything", [], False, None),                               # no facts: not applicable
    ("anything", [["160"]], True, None),                         # abstain case: not applicable
    ("costs 0.30 EUR", [["0.30"]], False, 1.0),                  # punctuation inside the fact
])
def test_fact_recall(answer, facts, abstain, expected):
    assert m.fact_recall(answer, facts, abstain=abstain) == expected


@pytest.mark.parametrize("abstain, answered, expected", [(False, True, 1.0), (False, False, 0.0),
                                                         (True, False, 1.0), (True, True, 0.0)])
def test_behaviour(abstain, answered, expected):
    assert m.behaviour(abstain, answered) == expected


@pytest.mark.parametrize("status, expected", [("answered", 1.0), ("invalid_citation", 0.0), ("no_answer", None),
                                              ("malformed_output", None), ("error", None)])
def test_quote_validity(status, expected):
    assert m.quote_validity(status, True) == expected


def test_registry_names_and_parsing():
    assert m.metric_names((1, 3))[:4] == ["hit@1", "hit@3", "recall@1", "recall@3"]
    assert m.parse_metric("recall@3", (1, 3)) == "recall@3"
    with pytest.raises(ValueError, match="choose one of"):
        m.parse_metric("recall@9", (1, 3))


pages = st.sampled_from(["d#p1", "d#p2", "d#p3", "d#p4"])
retrieved_lists = st.lists(pages, max_size=8).map(lambda ps: [R(i, p, "text") for i, p in enumerate(ps, start=1)])
evidence_lists = st.lists(pages.map(Evidence), max_size=3)


@given(retrieved_lists, evidence_lists, st.integers(1, 8))
def test_retrieval_bounds_and_null_rule(retrieved, evidence, k):
    values = [m.hit_at_k(retrieved, evidence, k), m.recall_at_k(retrieved, evidence, k),
              m.reciprocal_rank(retrieved, evidence)]
    if not evidence:
        assert values == [None, None, None]
    else:
        assert all(0.0 <= v <= 1.0 for v in values)
        assert values[1] <= values[0]  # recall never above hit


@given(retrieved_lists, evidence_lists, st.integers(1, 8))
def test_duplicate_retrieved_ids_change_nothing(retrieved, evidence, k):
    doubled = [R(r.rank, r.page_id, r.text) for r in retrieved] + [R(r.rank, r.page_id, r.text) for r in retrieved]
    assert m.hit_at_k(doubled, evidence, k) == m.hit_at_k(retrieved, evidence, k)
    assert m.recall_at_k(doubled, evidence, k) == m.recall_at_k(retrieved, evidence, k)
    assert m.reciprocal_rank(doubled, evidence) == m.reciprocal_rank(retrieved, evidence)


@given(retrieved_lists, evidence_lists)
def test_hit_and_recall_grow_with_k(retrieved, evidence):
    if evidence:
        for k in range(1, 8):
            assert m.hit_at_k(retrieved, evidence, k) <= m.hit_at_k(retrieved, evidence, k + 1)
            assert m.recall_at_k(retrieved, evidence, k) <= m.recall_at_k(retrieved, evidence, k + 1)


@given(st.text(max_size=40), st.text(min_size=1, max_size=8))
def test_fact_found_needs_the_fact_in_the_text(answer, fact):
    from chatbot.text import normalize
    if m.fact_found(answer, [fact]):
        assert normalize(fact).casefold() in normalize(answer).casefold()
