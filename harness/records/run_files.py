"""A run directory's files besides the rows: summary.json and manifest.json (with its typed sections)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from .base import _Record


class ClaimCounts(_Record):
    """Reviewed claims of the rows without an error, by status. Claims of rows written before there were
    statuses count as seen by one reviewer."""

    agreed: int = 0
    in_disagreement: int = Field(default=0, description="pending until resolved")
    resolved: int = 0
    one_reviewer: int = 0


class MetricSummary(_Record):
    """Mean over the rows where the metric applies (None when none does), with the counts behind it."""

    mean: float | None
    scored: int
    not_applicable: int
    errored: int


class Summary(BaseModel):
    """summary.json. `na_as_pass`: not-applicable values were counted as 1.0 in the means."""

    model_config = ConfigDict(frozen=True, extra="allow")
    rows: int
    errored: int
    passes: int = 0
    metrics: dict[str, MetricSummary]
    answer_statuses: dict[str, int]
    human_claim_review: dict[str, int]
    claims: ClaimCounts = Field(default_factory=ClaimCounts)
    collection: dict[str, Any] = Field(default_factory=dict)
    na_as_pass: bool = False
    repeat_stability: dict[str, Any] | None = None
    by_origin: dict[str, dict[str, MetricSummary]] | None = Field(
        default=None, description="per origin (hand-written, drafted), when a run has both: the same metrics "
                                  "over each group, since the model that drafted a case may be the one answering")

    def mean(self, metric: str) -> float | None:
        found = self.metrics.get(metric)
        return found.mean if found else None

    def to_json(self) -> dict[str, Any]:
        # repeat_stability is absent unless a case was repeated; a metric's null mean stays, so the file reads back
        return self.model_dump(mode="json", exclude={"repeat_stability"} if self.repeat_stability is None else None)


class _Section(BaseModel):
    """A manifest section: the fields the harness reads are typed; any other key (a plug-in's own `describe()`,
    settings added later) is kept. It is written back with the keys it was given, so old manifests keep their shape."""

    model_config = ConfigDict(frozen=True, extra="allow")

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        given = self.model_fields_set | set(self.model_extra or {})
        return {k: v for k, v in handler(self).items() if k in given}

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class RunSettingsRecord(_Section):
    """The `settings` section: every run setting for a live run (`RunSettings.to_dict()`); `k`, `lexical_k` and
    `na_as_pass` for scored saved outputs."""

    k: tuple[int, ...] | None = None
    label: str | None = None
    system: str | None = None
    top_k: int | None = None
    chunk_size: int | None = None
    hosts: tuple[str, ...] = ()
    lexical_k: int | None = Field(default=None, description="scored saved outputs: BM25 top k for missing ids")


class SystemRecord(_Section):
    """The `system` section: what the system said of itself (`describe()`), with the keys the harness reads."""

    name: str | None = None
    system: str | None = Field(default=None, description="a longer name, for people")
    warnings: tuple[str, ...] = ()
    # The servers' sections, as the bundled chatbot writes them; a plug-in may use these keys for anything, so
    # they are read through `digests()`, which takes any shape.
    ollama: Any = Field(default=None, description="the Ollama chat server and its models' digests")
    model_server: Any = Field(default=None, description="an OpenAI-compatible chat server and its models' identity")
    embed_server: Any = Field(default=None, description="a separate embedding server and its models' digests")

    @property
    def title(self) -> str:
        """The name to show a reader."""
        return self.system or self.name or "?"

    def digests(self) -> dict[str, str | None]:
        """Model name -> digest (OpenAI-compatible servers: of their name identity) of the models on the chat and
        embedding servers; empty when the system names none. A section of another shape names no models."""
        out: dict[str, str | None] = {}
        for section in (self.ollama or self.model_server, self.embed_server):
            models = section.get("models") if isinstance(section, dict) else None
            if isinstance(models, dict):
                out |= {name: info.get("digest") if isinstance(info, dict) else None for name, info in models.items()}
        return out


class CollectionRecord(_Section):
    """The `collection` section: what the system answered from. `chunks` None when the system does not say."""

    documents: int | None = None
    pages: int | None = None
    chunks: int | None = None
    empty_pages: dict[str, tuple[int, ...]] = Field(default_factory=dict, description="doc id -> pages without "
                                                                                      "a text layer")


class Manifest(BaseModel):
    """manifest.json: what produced the rows, so every number can be traced to settings and input hashes.
    Sections a system does not have are absent; extra sections (e.g. `rescored_from`) are kept. Extra sections a
    run writes: `versions` (pdf_rag_eval, python, pypdf: page text depends on pypdf) and `selection` (a subset of
    the cases, harness/cases.py); runs written before them lack them and load unchanged."""

    model_config = ConfigDict(extra="allow")
    run_id: str
    status: Literal["complete", "incomplete"] = "incomplete"
    started_at: str | None = None
    ended_at: str | None = None
    package_version: str | None = None
    git_commit: str | None = None
    command: list[str] | None = None
    settings: RunSettingsRecord = Field(default_factory=RunSettingsRecord)
    system: SystemRecord = Field(default_factory=SystemRecord)
    collection: CollectionRecord = Field(default_factory=CollectionRecord)
    inputs: dict[str, Any] = Field(default_factory=dict)
    metrics: list[str] = Field(default_factory=list)

    @property
    def ks(self) -> list[int]:
        """The k values the run was scored at: its settings' `k`, else those of its `hit@k` metric names. The
        one place that says so."""
        if self.settings.k:
            return list(self.settings.k)
        return [int(n.split("@")[1]) for n in self.metrics if n.startswith("hit@")]

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Manifest:
        """A copy with `update`; a section given as a dict (as before the sections were typed) becomes its record,
        since pydantic's `model_copy` does not validate."""
        sections: dict[str, type[_Section]] = {"settings": RunSettingsRecord, "system": SystemRecord,
                                               "collection": CollectionRecord}
        typed = {k: sections[k].model_validate(v) if k in sections and isinstance(v, Mapping) else v
                 for k, v in (update or {}).items()}
        return super().model_copy(update=typed, deep=deep)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
