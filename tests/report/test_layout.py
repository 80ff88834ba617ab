"""The default run's layout: no arguments evaluate the handbook and the collection (all_cases.jsonl, generated from
the two cases files), and the handbook alone is one flag away (--config sample_docs/handbook.toml)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.cli import main
from harness.evaluate import prepare
from harness.settings import RunSettings, resolve
from tests.conftest import REPO, SAMPLE_DOCS, load_sample_script

ALL_CASES = SAMPLE_DOCS / "all_cases.jsonl"


def _lines(path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_defaults_are_the_whole_bundle():
    d = RunSettings()
    assert (d.docs, d.cases) == ("sample_docs", "sample_docs/all_cases.jsonl")


def test_all_cases_is_up_to_date_with_its_sources():
    # Fails after an edit of either cases file until `python sample_docs/make_all_cases.py` is rerun.
    assert ALL_CASES.read_text(encoding="utf-8") == load_sample_script("make_all_cases").combined()


def test_handbook_lines_come_first_unchanged_then_the_collection():
    handbook, collection = _lines(SAMPLE_DOCS / "cases.jsonl"), _lines(SAMPLE_DOCS / "collection" / "cases.jsonl")
    assert (len(handbook), len(collection)) == (21, 174)
    assert _lines(ALL_CASES) == handbook + collection


def test_the_script_writes_the_committed_file(tmp_path):
    out = tmp_path / "all.jsonl"
    done = subprocess.run([sys.executable, str(SAMPLE_DOCS / "make_all_cases.py"), str(out)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == ALL_CASES.read_bytes()


def test_handbook_alone_is_one_flag_away(monkeypatch):
    monkeypatch.chdir(REPO)
    settings = resolve({}, "sample_docs/handbook.toml")
    documents, cases, _ = prepare(settings)
    assert [d.doc_id for d in documents] == ["handbook.pdf"] and len(cases) == 21
    assert settings.label == "handbook"


@pytest.mark.parametrize("flags", [[], ["--chunk-size", "600", "--chunk-overlap", "100"], ["--system", "offline"]])
def test_every_default_case_passes_check(monkeypatch, capsys, flags):
    monkeypatch.chdir(REPO)
    assert main(["check", *flags]) == 0
    assert "sample_docs/all_cases.jsonl: 195 cases OK against 10 documents (51 pages)" in capsys.readouterr().out


def test_check_with_the_handbook_config(monkeypatch, capsys):
    monkeypatch.chdir(REPO)
    assert main(["check", "--config", "sample_docs/handbook.toml"]) == 0
    assert "21 cases OK against 1 documents (4 pages)" in capsys.readouterr().out
