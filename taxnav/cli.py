"""`taxnav`: the product command line. Each subcommand lives beside the code it drives;
this module only collects them (each module exposes ``register(subparsers)``)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

SUBCOMMAND_MODULES = (
    "ingest_worker.cli",  # taxnav ingest
    "services.cli",  # taxnav ask
    "taxnav.chat",  # taxnav chat (and ask --conversation)
    "gateway.cli",  # taxnav serve
    "taxnav.evaluation.cli",  # taxnav eval
    "taxnav.bench",  # taxnav bench ingest|query
)


def common_options() -> argparse.ArgumentParser:
    """Options every subcommand takes (pass as ``parents=[common_options()]``)."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--data-dir",
        default=None,
        help="directory holding all state (env TAXNAV_DATA_DIR, default ./data)",
    )
    return parent


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="taxnav", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "data_dir", None):
        # Settings read the environment, so one assignment reaches every stage and worker.
        os.environ["TAXNAV_DATA_DIR"] = args.data_dir
        from shared.config import get_settings

        get_settings.cache_clear()
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
