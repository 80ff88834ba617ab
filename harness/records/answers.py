"""What a system returns: passages, the citations it claims, its answer, and the HTTP reply body."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from .base import _Record


class Passage(_Record):
    """One retrieved passage, best first. `source_id` is `file.pdf#p3` or `file.pdf#p3.2` (path relative to
    --docs, pages from 1); `score` is the system's own, on its own scale, when it has one."""

    source_id: str = Field(min_length=1)
    text: str
    rank: int = Field(ge=1)
    score: float | None = Field(default=None, allow_inf_nan=False)


class Citation(_Record):
    """A quote the system gives as support, and the passage it names."""

    source_id: str
    quote: str


class SystemAnswer(_Record):
    """What any RAG system returns for one question. The harness scores it; a system never grades itself.

    `abstained` None means "abstained when `answer` is empty". `malformed` is a reason when the system's own
    reply could not be read (status malformed_output); `error` a reason when answering failed (status error).
    `details` holds system-specific facts for readers (e.g. thinking_chars, done_reason, reasons)."""

    answer: str = ""
    abstained: bool | None = None
    retrieved: tuple[Passage, ...] = ()
    citations: tuple[Citation, ...] = ()
    usage: dict[str, Any] = Field(default_factory=dict)
    raw: str = ""
    malformed: str | None = None
    error: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)

    @property
    def abstains(self) -> bool:
        return self.abstained if self.abstained is not None else not self.answer.strip()


class _ReplyPassage(_Record):
    model_config = ConfigDict(frozen=True, extra="ignore")
    source_id: str = Field(min_length=1)
    text: str
    score: float | None = Field(default=None, allow_inf_nan=False)


class _ReplyCitation(_Record):
    model_config = ConfigDict(frozen=True, extra="ignore")
    source_id: str
    quote: str


class SystemReply(_Record):
    """The JSON body an HTTP system replies with (`harness/schemas/system_reply.schema.json`): `retrieved` best
    first; `abstained` optional (absent: abstained when `answer` is empty). Unknown keys are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    answer: str
    retrieved: list[_ReplyPassage]
    citations: list[_ReplyCitation] = Field(default_factory=list)
    abstained: bool | None = None

    def to_answer(self, raw: str) -> SystemAnswer:
        passages = tuple(Passage(source_id=p.source_id, text=p.text, rank=i, score=p.score)
                         for i, p in enumerate(self.retrieved, start=1))
        return SystemAnswer(answer=self.answer, abstained=self.abstained, retrieved=passages,
                            citations=tuple(Citation(source_id=c.source_id, quote=c.quote) for c in self.citations),
                            raw=raw)
