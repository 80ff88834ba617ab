"""All of a scoring's saved outputs at once (`SavedOutputs`, for small inputs and tests), and claims grouped by
case. The records of one line are `harness.records.saved_lines`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..records import InputFile, SavedCase, SavedChunk, SavedClaim

__all__ = ["InputFile", "SavedCase", "SavedChunk", "SavedClaim", "SavedOutputs", "claims_by_case"]


@dataclass(frozen=True)
class SavedOutputs:
    """Everything loaded for one scoring: records in file order, and the files they came from."""

    cases: tuple[SavedCase, ...]
    chunks: tuple[SavedChunk, ...]
    claims: tuple[SavedClaim, ...]
    files: tuple[InputFile, ...]

    @property
    def has_claims(self) -> bool:
        """A claims file was read (then a case without claims has none annotated, rather than not reviewed)."""
        return any(f.role == "claims" for f in self.files)

    def with_claims(self) -> Iterator[tuple[SavedCase, tuple[SavedClaim, ...]]]:
        """Each case in file order with its claims in file order."""
        claims = self.claims_by_case()
        return ((case, claims.get(case.case_id, ())) for case in self.cases)

    def claims_by_case(self) -> dict[str, tuple[SavedClaim, ...]]:
        return claims_by_case(self.claims)


def claims_by_case(claims: Iterable[SavedClaim]) -> dict[str, tuple[SavedClaim, ...]]:
    """Claims grouped by case id in file order, in one pass (a scan per case is quadratic at scale)."""
    groups: dict[str, list[SavedClaim]] = {}
    for claim in claims:
        groups.setdefault(claim.case_id, []).append(claim)
    return {case_id: tuple(group) for case_id, group in groups.items()}
