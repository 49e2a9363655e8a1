"""`taxnav bench query`'s measuring parts on the slice (the figures themselves belong to the
benchmark run, not to tests: nothing here is timed)."""

from __future__ import annotations

from shared.config import Settings
from services.runtime.question_store import MemoryStore
from taxnav.bench.common import percentile, summary
from taxnav.bench.query import gateway_throughput, measure_latency

QUESTIONS = [
    "how much can my boss pay me per mile for using my own car on work trips before I have to pay tax on it?",
    "What's the VAT registration threshold for my small business?",
]


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50 and percentile(values, 95) == 95 and percentile([7.0], 95) == 7
    assert summary([3.0, 1.0, 2.0]) == {"p50": 2.0, "p95": 3.0, "mean": 2.0, "n": 3}


def test_latency_report_covers_every_stage_and_outcome(slice_settings: Settings):
    report = measure_latency(QUESTIONS, slice_settings, MemoryStore, rounds=1)
    assert report["end_to_end_ms"]["n"] == 2 and report["end_to_end_past_scope_guard_ms"]["n"] == 1
    assert list(report["stage_ms"]) == ["retrieval", "expansion", "rollup", "selection", "stitching", "marks", "verification"]
    assert report["outcomes"] == {"answered": 1, "out_of_scope": 1}


def test_throughput_goes_through_a_real_gateway(slice_data_dir):
    figures = gateway_throughput({"TAXNAV_MODE": "embedded"}, str(slice_data_dir), QUESTIONS, clients=2, requests=6)
    assert figures["http_statuses"] == {"200": 6} and figures["questions_per_s"] > 0
