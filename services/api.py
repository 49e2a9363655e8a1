"""What the gateway and the command line use of the answering wing, in one place: neither
reaches into a stage, a provider or the runtime's modules.

Each name is imported from its home on first use (PEP 562), so ``taxnav --help`` or a client
that only needs the question store does not load the stages, the index and the models."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
_HOMES = {
    # asking a question: the scope guard and the stages, in process or over Celery
    "new_state": "services.answering.pipeline",
    "answer": "services.runtime.dispatch",
    "submit": "services.runtime.dispatch",
    "record_refusal": "services.runtime.dispatch",
    "Admission": "services.runtime.dispatch",
    "WARM_UP_QUESTION": "services.runtime.dispatch",
    # waiting on it: the question store
    "QuestionStore": "services.runtime.question_store",
    "MemoryStore": "services.runtime.question_store",
    "RedisStore": "services.runtime.question_store",
    "make_store": "services.runtime.question_store",
    "follow": "services.runtime.question_store",
    "wait_result": "services.runtime.question_store",
    "MAX_WAITERS": "services.runtime.question_store",
    # conversations
    "ConversationStore": "services.conversations.store",
    "FileStore": "services.conversations.store",
    "make_conversation_store": "services.conversations.store",
    "ask": "services.conversations.store",
    "conflict_options": "services.conversations.reading",
    # the stage workers
    "WorkerPool": "services.runtime.workers",
    "StallWatch": "services.runtime.workers",
    "purge": "services.runtime.workers",
    "queue_states": "services.runtime.workers",
    # the trained rankers (checked at start-up)
    "page_ranker": "services.ranking.rankers",
    "passage_model": "services.ranking.rankers",
    "answers_model": "services.ranking.assurance",
}
__all__ = sorted(_HOMES)

if TYPE_CHECKING:
    from services.answering.pipeline import new_state
    from services.conversations.reading import conflict_options
    from services.conversations.store import ConversationStore, FileStore, ask, make_conversation_store
    from services.ranking.assurance import answers_model
    from services.ranking.rankers import page_ranker, passage_model
    from services.runtime.dispatch import WARM_UP_QUESTION, Admission, answer, record_refusal, submit
    from services.runtime.question_store import MAX_WAITERS, MemoryStore, QuestionStore, RedisStore, follow, make_store, wait_result
    from services.runtime.workers import StallWatch, WorkerPool, purge, queue_states


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'services.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: later lookups skip this hook
    return value
