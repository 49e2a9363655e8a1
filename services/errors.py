"""Typed failures of a question's run (as opposed to refusals, which are answers).

Each carries a machine-readable ``kind`` and the HTTP status the gateway answers with, so a
worker can record one in the question store and the gateway can raise it again.
"""

from __future__ import annotations

from typing import ClassVar

from shared.contracts.events import ErrorInfo


class PipelineError(Exception):
    kind: ClassVar[str] = "pipeline_failed"
    http_status: ClassVar[int] = 502
    retriable: ClassVar[bool] = False  # the same request may work shortly: the gateway sends Retry-After

    def info(self) -> ErrorInfo:
        return ErrorInfo(type=self.kind, message=str(self))


class PipelineTimeout(PipelineError):
    kind = "timeout"
    http_status = 504


class Unavailable(PipelineError):
    """The broker or the question store (Redis) cannot be reached."""

    kind = "unavailable"
    http_status = 503
    retriable = True


class ProviderError(PipelineError):
    """A model provider failed or kept replying malformed output after its retries."""

    kind = "provider_error"
    http_status = 502


class IndexChanged(PipelineError):
    """An ingest swapped the index generation while the question was between two workers:
    the chunks it names may no longer be the ones it was ranked on. Asking again works."""

    kind = "index_changed"
    http_status = 503
    retriable = True


class IndexUnavailable(PipelineError):
    """No serving index for the manual asked about yet: an operator must run an ingest first."""

    kind = "index_unavailable"
    http_status = 503


# A conversation's own errors (services/conversations/reading.py, services/conversations/store.py): they stay in the gateway's process.
class ConversationNotFound(PipelineError):
    kind = "not_found"
    http_status = 404


class TurnLimitReached(PipelineError):
    kind = "turn_limit"
    http_status = 409


class UnknownCondition(PipelineError):
    """A condition that is not an option of the previous turn's conflict refusal."""

    kind = "unknown_condition"
    http_status = 422


_BY_KIND = {cls.kind: cls for cls in (PipelineError, PipelineTimeout, Unavailable, ProviderError, IndexChanged, IndexUnavailable)}


def as_info(exc: BaseException) -> ErrorInfo:
    """Any exception from a stage as a typed error (unknown ones become ``pipeline_failed``)."""
    from shared.index import CollectionNotFound  # noqa: PLC0415  (heavy: loads the stores; only on failure)

    if isinstance(exc, PipelineError):
        return exc.info()
    if isinstance(exc, CollectionNotFound):  # its message names the data dir: not for clients
        return IndexUnavailable("No index has been ingested for this manual yet: run `taxnav ingest` first.").info()
    return ErrorInfo(type=PipelineError.kind, message=f"{type(exc).__name__}: {exc}")


def from_info(info: ErrorInfo) -> PipelineError:
    return _BY_KIND.get(info.type, PipelineError)(info.message)

