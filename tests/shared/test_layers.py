"""Imports point one way (shared <- services <- gateway/taxnav): each check runs in a fresh
interpreter, since this test process has loaded every package already."""

from __future__ import annotations

import ast
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
    assert "services.answering.pipeline" in loaded_after_import("services.answering.pipeline", ("services",))


@pytest.mark.parametrize("module", SHARED_MODULES)
def test_shared_loads_no_upper_layer(module):
    assert loaded_after_import(module, UPPER_LAYERS) == []


def test_the_question_pipeline_loads_no_parser_and_no_ingest_worker():
    assert loaded_after_import("services.answering.pipeline", ("lxml", "ingest_worker")) == []


# services/ by concern, lowest first: a module imports only from its own concern or a lower one
# (errors and deadline are below them all; api.py, the facade, above them all).
CONCERNS = ("text", "ranking", "providers", "answering", "runtime", "conversations")


def _concern(module: str) -> int:
    parts = module.split(".")
    if parts[1] in ("errors", "deadline"):
        return -1
    if parts[1] == "api":
        return len(CONCERNS)
    return CONCERNS.index(parts[1])


def services_imports() -> list[tuple[str, str]]:
    """(importing module, imported services module) for every import in services/."""
    out = []
    for path in sorted((REPO / "services").rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("services."):
                out += [(module, node.module)]
            elif isinstance(node, ast.Import):
                out += [(module, a.name) for a in node.names if a.name.startswith("services.")]
    return out


def test_services_has_few_top_modules_and_every_concern_imports_only_downwards():
    top = sorted(p.name for p in (REPO / "services").glob("*.py") if p.name != "__init__.py")
    assert len(top) <= 4, top
    upward = [(m, i) for m, i in services_imports() if m.count(".") and _concern(i) > _concern(m)]
    assert upward == []


def test_the_layer_check_can_fail():
    assert _concern("services.answering.pipeline") > _concern("services.ranking.page_features")


@pytest.mark.parametrize("stage", ["selection", "stitching", "verification"])
def test_a_model_stage_is_given_its_provider_not_looking_one_up(stage):
    assert "services.providers.registry" not in loaded_after_import(f"services.answering.stages.{stage}", ("services",))
