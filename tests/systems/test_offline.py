"""The offline baseline records the retrieval it really uses (bm25) and refuses a --retriever it cannot honour."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.evaluate import run_evaluation
from harness.runs import read_manifest, read_rows
from harness.settings import RunSettings, resolve
from pdfrag.errors import InputError
from tests.conftest import HANDBOOK, SAMPLE_DOCS, sample_cases
from tests.support.pinned import PINNED, rows_digest


def _run(tmp_path, *flags):
    return main(["run", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path), "--out", str(tmp_path / "r"),
                 *flags])


def test_a_default_offline_run_records_bm25(tmp_path):
    assert _run(tmp_path, "--offline") == 0
    manifest = read_manifest(next((tmp_path / "r").iterdir()))
    assert manifest.settings.to_json()["retriever"] == "bm25"
    assert manifest.system.to_json()["settings"]["retriever"] == "bm25"


@pytest.mark.parametrize("retriever", ["hybrid", "dense"])
def test_offline_refuses_a_retriever_it_cannot_honour(tmp_path, capsys, retriever):
    assert _run(tmp_path, "--offline", "--retriever", retriever) == 2
    err = capsys.readouterr().err
    assert f"--retriever {retriever}: the offline system retrieves with BM25 only and cannot honour it" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())  # nothing was run


def test_offline_accepts_bm25_and_a_config_file_is_checked_too(tmp_path):
    assert resolve({"offline": True, "retriever": "bm25"}).retriever == "bm25"
    config = tmp_path / "offline.toml"
    config.write_text('system = "offline"\nretriever = "hybrid"\n')
    with pytest.raises(InputError, match="--retriever hybrid: the offline system"):
        resolve({}, str(config))
    assert RunSettings(system="offline").retriever == "bm25"
    assert RunSettings().retriever == "dense"  # the chatbot's default is unchanged
    with pytest.raises(InputError, match="cannot honour"):
        RunSettings(system="offline", retriever="hybrid")
    assert json.loads(json.dumps(RunSettings(system="offline").to_dict()))["retriever"] == "bm25"


def test_the_bundle_keeps_its_pinned_summary_and_rows(tmp_path):
    """Issue 31: the offline baseline over the bundle gives the summary (every digit) and row verdicts it gave
    before the scale work (tests/support/pinned.py)."""
    result = run_evaluation(RunSettings(system="offline", out=str(tmp_path), docs=str(SAMPLE_DOCS),
                                        cases=str(SAMPLE_DOCS / "all_cases.jsonl")))
    pinned = PINNED["bundle_offline"]
    assert result.summary.to_json() == pinned["summary"]
    assert json.loads((result.run_dir / "summary.json").read_text(encoding="utf-8")) == pinned["summary"]
    assert rows_digest(read_rows(result.run_dir)) == pinned["rows"]
