"""Metrics: pure functions of one case's `Observation`, and the one registry of metric names.

Every metric returns a float in [0, 1], or None when it does not apply to the case. None is never folded into
0 or 1; summaries count it separately. Live runs and scored saved outputs use the same registry: the metrics
of the tutorial's five checks (retrieval_recall, citation_precision, claim_support, key_point_coverage,
abstention) and the harness's own (hit/recall@k, rr, facts, behaviour, quote_valid, claims_supported) share one
fact matcher (`fact_found`) and one abstention rule (`behaviour`). `passed` is 1.0 when every applicable check
passed: the tutorial's "passes" column.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable, Sequence

from .observation import Observation, page_of

DEFAULT_KS = (1, 2, 4)


# ---------------------------------------------------------------- metric functions


def hit_at_k(o: Observation, k: int) -> float | None:
    """Hit@k: 1.0 if any of the top k passages is relevant to any evidence item, else 0.0; None without evidence."""
    if not o.evidence:
        return None
    return float(bool(o.found_ranks) and o.found_ranks[0] <= k)


def recall_at_k(o: Observation, k: int) -> float | None:
    """Recall@k: share of evidence items covered by one of the top k passages; None without evidence."""
    if not o.evidence:
        return None
    return sum(1 for r in o.found_ranks if r <= k) / len(o.evidence)


def reciprocal_rank(o: Observation, k: int | None = None) -> float | None:
    """1 / rank of the first passage relevant to any evidence item among all retrieved (top-k) passages, 0.0 if
    none is; None without evidence."""
    if not o.evidence:
        return None
    return 1.0 / o.found_ranks[0] if o.found_ranks else 0.0


def retrieval_recall(o: Observation, k: int | None = None) -> float | None:
    """Share of evidence items covered by any retrieved passage (the tutorial's retrieval recall, all ranks);
    None without evidence."""
    return recall_at_k(o, max((r.rank for r in o.retrieved), default=0))


def facts(o: Observation, k: int | None = None) -> float | None:
    """Share of labelled facts found in the answer (`fact_found`); None when there are none or it should abstain."""
    if not o.facts or o.should_abstain:
        return None
    return key_point_coverage(o)


def key_point_coverage(o: Observation, k: int | None = None) -> float | None:
    """Share of required points (facts) found in the answer, whatever the abstain label; None without any."""
    if not o.facts:
        return None
    return sum(o.facts_found) / len(o.facts)


def behaviour(o: Observation, k: int | None = None) -> float:
    """The one abstention rule: 1.0 when the system answered an answerable case or decided to give no answer to
    an unanswerable one, else 0.0. A broken reply (`Observation.broken`) is no decision: 0.0 whatever the label."""
    if o.broken:
        return 0.0
    return float(o.abstained == o.should_abstain)


def grounded(o: Observation, k: int | None = None) -> float | None:
    """Share of the labelled facts found in the answer that are also found (`found_in`) in one of its valid cited
    quotes: 1.0 when every fact the answer states is in a quote that passed validation. None when the case has no
    facts, none is in the answer, the system abstained, or no citation's quote was checked (no citation, or a
    layout without quotes). It proves the cited words hold the fact's words; not that they mean it (a negation, a
    condition) nor that the answer's other sentences are supported: that is claim support."""
    flags = [g for g in o.facts_grounded if g is not None]
    return sum(flags) / len(flags) if flags else None


def citation_precision(o: Observation, k: int | None = None) -> float:
    """Share of the distinct cited pages that were both retrieved and expected. With no citation: 1.0 when
    the case should abstain (citing nothing is right), else 0.0; a broken reply cites nothing by accident: 0.0."""
    cited = list(dict.fromkeys(o.cited))
    if not cited:
        return 1.0 if o.should_abstain and not o.broken else 0.0
    expected = {page_of(e.source_id) for e in o.evidence}
    good = {r.page_id for r in o.retrieved} & expected
    return sum(c in good for c in cited) / len(cited)


def quote_valid(o: Observation, k: int | None = None) -> float | None:
    """1.0 when every citation passed quote validation, 0.0 when one failed, None when none could be checked."""
    return None if o.quotes_valid is None else float(o.quotes_valid)


