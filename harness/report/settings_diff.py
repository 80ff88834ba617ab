"""What differs between two runs' manifests, as a reader needs it: each setting once, and nothing the machine
measured.

A manifest tells one setting in several places (the chatbot's chunk size is the harness's `settings.chunk_size`,
its own `system.settings.chunking.size_chars` and its index's `system.index.chunking.size_chars`) and records,
beside the setup, what the machine measured and what followed from the setup. `manifest_diff` leaves out, unless
`all_settings` (`--all-settings`):

- machine measures: outside any `settings` section, a key ending in `_ms`, `_s` or `_seconds`, or naming an elapsed
  time or a duration (a model's load time): they differ between two runs of one setup on one machine;
- what follows from the setup: counts (`collection.documents`, `.pages`, `.chunks`, its empty pages, and every
  `counts` section, such as the index's chunk count): a count is not a setting;
- the harness's settings for the bundled systems (`harness.settings.SYSTEM_SETTINGS`) in a run whose system is
  not built from them (`harness.systems.Traits.run_settings`): a plug-in's or a service's settings are what its
  `describe()` says, under `system.`, never the harness's defaults; in a comparison of a system that used one with
  one that did not, the second side reads `None` (absent);
- a setting told again: a difference whose values in A and B are those of a difference in a section told
  before it (settings, prompt template, inputs, rescoring source, code, then system and collection): the prompt
  file's `prompt_template.source` is `settings.prompt`, `system.settings.top_k` is `settings.top_k`; and a
  harness setting absent on one side when the systems' own `system.settings` of that name differ (compare the
  offline baseline with a plug-in: `system.settings.top_k 4 -> 3`, not also `settings.top_k 4 -> (absent)`).

Run ids, times, the command line, the output folder and the label are left out always: they differ between any two
runs.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..settings import SYSTEM_SETTINGS
from ..systems.traits import traits_for

__all__ = ["NOT_SETUP", "is_measure", "manifest_diff"]

# What an empty diff still leaves out, as the views say it.
NOT_SETUP = ("run ids, times and labels, what the machine measured (load and elapsed times) and counts that follow "
             "from the settings (--all-settings lists them)")

# Manifest keys that differ between any two runs and say nothing about what was measured.
_NOISE = {"run_id", "status", "started_at", "ended_at", "command", "settings.out", "settings.label",
          # the index's build time and how much came from the embedding cache say nothing about the setup
          "system.index.created_at", "system.index.counts.embedded", "system.index.counts.from_cache"}
_CODE = ("git_commit", "package_version")
# answer_options is left out: it is derived from settings and would repeat every settings change.
_DIFFED = ("settings", "prompt_template", "system", "collection", "rescored_from")
# Where a change is told first: the harness's own record of the setup, then the system's account of it and what
# followed. The same values in A and B in a later section are the same change told again.
_TOLD_FIRST = ("settings", "prompt_template", "inputs", "rescored_from", "code", "system", "collection")
_COUNTS = {"collection.documents", "collection.pages", "collection.chunks"}
_MEASURE = re.compile(r"(_ms|_s|_seconds|elapsed|duration|_time)$|^(elapsed|duration)")

Diff = tuple[str, Any, Any]


def manifest_diff(a: dict, b: dict, *, all_settings: bool = False) -> list[Diff]:
    """What differs between two manifests, as (dotted key, value in A, value in B), sorted within sections:
    settings, prompt template, system (models and digests), collection, inputs (document and cases hashes),
    rescoring source, then `code.*` (git commit, package version). See the module docstring for what is left out
    unless `all_settings`."""
    flat_a, flat_b = _flatten_manifest(a), _flatten_manifest(b)
    if not all_settings:
        flat_a, flat_b = _used(flat_a, a), _used(flat_b, b)
    keys = list(dict.fromkeys([*flat_a, *flat_b]))
    out = [(k, flat_a.get(k), flat_b.get(k)) for k in keys if k not in _NOISE and flat_a.get(k) != flat_b.get(k)]
    if not all_settings:
        out = _once(item for item in out if not _measured_or_counted(item[0]))
    order = {s: i for i, s in enumerate((*_DIFFED, "inputs", "code"))}
    return sorted(out, key=lambda item: (order.get(_section(item[0]), 99), item[0]))


def is_measure(key: str) -> bool:
    """A dotted manifest key that holds what the machine measured (a load time, an elapsed time, a duration),
    not a setting: outside any `settings` section, its last part names a time."""
    parts = key.replace("[", ".").split(".")
    return "settings" not in parts[:-1] and bool(_MEASURE.search(parts[-1]))


def _section(key: str) -> str:
    return key.split(".", 1)[0].split("[", 1)[0]


def _measured_or_counted(key: str) -> bool:
    return is_measure(key) or key in _COUNTS or key.startswith("collection.empty_pages") or ".counts." in key


def _once(items: Any) -> list[Diff]:
    """Each change once: a difference with the same values in A and B as one in a section told before it
    (`_TOLD_FIRST`) is left out, and so is a harness setting absent on one side when the systems' own
    `system.settings` of that name say it."""
    items = list(items)
    rank = {section: i for i, section in enumerate(_TOLD_FIRST)}
    first: dict[str, int] = {}  # values in A and B -> the first section (in _TOLD_FIRST) that shows them
    for key, a, b in items:
        pair, where = _pair(a, b), rank.get(_section(key), len(rank))
        first[pair] = min(first.get(pair, where), where)
    kept = [(key, a, b) for key, a, b in items if first[_pair(a, b)] >= rank.get(_section(key), len(rank))]
    # a setting one run's system was built from and the other's not: that other system's describe() tells its own
    described = {key.removeprefix("system.") for key, _, _ in kept if key.startswith("system.settings.")}
    return [(key, a, b) for key, a, b in kept if not (key in described and None in (a, b))]


def _pair(a: Any, b: Any) -> str:
    return json.dumps([a, b], sort_keys=True, default=str)


def _used(flat: dict[str, Any], manifest: dict) -> dict[str, Any]:
    """`flat` without the harness's settings for the bundled systems that this run's system is not built from,
    and with what the machine measured taken out of lists (a server's timings in `system.servers`)."""
    spec = (manifest.get("settings") or {}).get("system")
    used = set(traits_for(spec).run_settings) if isinstance(spec, str) else SYSTEM_SETTINGS
    unused = {f"settings.{name}" for name in SYSTEM_SETTINGS - used}
    return {k: _unmeasured(v) for k, v in flat.items() if k not in unused}


def _unmeasured(value: Any) -> Any:
    if isinstance(value, list):
        return [_unmeasured(v) for v in value]
    if isinstance(value, dict):
        return {k: _unmeasured(v) for k, v in value.items() if not _MEASURE.search(k)}
    return value


def _flatten_manifest(manifest: dict) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for section in _DIFFED:
        if section in manifest:
            _flatten(manifest[section], section, flat)
    inputs = manifest.get("inputs", {})
    flat["inputs.cases.sha256"] = inputs.get("cases", {}).get("sha256")
    for doc in inputs.get("documents", ()):
        flat[f"inputs.documents[{doc.get('doc_id')}].sha256"] = doc.get("sha256")
    for key in _CODE:
        flat[f"code.{key}"] = manifest.get(key)
    return flat


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}", out)
    else:
        out[prefix] = value
