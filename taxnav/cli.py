"""`taxnav`: the product command line. Each subcommand lives beside the code it drives;
this module only collects them (each module exposes ``register(subparsers, parents)``) and
hands each command the settings built from its options."""

from __future__ import annotations

import argparse
import importlib.util
import sys

import gateway.cli
import ingest_worker.cli
import taxnav.ask
import taxnav.bench
import taxnav.chat
import taxnav.evaluation.cli
import taxnav.evaluation.ranker
from shared import __version__
from shared.cli_common import Exit, common_options, settings_from

SUBCOMMAND_MODULES = (
    ingest_worker.cli,  # taxnav ingest
    taxnav.ask,  # taxnav ask
    taxnav.chat,  # taxnav chat (and ask --conversation)
    gateway.cli,  # taxnav serve
    taxnav.evaluation.cli,  # taxnav eval
    taxnav.bench,  # taxnav bench ingest|query|conversation|load|scale|screens
    taxnav.evaluation.ranker,  # taxnav ranker train|cv
)


DESCRIPTION = """Tax Policy Navigator: citation-grounded answers over HMRC's Employment Income Manual.

Every sentence of an answer cites a manual paragraph and carries its verification verdict;
a question the manual cannot answer gets a typed refusal (out_of_scope, low_coverage,
conflict, stale, malformed) with its evidence."""

EPILOG = f"""first steps:
  taxnav ingest --source ../shared/corpus      build the index (EIM) from a local corpus copy
  taxnav ask "How much can my employer pay me per mile for my own car?"
  taxnav serve --port 8000                     the HTTP API, the web page and /docs

exit codes:
  {Exit.OK}  done (ask: answered)
  {Exit.ERROR}  failed (source, Redis or model unreachable; ingest failed)
  {Exit.USAGE}  usage error: bad arguments, unknown manual, no index yet
  {Exit.REFUSED}  ask: the question was refused (category and evidence printed)

State lives in one data directory (--data-dir, env TAXNAV_DATA_DIR, default ./data).
Settings are TAXNAV_* environment variables (see .env.example).
`taxnav COMMAND --help` describes each command."""

# Subcommands whose code needs an optional extra of pyproject.toml: (extra, modules it brings).
EXTRAS = {"eval": ("eval", ("matplotlib", "haystack")), "ranker": ("eval", ("sklearn",))}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="taxnav", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    parents = [common_options()]
    for module in SUBCOMMAND_MODULES:
        module.register(subparsers, parents)
    for listed in subparsers._choices_actions:  # `taxnav X --help` says at least what `taxnav --help` says of X
        command = subparsers.choices[listed.dest]
        if not command.description and listed.help:
            command.description = listed.help[0].upper() + listed.help[1:] + "."
    return parser


def missing_extra(command: str) -> str | None:
    """Why ``command`` cannot run in this install (an extra not installed), or None."""
    extra, modules = EXTRAS.get(command, (None, ()))
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    if not absent:
        return None
    return f"taxnav {command} needs the '{extra}' extra ({', '.join(absent)} not installed): pip install 'taxnav[{extra}]' (make setup does)"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    problem = missing_extra(args.command)
    if problem:
        print(problem, file=sys.stderr)
        return Exit.USAGE
    return int(args.func(args, settings_from(args)) or 0)


if __name__ == "__main__":
    sys.exit(main())
