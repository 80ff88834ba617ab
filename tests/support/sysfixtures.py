"""Python systems for tests that run the real command in another process (`--system tests.support.sysfixtures:...`).
They do not answer questions: they abstain by a stated rule, slowly or by failing, to exercise the harness."""

from __future__ import annotations

import os
import tempfile
import time

from harness import SystemAnswer


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


def broken() -> Broken:
    return Broken()


def broken_factory() -> Broken:
    raise RuntimeError("cannot load my index")


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
