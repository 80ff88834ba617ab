"""Python systems for tests that run the real command in another process (`--system tests.support.sysfixtures:...`).
They do not answer questions: they abstain by a stated rule, slowly or by failing, to exercise the harness."""

from __future__ import annotations

import os
import tempfile
import time

from harness import Citation, Passage, SystemAnswer


class Slow:
    """Abstains on every question after `delay_s` seconds."""

    def __init__(self, delay_s: float = 0.4):
        self.delay_s = delay_s

    def describe(self) -> dict:
        return {"name": "slow abstainer (test fixture)"}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        time.sleep(self.delay_s)
        return SystemAnswer(answer="", abstained=True)


class Broken:
    """Fails on every question."""

    def describe(self) -> dict:
        return {"name": "always failing (test fixture)"}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        raise RuntimeError("this fixture always fails")


def slow() -> Slow:
    return Slow()


class AheadRaises(Slow):
    """Abstains at once; its `questions_ahead` hint raises."""

    def questions_ahead(self, questions) -> None:
        raise RuntimeError("cannot prepare")


class AheadNone(Slow):
    """Abstains at once; `questions_ahead` is there but is not a method."""

    questions_ahead = None


def ahead_raises() -> AheadRaises:
    return AheadRaises(0.0)


def ahead_none() -> AheadNone:
    return AheadNone(0.0)


def broken() -> Broken:
    return Broken()


def broken_factory() -> Broken:
    raise RuntimeError("cannot load my index")


class Renamed:
    """The BM25 example system (examples/bm25_pages.py) with its passage ids rewritten by `rename`: a loader's
    habits reproduced (0-based pages, a file name without its folder) to exercise the row warnings."""

    def __init__(self, docs: str, rename, name: str):
        from examples.bm25_pages import make_system
        self.inner, self.rename, self.name = make_system(docs), rename, name

    def describe(self) -> dict:
        return {"name": self.name, "version": "2", "settings": {"page_base": 0, "top_k": self.inner.top_k}}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        got = self.inner.answer(question, case_id=case_id)
        return got.model_copy(update={
            "retrieved": tuple(p.model_copy(update={"source_id": self.rename(p.source_id)}) for p in got.retrieved),
            "citations": tuple(c.model_copy(update={"source_id": self.rename(c.source_id)}) for c in got.citations)})


def _zero_based(source_id: str) -> str:
    doc, _, page = source_id.rpartition("#p")
    return f"{doc}#p{int(page) - 1}"


def zero_based(docs: str) -> Renamed:
    """Pages counted from 0, as LangChain's PyPDFLoader does."""
    return Renamed(docs, _zero_based, "zero-based pages (test fixture)")


def file_name_only(docs: str) -> Renamed:
    """The file name without its subfolder, as LlamaIndex's `file_name` gives it."""
    return Renamed(docs, lambda source_id: source_id.rsplit("/", 1)[-1], "file names only (test fixture)")
# Terminal escapes a hostile system may send: retitle the window, clear the screen, home the cursor, and write a
# fake verdict; a right-to-left override; a C1 control (CSI).
ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b[Hall claims verified\u202e \x9b31m"


class Escaping:
    """Answers every question with terminal escape sequences in its name, answer, passage and quote, and fails
    on every third case with an error message holding them too."""

    def __init__(self) -> None:
        self.calls = 0

    def describe(self) -> dict:
        return {"name": f"escaping {ESCAPES} (test fixture)"}

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        self.calls += 1
        if self.calls % 3 == 0:
            raise RuntimeError(f"failed {ESCAPES}")
        text = f"The passage says {ESCAPES} and more words follow here."
        return SystemAnswer(answer=f"Answer {ESCAPES}. Second sentence.",
                            retrieved=(Passage(source_id="handbook.pdf#p2", text=text, rank=1),),
                            citations=(Citation(source_id="handbook.pdf#p2", quote=f"says {ESCAPES} and"),))


def escaping() -> Escaping:
    return Escaping()


class _Described(Slow):
    def __init__(self, description: object):
        super().__init__(0.0)
        self.description = description

    def describe(self) -> dict:
        if isinstance(self.description, Exception):
            raise self.description
        return self.description  # type: ignore[return-value]


def returns_a_class() -> type:
    return Slow


def describe_raises() -> Slow:
    return _Described(KeyError("settings"))


def describe_list() -> Slow:
    return _Described(["my-rag", 3])


def describe_not_json() -> Slow:
    return _Described({"name": "my-rag", "loaded_at": object()})


class Exits(Slow):
    """Calls sys.exit(3) on the hotel question (3 is --fail-under's exit code), abstains on every other."""

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        if case_id == "hotel-limit":
            raise SystemExit(3)
        return super().answer(question, case_id=case_id)


def exits() -> Exits:
    return Exits(0.0)


class Wanders(Slow):
    """Changes the working directory on every question (as a careless plug-in does), then abstains."""

    def __init__(self, elsewhere: str):
        super().__init__(0.0)
        self.elsewhere = elsewhere

    def answer(self, question: str, *, case_id: str) -> SystemAnswer:
        os.chdir(self.elsewhere)
        return super().answer(question, case_id=case_id)


def wanders() -> Wanders:
    return Wanders(tempfile.mkdtemp(prefix="wandered-"))
