"""The provider a question's settings name, built once per process with the settings it depends
on (services/answering/pipeline.py ``Answering``): the stages that ask a model (selection,
stitching, verification) are given it and never look it up."""

from __future__ import annotations

from services.providers.base import Provider
from services.providers.local import LocalProvider
from services.providers.mistral import MistralProvider  # the SDK itself is imported on first use
from shared.config import Settings


def make_provider(settings: Settings) -> Provider:
    """The provider ``settings.models.provider`` names (the local one loads its rankers once,
    on first use or at ``warm_up``)."""
    return MistralProvider(settings) if settings.models.provider == "mistral" else LocalProvider(settings)
