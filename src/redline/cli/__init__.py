"""The `redline` command: the same operations the MCP tools call, for a person at a terminal.

Each subcommand family lives in its own module with a `register(subparsers)`
function; a handler returns the exit code. A RedlineError becomes one line on
stderr and exit code 2, never a traceback.
"""

import argparse
import sys
from collections.abc import Sequence

from redline import __version__
from redline.cli import ab, baseline, campaign, demo, frontier, known_good, ladder, mcp, parse_log, predict
from redline.cli.words import cli_words
from redline.errors import RedlineError

FAMILIES = [demo, parse_log, ladder, campaign, ab, baseline, known_good, frontier, predict, mcp]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="redline", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"redline {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for family in FAMILIES:
        family.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except RedlineError as exc:
        print(f"redline: error: {cli_words(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("redline: interrupted", file=sys.stderr)
        return 130
