"""What compare and report show as the difference between two runs' setups (issue #30, 5): each setting once, no
machine measures, a plug-in's own settings rather than the harness's defaults, and paths that name a file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.evaluate import run_evaluation, setup_changes
from harness.report.compare import compare_runs
from harness.report.settings_diff import is_measure, manifest_diff
from harness.runs import read_manifest
from harness.settings import FIELDS, SYSTEM_SETTINGS, RunSettings
from harness.systems import traits_of
from harness.systems.chatbot import ChatbotSystem
from harness.systems.http import HttpSystem
from harness.systems.offline import OfflineSystem
from tests.conftest import HANDBOOK, SAMPLE_DOCS

PLUGIN = "examples.bm25_pages:make_system"  # the BM25 example system of examples/


def _run(tmp_path: Path, label: str, **kw):
    settings = RunSettings(**{"docs": str(HANDBOOK), "cases": str(SAMPLE_DOCS / "cases.jsonl"),
                              "out": str(tmp_path / "out"), "label": label, "retries": 0} | kw)
    return run_evaluation(settings).run_dir


def test_runs_that_differ_only_in_load_time_show_no_settings_difference(server, tmp_path, capsys):
    a = _run(tmp_path, "a", host=server.url)
    server.loaded.clear()
    server.load_delay_s = 0.05  # a cold model: the second run's load_ms differs, nothing else
    b = _run(tmp_path, "b", host=server.url)
    everything = compare_runs(a, b, all_settings=True).manifest_diff
    assert any(key.endswith("load_ms") for key, _, _ in everything)  # the measure is there, and differs
    assert compare_runs(a, b).manifest_diff == ()
    assert main(["compare", str(a), str(b)]) == 0
    assert "what differs between the manifests (A -> B):\n  nothing besides" in capsys.readouterr().out
    assert main(["compare", str(a), str(b), "--all-settings"]) == 0
    assert "load_ms" in capsys.readouterr().out


def test_one_change_of_chunk_size_is_one_row(server, tmp_path):
    a = _run(tmp_path, "a", host=server.url)
    b = _run(tmp_path, "b", host=server.url, chunk_size=600)
    assert compare_runs(a, b).manifest_diff == (("settings.chunk_size", 2000, 600),)
    told = {key for key, _, _ in compare_runs(a, b, all_settings=True).manifest_diff}
    # each place the manifest records it, and the counts that follow, are still there when asked for
    assert {"system.settings.chunking.size_chars", "system.index.chunking.size_chars", "collection.chunks",
            "system.index.counts.chunks"} <= told


def test_report_leaves_out_the_same_rows(server, tmp_path):
    a = _run(tmp_path, "a", host=server.url)
    b = _run(tmp_path, "b", host=server.url, chunk_size=600)
    assert main(["report", str(b), "--vs", str(a), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "settings.chunk_size" in page and "size_chars" not in page and "collection.chunks" not in page


def test_a_plugin_system_never_shows_the_harness_defaults(tmp_path):
    builtin = _run(tmp_path, "builtin", system="offline")
    mine = _run(tmp_path, "mine", system=PLUGIN)
    diff = {key: (a, b) for key, a, b in compare_runs(builtin, mine).manifest_diff}
    assert diff["settings.system"] == ("offline", PLUGIN)
    assert diff["system.settings.top_k"] == (4, 3)  # what each system says it used
    # the harness's default retriever (dense) is never shown for a system that did not use it
    assert all(b in (None, PLUGIN) for key, (_, b) in diff.items() if key.startswith("settings."))
    assert diff["settings.retriever"] == ("bm25", None) and "settings.top_k" not in diff
    two_plugins = compare_runs(mine, _run(tmp_path, "mine2", system=PLUGIN, top_k=8, retriever="dense"))
    assert two_plugins.manifest_diff == ()  # flags the example system does not read change nothing it says


def test_each_builtin_names_only_system_settings_and_together_all():
    declared = [traits_of(cls).run_settings for cls in (ChatbotSystem, OfflineSystem, HttpSystem)]
    assert set().union(*declared) == SYSTEM_SETTINGS and SYSTEM_SETTINGS <= set(FIELDS)


def test_paths_in_the_manifest_are_absolute_with_their_hash(tmp_path, monkeypatch):
    (tmp_path / "new.txt").write_text("Answer $question from:\n$passages\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    run_dir = _run(tmp_path, "p", system="offline", prompt="../new.txt")
    manifest = read_manifest(run_dir).to_json()
    prompt = str(tmp_path / "new.txt")  # ../new.txt from work/, absolute
    assert manifest["settings"]["prompt"] == prompt
    assert manifest["prompt_template"] == {"source": prompt,
                                           "sha256": hashlib.sha256(Path(prompt).read_bytes()).hexdigest()}
    assert Path(manifest["settings"]["docs"]).is_absolute() and Path(manifest["inputs"]["cases"]["path"]).is_absolute()


def test_a_run_recorded_with_relative_paths_still_resumes_from_its_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(SAMPLE_DOCS.parent)
    settings = RunSettings(docs="sample_docs/handbook.pdf", cases="sample_docs/cases.jsonl", system="offline")
    fresh = read_manifest(_run(tmp_path, "new", docs=settings.docs, cases=settings.cases, system="offline"))
    older = fresh.model_copy(update={"settings": fresh.settings.to_json() | {"docs": settings.docs,
                                                                              "cases": settings.cases}})
    assert setup_changes(older, fresh) == []
    moved = fresh.model_copy(update={"settings": fresh.settings.to_json() | {"docs": "elsewhere.pdf"}})
    assert [c.split(":")[0] for c in setup_changes(moved, fresh)] == ["settings.docs"]


@pytest.mark.parametrize("key, measure", [
    ("system.ollama.models.qwen3:4b.load_ms", True), ("system.servers[0].elapsed", True),
    ("system.stats.duration_s", True), ("system.settings.timeout_s", False), ("settings.timeout", False),
    ("system.index.chunking.size_chars", False), ("system.settings.top_k", False)])
def test_what_counts_as_a_machine_measure(key, measure):
    assert is_measure(key) is measure


def test_measures_inside_lists_do_not_make_a_difference():
    a = {"system": {"servers": [{"host": "h", "slots": 2, "load_ms": 3.1}]}}
    b = json.loads(json.dumps(a))
    b["system"]["servers"][0]["load_ms"] = 9.9
    assert manifest_diff(a, b) == []
    assert manifest_diff(a, b, all_settings=True)[0][0] == "system.servers"


def test_another_prompt_file_is_its_path_and_its_hash_once(tmp_path):
    for name, words in (("p1.txt", "Answer"), ("p2.txt", "Answer briefly")):
        (tmp_path / name).write_text(f"{words} $question from:\n$passages\n", encoding="utf-8")
    a = _run(tmp_path, "a", system="offline", prompt=str(tmp_path / "p1.txt"))
    b = _run(tmp_path, "b", system="offline", prompt=str(tmp_path / "p2.txt"))
    diff = compare_runs(a, b).manifest_diff
    assert [key for key, _, _ in diff] == ["settings.prompt", "prompt_template.sha256"]
    assert diff[0][1:] == (str(tmp_path / "p1.txt"), str(tmp_path / "p2.txt"))
    assert "prompt_template.source" in {key for key, _, _ in compare_runs(a, b, all_settings=True).manifest_diff}
