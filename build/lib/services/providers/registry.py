"""The provider a question's settings name, built once per settings: the pipeline hands it to
the stages that ask a model (selection, stitching, verification), which never look it up."""

from __future__ import annotations

from functools import lru_cache

from services.providers.base import Provider
from services.providers.local import LocalProvider
from services.providers.mistral import MistralProvider  # the SDK itself is imported on first use
from shared.config import Settings


@lru_cache(maxsize=8)
def _provider(settings_json: str) -> Provider:
    settings = Settings.model_validate_json(settings_json)
    return MistralProvider(settings) if settings.models.provider == "mistral" else LocalProvider(settings)


def provider_for(settings: Settings) -> Provider:
    """The provider ``settings.models.provider`` names, built with the settings it depends on
    (one per distinct settings: the eval's variants each get their own)."""
    return _provider(settings.model_dump_json())
