"""Named settings variants: overrides applied and validated."""

from __future__ import annotations

import pytest

from shared.config import Settings
from taxnav.evaluation.harness import VARIANTS, VariantError, resolve_variants, with_overrides


def test_first_approach_overrides_apply_without_touching_the_original():
    base = Settings()
    first = with_overrides(base, VARIANTS["first_approach"])
    assert (first.rollup.whole_page, first.selection.strategy, first.expansion.enabled) == (False, "strict", False)
    assert (base.rollup.whole_page, base.selection.strategy, base.expansion.enabled) == (True, "recall_greedy", True)
    assert first.rollup.max_chunks_per_page == base.rollup.max_chunks_per_page  # other fields kept
    assert first.data_dir == base.data_dir


def test_retrieval_variants_differ_and_hybrid_is_the_default():
    base = Settings()
    bm25, vectors = with_overrides(base, VARIANTS["bm25_only"]), with_overrides(base, VARIANTS["vectors_only"])
    assert (bm25.retrieval.use_bm25, bm25.retrieval.use_vectors, bm25.retrieval.use_titles) == (True, False, False)
    assert (vectors.retrieval.use_bm25, vectors.retrieval.use_vectors, vectors.retrieval.use_titles) == (False, True, False)
    assert with_overrides(base, VARIANTS["hybrid"]) == with_overrides(base, VARIANTS["full"])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"selection.strategy": "bogus"}, "bad override for selection"),
        ({"rollup.no_such_field": 1}, "unknown settings field 'rollup.no_such_field'"),
        ({"nosuchsection.x": 1}, "unknown settings field"),
        ({"data_dir": "x"}, "unknown settings field 'data_dir'"),
        ({"selection.local.no_such_field": 1}, "unknown settings field 'selection.local.no_such_field'"),
        ({"selection.strategy.deeper": 1}, "unknown settings field 'selection.strategy.deeper'"),
        ({"selection.local.keep_ratio": "high"}, "bad override for selection"),
    ],
)
def test_bad_overrides_are_typed_errors(overrides, message):
    with pytest.raises(VariantError, match=message):
        with_overrides(Settings(), overrides)


def test_resolve_variants_puts_full_first_and_rejects_unknown_names():
    assert resolve_variants(None) == list(VARIANTS)
    assert resolve_variants(["no_graph", "bm25_only"]) == ["full", "bm25_only", "no_graph"]
    with pytest.raises(VariantError, match="unknown variant"):
        resolve_variants(["fastest"])


def test_a_dotted_path_reaches_the_local_providers_tuning_and_leaves_the_rest():
    base = Settings()
    tuned = with_overrides(base, {"selection.local.keep_ratio": 0.3, "selection.local.max_pages": 3, "selection.strategy": "strict"})
    assert (tuned.selection.local.keep_ratio, tuned.selection.local.max_pages, tuned.selection.strategy) == (0.3, 3, "strict")
    assert tuned.selection.local.strict_ratio == base.selection.local.strict_ratio and base.selection.local.keep_ratio == 0.5
