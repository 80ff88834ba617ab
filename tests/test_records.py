"""The typed records: published schemas equal the generated ones, rows round-trip, and bad files or replies fail
in one place with a message naming the line and field."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from harness.records import (
    MANIFEST_FORMAT,
    Manifest,
    RerunRecord,
    Row,
    SystemReply,
    field_problem,
    format_problem,
    published_schemas,
)
from harness.rows import validate_row
from harness.runs import read_manifest, read_manifest_noting, read_rows, read_summary, write_rows
from pdfrag.errors import InputError
from tests.conftest import REPO
from tests.support.rowkit import make_row


@pytest.mark.parametrize("name", sorted(published_schemas()))
def test_published_schema_files_equal_the_records(name):
    on_disk = json.loads((REPO / "harness" / "schemas" / name).read_text(encoding="utf-8"))
    assert on_disk == published_schemas()[name], f"regenerate with `python -m harness.records` ({name})"


def test_a_row_round_trips_and_unknown_fields_are_refused_by_record_and_schema():
    row = make_row("c1", {"hit@1": 1.0, "facts": None}, tags=("dev",), repeat=2, answer="EUR 160.",
                   retrieved=["h.pdf#p2.1"])
    assert Row.model_validate_json(row.line()) == row
    assert row.key == ("c1", 2) and row.retrieved[0].page_id == "h.pdf#p2" and row.retrieved[0].page == 2
    data = row.to_json() | {"surprise": 1}
    with pytest.raises(ValidationError) as err:
        Row.model_validate(data)
    assert field_problem(err.value).startswith("surprise:")
    with pytest.raises(ValueError, match="case 'c1' breaks the row schema"):
        validate_row(data)


def test_read_rows_skips_a_cut_last_line_and_names_a_bad_one(tmp_path):
    rows = [make_row("c1", {"hit@1": 1.0}), make_row("c2", {"hit@1": 0.0})]
    write_rows(tmp_path, rows)
    with open(tmp_path / "rows.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"case_id": "c3", "met')  # a kill in the middle of a write
    assert read_rows(tmp_path) == rows
    broken = rows[0].to_json() | {"repeat": -1}
    (tmp_path / "rows.jsonl").write_text(json.dumps(broken) + "\n" + rows[1].line() + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"rows\.jsonl:1: not a result row \(repeat: "):
        read_rows(tmp_path)


def test_read_manifest_names_the_file_and_field(tmp_path):
    (tmp_path / "manifest.json").write_text('{"status": "complete"}', encoding="utf-8")
    with pytest.raises(InputError, match=r"manifest\.json: not a run manifest \(run_id: Field required\)"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_text('{"run_id": "r1", "rescored_from": {"run_id": "r0"}}', encoding="utf-8")
    manifest = read_manifest(tmp_path)
    assert manifest.status == "incomplete" and manifest.to_json()["rescored_from"] == {"run_id": "r0"}


def test_a_system_reply_becomes_an_answer_ranked_from_one():
    body = {"answer": "EUR 160.", "retrieved": [{"source_id": "h.pdf#p2", "text": "t2", "score": 0.9, "x": 1},
                                                {"source_id": "h.pdf#p1", "text": "t1"}],
            "citations": [{"source_id": "h.pdf#p2", "quote": "t2"}], "extra": "ignored"}
    answer = SystemReply.model_validate(body).to_answer(raw=json.dumps(body))
    assert [(p.rank, p.source_id, p.score) for p in answer.retrieved] == [(1, "h.pdf#p2", 0.9), (2, "h.pdf#p1", None)]
    assert answer.citations[0].quote == "t2" and not answer.abstains
    assert SystemReply.model_validate({"answer": " ", "retrieved": []}).to_answer(raw="").abstains
    with pytest.raises(ValidationError) as err:
        SystemReply.model_validate({"answer": "x"})
    assert field_problem(err.value) == "retrieved: Field required"


def test_in_bulk_pauses_the_cyclic_collector_and_restores_it():
    import gc

    from harness.records import in_bulk

    seen = []

    @in_bulk
    def build(fail: bool) -> int:
        seen.append(gc.isenabled())
        if fail:
            raise ValueError("bad line")
        return 7

    assert gc.isenabled()
    assert build(False) == 7 and seen == [False] and gc.isenabled()
    with pytest.raises(ValueError):
        build(True)
    assert gc.isenabled()
    gc.disable()  # a caller that turned it off keeps it off
    try:
        build(False)
        assert not gc.isenabled()
    finally:
        gc.enable()


# A manifest as a run written before the sections were typed: a plug-in's own keys, a resumed run's extras.
_OLD_MANIFEST = {
    "run_id": "20260101T000000Z-old", "status": "complete", "started_at": "2026-01-01T00:00:00+00:00",
    "ended_at": None, "package_version": "0.1.0", "git_commit": None, "command": ["rag-eval", "run"],
    "settings": {"docs": "sample_docs", "k": [1, 3], "top_k": 4, "label": "old", "system": "my.rag:make",
                 "chunk_size": 800, "hosts": [], "answer_cache": False, "a_setting_added_later": 7},
    "system": {"name": "my rag", "version": 3, "index": {"chunks": 12},
               "ollama": {"models": {"qwen3:4b": {"digest": "d1"}, "nomic-embed-text": {"digest": "d2"}}}},
    "collection": {"documents": 2, "pages": 9, "chunks": None, "empty_pages": {"scan.pdf": [2]}},
    "inputs": {"cases": {"path": "c.jsonl", "sha256": "0" * 64}}, "metrics": ["hit@1", "hit@3", "passed"],
    "resumed_at": ["2026-01-01T00:01:00+00:00"]}


def test_an_old_manifest_loads_into_typed_sections_and_writes_back_the_same_json(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps(_OLD_MANIFEST), encoding="utf-8")
    manifest = read_manifest(tmp_path)
    assert manifest.to_json() == _OLD_MANIFEST  # no key added, none lost: plug-in keys and extras kept
    assert manifest.settings.label == "old" and manifest.settings.top_k == 4 and manifest.settings.k == (1, 3)
    assert manifest.system.title == "my rag" and manifest.system.warnings == ()
    assert manifest.system.digests() == {"qwen3:4b": "d1", "nomic-embed-text": "d2"}
    assert manifest.collection.chunks is None and manifest.collection.empty_pages == {"scan.pdf": (2,)}
    assert Manifest(run_id="").to_json()["system"] == {}  # a section nobody filled stays empty
    odd = Manifest(run_id="", system={"ollama": {"models": ["qwen3"]}})  # a plug-in's own shape: no digests
    assert odd.system.digests() == {}
    assert Manifest(run_id="", system={"ollama": {"models": {"m": 1}}}).system.digests() == {"m": None}


@pytest.mark.parametrize(("settings", "metrics", "ks"), [
    ({"k": [2, 5]}, ["hit@1", "passed"], [2, 5]),  # the settings say so
    ({"lexical_k": 2}, ["hit@1", "recall@1", "hit@2", "passed"], [1, 2]),  # none in settings: from hit@k names
    ({}, ["facts", "passed"], [])])
def test_manifest_ks_is_the_runs_k_values(settings, metrics, ks):
    assert Manifest(run_id="r", settings=settings, metrics=metrics).ks == ks


def test_a_manifest_section_of_the_wrong_shape_names_the_field(tmp_path):
    bad = _OLD_MANIFEST | {"system": {"name": "x", "warnings": "not a list"}}
    (tmp_path / "manifest.json").write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(InputError, match=r"manifest.json: not a run manifest \(system.warnings"):
        read_manifest(tmp_path)


def test_a_manifest_copy_with_a_section_given_as_a_dict_types_it():
    manifest = Manifest(run_id="r", settings={"label": "a", "k": [1]})
    copy = manifest.model_copy(update={"settings": {"label": "b"}, "system": {"name": "s"}, "started_at": "t"})
    assert copy.settings.label == "b" and copy.system.title == "s" and copy.started_at == "t"
    assert copy.to_json()["settings"] == {"label": "b"} and manifest.settings.label == "a"


def _manifest(tmp_path, data: dict):
    (tmp_path / "manifest.json").write_text(json.dumps(data), encoding="utf-8")


def test_a_current_manifest_refuses_a_key_it_does_not_know(tmp_path):
    _manifest(tmp_path, {"format": MANIFEST_FORMAT, "run_id": "r1", "judge": {"reviewer": "judge:m@1"}})
    assert read_manifest(tmp_path).judge.reviewer == "judge:m@1"
    _manifest(tmp_path, {"format": MANIFEST_FORMAT, "run_id": "r1", "surprise": 1})
    with pytest.raises(InputError, match=r"manifest\.json: not a run manifest \(surprise: Extra inputs"):
        read_manifest(tmp_path)
    _manifest(tmp_path, {"format": MANIFEST_FORMAT, "run_id": "r1", "judge": {"reviewer": "j", "mood": "x"}})
    with pytest.raises(InputError, match=r"judge\.mood: Extra inputs"):
        read_manifest(tmp_path)


def test_an_old_manifest_leaves_out_what_it_does_not_know_and_says_so(tmp_path):
    _manifest(tmp_path, {"run_id": "r1", "surprise": 1, "rerun_of": {"run": "r0", "carried": 3}})
    manifest, notes = read_manifest_noting(tmp_path)
    assert manifest.format == 1 and manifest.rerun_of == RerunRecord(run="r0", carried=3)
    assert notes == (f"{tmp_path / 'manifest.json'}: manifest format 1 (written before format versions), read as "
                     f"format {MANIFEST_FORMAT}; left out keys it does not know: surprise",)
    assert "format" not in manifest.to_json() and "surprise" not in manifest.to_json()


def test_a_newer_manifest_format_is_refused(tmp_path):
    _manifest(tmp_path, {"format": MANIFEST_FORMAT + 1, "run_id": "r1"})
    with pytest.raises(InputError, match=f"manifest.json: format: {MANIFEST_FORMAT + 1} was written by a newer"):
        read_manifest(tmp_path)


def test_a_summary_refuses_a_key_it_does_not_know(tmp_path):
    summary = {"rows": 1, "errored": 0, "metrics": {}, "answer_statuses": {}, "human_claim_review": {}}
    (tmp_path / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    assert read_summary(tmp_path).rows == 1
    (tmp_path / "summary.json").write_text(json.dumps(summary | {"surprise": 1}), encoding="utf-8")
    with pytest.raises(InputError, match=r"summary\.json: not a run summary \(surprise: Extra inputs"):
        read_summary(tmp_path)


def test_no_reader_walks_untyped_extras():
    code = [p for folder in ("pdfrag", "chatbot", "harness") for p in (REPO / folder).rglob("*.py")]
    assert [str(p) for p in code if "model_extra" in p.read_text(encoding="utf-8")] == []


@pytest.mark.parametrize("data, problem", [
    ({}, None), ({"format": 1}, None), ({"format": 2}, None),
    ({"format": 3}, "format: 3 was written by a newer pdf-rag-eval (this one reads formats 1 to 2); upgrade"),
    ({"format": "2"}, "format: '2' is not a format version (this pdf-rag-eval reads 1 to 2)"),
    ({"format": True}, "format: True is not a format version"), ({"format": 0}, "format: 0 is not a format version"),
    ({"format": None}, "format: None is not a format version"),
])
def test_every_versioned_file_refuses_a_format_it_cannot_read_in_one_wording(data, problem):
    found = format_problem(data, 2)
    assert found == problem if problem is None else found is not None and found.startswith(problem)
