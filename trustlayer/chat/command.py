"""``trustlayer import chat FILE|DIR... -o RUNS/``: chat-completions logs into trace runs."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from trustlayer.errors import EXIT_OK, UsageError


def patterns(text: str) -> list[str]:
    """The fnmatch patterns of ``--read-only`` (comma-separated).

    >>> patterns("get_*, search_*,")
    ['get_*', 'search_*']
    """
    return [p.strip() for p in text.split(",") if p.strip()]


def cmd_import_chat(args: argparse.Namespace) -> int:
    from trustlayer.chat.convert import convert  # the CLI starts without it
    from trustlayer.runner.conversions import write_runs

    read_only = None if args.read_only is None else patterns(args.read_only)
    if read_only == []:
        raise UsageError("--read-only: give the tools that only read, e.g. 'get_*,search_*'")
    runs = convert(args.paths, args.task, read_only, args.outcome)
    write_runs(runs, args.output)
    events = sum(map(len, runs.values()))
    print(f"imported {len(runs)} runs ({events} events) -> {args.output}", file=sys.stderr)
    return EXIT_OK


def add_parser(importers: Any) -> None:
    """Add ``chat`` to the ``trustlayer import`` subcommands `importers`."""
    p = importers.add_parser(
        "chat", help="OpenAI chat-completions message lists (role, content, tool_calls, "
        "tool_call_id): one run per list; tau-bench trajectories too")
    p.add_argument("paths", nargs="+", metavar="FILE|DIR", help=".json or .jsonl chat logs, "
                   "or folders of them")
    p.add_argument("-o", "--output", required=True, metavar="RUNS",
                   help="trace directory to write runs to")
    p.add_argument("--task", help="the task of every run (default: the file's stem)")
    p.add_argument("--read-only", metavar="PATTERNS", help="the tools that only read, as "
                   "comma-separated fnmatch patterns ('get_*,search_*'): their calls get "
                   "read_only true, the others false (without it: unknown)")
    p.add_argument("--outcome", choices=("success", "failure", "unknown"), default="unknown",
                   help="ground truth of runs whose record has no reward")
    p.set_defaults(func=cmd_import_chat)
