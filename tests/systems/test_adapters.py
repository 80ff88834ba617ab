"""The example adapters against the real packages (`python -m pytest -m adapters`; issue #20 item 12): each test
is skipped when its packages are missing. The pipelines run with their packages' fake embeddings and an LLM
following the rule of tests/support/adapters.py: what is tested is the adapters' page ids and answer contract,
not quality."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.runs import read_json, read_rows
from tests.conftest import SAMPLE_DOCS

pytestmark = pytest.mark.adapters


def test_pypdfloader_pages_map_to_the_harness_ids():
    pytest.importorskip("langchain_community")
    from examples.langchain_system import source_id
    meta = {"source": str(SAMPLE_DOCS / "collection" / "quality-manual.pdf"), "page": 0}
    assert source_id(meta, SAMPLE_DOCS) == "collection/quality-manual.pdf#p1"
    assert source_id({"source": str(SAMPLE_DOCS / "handbook.pdf"), "page": 3}, SAMPLE_DOCS / "handbook.pdf") == \
        "handbook.pdf#p4"


@pytest.mark.parametrize(("package", "system", "name", "loader"), [
    ("langchain_community", "langchain_fake", "langchain example", "PyPDFLoader"),
    ("llama_index.readers.file", "llamaindex_fake", "llamaindex example", "PDFReader")])
def test_an_adapter_run_has_no_page_warnings_and_valid_citations(tmp_path, capsys, package, system, name, loader):
    pytest.importorskip(package)
    out = tmp_path / "results"
    assert main(["run", "--system", f"tests.support.adapters:{system}", "--docs", str(SAMPLE_DOCS),
                 "--cases", str(SAMPLE_DOCS / "all_cases.jsonl"), "--sample", "40", "--seed", "3",
                 "--out", str(out)]) == 0
    assert "row warnings" not in capsys.readouterr().out
    (run,) = out.iterdir()
    rows = read_rows(run)
    assert len(rows) == 40 and not any(r.warnings for r in rows) and not any(r.error for r in rows)
    assert any(p.source_id.startswith("collection/") for r in rows for p in r.retrieved)
    answered = [r for r in rows if r.answer.status == "answered"]
    assert answered and all(c.valid for r in answered for c in r.answer.citations)
    described = read_json(run / "manifest.json")["system"]
    assert described["name"] == name and described["settings"]["loader"] == loader
    assert json.loads(rows[0].answer.raw)  # the reply the system gave, kept as it came
