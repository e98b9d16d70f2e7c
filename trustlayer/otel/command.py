"""``trustlayer import otel FILE|DIR... -o RUNS/``: telemetry exports into trace runs."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from trustlayer.errors import EXIT_OK


def cmd_import_otel(args: argparse.Namespace) -> int:
    from trustlayer.otel.convert import convert  # the CLI starts without it
    from trustlayer.runner.conversions import write_runs

    runs = convert(args.paths, args.task, args.outcome)
    write_runs(runs, args.output)
    events = sum(map(len, runs.values()))
    print(f"imported {len(runs)} runs ({events} events) -> {args.output}", file=sys.stderr)
    return EXIT_OK


def register(commands: Any) -> None:
    """Add ``import otel`` and ``import chat`` to the subcommands `commands` of the
    ``trustlayer`` parser (the entry point ``trustlayer.commands`` names this function
    for the whole ``import`` group)."""
    from trustlayer.chat.command import add_parser as add_chat

    importers = commands.add_parser("import", help="turn other formats into runs").\
        add_subparsers(dest="format", required=True)
    add_chat(importers)
    p = importers.add_parser(
        "otel", help="OpenTelemetry traces (OTLP/JSON files, as the Collector's file "
        "exporter writes them; GenAI semantic conventions or OpenInference spans)")
    p.add_argument("paths", nargs="+", help="OTLP/JSON files or directories of them")
    p.add_argument("-o", "--output", required=True, help="trace directory to write runs to")
    p.add_argument("--task", help="the task of every run (default: the agent's name)")
    p.add_argument("--outcome", choices=("success", "failure", "unknown"), default="unknown",
                   help="ground truth of runs whose agent span has no trustlayer.outcome")
    p.set_defaults(func=cmd_import_otel)
