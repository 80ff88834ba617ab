"""What a system says it is and can do (`Traits`), and how the harness asks it instead of testing `--system`;
plug-in factories that take the same `SystemContext` as the built-ins."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from harness.evaluate import run_evaluation
from harness.records import SystemAnswer
from harness.runs import read_manifest, read_rows
from harness.settings import SYSTEM_SETTINGS, RunSettings
from harness.systems import SystemContext, Traits, load_system, traits_for, traits_of
from harness.systems.chatbot import ChatbotSystem
from harness.systems.http import HttpSystem
from harness.systems.loading import prompt_template_for
from harness.systems.offline import OfflineSystem
from pdfrag.errors import InputError
from tests.conftest import SAMPLE_DOCS, sample_cases

SEEN: list[SystemContext] = []  # what the factories below were given, for the test to read


class _Abstainer:
    """Abstains on every question: slowly (0.3 s) on `mileage-rate`, at once on the others."""

    def describe(self) -> dict:
        return {"name": "abstainer (test fixture)"}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        if case_id == "mileage-rate":
            time.sleep(0.3)
        return SystemAnswer(answer="", abstained=True)


class _OwnDeadline(_Abstainer):
    """The same, but it keeps its own deadline, so the harness must not time it."""

    kind = "own-deadline"
    timed_by_harness = False


class _ContextEcho(_Abstainer):
    def __init__(self, context: SystemContext, docs: str | None = None):
        self.context, self.docs = context, docs

    def describe(self) -> dict:
        pages = sum(len(d.pages) for d in self.context.documents)
        return {"name": "context echo", "pages": pages, "top_k": self.context.settings.top_k, "docs": self.docs}


def with_context(*, context: SystemContext) -> _ContextEcho:
    SEEN.append(context)
    return _ContextEcho(context)


def with_context_and_docs(*, docs: str, context: SystemContext) -> _ContextEcho:
    return _ContextEcho(context, docs)


def _settings(tmp_path, system: str, **kw) -> RunSettings:
    return RunSettings(**{"docs": str(SAMPLE_DOCS), "cases": sample_cases(tmp_path), "out": str(tmp_path / "out"),
                          "system": system} | kw)


def test_built_ins_and_http_declare_their_traits():
    chatbot_settings = tuple(sorted(SYSTEM_SETTINGS - {"abstain_below"}))  # every one but the offline baseline's
    assert replace(traits_of(ChatbotSystem), run_settings=tuple(sorted(ChatbotSystem.run_settings))) == Traits(
        kind="chatbot", uses_model_servers=True, label_checks_chunks=True, uses_prompt_template=True,
        timed_by_harness=False, run_settings=chatbot_settings)
    assert traits_of(OfflineSystem) == Traits(kind="offline", uses_model_servers=False, label_checks_chunks=True,
                                              uses_prompt_template=True, timed_by_harness=False,
                                              run_settings=("top_k", "chunk_size", "chunk_overlap", "prompt",
                                                            "retriever", "abstain_below"))
    assert traits_of(HttpSystem) == Traits(kind="http", uses_model_servers=None, label_checks_chunks=False,
                                           uses_prompt_template=False, timed_by_harness=False,
                                           run_settings=("retries", "backoff", "max_body_bytes"))
    # Known before anything is built, from the --system name alone:
    assert traits_for("chatbot") == traits_of(ChatbotSystem) and traits_for("offline") == traits_of(OfflineSystem)
    assert traits_for("https://rag.example/answer") == traits_of(HttpSystem)


def test_a_plug_in_that_says_nothing_gets_the_defaults_and_one_that_does_is_heard():
    assert traits_for("my_pkg.rag:make") == Traits() == traits_of(_Abstainer())
    assert Traits().kind == "python" and Traits().uses_model_servers is None and Traits().timed_by_harness
    assert traits_of(_OwnDeadline()) == Traits(kind="own-deadline", timed_by_harness=False)


@pytest.mark.parametrize(("system", "error"), [(_Abstainer(), True), (_OwnDeadline(), False)])
def test_the_harness_times_a_system_only_when_its_traits_say_so(tmp_path, system, error):
    # Same settings and --system string for both: only the system's own `timed_by_harness` differs.
    result = run_evaluation(_settings(tmp_path, "fixture:make", timeout=0.2), system=system)
    slow = next(r for r in read_rows(result.run_dir) if r.case_id == "mileage-rate")
    assert (slow.error is not None and "over --timeout 0.2 s" in slow.error) is error


def test_a_factory_taking_context_gets_the_runs_settings_and_documents(tmp_path):
    SEEN.clear()
    result = run_evaluation(_settings(tmp_path, "tests.systems.test_traits:with_context", top_k=7))
    context = SEEN[-1]
    assert context.settings.top_k == 7 and context.settings.docs == str(SAMPLE_DOCS)
    pages = sum(len(d.pages) for d in context.documents)
    assert pages > 0 and context.progress is None  # the documents the run already read, not re-read
    system = read_manifest(result.run_dir).system.to_json()
    assert system["name"] == "context echo" and system["pages"] == pages and system["top_k"] == 7


def test_a_factory_may_take_docs_and_context_together(tmp_path):
    ctx = SystemContext(_settings(tmp_path, "x"), [])
    system = load_system("tests.systems.test_traits:with_context_and_docs", ctx)
    assert isinstance(system, _ContextEcho) and system.context is ctx and system.docs == str(SAMPLE_DOCS)


class _BadDescription(_Abstainer):
    def describe(self) -> dict:
        return {"name": "bad", "warnings": 3}


def test_a_description_of_the_wrong_shape_is_refused_naming_the_field(tmp_path):
    with pytest.raises(InputError, match=r"--system 'fixture:make': describe\(\) .*\(warnings: "):
        run_evaluation(_settings(tmp_path, "fixture:make"), system=_BadDescription())


def test_the_prompt_template_of_a_run_is_the_one_its_system_declares(tmp_path):
    """The manifest's prompt template comes from the system (read before it is built), not from the harness
    reading the bot's prompt: the built-ins give theirs, `--prompt` or their own; others none."""
    mine = tmp_path / "mine.txt"
    mine.write_text("Answer $question from:\n$passages\n", encoding="utf-8")
    own, given = prompt_template_for("chatbot", None), prompt_template_for("chatbot", str(mine))
    assert own is not None and given is not None and own.sha256 != given.sha256
    assert "$question" in own.text and given.source == str(mine)
    assert prompt_template_for("offline", str(mine)).sha256 == given.sha256
    assert prompt_template_for("http://127.0.0.1:9/answer", str(mine)) is None
    assert prompt_template_for("examples.bm25_pages:make_system", str(mine)) is None
    bad = tmp_path / "bad.txt"
    bad.write_text("no variables at all\n", encoding="utf-8")
    with pytest.raises(InputError, match="question"):
        prompt_template_for("chatbot", str(bad))
