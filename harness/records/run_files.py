"""A run directory's files besides the rows: summary.json and manifest.json, every section typed.

Both refuse keys they do not know. The manifest carries a format version (`format`, `MANIFEST_FORMAT`): a file
without one was written before format versions (format 1) and reads with today's sections, its unknown keys named
and left out by the reader (`harness.runs.read_manifest`); a newer format than this code knows is refused. Three
sections stay open, because what fills them is not ours to close: `settings` (every run setting, more in later
versions), `system` (a plug-in's own `describe()`) and `collection`; the keys the harness reads in them are typed.
"""

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


class JudgeSummary(_Record):
    """A summary's `judge`: how far the judge whose verdicts fill the judged metrics agrees with people."""

    reviewer: str
    shared_claims: int = Field(description="claims both a person (settled) and the judge rated")
    measured: bool = Field(description="at least MIN_SHARED shared claims (harness/judged/)")
    kappa: float | None
    interval: tuple[float | None, float | None]
    interval_note: str | None = None
    percent_agreement: float | None
    text: str = Field(description="the line every view shows beside judged metrics")


class JudgedPassedSummary(_Record):
    """A summary's `judged_passed`, in a run that asked for --judged-passed: whether the judge earned its say over
    `passed` (kappa's lower bound at least the floor over at least the minimum shared claims), and why not."""

    applied: bool = Field(description="`passed` reads the judge's verdicts where no person's exists")
    judge: str | None
    prompt_sha256: str | None = None
    shared_claims: int
    kappa: float | None
    interval: tuple[float | None, float | None]
    interval_note: str | None = None
    min_kappa: float = Field(description="--min-judge-kappa: the floor for kappa's lower bound")
    min_shared: int
    refusal: str | None = None
    text: str


class Summary(BaseModel):
    """summary.json. `na_as_pass`: not-applicable values were counted as 1.0 in the means."""

    model_config = ConfigDict(frozen=True, extra="forbid")
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
    judge: JudgeSummary | None = Field(default=None, description="when a judge rated the answers")
    judged_passed: JudgedPassedSummary | None = Field(default=None, description="when the run asked --judged-passed")
    warnings: dict[str, int] | None = Field(
        default=None, description="rows carrying each reviewer warning (`REVIEW_WARNINGS`, every kind listed); "
                                  "absent in summaries written before it was counted")

    def mean(self, metric: str) -> float | None:
        found = self.metrics.get(metric)
        return found.mean if found else None

    def to_json(self) -> dict[str, Any]:
        # repeat_stability and judge are absent unless a case was repeated or judged; a metric's null mean stays
        absent = {k for k in ("repeat_stability", "judge", "judged_passed", "warnings") if getattr(self, k) is None}
        return self.model_dump(mode="json", exclude=absent or None)


