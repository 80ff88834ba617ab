"""Python systems for tests that run the real command in another process (`--system tests.support.sysfixtures:...`).
They do not answer questions: they abstain by a stated rule, slowly or by failing, to exercise the harness."""

from __future__ import annotations

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
