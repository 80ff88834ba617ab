"""The reviews file's records (`<cases stem>.reviews.jsonl`): a reviewer's review of one answer, and the resolution
of a claim reviewers disagree on; how they combine is `harness.review.book`, the file itself
`harness.review.store`. The published schema (`harness/schemas/reviews_line.schema.json`) is generated from a line
of the file, `ReviewLine` or `ResolutionLine`.

Format versions (`format`, `REVIEWS_FORMAT`): a line without one was written before format versions (format 1) and
reads as it did; a review line then has no `kind`. A newer format than this code knows is refused. The records are
frozen pydantic dataclasses, positional like the plain dataclasses they were, each checked as it is made; a
person's review holds only a person's verdicts (`unverified` is a judge's).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Final, Literal, Union

from pydantic import ConfigDict, Field, TypeAdapter, model_validator
from pydantic.dataclasses import dataclass

from pdfrag.text import clip

from .base import NOTE_CHARS, QUOTE_CHARS, SOURCE_ID_CHARS, fields_of
from .row import VERDICTS, ClaimResolution, JudgeVerdict, Verdict

__all__ = ["JUDGE_PREFIX", "REVIEWS_FORMAT", "Claim", "Resolution", "ResolutionLine", "Review", "ReviewKey",
           "ReviewLine", "ReviewsLine", "is_judge", "reviews_line"]

REVIEWS_FORMAT: Final = 2  # 1: lines without `format` (before versions); 2: `format` on every line
JUDGE_PREFIX = "judge:"
ReviewKey = tuple[str, str]  # (case_id, answer_sha256)

_CONFIG = ConfigDict(extra="forbid")
_CaseId = Annotated[str, Field(min_length=1)]
_SHA256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of the normalised answer text")]
_Format = Annotated[int, Field(ge=1, description="the reviews file's format version (REVIEWS_FORMAT); absent: 1")]


def is_judge(reviewer: str) -> bool:
    """A model judge's reviewer name (`judge:<model>@<digest>`), as opposed to a person's."""
    return reviewer.startswith(JUDGE_PREFIX)


@dataclass(frozen=True, config=_CONFIG)
class Claim:
    """One claim of an answer and one reviewer's verdict; `source_id` names the supporting passage. A judge's
    claim also has the `quote` that decides it (and may be `unverified`); a person's has none."""

    claim: str
    verdict: JudgeVerdict
    source_id: str | None = None
    note: str = ""
    quote: str | None = None

    def bounded(self) -> Claim:
        """This claim as the reviews file keeps it: its quote, note and source id cut (with a marker) to
        QUOTE_CHARS, NOTE_CHARS and SOURCE_ID_CHARS. The claim itself is the run's answer's sentence, already
        bounded by --max-reply-chars, and the key reviewers are matched by: kept whole."""
        return dataclasses.replace(
            self, source_id=None if self.source_id is None else clip(self.source_id, SOURCE_ID_CHARS),
            note=clip(self.note, NOTE_CHARS), quote=None if self.quote is None else clip(self.quote, QUOTE_CHARS))


@dataclass(frozen=True, config=_CONFIG)
class Review:
    """A reviewer's verdicts on every claim of one answer. `reviewed_at` is UTC ISO 8601."""

    case_id: _CaseId
    answer_sha256: _SHA256
    claims: tuple[Claim, ...]
    reviewer: str = ""
    reviewed_at: str = ""
    prompt_sha256: str | None = None  # a judge's: the SHA-256 of the prompt template it was asked with

    @model_validator(mode="after")
    def _a_persons_verdicts(self) -> Review:
        if not is_judge(self.reviewer):
            for i, claim in enumerate(self.claims):
                if claim.verdict not in VERDICTS:
                    raise ValueError(f"claims.{i}.verdict: {claim.verdict!r} is a judge's verdict; a person's is one "
                                     f"of {', '.join(VERDICTS)}")
        return self

    @property
    def key(self) -> ReviewKey:
        return (self.case_id, self.answer_sha256)

    @property
    def slot(self) -> tuple[str, str, str]:
        """What a later review replaces: the same answer by the same reviewer."""
        return (self.case_id, self.answer_sha256, self.reviewer)

    @property
    def claims_supported(self) -> float | None:
        """This reviewer's supported claims / all claims; None when the answer makes no claims."""
        if not self.claims:
            return None
        return sum(c.verdict == "supported" for c in self.claims) / len(self.claims)


@dataclass(frozen=True, config=_CONFIG)
class Resolution:
    """The verdict that settles a claim of one answer on which reviewers disagree, and who settled it."""

    case_id: _CaseId
    answer_sha256: _SHA256
    claim: Annotated[str, Field(pattern=r"\S")]
    verdict: Verdict
    source_id: str | None = None
    note: str = ""
    resolver: str = ""
    resolved_at: str = ""

    @property
    def key(self) -> ReviewKey:
        return (self.case_id, self.answer_sha256)

    def to_record(self) -> ClaimResolution:
        return ClaimResolution(claim=self.claim, verdict=self.verdict, source_id=self.source_id, note=self.note,
                               resolver=self.resolver, resolved_at=self.resolved_at)


@dataclass(frozen=True, config=_CONFIG)
class ReviewLine(Review):
    """A review as a line of the file: bounded claims, and the format."""

    kind: Literal["review"] = Field(default="review", description="absent in lines of format 1")
    format: _Format = 1

    @classmethod
    def of(cls, review: Review) -> ReviewLine:
        return cls(**fields_of(review, Review) | {"claims": tuple(c.bounded() for c in review.claims)},
                   format=REVIEWS_FORMAT)

    def record(self) -> Review:
        return Review(**fields_of(self, Review))

    def to_json(self) -> dict[str, Any]:
        data = _LINE.dump_python(self, mode="json")
        for claim in data["claims"]:
            if claim["quote"] is None:  # a person's claim: no quote
                del claim["quote"]
        return {k: v for k, v in data.items() if not (k == "prompt_sha256" and v is None)}


@dataclass(frozen=True, config=_CONFIG)
class ResolutionLine(Resolution):
    """A resolution as a line of the file."""

    kind: Literal["resolution"] = "resolution"
    format: _Format = 1

    @classmethod
    def of(cls, resolution: Resolution) -> ResolutionLine:
        return cls(**fields_of(resolution, Resolution), format=REVIEWS_FORMAT)

    def record(self) -> Resolution:
        return Resolution(**fields_of(self, Resolution))

    def to_json(self) -> dict[str, Any]:
        return _LINE.dump_python(self, mode="json")


# A line of the reviews file (its published schema): a resolution says so (`kind`); a review of format 1 does not.
ReviewsLine = Union[ReviewLine, ResolutionLine]
_LINE: TypeAdapter[ReviewsLine] = TypeAdapter(ReviewsLine)
_REVIEW, _RESOLUTION = TypeAdapter(ReviewLine), TypeAdapter(ResolutionLine)


def reviews_line(data: dict[str, Any]) -> Review | Resolution:
    """The record of one line's object (already parsed JSON); raises pydantic's ValidationError for a bad one."""
    line = (_RESOLUTION if data.get("kind") == "resolution" else _REVIEW).validate_python(data)
    return line.record()
