"""The ``mistral`` provider: a Mistral chat model (mistralai SDK) selects pages, drafts the
cited answer and judges each claim, always in JSON validated by pydantic.

A reply that fails (transport, HTTP error) or does not validate (bad JSON, unknown page or
paragraph ids, a sentence without a citation, a missing verdict) is retried with the reason
fed back, up to ``settings.models.max_retries`` times; then a ``ProviderError`` ends the
question with a typed error. Nothing the model says reaches the user uncited or unverified:
its verdicts are held to the same deterministic check the local verifier applies (every
figure and every key term of a paraphrase must be in the cited text, see
services/answering/stages/verification.py), and its answer is clamped to the answer shape every provider keeps
(``settings.stitching.shape``: at most ``claims`` sentences, none past ``words_cap`` words).
What it says to the model (prompts, message templates) is in services/providers/prompts.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

import httpx2  # the transport the mistralai SDK uses (its errors are not httpx's)
from pydantic import BaseModel, Field, ValidationError

from services import deadline as question_deadline
from services.errors import ProviderError
from services.providers.base import SelectRequest, StitchRequest, VerifyRequest
from services.providers.base import enforce, paragraphs_of
from services.providers.prompts import (
    NO_CONTENT, NOTHING_CITED, PAGE_CHARS, PAGE_ENTRY, PARAGRAPH_CHARS, PARAGRAPH_ENTRY, RETRY_USER, SELECT_STRICT,
    SELECT_SYSTEM, SELECT_USER, STITCH_SYSTEM, STITCH_USER, VERIFY_CLAIM, VERIFY_SYSTEM, VERIFY_USER,
)
from shared.config import AnswerShape, Settings
from shared.contracts.api import Sentence, Verdict
from shared.contracts.pipeline import Draft, DraftSentence, PageBundle, Query, RollupResult, SelectionResult

if TYPE_CHECKING:
    from shared.index import CorpusIndex

MAX_SENTENCES = 12  # a longer reply is malformed (retried); within it the answer shape's clamp applies
RETRY_BACKOFF_S = 0.25

class SelectionReply(BaseModel):
    keep: list[str]


class StitchReply(BaseModel):
    sentences: list[DraftSentence] = Field(max_length=MAX_SENTENCES)


class ClaimVerdict(BaseModel):
    index: int
    verdict: Verdict
    reason: str = Field(min_length=1)


class VerifyReply(BaseModel):
    verdicts: list[ClaimVerdict]


Reply = TypeVar("Reply", bound=BaseModel)


@lru_cache(maxsize=4)
def _client(api_key: str, server_url: str, timeout_ms: int):  # noqa: ANN202  (SDK type, imported lazily)
    from mistralai.client import Mistral  # noqa: PLC0415  (the SDK is large; only this provider needs it)

    return Mistral(api_key=api_key, server_url=server_url, timeout_ms=timeout_ms)


def _content(response: object) -> str:
    """The reply's text (the SDK gives a string, or a list of typed chunks)."""
    choices = getattr(response, "choices", None) or []
    content = choices[0].message.content if choices and choices[0].message is not None else None
    if isinstance(content, list):
        content = "".join(getattr(chunk, "text", "") or "" for chunk in content)
    if not content:
        raise ValueError("the reply has no content")
    return content


def chat_json(settings: Settings, purpose: str, system: str, user: str, reply: type[Reply], check: Callable[[Reply], None]) -> Reply:
    """One JSON exchange with the chat model, retried on failure or invalid output."""
    from mistralai.client import errors  # noqa: PLC0415

    models = settings.models
    if not models.mistral_api_key:
        raise ProviderError("TAXNAV_MODELS__MISTRAL_API_KEY is not set (needed for models.provider=mistral)")
    client = _client(models.mistral_api_key, models.mistral_server_url, int(models.timeout_s * 1000))
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    problem = ""
    for attempt in range(models.max_retries + 1):
        if attempt:
            time.sleep(RETRY_BACKOFF_S * 2 ** (attempt - 1))
        question_deadline.check(f"Mistral {purpose} call not made")
        # Never wait on the model past the question's deadline: its client has stopped waiting.
        left = question_deadline.remaining_s()
        timeout_ms = int(models.timeout_s * 1000) if left is None else max(1, int(min(models.timeout_s, left) * 1000))
        try:
            response = client.chat.complete(
                model=models.mistral_chat_model, messages=messages, temperature=0, response_format={"type": "json_object"},
                timeout_ms=timeout_ms,
            )  # fmt: skip
        except (errors.MistralError, httpx2.HTTPError) as exc:
            problem = f"request failed: {exc}"
            continue
        text = ""
        try:
            text = _content(response)
            parsed = reply.model_validate_json(text)
            check(parsed)
            return parsed
        except (ValidationError, ValueError) as exc:
            problem = f"malformed reply: {exc}"
            # Say what was wrong, so the retry can fix it rather than repeat it.
            messages = messages[:2] + [
                {"role": "assistant", "content": text or NO_CONTENT},
                {"role": "user", "content": RETRY_USER.format(problem=exc)},
            ]
    question_deadline.check(f"Mistral {purpose} cut short")  # a call cut at the deadline is a timeout
    raise ProviderError(f"Mistral {purpose} failed after {models.max_retries + 1} attempts; last: {problem}")


