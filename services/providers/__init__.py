"""Model providers for selection, stitching and verification.

Each provider module exposes the same three functions:
``select(query, rollup, settings) -> SelectionResult``,
``stitch(query, selection, settings) -> Draft``,
``verify(query, draft, selection, settings) -> list[Sentence]``.
``local`` is deterministic and offline; ``mistral`` calls a chat model.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from shared.config import Settings


def get_provider(settings: Settings) -> ModuleType:
    """The provider module named by ``settings.models.provider``."""
    return importlib.import_module(f"services.providers.{settings.models.provider}")
