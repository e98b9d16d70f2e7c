"""The file commands given a folder of models (``validate MODELS_DIR RUN...``, ``report
MODELS_DIR RUN... -o DIR``): the runs sorted by task, each judged by its task's model
(:mod:`trustlayer.judge.fleet`), and the runs no model is for named on standard error."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trustlayer.errors import EXIT_OK, UsageError
from trustlayer.judge.explain import analyse_runs
from trustlayer.judge.fleet import Fleet, judge_fleet, read_fleet
from trustlayer.observe.trace_events import Run
from trustlayer.show.html import write_report


def _read(args: argparse.Namespace, paths: list[str]) -> Fleet:
    fleet = read_fleet(args.model, paths, args.quiet, verify=not args.unsigned_ok)
    for line in fleet.missing_lines(args.model):
        print(f"trustlayer {args.command}: {line}", file=sys.stderr)
    return fleet


def validate_fleet(args: argparse.Namespace) -> tuple[list[dict[str, Any]], str,
                                                       Callable[[], list[Run]]]:
    """``validate MODELS_DIR RUN...``: the verdicts of the runs each model is for, the tasks
    judged and the runs; the runs no model is for are named on standard error."""
    if args.report:
        raise UsageError("--report shows one model: give MODEL.json, or write one report "
                         "per task with `trustlayer report MODELS_DIR RUN... -o DIR`")
    fleet = _read(args, args.paths)
    tasks = ", ".join(model.task for model, _ in fleet.batches)
    return judge_fleet(fleet, args.quiet), tasks, lambda: fleet.runs


def report_fleet(args: argparse.Namespace) -> int:
    """``report MODELS_DIR RUN... -o DIR``: one report per task with runs, ``DIR/TASK.html``."""
    if not args.runs or args.train:
        raise UsageError("a report per task needs runs and takes no --train: trustlayer "
                         "report MODELS_DIR RUN... -o DIR")
    fleet = _read(args, args.runs)
    Path(args.output).mkdir(parents=True, exist_ok=True)
    for model, runs in fleet.batches:
        path = Path(args.output) / f"{model.task}.html"
        views = analyse_runs(model, runs)
        write_report(model, views, str(path), [])
        failed = sum(view.status.verdict != "pass" for view in views)
        print(f"report of {len(runs)} runs of '{model.task}' ({failed} failed) -> {path}")
    return EXIT_OK
