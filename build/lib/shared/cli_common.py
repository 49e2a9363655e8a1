"""What every `taxnav` subcommand shares: the exit codes, the common options and the settings
built from them. Here, below every package's cli module, so none of them imports taxnav.cli."""

from __future__ import annotations

import argparse
from enum import IntEnum
from pathlib import Path

from shared.config import Settings


class Exit(IntEnum):
    """Exit codes every subcommand uses (listed in ``taxnav --help`` and the README)."""

    OK = 0  # done; for `ask`: answered
    ERROR = 1  # failed: unreachable source or Redis, a failed ingest, a model error
    USAGE = 2  # bad arguments, unknown manual, no index yet (argparse also exits 2)
    REFUSED = 3  # `ask` only: the question got a typed refusal (printed with its evidence)


def common_options() -> argparse.ArgumentParser:
    """Options every subcommand takes (passed to each ``register`` as ``parents``)."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--data-dir",
        default=None,
        help="directory holding all state (env TAXNAV_DATA_DIR, default ./data)",
    )
    return parent


def settings_from(args: argparse.Namespace) -> Settings:
    """The environment's settings with the command line's options over them."""
    data_dir = getattr(args, "data_dir", None)  # `bench ingest` has no --data-dir
    return Settings(data_dir=Path(data_dir)) if data_dir else Settings()
