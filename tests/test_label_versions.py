"""pypdf's version decides the labels (issue #20 item 9): every index, run and drafts manifest records the
versions of pypdf, Python and this project, and a label check that fails says so when the manifest that wrote
the labels used another pypdf."""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path

from chatbot.index import EmbedSettings, build_index
from harness.cli import main
from harness.runs import read_json
from pdfrag import __version__
from pdfrag.chunking import ChunkSettings
from pdfrag.ollama_client import ClientSettings, OllamaClient
from pdfrag.pdfs import read_documents
from tests.conftest import HANDBOOK, sample_cases

EXPECTED = {"pdf_rag_eval": __version__, "python": platform.python_version(), "pypdf": metadata.version("pypdf")}


def _only_run(out: Path) -> Path:
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    return run


def test_a_run_manifest_records_the_versions(tmp_path):
    assert main(["run", "--offline", "--docs", str(HANDBOOK), "--cases", sample_cases(tmp_path),
                 "--out", str(tmp_path / "results")]) == 0
    assert read_json(_only_run(tmp_path / "results") / "manifest.json")["versions"] == EXPECTED


def test_an_index_manifest_records_the_versions(server):
    index = build_index(read_documents(HANDBOOK), OllamaClient(ClientSettings(host=server.url)),
                        chunking=ChunkSettings(), embedding=EmbedSettings(), digest="a" * 64, cache=None)
    assert index.manifest["versions"] == EXPECTED


def test_drafts_and_drafted_cases_manifests_record_the_versions(drafts_file, tmp_path):
    assert json.loads(drafts_file.with_name("drafts.manifest.json").read_text())["versions"] == EXPECTED
    cases = tmp_path / "mine.jsonl"
    assert main(["draft", "cases", str(drafts_file), "--out", str(cases), "--include-unreviewed"]) == 0
    written = json.loads((tmp_path / "mine.manifest.json").read_text())
    assert written["versions"] == EXPECTED and written["drafts"] == str(drafts_file)


def _broken_cases(tmp_path: Path, pypdf: str | None) -> Path:
    """The sample cases with one quote that is not on its page, and (with `pypdf`) a manifest beside them."""
    lines = Path(sample_cases(tmp_path)).read_text().splitlines()
    first = json.loads(lines[0])
    first["evidence"] = [{"source_id": "handbook.pdf#p2", "quote": "text an older pypdf extracted"}]
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    if pypdf is not None:
        (tmp_path / "labels.manifest.json").write_text(json.dumps({"versions": {"pypdf": pypdf}}))
    return path


def test_a_failed_check_names_the_pypdf_that_wrote_the_labels(tmp_path, capsys):
    cases = _broken_cases(tmp_path, pypdf="1.0.0")
    assert main(["check", "--docs", str(HANDBOOK), "--cases", str(cases)]) == 2
    err = capsys.readouterr().err
    assert "does not occur on handbook.pdf#p2" in err
    assert (f"written with pypdf 1.0.0 ({tmp_path / 'labels.manifest.json'}) and this is pypdf "
            f"{EXPECTED['pypdf']}") in err
    assert "pip install pypdf==1.0.0" in err


def test_no_note_when_the_pypdf_is_the_same_or_unknown(tmp_path, capsys):
    for pypdf in (EXPECTED["pypdf"], None):
        cases = _broken_cases(tmp_path, pypdf=pypdf)
        assert main(["check", "--docs", str(HANDBOOK), "--cases", str(cases)]) == 2
        err = capsys.readouterr().err
        assert "does not occur on" in err and "written with pypdf" not in err
        (tmp_path / "labels.manifest.json").unlink(missing_ok=True)


def test_resume_refuses_another_pypdf():
    from harness.evaluate import setup_changes
    from harness.records import Manifest
    saved = Manifest(run_id="r", versions={"pypdf": "1.0.0"})
    assert any("pypdf 1.0.0 -> " in c for c in setup_changes(saved, Manifest(run_id="r", versions=EXPECTED)))
    assert setup_changes(Manifest(run_id="r", versions=EXPECTED), Manifest(run_id="r", versions=EXPECTED)) == []
