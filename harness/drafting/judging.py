"""`rag-eval draft judge DRAFTS`: the same judge proposes accept or reject for drafted cases, as a reviewer of
`rag-eval draft review`, measured against people the same way.

One chat call per answerable draft that passed verification (prompt `harness/prompts/draft_judge.txt`: the page,
the question, quote and facts; schema `{decision: accepted | rejected, reason}`), through the same client, options
and reply cache as `rag-eval judge` (`harness/judge/asking.py`). The decision is stored on the draft under
`judge_reviews`, by `judge:<model>@<digest>`: it never counts as a reviewer's decision (a draft still needs a person
to accept it) and never makes a disagreement. `draft review --agreement` measures it against the people's settled
decisions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pdfrag.asking import Failed, PromptTemplate
from pdfrag.backends import connect
from pdfrag.model_server import preflight, server_window
from pdfrag.ollama_client import DEFAULT_CHAT_MODEL
from pdfrag.text import clip

from ..judge.asking import judge_asker, judge_cache
from ..judge.run import JudgeSettings, judge_name
from ..judged.standing import HUMAN
from ..records import NOTE_CHARS
from ..runs import utc_now
from ..stats.agreement import DEFAULT_RESAMPLES, DEFAULT_SEED, measure_agreement
from .records import Decision, Draft
from .settings import DraftSettings

__all__ = ["DECISION_SCHEMA", "DraftJudging", "draft_judge_agreement", "draft_judge_settings", "judge_drafts"]

DECISION_SCHEMA: dict = {"type": "object",
                         "properties": {"decision": {"enum": ["accepted", "rejected"]}, "reason": {"type": "string"}},
                         "required": ["decision", "reason"]}


@dataclass(frozen=True)
class DraftJudging:
    """What `rag-eval draft judge` did: the drafts with the judge's decisions, calls, cache hits, errors."""

    judge: str
    prompt_sha256: str
    drafts: tuple[Draft, ...]
    asked: int
    chat_calls: int
    from_cache: int
    errors: tuple[tuple[str, str], ...]  # (draft_id, why)


def draft_judge_settings(recorded: DraftSettings, given: Mapping[str, Any]) -> JudgeSettings:
    """How `draft judge` asks: each flag `given` (name -> value, only those given on the command line) wins over
    the drafting's recorded setting; the server is the first --host given, else the drafting's."""
    pick = {k: given.get(k, getattr(recorded, k)) for k in ("timeout", "retries", "max_body_bytes", "num_ctx",
                                                             "num_predict", "seed", "think", "cache_dir")}
    return JudgeSettings(model=given.get("chat_model", recorded.chat_model),
                         host=(given.get("host") or [recorded.host])[0], backend=given.get("backend", recorded.backend),
                         api_key_env=given.get("api_key_env", recorded.api_key_env), **pick)


def judge_drafts(drafts: Sequence[Draft], pages: Mapping[str, str], settings: JudgeSettings, *,
                 progress: Callable[[int, int, int], None] | None = None) -> DraftJudging:
    """Ask the judge about every answerable draft that passed verification; failures are error entries.
    `progress(done, total, from_cache)` hears each one asked."""
    model = settings.model or DEFAULT_CHAT_MODEL
    client = connect(settings.client())
    info = preflight(client, chat_model=model, embed_model=None, load=False).models[model]
    asker = judge_asker(client, settings.options(model), info.digest, info.capabilities,
                       judge_cache(settings.cache_dir), window=server_window(client, info))
    name, template = judge_name(model, info.digest), PromptTemplate.bundled("harness", "draft_judge")
    out, errors, asked = [], [], 0
    total = sum(d.kind == "answerable" and d.verification.passed for d in drafts)
    if progress:
        progress(0, total, 0)
    for draft in drafts:
        if draft.kind != "answerable" or not draft.verification.passed:
            out.append(draft)
            continue
        asked += 1
        outcome = asker.ask(template, DECISION_SCHEMA, question=draft.question, quote=draft.quote,
                            facts=" | ".join(draft.facts), page=pages.get(draft.source_id, ""))
        if progress:
            progress(asked, total, asker.from_cache)
        if isinstance(outcome, Failed):
            errors.append((draft.draft_id, outcome.error))
            out.append(draft)
            continue
        reply = outcome.reply
        reason = clip(reply["reason"], NOTE_CHARS) or None  # kept bounded in the drafts file
        out.append(draft.with_judge(Decision(reply["decision"], reason, name, utc_now())))
    return DraftJudging(name, template.sha256, tuple(out), asked, asker.chat_calls, asker.from_cache,
                        tuple(errors))


def draft_judge_agreement(drafts: Sequence[Draft], *, seed: int = DEFAULT_SEED,
                          resamples: int = DEFAULT_RESAMPLES) -> list[dict[str, Any]]:
    """Per judge: percent agreement and kappa of its decisions against the people's settled decision, over the
    drafts both decided, with the disagreements."""
    out = []
    for judge in sorted({r.by or "" for d in drafts for r in d.judge_reviews}):
        shared = [(d, r) for d in drafts for r in d.judge_reviews
                  if r.by == judge and d.decision.verdict in ("accepted", "rejected")]
        a = measure_agreement([{HUMAN: d.decision.verdict, judge: r.verdict} for d, r in shared], seed=seed,
                              resamples=resamples)
        out.append({"reviewer": judge, "reviewers": list(a.reviewers), "drafts": len(shared),
                    "percent_agreement": a.percent_agreement, "kappa": a.value, "interval": a.interval.to_dict(),
                    "undefined_reason": a.reason,
                    "disagreements": [{"draft_id": d.draft_id, "question": d.question, "human": d.decision.verdict,
                                       "judge": r.verdict, "reason": r.reason} for d, r in shared
                                      if d.decision.verdict != r.verdict]})
    return out
