"""How long a run or a sweep will take, before it starts: the chat calls it needs (counted by the dry run) times
seconds per call, spread over the server slots.

Seconds per call is `--assume-seconds-per-call` when given; else the median server time per reply
(`usage.total_ms`) of the newest complete run of the same chat model under `--out`; else a stated default.
Embedding is estimated apart (`embedding_text`): the chunks to embed times one chunk of median length embedded and
timed by the dry run, on one server, as the index is built; on a GPU that takes milliseconds a chunk, on a CPU
server seconds, more than the chats in all. Questions are short and left out.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from pdfrag.terminal import clock

from ..errors import InputError
from ..runs import MANIFEST, read_json, read_rows
from ..systems import traits_for

DEFAULT_SECONDS_PER_CALL = 15.0  # an assumption (a 4B model answering with thinking on one GPU), not a measurement


@dataclass(frozen=True)
class Estimate:
    """`wall_s` = `calls` × `seconds_per_call` / `slots`; `source` says where seconds per call came from."""

    calls: int
    slots: int
    seconds_per_call: float
    source: str

    @property
    def wall_s(self) -> float:
        return self.calls * self.seconds_per_call / max(self.slots, 1)

    def text(self) -> str:
        return (f"estimated wall time: {clock(self.wall_s)} ({self.calls} chat calls x {self.seconds_per_call:.1f} s "
                f"/ {self.slots} slot{'s' if self.slots != 1 else ''}; seconds per call {self.source})")


def measured_seconds_per_call(out: str | Path, chat_model: str) -> tuple[float, str] | None:
    """(median server seconds per reply, run directory) of the newest complete run of `chat_model` by a system
    that answers through model servers (its traits' `uses_model_servers`: the bundled chatbot) directly under
    `out` or in a sweep there; None when there is none with timed replies."""
    found = []
    for manifest in [*Path(out).glob(f"*/{MANIFEST}"), *Path(out).glob(f"*/*/{MANIFEST}")]:
        try:
            data = read_json(manifest)
        except InputError:  # a damaged manifest: not a run to learn from, and no reason to stop a dry run
            continue
        settings = data.get("settings") or {}
        if (data.get("status") == "complete" and settings.get("chat_model") == chat_model
                and traits_for(str(settings.get("system"))).uses_model_servers):
            found.append((str(data.get("ended_at") or ""), manifest.parent))
    for _, run_dir in sorted(found, reverse=True):
        times = [r.usage["total_ms"] / 1000 for r in read_rows(run_dir)
                 if isinstance(r.usage.get("total_ms"), (int, float)) and r.usage["total_ms"] > 0]
        if times:
            return statistics.median(times), str(run_dir)
    return None


def estimate(calls: int, slots: int, *, assume: float | None, out: str | Path, chat_model: str) -> Estimate:
    """The estimate, with seconds per call from `assume`, else a finished run, else the default."""
    if assume is not None:
        return Estimate(calls, slots, assume, "assumed (--assume-seconds-per-call)")
    measured = measured_seconds_per_call(out, chat_model)
    if measured is not None:
        return Estimate(calls, slots, measured[0], f"measured: median of {chat_model} replies in {measured[1]}")
    return Estimate(calls, slots, DEFAULT_SECONDS_PER_CALL,
                    f"the default {DEFAULT_SECONDS_PER_CALL:g} s: no finished run of {chat_model} in {out}; give "
                    "--assume-seconds-per-call or run a few cases first (--limit 5)")


def embedding_text(chunks: int, seconds_per_chunk: float, chars: int, model: str) -> str:
    """The embedding estimate's line: `chunks` x the time one chunk of `chars` characters took."""
    return (f"estimated embedding time: {clock(chunks * seconds_per_chunk)} ({chunks} chunks to embed x "
            f"{seconds_per_chunk:.2f} s, timed on one chunk of {chars:,} characters with {model}; batches may go "
            "faster a chunk)")
