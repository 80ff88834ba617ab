"""The reviews file as a typed record: every new line carries the format version; a file written before format
versions (tests/fixtures/old_reviews/, written by the code of format 1, its last line from before there were several
reviewers) reads as it did; a newer format is refused with one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.records.reviews import REVIEWS_FORMAT
from harness.review.store import read_reviews, save_reviews
from pdfrag.errors import InputError

OLD = Path(__file__).resolve().parents[1] / "fixtures" / "old_reviews" / "cases.reviews.jsonl"
A = "a" * 64


def test_a_reviews_file_without_format_versions_reads_as_it_did(tmp_path):
    book = read_reviews(OLD)
    assert sorted(r.reviewer for r in book.reviews.values()) == ["", "ann", "ann", "bob", "judge:qwen3:4b@abc123"]
    states = {s.claim: s for s in book.claim_states(("c1", A)) or ()}
    assert states["Taxis are free."].status == "resolved" and states["Taxis are free."].verdict == "unsupported"
    assert states["Hotels cost EUR 160."].status == "agreed"  # the judge is no person: not counted
    judge = book.judge_review(("c1", A), "judge:qwen3:4b@abc123")
    assert judge is not None and judge.claims[1].verdict == "unverified" and judge.prompt_sha256 == "c" * 64
    path = tmp_path / "cases.reviews.jsonl"
    save_reviews(path, book)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert {line["format"] for line in lines} == {REVIEWS_FORMAT} and len(lines) == 6
    assert sorted(line["kind"] for line in lines) == ["resolution"] + ["review"] * 5
    assert read_reviews(path) == book  # written in the new format, the same reviews


def test_a_newer_format_and_a_persons_unverified_are_one_line_each(tmp_path):
    path = tmp_path / "cases.reviews.jsonl"
    shutil.copy(OLD, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    newer = json.loads(lines[0]) | {"format": REVIEWS_FORMAT + 1}
    person = json.loads(lines[1])
    person["claims"][0]["verdict"] = "unverified"
    path.write_text("\n".join([json.dumps(newer), json.dumps(person), *lines[2:]]) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_reviews(path)
    message = str(err.value)
    assert f"reviews.jsonl:1: format: {REVIEWS_FORMAT + 1} was written by a newer pdf-rag-eval" in message
    assert "reviews.jsonl:2: claims.0.verdict: 'unverified' is a judge's verdict" in message
