"""A serving process's long-lived heap, kept out of the cyclic garbage collector's way.

After warm-up a gateway holds about 450,000 container objects that live as long as it does
(the index's pages, chunks and graph, the models, the modules). A full collection traverses
every one of them holding the GIL: 0.3-0.9 s on the 2-core machine, during which the event
loop answers nothing (the isolated ~350 ms refusals of `taxnav bench load`). Frozen
(``gc.freeze``), they are skipped, and collections only look at objects made since.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


def freeze() -> None:
    """Freeze what is alive now (after collecting what is not, so no garbage is kept)."""
    gc.collect()
    gc.freeze()


def refreeze() -> None:
    """A frozen process loaded a new index (an ingest swapped a generation in): let one full
    collection see the old one, whose graph holds reference cycles that freezing would leak,
    then freeze the new one. A process that never froze (CLI, eval, tests) does nothing."""
    if gc.get_freeze_count():
        gc.unfreeze()
        freeze()


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection while a large structure that lives on is built (a manual's pages and
    chunks, its graph): each burst of allocations would otherwise start full collections that
    traverse everything loaded so far, for nothing (loading the three manuals: 1.8 s of CPU
    with them, 1.1 s without). Collections resume after; a pause inside a pause leaves them to
    the outer one."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
