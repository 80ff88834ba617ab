"""One case as the metrics see it (`Observation`: labels and what the system did, as plain data, with the
values several metrics read computed once) and when a retrieved passage is relevant (`covers`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Generic, Sequence, TypeVar, overload

from pdfrag.text import fold

from ..cases import Evidence
from .matching import cached_fold, found_in


@dataclass(frozen=True)
class Retrieved:
    """A retrieved passage as the metrics see it: rank from 1, the page its id names, and its text."""

    rank: int
    page_id: str
    text: str


_T = TypeVar("_T")


class _once(Generic[_T]):  # noqa: N801 - used as a decorator, like the property it stands for
    """`functools.cached_property` without its lock: Python 3.11 takes one on every first read, a cost per
    case and property that showed in `rag-eval score` profiles. The value lands in the instance's `__dict__`."""

    def __init__(self, fn: Callable[[Any], _T]) -> None:
        self.fn, self.name, self.__doc__ = fn, fn.__name__, fn.__doc__

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _once[_T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> _T | _once[_T]:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


@dataclass(frozen=True)
class Observation:
    """One case and what the system did, as plain data.

    `answered` means the user saw an answer (status answered); `abstained` the system decided to give none.
    `broken` means no decision was made: the system's reply could not be produced or parsed (status
    malformed_output: cut at the token limit, not JSON, a refusal or a tool call in place of the answer), which is
    never an abstention (`behaviour`). `cited` are the page ids of its citations; `quotes_valid` None when no
    citation could be checked. `claims` holds one supported flag per reviewed claim, None while nobody has
    reviewed the answer; `judged_claims` the same for the judged claims (a person's verdict where settled, else a
    judge's; `rag-eval judge`). `quotes` are the quotes of the citations that passed validation, None when a
    citation's quote could not be checked or there is no citation (as `quotes_valid`)."""

    evidence: tuple[Evidence, ...]
    facts: tuple[tuple[str, ...], ...]
    should_abstain: bool
    retrieved: tuple[Retrieved, ...]
    answer: str
    answered: bool
    abstained: bool
    cited: tuple[str, ...]
    quotes_valid: bool | None
    claims: tuple[bool, ...] | None
    judged_claims: tuple[bool, ...] | None = None
    broken: bool = False
    quotes: tuple[str, ...] | None = None

    @_once
    def first_ranks(self) -> tuple[int | None, ...]:
        """Per evidence item, the rank of the first relevant retrieved passage (None: not retrieved)."""
        ordered = sorted(self.retrieved, key=_rank)
        return tuple(next((r.rank for r in ordered if covers(r, e)), None) for e in self.evidence)

    @_once
    def found_ranks(self) -> tuple[int, ...]:
        """The first ranks of the evidence items that were retrieved, best first."""
        return tuple(sorted(r for r in self.first_ranks if r is not None))

    @_once
    def folded_answer(self) -> str:
        return fold(self.answer)

    @_once
    def facts_found(self) -> tuple[bool, ...]:
        """Per labelled fact, whether the answer holds it (`found_in`): one search per fact and case, shared by
        the metrics that read facts and the row's fact results."""
        return tuple(found_in(self.folded_answer, f) for f in self.facts)

    @_once
    def facts_grounded(self) -> tuple[bool | None, ...]:
        """Per labelled fact: None when `grounded` does not apply to the case or the fact is not in the answer, else
        whether one of the valid cited quotes holds it too (the same rule, `found_in`)."""
        if not self.facts or self.abstained or self.quotes is None:
            return (None,) * len(self.facts)
        folded = [cached_fold(q) for q in self.quotes]
        return tuple(any(found_in(q, f) for q in folded) if hit else None
                     for f, hit in zip(self.facts, self.facts_found))


# ---------------------------------------------------------------- the shared rules


def covers(item: Retrieved, evidence: Evidence) -> bool:
    """A passage is relevant to an evidence item when it comes from that page and holds its quote, if any."""
    if item.page_id != page_of(evidence.source_id):
        return False
    return evidence.quote is None or cached_fold(evidence.quote) in cached_fold(item.text)


@lru_cache(maxsize=65536)
def page_of(source_id: str) -> str:
    """The page id a source id names: `a.pdf#p2.3` -> `a.pdf#p2`; any other id is its own page."""
    return re.sub(r"(#p\d+)\.\d+$", r"\1", source_id)


def first_rank(retrieved: Sequence[Retrieved], evidence: Evidence) -> int | None:
    """Rank of the first retrieved passage relevant to one evidence item, or None."""
    return next((r.rank for r in sorted(retrieved, key=_rank) if covers(r, evidence)), None)


def _rank(item: Retrieved) -> int:
    return item.rank