def _page_text(page: PageBundle) -> str:
    parts = [" > ".join(page.chunks[0].heading_path[-3:])] if page.chunks else []
    parts += [chunk.text for chunk in page.chunks]
    return "\n".join(parts)[:PAGE_CHARS]


def select(query: Query, rollup: RollupResult, settings: Settings) -> SelectionResult:
    candidates = {page.section_id for page in rollup.pages}
    if not candidates:
        return SelectionResult(pages=[], dropped=[])

    def check(parsed: SelectionReply) -> None:
        unknown = set(parsed.keep) - candidates
        if unknown:
            raise ValueError(f"unknown section ids {sorted(unknown)}; choose from {sorted(candidates)}")

    system = SELECT_SYSTEM if settings.selection.strategy == "recall_greedy" else f"{SELECT_SYSTEM}\n{SELECT_STRICT}"
    pages = "\n\n".join(PAGE_ENTRY.format(section_id=page.section_id, text=_page_text(page)) for page in rollup.pages)
    parsed = chat_json(settings, "selection", system, SELECT_USER.format(question=query.question, pages=pages), SelectionReply, check)
    keep = set(parsed.keep)
    return SelectionResult(
        pages=[page for page in rollup.pages if page.section_id in keep],
        dropped=[page.section_id for page in rollup.pages if page.section_id not in keep],
    )


def stitch(query: Query, selection: SelectionResult, settings: Settings) -> Draft:
    allowed = paragraphs_of(selection)
    if not allowed:
        return Draft(sentences=[])

    def check(parsed: StitchReply) -> None:
        for n, sentence in enumerate(parsed.sentences, 1):
            if not sentence.text.strip():
                raise ValueError(f"sentence {n} is empty")
            if not sentence.citations:
                raise ValueError(f"sentence {n} cites no paragraph")
            unknown = [c for c in sentence.citations if c not in allowed]
            if unknown:
                raise ValueError(f"sentence {n} cites {unknown}, which are not among the given paragraph ids")

    listing = "\n".join(PARAGRAPH_ENTRY.format(id=pid, text=paragraph.text[:PARAGRAPH_CHARS]) for pid, paragraph in allowed.items())
    parsed = chat_json(settings, "stitching", STITCH_SYSTEM, STITCH_USER.format(question=query.question, paragraphs=listing), StitchReply, check)
    return Draft(sentences=clamped(parsed.sentences, settings.stitching.shape))


def clamped(sentences: list[DraftSentence], shape: AnswerShape) -> list[DraftSentence]:
    """The model's sentences clamped to the answer shape: the first ``shape.claims``, and none
    that would take the answer past ``shape.words_cap`` words (the first always stays)."""
    kept: list[DraftSentence] = []
    words = 0
    for sentence in sentences[: shape.claims]:
        words += len(sentence.text.split())
        if kept and words > shape.words_cap:
            break
        kept.append(sentence.model_copy(update={"role": "answer"}))
    return kept


def verify(query: Query, draft: Draft, selection: SelectionResult, settings: Settings, checked: list[Sentence]) -> list[Sentence]:
    if not draft.sentences:
        return checked
    allowed = paragraphs_of(selection)
    claims = []
    for n, sentence in enumerate(draft.sentences):
        cited = "\n".join(PARAGRAPH_ENTRY.format(id=c, text=allowed[c].text[:PARAGRAPH_CHARS]) for c in sentence.citations if c in allowed)
        claims.append(VERIFY_CLAIM.format(n=n, text=sentence.text, cited=cited or NOTHING_CITED))

    def check(parsed: VerifyReply) -> None:
        got = sorted(v.index for v in parsed.verdicts)
        if got != list(range(len(draft.sentences))):
            raise ValueError(f"expected exactly one verdict for each claim 0..{len(draft.sentences) - 1}, got indexes {got}")

    user = VERIFY_USER.format(question=query.question, claims="\n\n".join(claims))
    parsed = chat_json(settings, "verification", VERIFY_SYSTEM, user, VerifyReply, check)
    verdicts = {v.index: v for v in parsed.verdicts}
    judged = [
        Sentence(**s.model_dump(), verdict=verdicts[n].verdict, reason=verdicts[n].reason)
        for n, s in enumerate(draft.sentences)
    ]
    # Numbers, amounts, dates and references must be in the cited text whatever the model says.
    return enforce(judged, checked)


class MistralProvider:
    """The protocol of services/providers/base.py over the functions above (the question's
    embedding is not needed: the model reads the pages' text)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def select(self, request: SelectRequest, index: CorpusIndex | None = None) -> SelectionResult:
        del index  # the model reads the pages' text in the request
        return select(request.query, request.rollup, self.settings)

    def stitch(self, request: StitchRequest, index: CorpusIndex | None = None) -> Draft:
        del index
        return stitch(request.query, request.selection, self.settings)

    def verify(self, request: VerifyRequest) -> list[Sentence]:
        return verify(request.query, request.draft, request.selection, self.settings, request.checked)