def claim_support(o: Observation, k: int | None = None) -> float | None:
    """Share of reviewed claims supported; with no claim: 1.0 if the system abstained, else 0.0 (an answer
    whose claims nobody wrote down never passes). None until reviewed."""
    if o.claims is None:
        return None
    if not o.claims:
        return 1.0 if o.abstained else 0.0
    return sum(o.claims) / len(o.claims)


def claims_supported(o: Observation, k: int | None = None) -> float | None:
    """Share of reviewed claims marked supported; None until reviewed or when the answer makes no claim."""
    if not o.claims:
        return None
    return sum(o.claims) / len(o.claims)


def claims_supported_judged(o: Observation, k: int | None = None) -> float | None:
    """`claims_supported` over the judged claims: the human verdict where one exists, the judge's otherwise
    (`unverified` is not supported); None until someone, person or judge, rated the answer."""
    return claims_supported(_judged(o))


def claim_support_judged(o: Observation, k: int | None = None) -> float | None:
    """`claim_support` over the judged claims (human verdict, else the judge's); None until rated."""
    return claim_support(_judged(o))


def _judged(o: Observation) -> Observation:
    return o if o.judged_claims == o.claims else replace(o, claims=o.judged_claims)


# ---------------------------------------------------------------- the registry


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric family and every fact about it. `at_k` families get one metric per k, named
    `<family>@<k>`; `label` is the printed name of the tutorial's checks (empty for the others); `aliases` are other
    names a user may give for it (`parse_metric` accepts them); `higher_is_better` says which way is better (for
    comparisons and leaderboards); `is_retrieval` marks metrics of the retrieved passages alone (printed beside the
    collection size); `feeds_passed`: `passed` needs it to be 1.0 whenever it applies; `twin`: the metric that is
    the same check under another name (the tutorial's names for two of ours), shown in one row with it wherever their
    values agree (`shown_once`)."""

    family: str
    at_k: bool
    description: str
    fn: Callable[[Observation, int], float | None]
    label: str = ""
    aliases: tuple[str, ...] = ()
    higher_is_better: bool = True
    is_retrieval: bool = False
    feeds_passed: bool = False
    twin: str = ""


REGISTRY: dict[str, MetricSpec] = {m.family: m for m in (
    MetricSpec("hit", True, "any relevant passage in the top k (null without evidence)", hit_at_k,
               is_retrieval=True),
    MetricSpec("recall", True, "share of evidence items covered by the top k (null without evidence)", recall_at_k,
               is_retrieval=True),
    MetricSpec("rr", False, "reciprocal rank of the first relevant passage among all retrieved (null without "
                            "evidence)", reciprocal_rank, aliases=("mrr",), is_retrieval=True),
    MetricSpec("facts", False, "share of labelled facts found in the answer (null when none or abstain)", facts),
    MetricSpec("behaviour", False, "answered when it should, abstained when it should; a malformed or cut reply is "
                                   "no abstention: 0", behaviour, aliases=("behavior",)),
    MetricSpec("quote_valid", False, "every citation passed quote validation (null without citations)",
               quote_valid, feeds_passed=True),
    MetricSpec("grounded", False, "share of the facts found in the answer also found in a valid cited quote (null "
                                  "without facts, none found, abstained or no quote checked)", grounded,
               feeds_passed=True),
    MetricSpec("claims_supported", False, "share of reviewed claims supported (null until reviewed)",
               claims_supported),
    MetricSpec("retrieval_recall", False, "share of evidence items among all retrieved passages (null without "
                                          "evidence)", retrieval_recall, "retrieval recall", is_retrieval=True,
               feeds_passed=True),
    MetricSpec("citation_precision", False, "share of cited pages both retrieved and expected (no citation: 1 "
                                            "if it should abstain, 0 for a malformed reply)", citation_precision,
               "citation precision",
               feeds_passed=True),
    MetricSpec("claim_support", False, "share of reviewed claims supported; answered with none annotated: 0 "
                                       "(null until reviewed)", claim_support, "claim support", feeds_passed=True),
    MetricSpec("claims_supported_judged", False, "claims_supported with the judge's verdict where no person's "
                                                 "exists (null until rated; read beside the judge's agreement)",
               claims_supported_judged),
    MetricSpec("claim_support_judged", False, "claim_support with the judge's verdict where no person's exists "
                                              "(null until rated)", claim_support_judged),
    MetricSpec("key_point_coverage", False, "share of facts found in the answer (null without facts)",
               key_point_coverage, "key-point coverage", feeds_passed=True, twin="facts"),
    MetricSpec("abstention", False, "the abstain decision was right (same rule as behaviour)", behaviour,
               "abstention", feeds_passed=True, twin="behaviour"),
)}
# Derived from the registry, never kept beside it: the tutorial's five checks (those with a printed label), in
# registry order, and the checks `passed` reads.
TUTORIAL_CHECKS = tuple(name for name, spec in REGISTRY.items() if spec.label)
PASS_CHECKS = tuple(name for name, spec in REGISTRY.items() if spec.feeds_passed)
# With --judged-passed (and a judge measured against people), `claim_support_judged` takes claim_support's place.
JUDGED_PASS_CHECKS = tuple("claim_support_judged" if c == "claim_support" else c for c in PASS_CHECKS)
JUDGED_METRICS = ("claims_supported_judged", "claim_support_judged")
_ALIASES = {alias: spec.family for spec in REGISTRY.values() for alias in spec.aliases}


TWIN_NOTE = "`a = b`: one check under two names (the tutorial's and ours), with the same values here"


def shown_once(names: Sequence[str], same: Callable[[str, str], bool]) -> list[tuple[str, str]]:
    """The rows of a metric table over `names`, as (metric, label): a metric whose registry `twin` is listed too
    and has the same values (`same(twin, metric)`, which the table decides) shares the twin's row, labelled
    `facts = key_point_coverage`; otherwise every metric has its own row, labelled with its name."""
    listed = set(names)
    joined = {spec.family: spec.twin for spec in REGISTRY.values()
              if spec.twin and {spec.twin, spec.family} <= listed and same(spec.twin, spec.family)}
    return [(name, " = ".join([name, *(m for m, twin in joined.items() if twin == name)]))
            for name in names if name not in joined]


def metric_names(ks: Sequence[int] = DEFAULT_KS) -> list[str]:
    """Every metric name of a run, in display order; `passed` last."""
    names: list[str] = []
    for spec in REGISTRY.values():
        names.extend(f"{spec.family}@{k}" for k in ks) if spec.at_k else names.append(spec.family)
    return [*names, "passed"]


def family(name: str) -> str:
    return name.split("@", 1)[0]


def describe(name: str) -> str:
    if name == "passed":
        return "every applicable check passed (" + ", ".join(PASS_CHECKS) + ")"
    return REGISTRY[family(name)].description


def is_retrieval(name: str) -> bool:
    spec = REGISTRY.get(family(name))
    return spec is not None and spec.is_retrieval


def higher_is_better(name: str) -> bool:
    """Which way is better for metric `name`; `passed` and names the registry does not know (a run written by an
    older version) are higher-is-better, as every metric has always been."""
    spec = REGISTRY.get(family(name))
    return spec is None or spec.higher_is_better


def compute(o: Observation, ks: Sequence[int]) -> dict[str, float | None]:
    """Every registered metric of one case, and `passed`."""
    values: dict[str, float | None] = {name: fn(o, k) for name, fn, k in _plan(tuple(ks))}
    values["passed"] = passed_of(values)
    return values


@lru_cache(maxsize=64)
def _plan(ks: tuple[int, ...]) -> tuple[tuple[str, Callable[[Observation, int], float | None], int], ...]:
    """(metric name, function, k) for every registered metric at these ks, in `metric_names` order."""
    return tuple(item for spec in REGISTRY.values()
                 for item in ([(f"{spec.family}@{k}", spec.fn, k) for k in ks] if spec.at_k
                              else [(spec.family, spec.fn, 0)]))


def passed_of(values: dict[str, float | None], *, judged: bool = False) -> float:
    """`passed` from a case's metric values: 1.0 when every applicable check is 1.0; `judged` reads
    claim_support_judged instead of claim_support (`--judged-passed`)."""
    checks = [values.get(name) for name in (JUDGED_PASS_CHECKS if judged else PASS_CHECKS)]
    return float(all(v == 1.0 for v in checks if v is not None))


def parse_metric(name: str, ks: Sequence[int] = DEFAULT_KS) -> str:
    """Check a metric name given by a user and return its registered name (an alias stands for its metric:
    `mrr` for `rr`, `behavior` for `behaviour`); the error lists the valid ones."""
    head, sep, k = name.partition("@")
    name = _ALIASES.get(head, head) + sep + k
    if name not in metric_names(ks):
        raise ValueError(f"unknown metric {name!r}; choose one of: {', '.join(metric_names(ks))}")
    return name


# ---------------------------------------------------------------- the metric table of the docs


def markdown_page() -> str:
    """docs/metrics.md: the metric table, generated from the registry (`python -m harness.metrics --markdown`)."""
    yes = {True: "yes", False: ""}
    lines = ["# Metrics", "", "Generated from the registry in `harness/metrics/registry.py` by "
             "`python -m harness.metrics --markdown`; do not edit by hand (a test keeps this file equal to it).", "",
             "Every metric is a pure function of one case's labels and what the system returned: a value in [0, 1], "
             "or `null` when it does not apply to the case. `@k` metrics exist once per `--k` value.", "",
             "| name | definition | retrieval | feeds `passed` | higher is better | also accepted as |",
             "|---|---|---|---|---|---|"]
    for spec in REGISTRY.values():
        name = f"{spec.family}@k" if spec.at_k else spec.family
        aliases = ", ".join(f"`{a}`" for a in spec.aliases)
        lines.append(f"| `{name}` | {spec.description} | {yes[spec.is_retrieval]} | {yes[spec.feeds_passed]} | "
                     f"{yes[spec.higher_is_better]} | {aliases} |")
    lines.append(f"| `passed` | {describe('passed')}: the tutorial's \"passes\" column | | | yes | |")
    lines += ["", "The tutorial's five checks, printed by `rag-eval score`: "
              + ", ".join(f"`{n}` ({REGISTRY[n].label})" for n in TUTORIAL_CHECKS) + "; it prints the other checks "
              "`passed` reads under their names (" + ", ".join(f"`{n}`" for n in PASS_CHECKS
                                                          if n not in TUTORIAL_CHECKS) + ").", "", *_GROUNDED_NOTE]
    return "\n".join(lines) + "\n"


_GROUNDED_NOTE = [
    "## `grounded` beside claim support",
    "",
    "`claim_support` is the tutorial's check of meaning: a person (or a judge measured against people) reads each "
    "claim of the answer against the cited passage. `grounded` is a string check that needs no reader: of the "
    "labelled facts the answer states (the fact rule, `harness.metrics.matching.fact_found`), the share that one of "
    "its *valid* cited quotes states too, by the same rule. A real quote of the right page that does not hold the fact "
    "(an off-point quote) gets 0, and the row's `failure_reasons` name the fact and the valid quotes: "
    "`fact '160' is in the answer but in no valid cited quote (valid quotes: '...')`.",
    "",
    "What it proves: the words of each stated fact are in the words the answer cites, and those words are on the "
    "retrieved passage (quote validation). What it does not prove: that the quote means the fact (\"not 160\", "
    "\"160 for managers only\"), that the answer's other sentences are supported, or anything about facts nobody "
    "labelled: that is claim support. It is null when the case has no facts, the answer states none, the system "
    "abstained, or no citation's quote was checked (no citation, or a saved layout without quotes: the row's "
    "warning `quotes not checked` says so). It feeds `passed`: on the bundle's offline run it applies to 77 of 195 "
    "rows and fails none, and on the planted-defect fixture it flags every off-point quote and no clean row "
    "([what-the-checks-catch.md](what-the-checks-catch.md)).",
]
