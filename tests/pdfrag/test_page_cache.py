"""Extracted page text is cached by file SHA-256 and pypdf version (issue #20 item 18): the second `rag-eval
check` over unchanged PDFs reads no page with pypdf, proven by running it where pypdf cannot be imported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from harness.cli import main
from pdfrag import page_cache
from pdfrag.page_cache import PageCache
from pdfrag.pdfs import read_documents
from tests.conftest import HANDBOOK, REPO, SAMPLE_DOCS

BLOCKED = "import sys; sys.modules['pypdf'] = None; from harness.cli import main; sys.exit(main(sys.argv[1:]))"


def _check(cache: Path, *, block_pypdf: bool) -> subprocess.CompletedProcess:
    argv = ["check", "--docs", str(SAMPLE_DOCS), "--cases", str(SAMPLE_DOCS / "all_cases.jsonl"),
            "--cache-dir", str(cache)]
    code = BLOCKED if block_pypdf else "import sys; from harness.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_the_second_check_reads_no_page_with_pypdf(tmp_path):
    cache = tmp_path / "cache"
    blocked = _check(cache, block_pypdf=True)
    assert blocked.returncode != 0 and "pypdf" in blocked.stderr  # the proof works: no cache, pypdf needed
    first = _check(cache, block_pypdf=False)
    assert first.returncode == 0, first.stderr
    assert list((cache / "pages").glob("pypdf-*/*/*.json"))
    second = _check(cache, block_pypdf=True)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout and "195 cases OK" in second.stdout


def test_cached_documents_equal_extracted_ones_and_count_no_extraction(tmp_path):
    fresh = read_documents(SAMPLE_DOCS)
    cache = PageCache(tmp_path / "pages")
    assert read_documents(SAMPLE_DOCS, cache=cache) == fresh
    assert cache.pages_extracted == sum(len(d.pages) for d in fresh) and cache.hits == 0
    again = PageCache(tmp_path / "pages")
    assert read_documents(SAMPLE_DOCS, cache=again) == fresh
    assert again.pages_extracted == 0 and again.hits == len(fresh)


def test_another_pypdf_version_does_not_see_the_entries(tmp_path, monkeypatch):
    read_documents(HANDBOOK, cache=PageCache(tmp_path))
    monkeypatch.setattr(page_cache, "pypdf_version", lambda: "0.0.0-other")
    other = PageCache(tmp_path)
    read_documents(HANDBOOK, cache=other)
    assert other.hits == 0 and other.pages_extracted == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pypdf-0.0.0-other", f"pypdf-{metadata.version('pypdf')}"]


def test_a_damaged_entry_is_extracted_again_and_rewritten(tmp_path):
    first = read_documents(HANDBOOK, cache=PageCache(tmp_path))
    (entry,) = tmp_path.glob("pypdf-*/*/*.json")
    for damage in ("{not json", json.dumps({"pages": [1, 2]}), json.dumps({"pages": []})):
        entry.write_text(damage)
        cache = PageCache(tmp_path)
        assert read_documents(HANDBOOK, cache=cache) == first and cache.pages_extracted == 4
        assert json.loads(entry.read_text())["pages"] == [p.text for p in first[0].pages]


def test_an_unwritable_cache_costs_speed_not_the_command(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = PageCache(blocker / "pages")  # a folder below a file: cannot be created
    assert read_documents(HANDBOOK, cache=cache)[0].pages and cache.stored == 0


def test_check_uses_the_cache_dir(tmp_path):
    cases = SAMPLE_DOCS / "cases.jsonl"
    assert main(["check", "--docs", str(HANDBOOK), "--cases", str(cases), "--cache-dir", str(tmp_path / "c")]) == 0
    assert len(list((tmp_path / "c" / "pages").glob("pypdf-*/*/*.json"))) == 1


def _entry(root: Path) -> Path:
    (entry,) = root.glob("pypdf-*/*/*.json")
    return entry


def test_an_edited_entry_is_discarded_with_one_warning_and_the_pages_extracted_again(tmp_path):
    # Issue #27 item 7: an entry edited by hand, still valid JSON of the right shape, changed the metrics silently.
    first = read_documents(HANDBOOK, cache=PageCache(tmp_path))
    entry = _entry(tmp_path)
    data = json.loads(entry.read_text(encoding="utf-8"))
    assert data["sha256"] == first[0].sha256 and len(data["pages_sha256"]) == 64
    edited = [p.replace("160", "999") for p in data["pages"]]
    for tampered in (data | {"pages": edited}, data | {"sha256": "0" * 64}):  # edited, or another file's entry
        entry.write_text(json.dumps(tampered), encoding="utf-8")
        cache = PageCache(tmp_path)
        assert read_documents(HANDBOOK, cache=cache) == first and cache.pages_extracted == 4
        assert cache.discarded == [str(entry)] and cache.problem is not None
        assert cache.problem.startswith(f"the page-text cache entry {entry} did not match its own digest")
        assert json.loads(entry.read_text(encoding="utf-8")) == data  # rewritten as extracted


def test_an_entry_from_before_the_digest_is_extracted_again_without_a_warning(tmp_path):
    first = read_documents(HANDBOOK, cache=PageCache(tmp_path))
    entry = _entry(tmp_path)
    entry.write_text(json.dumps({"pypdf": "x", "pages": [p.text for p in first[0].pages]}), encoding="utf-8")
    cache = PageCache(tmp_path)
    assert read_documents(HANDBOOK, cache=cache) == first and cache.pages_extracted == 4 and cache.problem is None
    assert "pages_sha256" in json.loads(entry.read_text(encoding="utf-8"))


def test_a_run_over_an_edited_cache_scores_what_the_pdf_says_and_warns(tmp_path, capsys):
    cache, cases = tmp_path / "cache", str(SAMPLE_DOCS / "cases.jsonl")

    def run(label: str) -> dict:
        assert main(["run", "--offline", "--docs", str(HANDBOOK), "--cases", cases, "--cache-dir", str(cache),
                     "--out", str(tmp_path / "out"), "--label", label]) in (0, 3)
        (found,) = (tmp_path / "out").glob(f"*-{label}")
        return json.loads((found / "summary.json").read_text(encoding="utf-8"))["metrics"]

    before = run("clean")
    entry = _entry(cache / "pages")
    data = json.loads(entry.read_text(encoding="utf-8"))
    entry.write_text(json.dumps(data | {"pages": [p.replace("160", "170") for p in data["pages"]]}), encoding="utf-8")
    capsys.readouterr()
    assert run("edited") == before
    assert "warning: the page-text cache entry" in capsys.readouterr().err


def test_a_cache_subfolder_replaced_by_a_link_is_never_written_or_read_through(tmp_path):
    first = read_documents(HANDBOOK, cache=PageCache(tmp_path / "pages"))
    entry = _entry(tmp_path / "pages")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / entry.name).write_text(entry.read_text(encoding="utf-8").replace("160", "999"), encoding="utf-8")
    shutil.rmtree(entry.parent)
    entry.parent.symlink_to(outside)  # pages/pypdf-<v>/<aa> -> outside
    cache = PageCache(tmp_path / "pages")
    assert read_documents(HANDBOOK, cache=cache) == first  # not read through the link: extracted again
    assert cache.hits == 0 and cache.stored == 0 and "is a symbolic link" in (cache.problem or "")
    assert [p.name for p in outside.iterdir()] == [entry.name] and "999" in (outside / entry.name).read_text()
