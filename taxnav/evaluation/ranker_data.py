"""What `taxnav ranker` learns from: each labelled question's candidate pages after rollup,
and the quotable units of the pages selection keeps, read through the same extractors as the
service reads them (services/ranking: PAGE_EXTRACTOR through page_signals, UNIT_EXTRACTOR
through featured_units), so that a model is trained on exactly the rows it is applied to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from shared.config import Settings


@dataclass
class Candidates:
    """One question's candidate pages as the ranker sees them in service."""

    question_id: str
    source: str  # the question file's stem
    gold: frozenset[str]
    section_ids: list[str]
    features: np.ndarray  # (pages, PAGE_FEATURES)
    labels: np.ndarray  # 2 gold, 1 also_ok, 0 other
    key_facts: tuple[str, ...] = ()
    rollup: object = None  # the question's PipelineState after rollup (what the passage ranker's training selects from)


UP_TO_ROLLUP = ("retrieval", "expansion", "rollup")  # the stages whose candidates the page ranker orders


def labelled(question, source: str, signals: Sequence) -> Candidates:  # noqa: ANN001  (an EvalQuestion or a dialog's turn; PageSignals)
    """A question's candidate pages, labelled: its gold pages 2, its also_ok pages 1, the rest 0."""
    ids = [s.bundle.section_id for s in signals]
    labels = np.array([2 if sid in question.gold_sections else 1 if sid in question.also_ok else 0 for sid in ids])
    features = np.stack([s.features for s in signals])  # PAGE_EXTRACTOR's rows, as selection reads them
    return Candidates(question.id, source, frozenset(question.gold_sections), ids, features, labels, tuple(question.key_facts))


def collect(questions: Sequence, source: str, settings: Settings) -> list[Candidates]:  # noqa: ANN001  (EvalQuestion)
    """Each answerable question's candidates after rollup, with their features and labels (the
    scope guard and routing run first: a question they refuse has no candidates to rank)."""
    from services.answering.pipeline import STAGES, answering_for, new_state, run_stages  # noqa: PLC0415  (heavy: the index and the model)
    from services.ranking.page_features import page_signals  # noqa: PLC0415
    from shared.contracts.api import QuestionRequest  # noqa: PLC0415

    up_to_rollup = [s for s in STAGES if s.name in UP_TO_ROLLUP]
    out = []
    for q in questions:
        if q.expect != "answer":
            continue
        state = run_stages(up_to_rollup, new_state(QuestionRequest(question=q.question), settings), settings, lambda _: None)
        if state.rollup is None or not state.rollup.pages:
            continue
        index = answering_for(settings).open(state.query.manual)
        signals = page_signals(state.query, state.rollup.pages, settings, index, state.retrieval.query_vector if state.retrieval else [])
        out.append(labelled(q, source, signals))
        out[-1].rollup = state
    return out


@dataclass
class Passages:
    """One question's quotable units as the passage ranker sees them in service."""

    question_id: str
    features: np.ndarray  # (units, UNIT_FEATURES)
    labels: np.ndarray  # 1: a key fact within its first LEAD_WORDS words, on an answering page


LEAD_WORDS = 50  # a unit that opens the answer should say it early: the answer is read from its first words


def collect_passages(candidates: Sequence[Candidates], settings: Settings) -> list[Passages]:
    """Each question's units after selection (by the page model ``settings`` name), with their
    features and labels: whether the unit states one of the question's key facts early, on a
    gold or also_ok page."""
    from services.answering.pipeline import STAGES, answering_for, run_stages  # noqa: PLC0415
    from shared.meaning import question_vector  # noqa: PLC0415
    from services.ranking.passage_features import featured_units, unit_matrix  # noqa: PLC0415
    from taxnav.evaluation.scoring import key_fact_found  # noqa: PLC0415

    selection = [s for s in STAGES if s.name == "selection"]
    out = []
    for c in candidates:
        if c.rollup is None:
            continue
        state = run_stages(selection, c.rollup.model_copy(update={"trace": []}), settings, lambda _: None)
        if state.refusal is not None or not state.selection or not state.selection.pages:
            continue
        index = answering_for(settings).open(state.query.manual)
        vector = question_vector(index, state.query.question, state.retrieval.query_vector if state.retrieval else []) if settings.retrieval.use_vectors else None
        units = featured_units(state.query, state.selection, settings, index, vector)
        label_of = dict(zip(c.section_ids, c.labels, strict=True))
        pages = [p.section_id for p in state.selection.pages]
        answering = {sid for sid in pages if label_of.get(sid, 0) > 0}
        if not units or not answering:
            continue
        labels = np.array([float(pages[u.page_rank] in answering and any(key_fact_found(f, " ".join(u.text.split()[:LEAD_WORDS])) for f in c.key_facts)) for u in units])
        out.append(Passages(c.question_id, unit_matrix(units), labels))
    return out


def collect_follow_ups(dialogs: Sequence, source: str, settings: Settings) -> list[Candidates]:  # noqa: ANN001  (Dialog)
    """Each answerable follow-up's candidates as its conversation reads it: the dialog's
    earlier turns asked first in a conversation of their own (in a temporary directory), then
    the follow-up read with them (its searched question, its subject's pages)."""
    import tempfile  # noqa: PLC0415

    from services.conversations.store import FileStore, new_turn_state  # noqa: PLC0415
    from services.answering.pipeline import STAGES, answering_for, run_stages  # noqa: PLC0415
    from services.ranking.page_features import ConversationSubject, page_signals  # noqa: PLC0415
    from services.runtime.question_store import MemoryStore  # noqa: PLC0415
    from shared.contracts.conversation import ConversationQuestion  # noqa: PLC0415

    up_to_rollup = [s for s in STAGES if s.name in UP_TO_ROLLUP]
    out = []
    with tempfile.TemporaryDirectory(prefix="taxnav-ranker-conversations-") as folder:
        settings = settings.model_copy(deep=True, update={"mode": "embedded"})
        settings.conversations.dir = Path(folder)
        conversations, store = FileStore(settings), MemoryStore()
        for dialog in dialogs:
            cid = conversations.create().id
            for number, turn in enumerate(dialog.turns, start=1):
                request = ConversationQuestion(question=turn.question, manual=settings.manual)
                if number > 1 and turn.expect == "answer":
                    state = run_stages(up_to_rollup, new_turn_state(request, conversations.get(cid).turns, settings), settings, lambda _: None)
                    if state.refusal is None and state.rollup and state.rollup.pages and state.context is not None:
                        vector = state.retrieval.query_vector if state.retrieval else []
                        subject = ConversationSubject(frozenset(state.context.carried_sections), frozenset(state.context.linked_sections))
                        index = answering_for(settings).open(state.query.manual)
                        signals = page_signals(state.query, state.rollup.pages, settings, index, vector, subject)
                        out.append(labelled(turn, source, signals))
                conversations.finish(cid, conversations.start(cid, request, settings, store), store)
    return out