class _Section(BaseModel):
    """A manifest section: the fields the harness reads are typed; any other key (a plug-in's own `describe()`,
    settings added later) is kept. It is written back with the keys it was given, so old manifests keep their shape."""

    model_config = ConfigDict(frozen=True, extra="allow")

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        fields = type(self).model_fields
        given = {(fields[n].alias if n in fields else None) or n for n in self.model_fields_set}  # extras too
        return {k: v for k, v in handler(self).items() if k in given}

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class _Closed(_Section):
    """A section whose every key is typed: an unknown key is refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class VersionsRecord(_Closed):
    """The `versions` section: the software that wrote the run (page text depends on pypdf's version)."""

    pdf_rag_eval: str | None = None
    python: str | None = None
    pypdf: str | None = None


class PromptTemplateRecord(_Closed):
    """The `prompt_template` section of a system that answers with `--prompt`: the template file and its hash."""

    source: str
    sha256: str


class SelectionRecord(_Closed):
    """The `selection` section: the subset of the cases the run answered (`harness/cases.py`); empty for all."""

    only_tag: tuple[str, ...] | None = None
    only_ids: str | None = Field(default=None, description="--only-ids as it was read: @FILE for a file of ids, "
                                                           "else the list as given")
    ids_sha256: str | None = Field(default=None, description="SHA-256 of the sorted ids --only-ids named")
    limit: int | None = None
    sample: int | None = None
    seed: int | None = None
    selected: int | None = Field(default=None, description="cases selected")
    of: int | None = Field(default=None, description="cases in the file")

    def criteria(self) -> dict[str, Any]:
        """What chose the cases (no counts): two runs compare only when theirs are equal. A file of ids counts by
        its name whether it was recorded as `@FILE` (how it was read, since issue #27) or, earlier, as given."""
        out = {k: v for k, v in self.to_json().items() if k not in ("selected", "of")}
        if isinstance(out.get("only_ids"), str):
            out["only_ids"] = out["only_ids"].removeprefix("@")
        return out


class JudgeRecord(_Closed):
    """The `judge` section: the judge whose verdicts the run's judged metrics use. `rag-eval judge` writes every
    key; a run that found a judge's reviews in the reviews file writes `reviewer` and `from`."""

    reviewer: str
    origin: str | None = Field(default=None, alias="from", description="where the run found it (reviews file)")
    model: str | None = None
    digest: str | None = None
    prompt_sha256: str | None = None
    prompt: str | None = Field(default=None, description="the template: bundled path or --prompt file")
    host: str | None = None
    options: dict[str, Any] | None = None
    judged_at: str | None = None


class RerunRecord(_Closed):
    """The `rerun_of` section of `rag-eval run --rerun-failed`: the run whose errored cases were asked again."""

    run: str
    carried: int = Field(description="rows carried over unchanged")


class RescoredFromRecord(_Closed):
    """The `rescored_from` section of `rag-eval rescore`: the run whose stored outputs were scored again."""

    run_id: str
    path: str | None = None


class RunSettingsRecord(_Section):
    """The `settings` section: every run setting for a live run (`RunSettings.recorded()`: paths absolute); `k`,
    `lexical_k` and `na_as_pass` for scored saved outputs."""

    k: tuple[int, ...] | None = None
    label: str | None = None
    system: str | None = None
    top_k: int | None = None
    chunk_size: int | None = None
    host: str | None = Field(default=None, description="the chat server given (None: the backend's default)")
    hosts: tuple[str, ...] = ()
    backend: str | None = None
    chat_model: str | None = None
    min_quote_words: int | None = None
    judged_passed: bool = False
    min_judge_kappa: float | None = Field(default=None, description="None: before the floor was recorded (0.6)")
    lexical_k: int | None = Field(default=None, description="scored saved outputs: BM25 top k for missing ids")
    na_as_pass: bool = False


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


MANIFEST_FORMAT = 2  # 1: written before format versions (no `format` key); 2: every section typed
_OPTIONAL = ("versions", "prompt_template", "judge", "rerun_of", "rescored_from", "resumed_at")  # absent when None


class Manifest(BaseModel):
    """manifest.json: what produced the rows, so every number can be traced to settings and input hashes.
    Sections a run does not have are absent (a system without a prompt template, a run nobody judged)."""

    model_config = ConfigDict(extra="forbid")
    format: int = Field(default=1, description="1: no `format` key (before format versions)")
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
    versions: VersionsRecord | None = None
    prompt_template: PromptTemplateRecord | None = None
    selection: SelectionRecord = Field(default_factory=SelectionRecord)
    judge: JudgeRecord | None = None
    rerun_of: RerunRecord | None = None
    rescored_from: RescoredFromRecord | None = None
    resumed_at: tuple[str, ...] | None = Field(default=None, description="UTC times of each --resume")

    @property
    def ks(self) -> list[int]:
        """The k values the run was scored at: its settings' `k`, else those of its `hit@k` metric names. The
        one place that says so."""
        if self.settings.k:
            return list(self.settings.k)
        return [int(n.split("@")[1]) for n in self.metrics if n.startswith("hit@")]

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Manifest:
        """A copy with `update`; a section given as a dict becomes its record, since pydantic's `model_copy` does
        not validate."""
        typed = {k: _SECTIONS[k].model_validate(v) if k in _SECTIONS and isinstance(v, Mapping) else v
                 for k, v in (update or {}).items()}
        return super().model_copy(update=typed, deep=deep)

    def to_json(self) -> dict[str, Any]:
        absent = {k for k in _OPTIONAL if getattr(self, k) is None} | ({"format"} if self.format == 1 else set())
        absent |= {"selection"} - self.model_fields_set  # older runs had none: read as all cases, written as read
        return self.model_dump(mode="json", by_alias=True, exclude=absent)


_SECTIONS: dict[str, type[_Section]] = {
    "settings": RunSettingsRecord, "system": SystemRecord, "collection": CollectionRecord,
    "versions": VersionsRecord, "prompt_template": PromptTemplateRecord, "selection": SelectionRecord,
    "judge": JudgeRecord, "rerun_of": RerunRecord, "rescored_from": RescoredFromRecord}
