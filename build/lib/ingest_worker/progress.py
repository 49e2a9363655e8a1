"""Ingest progress on stderr, one phase at a time: crawl (pages N/M), parse, embed (chunks N/M),
index.

On a terminal, rich draws a live bar per phase; a finished phase keeps its line with its count
and the time it took. Anywhere else (a pipe, a log file, CI) it writes plain lines instead: one
when a phase starts, one every ``log_every_s`` while it runs, one when it ends. Never a ``\\r``.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, SpinnerColumn, TaskID, TextColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress

PHASES = {"crawl": "pages", "parse": "", "embed": "chunks", "index": ""}  # phase -> what it counts


class Progress:
    """Callbacks for ``run_ingest``: ``on_pages`` during the crawl, ``on_chunks`` while
    embedding, ``set_phase`` between phases."""

    def __init__(self, label: str, enabled: bool = True, stream: TextIO | None = None, log_every_s: float = 10.0):
        self.label = label
        self.enabled = enabled
        self.console = Console(file=stream or sys.stderr, highlight=False, markup=False)
        self.log_every_s = log_every_s
        self.phase: str | None = None
        self.done, self.total = 0, 0
        self._started = self._logged = time.monotonic()
        self._live: RichProgress | None = None
        self._task: TaskID | None = None
        if enabled and self.console.is_terminal:
            self._live = RichProgress(
                SpinnerColumn(finished_text="[green]done"),
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[count]}"),  # N/M for phases that count, blank for the others
                TimeRemainingColumn(elapsed_when_finished=True),  # a finished bar shows its time, not an ETA
                console=self.console,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        self.set_phase("crawl")

    def set_phase(self, phase: str) -> None:
        if phase == self.phase:
            return
        self._end_phase()
        self.phase, self.done, self.total = phase, 0, 0
        self._started = self._logged = time.monotonic()
        if self._live is not None:
            counted = PHASES.get(phase, "")
            self._task = self._live.add_task(f"{self.label} {phase}{' ' + counted if counted else ''}", total=None, count="")
        elif self.enabled:
            self.console.print(f"{self.label}: {phase} ...", soft_wrap=True)

    def on_pages(self, done: int, known: int) -> None:
        self._update(done, known)

    def on_chunks(self, done: int, total: int) -> None:
        self.set_phase("embed")
        self._update(done, total)

    def _update(self, done: int, total: int) -> None:
        self.done, self.total = done, max(total, done)
        if self._live is not None and self._task is not None:
            # The crawl finds pages as it goes: the total is what is known so far, shown as such.
            self._live.update(self._task, completed=done, total=self.total or None, count=f"{done}/{self.total}")
        elif self.enabled and time.monotonic() - self._logged >= self.log_every_s:
            self._logged = time.monotonic()
            self.console.print(f"{self.label}: {self.phase} {PHASES.get(self.phase or '', '')} {done}/{self.total}", soft_wrap=True)

    def _end_phase(self, failed: bool = False) -> None:
        if self.phase is None:
            return
        seconds = time.monotonic() - self._started
        counted = PHASES.get(self.phase, "")
        if self._live is not None and self._task is not None:
            if failed:  # the bar stays where it stopped
                self._live.update(self._task, description=f"{self._live.tasks[-1].description} [red]failed")
            else:
                finished = max(self.total, self.done, 1)  # a phase without a count fills its bar
                self._live.update(self._task, completed=finished, total=finished)
        elif self.enabled:
            count = f" {self.done}/{self.total} {counted}" if counted else ""
            outcome = "failed after" if failed else "done in"
            self.console.print(f"{self.label}: {self.phase}{count} {outcome} {seconds:.1f}s", soft_wrap=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close(failed=exc_type is not None)

    def close(self, failed: bool = False) -> None:
        if self.phase is None:
            return
        self._end_phase(failed)
        self.phase = None
        if self._live is not None:
            self._live.stop()
