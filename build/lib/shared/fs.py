"""Serving from a data directory that may be read-only (a mounted volume, a CI sandbox): whether
a directory takes new files, and a private temp directory to use instead."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path


def writable(directory: Path) -> bool:
    """Whether a file can be made in ``directory`` (made first if missing). Tried, not read off
    the permission bits: those say nothing of a read-only mount, nor of what root may do."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            return True
    except OSError:
        return False


def process_temp_dir(prefix: str) -> Path:
    """A directory of this process's own (mode 0700), removed when it exits."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path
