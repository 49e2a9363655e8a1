"""A one-line progress bar on stderr: pages crawled, chunks embedded, ETA."""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 24


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


class Progress:
    def __init__(self, label: str, enabled: bool = True, stream: TextIO | None = None, min_interval_s: float = 0.2):
        self.label = label
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.min_interval_s = min_interval_s
        self.pages = (0, 0)
        self.chunks = (0, 0)
        self.phase = "crawl"
        self._phase_started = time.monotonic()
        self._phase_start_done = 0
        self._baseline_pending = False
        self._last = 0.0

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        self._phase_started = time.monotonic()
        self._phase_start_done = self.chunks[0] if phase == "embed" else self.pages[0]
        self._baseline_pending = phase == "embed"
        self._draw(force=True)

    def on_pages(self, done: int, known: int) -> None:
        self.pages = (done, known)
        self._draw()

    def on_chunks(self, done: int, total: int) -> None:
        if self._baseline_pending:
            # The first report is the cache hits, all at once; the ETA is for the rest.
            self._baseline_pending = False
            self._phase_start_done = done
            self._phase_started = time.monotonic()
        self.chunks = (done, total)
        self._draw()

    def _eta(self) -> str:
        done, total = self.chunks if self.phase == "embed" else self.pages
        elapsed = time.monotonic() - self._phase_started
        progressed = done - self._phase_start_done
        if progressed <= 0 or total <= done:
            return "--"
        return _clock(elapsed / progressed * (total - done))

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self.min_interval_s:
            return
        self._last = now
        done, total = self.chunks if self.phase == "embed" else self.pages
        filled = int(BAR_WIDTH * done / total) if total else 0
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        line = (
            f"\r{self.label} {self.phase:<7} [{bar}] pages {self.pages[0]}/{self.pages[1]}"
            f"  chunks {self.chunks[0]}/{self.chunks[1]}  ETA {self._eta()}   "
        )
        self.stream.write(line)
        self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.enabled:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
