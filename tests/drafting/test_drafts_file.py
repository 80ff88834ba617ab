"""The drafts file and its manifest as typed records: every new line and manifest carries the format version; files
written before format versions (and before reviewers were kept apart) still read; a newer format is refused with one
line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.drafting.manifest import drafts_manifest_json, read_drafts_manifest
from harness.drafting.records import DRAFTS_FORMAT, Decision, read_drafts, write_drafts
from harness.records.drafts_manifest import DRAFTS_MANIFEST_FORMAT
from pdfrag.errors import InputError

OLD = Path(__file__).resolve().parents[1] / "fixtures" / "old_drafts" / "drafts.jsonl"  # written by the code of
# format 1 (harness/drafting/records.py before format versions), the last line as files before reviews had them


def test_a_drafts_file_without_format_versions_reads_as_it_did(tmp_path):
    drafts = read_drafts(OLD)
    assert [d.kind for d in drafts] == ["answerable", "unanswerable", "error", "answerable"]
    two = drafts[0]
    assert [r.by for r in two.reviews] == ["ann", "bob"] and two.in_disagreement
    assert two.decision == Decision("accepted", None, "cy", "2026-11-30T13:00:00Z")  # the resolution settles it
    assert two.verification.reasons[0].code == "low_overlap" and two.provenance is not None
    assert drafts[2].error == "the model replied with no JSON" and drafts[1].verification.best_bm25 == 1.5
    # a line from before reviewers were kept apart: its one decision is its reviewer's review
    assert drafts[3].reviews == (Decision("edited", None, "ann", "2026-11-29T09:00:00Z"),)
    path = tmp_path / "drafts.jsonl"
    write_drafts(path, drafts)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["format"] for line in lines] == [DRAFTS_FORMAT] * 4
    assert lines[0]["decision"] == {"status": "accepted", "reason": None, "by": "cy", "at": "2026-11-30T13:00:00Z"}
    assert read_drafts(path) == drafts  # written in the new format, the same drafts


def test_a_newer_format_and_a_bad_field_are_one_line_each(tmp_path):
    path = tmp_path / "drafts.jsonl"
    shutil.copy(OLD, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    newer = json.loads(lines[0]) | {"format": DRAFTS_FORMAT + 1}
    bad = json.loads(lines[1])
    bad["reviews"] = [{"status": "maybe"}]
    path.write_text("\n".join([json.dumps(newer), json.dumps(bad), *lines[2:]]) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_drafts(path)
    message = str(err.value)
    assert (f"drafts.jsonl:1: format: {DRAFTS_FORMAT + 1} was written by a newer pdf-rag-eval (this one reads "
            f"formats 1 to {DRAFTS_FORMAT}); upgrade pdf-rag-eval to read it") in message
    assert "drafts.jsonl:2: reviews/0/status: 'maybe' is not one of" in message


# The layout of a drafts manifest written before format versions (harness/drafting/manifest.py of format 1), with a
# key this version does not know.
OLD_MANIFEST = {"package_version": "0.1.0", "versions": {"pdf_rag_eval": "0.1.0", "python": "3.11.7", "pypdf": "6.0.0"},
                "written_at": "2026-11-30T10:00:00Z", "settings": {"docs": "/data/handbook", "seed": 1},
                "server": {"host": "http://127.0.0.1:11434"}, "pages": ["h.pdf#p2"],
                "skipped_pages": [{"source_id": "h.pdf#p9", "reason": "3 words, fewer than --min-page-words 20"}],
                "chat_calls": 1, "pages_from_cache": 0, "drafts": 1, "from_an_older_version": True}


def test_a_drafts_manifest_without_a_format_reads_and_a_newer_one_is_refused(tmp_path):
    drafts = tmp_path / "drafts.jsonl"
    shutil.copy(OLD, drafts)
    manifest = tmp_path / "drafts.manifest.json"
    manifest.write_text(json.dumps(OLD_MANIFEST), encoding="utf-8")
    read = read_drafts_manifest(drafts)
    assert read is not None and read.format == 1 and read.settings["docs"] == "/data/handbook"
    assert read.skipped_pages[0].source_id == "h.pdf#p9" and read.versions.pypdf == "6.0.0"
    assert drafts_manifest_json(drafts)["skipped_pages"] == OLD_MANIFEST["skipped_pages"]  # as `draft report` reads it
    manifest.write_text(json.dumps(OLD_MANIFEST | {"format": DRAFTS_MANIFEST_FORMAT + 1}), encoding="utf-8")
    with pytest.raises(InputError, match=f"manifest.json: format: {DRAFTS_MANIFEST_FORMAT + 1} was written by"):
        read_drafts_manifest(drafts)
    manifest.write_text(json.dumps(OLD_MANIFEST | {"format": DRAFTS_MANIFEST_FORMAT}), encoding="utf-8")
    with pytest.raises(InputError, match="not a readable drafts manifest \\(from_an_older_version: Extra inputs"):
        read_drafts_manifest(drafts)  # a key unknown to a versioned manifest is refused
