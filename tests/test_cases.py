import json

import pytest

from harness.cases import Evidence, check_labels, load_cases
from harness.cli import main
from pdfrag.errors import InputError
from pdfrag.pdfs import read_documents
from tests.conftest import HANDBOOK, SAMPLE_DOCS


def write(tmp_path, lines):
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


GOOD = {"id": "hotel", "question": "Hotel limit?", "evidence": [{"source_id": "handbook.pdf#p2"}],
        "facts": ["160"], "abstain": False}


def test_sample_cases_pass_the_label_check():
    cases = load_cases(SAMPLE_DOCS / "cases.jsonl")
    check_labels(cases, read_documents(HANDBOOK), cases_path="cases.jsonl")
    assert len(cases) >= 12 and any(c.abstain for c in cases)
    assert any(len({e.source_id for e in c.evidence}) > 1 for c in cases)


def test_every_schema_problem_is_reported_at_once_with_its_line(tmp_path):
    path = write(tmp_path, [
        GOOD,
        {**GOOD, "id": "hotel"},                       # line 2: duplicate id
        "{not json",                                   # line 3
        {**GOOD, "id": "x", "abstain": "no"},          # line 4: wrong type
        {"id": "y", "question": "q", "evidence": [], "facts": []},  # line 5: abstain missing
        {**GOOD, "id": "z", "abstain": True},          # line 6: abstain with evidence
        {**GOOD, "id": "w", "evidence": [{"source_id": "handbook.pdf"}]},  # line 7: not a page id
    ])
    with pytest.raises(InputError) as err:
        load_cases(path)
    text = str(err.value)
    for line, words in [(2, "duplicate id"), (3, "not valid JSON"), (4, "abstain"), (5, "'abstain' is a required"),
                        (6, "cannot have evidence"), (7, "evidence/0/source_id")]:
        assert f"{path}:{line}:" in text and words in text, (line, words, text)


def test_label_check_lists_every_missing_page_and_quote(tmp_path):
    path = write(tmp_path, [
        {**GOOD, "evidence": [{"source_id": "handbook.pdf#p9"}]},
        {**GOOD, "id": "b", "evidence": [{"source_id": "other.pdf#p1"}]},
        {**GOOD, "id": "c", "evidence": [{"source_id": "handbook.pdf#p2", "quote": "EUR 999 per night"}]},
        {**GOOD, "id": "d", "evidence": [{"source_id": "handbook.pdf#p2", "quote": "EUR   160 per NIGHT"}]},
    ])
    with pytest.raises(InputError) as err:
        check_labels(load_cases(path), read_documents(HANDBOOK), cases_path=str(path))
    text = str(err.value)
    assert "3 problem(s)" in text
    assert f"{path}:1: evidence/0/source_id: no page 'handbook.pdf#p9' (handbook.pdf has 4 pages)" in text
    assert f"{path}:2:" in text and "known documents: handbook.pdf" in text
    assert f"{path}:3: evidence/0/quote: 'EUR 999 per night' does not occur on handbook.pdf#p2" in text


def test_check_command_exit_codes(tmp_path, capsys):
    assert main(["check", "--docs", str(HANDBOOK), "--cases", str(SAMPLE_DOCS / "cases.jsonl")]) == 0
    assert "cases OK" in capsys.readouterr().out
    bad = write(tmp_path, [{**GOOD, "evidence": [{"source_id": "handbook.pdf#p7"}]}])
    assert main(["check", "--docs", str(HANDBOOK), "--cases", str(bad)]) == 2
    assert "handbook.pdf#p7" in capsys.readouterr().err


# ---------------------------------------------------------------- one record per line, its schema generated from it

@pytest.mark.parametrize("line", [
    GOOD,
    GOOD | {"evidence": ["handbook.pdf#p2", {"source_id": "handbook.pdf#p3", "quote": "EUR 160"}],
            "facts": ["160", ["EUR 160", "160 euros"]], "notes": "n", "tags": ["dev"]},
    GOOD | {"id": "hotel\n"},  # `$` before a final newline: Python's reading, the schema validator's and the record's
    GOOD | {"id": "ho tel"},
    GOOD | {"id": ""},
    GOOD | {"evidence": ["handbook.pdf"]},
    GOOD | {"evidence": [{"source_id": "handbook.pdf#p0"}]},
    GOOD | {"evidence": [{"source_id": "handbook.pdf#p2", "quote": None}]},
    GOOD | {"evidence": [{"source_id": "handbook.pdf#p2", "quote": ""}]},
    GOOD | {"evidence": [{"source_id": "handbook.pdf#p2", "page": 2}]},
    GOOD | {"facts": [[]]},
    GOOD | {"facts": [["160", 160]]},
    GOOD | {"abstain": "false"},
    GOOD | {"tags": [""]},
    GOOD | {"notes": None},
    GOOD | {"later": 1},
    {k: v for k, v in GOOD.items() if k != "abstain"},
])
def test_a_cases_line_is_accepted_by_its_record_exactly_when_its_published_schema_accepts_it(line):
    from jsonschema import Draft202012Validator
    from pydantic import ValidationError

    from harness.cases import case_schema
    from harness.records import CaseLine

    try:
        CaseLine.from_json(line)
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == Draft202012Validator(case_schema()).is_valid(line)


def test_a_page_id_alone_and_a_lone_fact_read_as_their_long_forms(tmp_path):
    short = GOOD | {"evidence": ["handbook.pdf#p2"], "facts": ["160", ["EUR 160", "160 euros"]]}
    long = GOOD | {"id": "long", "evidence": [{"source_id": "handbook.pdf#p2"}],
                   "facts": [["160"], ["EUR 160", "160 euros"]]}
    a, b = load_cases(write(tmp_path, [short, long]))
    assert a.evidence == b.evidence == (Evidence("handbook.pdf#p2"),)
    assert a.facts == b.facts == (("160",), ("EUR 160", "160 euros"))
    assert (a.notes, a.tags, a.line, b.line) == ("", (), 1, 2)
    assert a.to_dict() == short | {"evidence": long["evidence"], "notes": "", "tags": []}
