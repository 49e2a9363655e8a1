"""Conversations kept and asked in: each turn is read with the turns before it
(services/conversations/reading.py, which the pipeline's stages also run) and submitted as a question
(services/runtime/dispatch.py), so this module sits above both.

The conversations themselves live in a ``ConversationStore``: files in the data directory
(embedded mode: the gateway and ``taxnav ask --conversation`` share them) or Redis
(distributed mode), each with a TTL renewed by every turn and a turn limit.
"""

from __future__ import annotations

import fcntl
import logging
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import redis

from services.conversations.reading import read_turn
from services.runtime.dispatch import submit
from services.errors import ConversationNotFound, TurnLimitReached, Unavailable
from services.answering.pipeline import answering_for, new_state
from services.text.reading import reread
from services.runtime.question_store import QuestionStore, follow, wait_result
from shared.config import Settings
from shared.contracts.api import QuestionRequest, QuestionResult
from shared.contracts.conversation import Conversation, ConversationQuestion, FollowUpInfo, PendingTurn, TurnResult
from shared.contracts.pipeline import PipelineState
from shared.fs import process_temp_dir, writable

log = logging.getLogger(__name__)

# ---- a turn as a question ------------------------------------------------------------------


def new_turn_state(request: ConversationQuestion, earlier: list[TurnResult], settings: Settings) -> PipelineState:
    """The turn's pipeline envelope: the scope guard reads the person's own words; the
    stages read the searched question with the context."""
    searched, context = read_turn(request, earlier, settings, answering_for(settings).open)
    own = QuestionRequest(question=context.asked, manual=request.manual, focus=request.focus)
    state = new_state(own, settings)
    state.query = reread(state.query, searched, own_words=context.asked)
    state.context = context
    return state


def follow_up_info(state: PipelineState) -> FollowUpInfo:
    context = state.context
    assert context is not None, "a conversation turn's state carries its context"
    return FollowUpInfo(kind=context.kind, searched=state.query.question, carried_sections=context.carried_sections, reasons=context.reasons)


def as_turn(result: QuestionResult, conversation_id: str, pending: PendingTurn) -> TurnResult:
    return TurnResult(
        **result.model_dump(), conversation_id=conversation_id, turn=pending.turn, condition=pending.condition, follow_up=pending.follow_up
    )


# ---- the store -----------------------------------------------------------------------------


def _now() -> datetime:
    return datetime.now(timezone.utc)


class ConversationStore(ABC):
    """Conversations with their turns. A turn is started under the conversation's lock (its
    number fixed, the earlier turns settled first, so it is read with all of them) and
    finished when its question's result arrives; two turns posted at once get different
    numbers and neither is lost."""

    def __init__(self, settings: Settings) -> None:
        self.ttl_s = settings.conversations.ttl_s
        self.max_turns = settings.conversations.max_turns

    def create(self) -> Conversation:
        now = _now()
        conversation = Conversation(id=uuid.uuid4().hex, created_at=now, updated_at=now, max_turns=self.max_turns)
        with self._locked(conversation.id):
            self._write(conversation)
        return conversation

    def _get(self, conversation_id: str) -> Conversation:
        found = self._read(conversation_id)
        if found is None:
            raise ConversationNotFound(f"No conversation {conversation_id} (unknown, or it expired).")
        return found

    def get(self, conversation_id: str, questions: QuestionStore | None = None) -> Conversation:
        """The conversation; with ``questions``, its pending turns whose results have arrived
        are settled first (never waiting for one still running)."""
        conversation = self._get(conversation_id)
        if questions is None or not conversation.pending:
            return conversation
        with self._locked(conversation_id):
            conversation = self._get(conversation_id)
            if self._settle(conversation, questions, wait=False):
                self._write(conversation)
        return conversation

    def start(self, conversation_id: str, request: ConversationQuestion, settings: Settings, questions: QuestionStore) -> PendingTurn:
        """Read the turn with every earlier turn (waiting for those still running), submit its
        question (services/runtime/dispatch.py, as /v1/questions does) and record it as pending."""
        with self._locked(conversation_id):
            conversation = self._get(conversation_id)
            self._settle(conversation, questions, wait=True)
            if len(conversation.turns) >= self.max_turns:
                self._write(conversation)
                raise TurnLimitReached(
                    f"Conversation {conversation_id} has reached its limit of {self.max_turns} turns; start a new conversation."
                )
            state = new_turn_state(request, conversation.turns, settings)
            pending = PendingTurn(
                turn=len(conversation.turns) + 1,
                question_id=submit(state, settings, questions),
                question=state.context.asked if state.context else request.question,
                condition=request.condition,
                follow_up=follow_up_info(state),
            )
            conversation.pending.append(pending)
            conversation.updated_at = _now()
            self._write(conversation)
        return pending

    def finish(self, conversation_id: str, pending: PendingTurn, questions: QuestionStore) -> TurnResult:
        """Wait for a started turn's result and store it (raises its typed error, if any)."""

        try:
            result = wait_result(questions, pending.question_id)
        finally:
            with self._locked(conversation_id):
                conversation = self._read(conversation_id)
                if conversation is not None and self._settle(conversation, questions, wait=False):
                    self._write(conversation)
        return as_turn(result, conversation_id, pending)

    def _settle(self, conversation: Conversation, questions: QuestionStore, wait: bool) -> bool:
        """Move pending turns whose questions have ended into ``turns`` (a turn whose question
        failed is dropped: it has no result to keep). Returns whether anything changed."""

        changed = False
        for pending in list(conversation.pending):
            ended = [e for e in follow(questions, pending.question_id, wait=wait) if e.terminal]
            if not ended and not wait and questions.deadline(pending.question_id) is not None:
                continue  # still running
            conversation.pending.remove(pending)
            changed = True
            if ended and ended[-1].kind == "result":
                conversation.turns.append(as_turn(ended[-1].result, conversation.id, pending))
        conversation.turns.sort(key=lambda t: t.turn)
        return changed

    @abstractmethod
    def _read(self, conversation_id: str) -> Conversation | None: ...

    @abstractmethod
    def _write(self, conversation: Conversation) -> None: ...

    @abstractmethod
    @contextmanager
    def _locked(self, conversation_id: str) -> Iterator[None]: ...


