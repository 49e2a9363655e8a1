"""Readiness of the stage queues: a queue whose workers answer but take nothing is stalled."""

from __future__ import annotations

from services.runtime.workers import QueueState, StallWatch


def test_a_queue_waiting_with_nothing_taken_is_stalled_after_the_limit() -> None:
    watch = StallWatch(stall_after_s=30)
    assert watch.check("graph", QueueState(consumers=1, taken=7, waiting=3), now=0).startswith("ok")
    assert watch.check("graph", QueueState(consumers=1, taken=7, waiting=9), now=29).startswith("ok")
    assert watch.check("graph", QueueState(consumers=1, taken=7, waiting=12), now=31) == "stalled: 12 waiting, none taken for 31 s"
    assert watch.check("graph", QueueState(consumers=1, taken=8, waiting=12), now=32).startswith("ok")  # it took one


def test_progress_is_a_task_taken_or_fewer_waiting_and_an_empty_queue_never_stalls() -> None:
    watch = StallWatch(stall_after_s=10)
    watch.check("selection", QueueState(1, 0, 0), now=0)
    assert watch.check("selection", QueueState(1, 0, 0), now=100).startswith("ok")  # idle, nothing asked
    watch.check("selection", QueueState(1, 0, 5), now=100)
    assert watch.check("selection", QueueState(1, 0, 4), now=105).startswith("ok")  # expired messages dropped
    assert watch.check("selection", QueueState(1, 0, 4), now=116).startswith("stalled")
    assert watch.check("selection", QueueState(0, 0, 4), now=117) == "no consumer"
