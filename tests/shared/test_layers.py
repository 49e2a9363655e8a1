"""Imports point one way (shared <- services <- gateway/taxnav): each check runs in a fresh
interpreter, since this test process has loaded every package already."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import shared.contracts
import shared.stores
from tests.conftest import REPO

UPPER_LAYERS = ("services", "gateway", "ingest_worker", "taxnav")
SHARED_MODULES = [
    "shared",
    "shared.analysis",
    "shared.config",
    "shared.generation",
    "shared.index",
    "shared.embeddings",
    "shared.fs",
    "shared.contracts",
    *(f"shared.contracts.{m.name}" for m in pkgutil.iter_modules(shared.contracts.__path__)),
    "shared.stores",
    *(f"shared.stores.{m.name}" for m in pkgutil.iter_modules(shared.stores.__path__)),
]


def loaded_after_import(module: str, prefixes: tuple[str, ...]) -> list[str]:
    """The modules under any of ``prefixes`` that importing ``module`` loads, in a fresh interpreter."""
    code = (
        "import importlib, json, sys\n"
        f"importlib.import_module({module!r})\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {prefixes!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_probe_sees_what_an_import_loads():
    # The check below must be able to fail: an upper layer imported is reported.
    assert "services.pipeline" in loaded_after_import("services.pipeline", ("services",))


@pytest.mark.parametrize("module", SHARED_MODULES)
def test_shared_loads_no_upper_layer(module):
    assert loaded_after_import(module, UPPER_LAYERS) == []


def test_the_question_pipeline_loads_no_parser_and_no_ingest_worker():
    assert loaded_after_import("services.pipeline", ("lxml", "ingest_worker")) == []


def test_reading_a_turn_sits_below_the_pipeline():
    # The pipeline runs the conversation's after_stage: the turn reading imports neither it nor dispatch.
    loaded = loaded_after_import("services.conversation", ("services",))
    assert "services.conversation" in loaded
    assert not {"services.pipeline", "services.dispatch", "services.conversation_store"} & set(loaded)


@pytest.mark.parametrize("stage", ["selection", "stitching", "verification"])
def test_a_model_stage_is_given_its_provider_not_looking_one_up(stage):
    assert "services.providers.registry" not in loaded_after_import(f"services.stages.{stage}", ("services",))
