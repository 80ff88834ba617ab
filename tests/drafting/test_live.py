"""Live tier for `rag-eval draft`: a few drafts from the bundled handbook with the real model. Run with
`pytest -m ollama`; skipped when no Ollama answers. A model's drafts vary, so these tests check contracts:
the file matches its schema, every draft that passed has its quote verbatim on its page, a rerun makes no chat
call, and what passed becomes cases that pass the label check."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from harness.cli import main
from harness.drafting.pipeline import run_drafting
from harness.drafting.records import draft_schema, read_drafts, write_drafts
from harness.drafting.settings import DraftSettings
from pdfrag.pdfs import read_documents
from pdfrag.text import fold
from tests.conftest import HANDBOOK, LIVE_HOST

pytestmark = pytest.mark.ollama


def test_drafting_two_handbook_pages_with_the_real_model(live, tmp_path):
    settings = DraftSettings(docs=str(HANDBOOK), out=str(tmp_path / "drafts.jsonl"), host=LIVE_HOST, timeout=600,
                             max_pages=2, per_page=2, unanswerable=1)
    run = run_drafting(settings)
    assert run.chat_calls >= 2
    write_drafts(settings.out, list(run.drafts))
    validator = jsonschema.Draft202012Validator(draft_schema())
    for line in Path(settings.out).read_text(encoding="utf-8").splitlines():
        validator.validate(json.loads(line))
    pages = {p.source_id: fold(p.text) for d in read_documents(HANDBOOK) for p in d.pages}
    for draft in read_drafts(settings.out):
        assert draft.kind in ("answerable", "unanswerable", "error")
        if draft.kind == "answerable" and draft.verification.passed:
            assert fold(draft.quote) in pages[draft.source_id]
            assert draft.provenance.model_digest == live[0].models["qwen3:4b"].digest
    again = run_drafting(settings)
    errors = sum(d.kind == "error" for d in run.drafts)
    assert again.chat_calls == errors  # only failed requests are asked again
    if any(d.verification.passed for d in run.drafts):
        cases = tmp_path / "cases.jsonl"
        assert main(["draft", "cases", settings.out, "--out", str(cases), "--include-unreviewed",
                     "--docs", str(HANDBOOK)]) == 0
        assert main(["check", "--docs", str(HANDBOOK), "--cases", str(cases)]) == 0
