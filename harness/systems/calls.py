"""What a sweep will ask the servers for, for `rag-eval sweep --dry-run`: distinct calls and cached ones."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from .interface import CallPlan  # where it is defined: the record a system's count returns (`CountsCalls`)

__all__ = ["CallPlan", "plan_calls"]


def plan_calls(embed_keys: Iterable[Iterable[Hashable]], chat_keys: Iterable[Iterable[Hashable]], *,
               embed_cached: Callable[[Any], bool], chat_cached: Callable[[Any], bool],
               unknown_chats: int = 0) -> CallPlan:
    """Count distinct calls for `--dry-run`. `embed_keys` holds one iterable per cell of its embedding cache keys
    (chunk texts and questions, keyed with model digest and prefix as `EmbeddingCache.key` does); `chat_keys` one
    iterable per cell of its answer cache keys (`pdfrag.reply_cache.reply_key`, repeat index included). The
    membership tests are asked once per distinct key. A prompt is only known once its passages are retrieved, so
    chat calls of cells whose query vectors are not cached yet are passed as `unknown_chats`: counted as needed."""
    if unknown_chats < 0:
        raise ValueError(f"unknown_chats cannot be negative, got {unknown_chats}")
    embeds = set(itertools.chain.from_iterable(embed_keys))
    chats = set(itertools.chain.from_iterable(chat_keys))
    return CallPlan(len(embeds), sum(1 for k in embeds if embed_cached(k)),
                    len(chats) + unknown_chats, sum(1 for k in chats if chat_cached(k)))