def conversations_dir(settings: Settings) -> Path:
    """Where embedded mode keeps conversations: ``settings.conversations.dir``, else
    ``<data dir>/conversations``. One that cannot be written (a read-only data directory) gives
    way to a private temp directory, said in the log, so serving still works; its
    conversations last as long as the process."""
    wanted = settings.conversations.dir or Path(settings.data_dir) / "conversations"
    if writable(wanted):
        return wanted
    fallback = process_temp_dir("taxnav-conversations-")
    log.warning(
        "conversations: %s is not writable (a read-only data directory?); keeping them in %s for this process only "
        "(TAXNAV_CONVERSATIONS__DIR names a writable directory)",
        wanted,
        fallback,
    )
    return fallback


class FileStore(ConversationStore):
    """Embedded mode: one JSON file per conversation under the data directory (or where
    ``conversations_dir`` falls back to); expired ones read as unknown (and are removed when read)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.root = conversations_dir(settings)

    def _path(self, conversation_id: str) -> Path:
        return self.root / f"{conversation_id}.json"

    def _read(self, conversation_id: str) -> Conversation | None:
        path = self._path(conversation_id)
        try:
            conversation = Conversation.model_validate_json(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None
        if (_now() - conversation.updated_at).total_seconds() > self.ttl_s:
            path.unlink(missing_ok=True)
            path.with_suffix(".lock").unlink(missing_ok=True)
            return None
        return conversation

    def _write(self, conversation: Conversation) -> None:
        path = self._path(conversation.id)
        partial = path.with_suffix(".tmp")
        partial.write_text(conversation.model_dump_json(), encoding="utf-8")
        partial.replace(path)  # atomic: a reader never sees half a conversation

    @contextmanager
    def _locked(self, conversation_id: str) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / f"{conversation_id}.lock", "a") as lock:  # one lock per conversation
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


class RedisConversationStore(ConversationStore):
    """Distributed mode: one key per conversation, expiring ``ttl_s`` after its last turn."""

    LOCK_TTL_S = 60

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._redis = redis.Redis.from_url(settings.redis_url, decode_responses=True, socket_timeout=5, socket_connect_timeout=5)
        self._prefix = f"{settings.celery.key_prefix}taxnav:conversation:"

    def _read(self, conversation_id: str) -> Conversation | None:
        try:
            raw = self._redis.get(self._prefix + conversation_id)
        except redis.RedisError as exc:
            raise Unavailable(f"Redis is unavailable: {exc}") from exc
        return Conversation.model_validate_json(raw) if raw else None

    def _write(self, conversation: Conversation) -> None:
        try:
            self._redis.set(self._prefix + conversation.id, conversation.model_dump_json(), ex=self.ttl_s)
        except redis.RedisError as exc:
            raise Unavailable(f"Redis is unavailable: {exc}") from exc

    @contextmanager
    def _locked(self, conversation_id: str) -> Iterator[None]:
        try:
            with self._redis.lock(self._prefix + conversation_id + ":lock", timeout=self.LOCK_TTL_S, blocking_timeout=30):
                yield
        except redis.RedisError as exc:
            raise Unavailable(f"Redis is unavailable: {exc}") from exc


def make_conversation_store(settings: Settings) -> ConversationStore:
    return RedisConversationStore(settings) if settings.mode == "distributed" else FileStore(settings)


# ---- asking in a conversation --------------------------------------------------------------


def ask(
    store: ConversationStore, conversation_id: str, request: ConversationQuestion, settings: Settings, questions: QuestionStore
) -> TurnResult:
    """One turn, waited for: read with the earlier turns, answered, stored."""
    return store.finish(conversation_id, store.start(conversation_id, request, settings, questions), questions)
