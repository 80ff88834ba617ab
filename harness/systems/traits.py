"""The built-in systems' traits, declared here so that asking them imports no system: the report and the settings
diff ask what a run's system was without loading the chatbot (its model clients, `openai`, the answer path).
The classes in `chatbot`, `offline` and `http` declare these records (`declares`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .interface import Traits

C = TypeVar("C", bound=type)

CHATBOT = Traits(kind="chatbot", uses_model_servers=True, label_checks_chunks=True, uses_prompt_template=True,
                 timed_by_harness=False,
                 run_settings=("top_k", "chunk_size", "chunk_overlap", "prompt", "chat_model", "embed_model",
                               "doc_prefix", "query_prefix", "batch_size", "num_ctx", "num_predict", "temperature",
                               "think", "retriever", "answer_cache", "host", "hosts", "backend", "embed_host",
                               "embed_backend", "api_key_env", "retries", "backoff", "max_body_bytes"))
OFFLINE = Traits(kind="offline", uses_model_servers=False, label_checks_chunks=True, uses_prompt_template=True,
                 timed_by_harness=False,
                 run_settings=("top_k", "chunk_size", "chunk_overlap", "prompt", "retriever", "abstain_below"))
HTTP = Traits(kind="http", uses_model_servers=None, label_checks_chunks=False, uses_prompt_template=False,
              timed_by_harness=False, run_settings=("retries", "backoff", "max_body_bytes"))
BUILTIN_TRAITS = {"chatbot": CHATBOT, "offline": OFFLINE}


def declares(traits: Traits) -> Callable[[C], C]:
    """A class decorator: the class declares these traits as its attributes (`traits_of` reads them)."""
    def declare(cls: C) -> C:
        for name in Traits.__dataclass_fields__:
            setattr(cls, name, getattr(traits, name))
        return cls
    return declare


def traits_for(spec: str) -> Traits:
    """What the system `spec` names is and can do, known before it is built (the label check and a resumed
    run's checks come before any index build): a built-in's or HTTP's declared traits; for a plug-in, which is
    not imported until it is loaded, the defaults (`kind` "python")."""
    if spec in BUILTIN_TRAITS:
        return BUILTIN_TRAITS[spec]
    if spec.startswith(("http://", "https://")):
        return HTTP
    return Traits()
