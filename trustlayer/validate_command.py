"""``trustlayer validate``: judge runs by a model (or a folder of models, one per task) and
write the verdicts in every form asked for. Heavy modules are imported by the code that
needs them, so the command line starts at once."""
from __future__ import annotations

import argparse
import functools
import shutil
import sys
import time
from typing import TYPE_CHECKING, Any

from trustlayer.errors import EXIT_FAIL, EXIT_OK, EXIT_UNDELIVERED, TraceError
from trustlayer.show.escape import printable

if TYPE_CHECKING:
    from trustlayer.model import Model
    from trustlayer.observe.trace_events import Run

# how each command that reads a model is called: its error when the arguments are swapped
MODEL_USAGE = {"check": "MODEL.json RUN...", "validate": "MODEL.json RUN...",
               "show": "MODEL.json",
               "report": "MODEL.json [RUN...] -o report.html"}


def command_model(args: argparse.Namespace) -> Model:
    """The model file of `args`, with the usage of the command that was run on a mix-up."""
    from trustlayer.inputs import load_model
    return load_model(args.model, f"trustlayer {args.command} {MODEL_USAGE[args.command]}",
                      verify=not args.unsigned_ok)


def _plain_line(record: dict[str, Any]) -> str:
    """A verdict as a line of a text file (no colour)."""
    from trustlayer.show.terminal import Painter, verdict_text
    return verdict_text(record, Painter(False))


def _readable(model: Model, args: argparse.Namespace) -> list[Run]:
    """The runs under ``args.paths`` that read (of the model's task), each file that does
    not said in one line; with ``--strict``, or when none reads, a :class:`TraceError`."""
    from trustlayer.inputs import of_task, readable_runs, task_runs

    if args.strict:
        return task_runs(model, args.paths, args.quiet)
    runs, problems = readable_runs(args.paths, args.quiet)
    if problems and not runs:
        for problem in problems[1:]:
            print(f"trustlayer {args.command}: error: {printable(problem)}", file=sys.stderr)
        raise problems[0]  # nothing to judge: exit 2
    for problem in problems:
        print(f"trustlayer {args.command}: error: {printable(problem)} (not judged; the other runs "
              "are)", file=sys.stderr)
    return of_task(model, runs)


def _judged(model: Model, args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[str]]:
    """The verdict records of the runs under ``args.paths`` and the paths judged: files
    that do not read are left out (see :func:`_readable`), the others judged."""
    from trustlayer.judge.batch import judge_paths

    try:  # the common case reads every file once
        return judge_paths(model, args.paths, args.quiet), list(args.paths)
    except TraceError:
        if args.strict:
            raise
    sources = [run.source for run in _readable(model, args)]
    return judge_paths(model, sources, args.quiet), sources


def _validate_one(model: Model, args: argparse.Namespace
                  ) -> tuple[list[dict[str, Any]], list[str]]:
    """The verdict records of the runs under ``args.paths`` by `model`, and the paths judged
    (with ``--report``, the report written from the same judgement)."""
    from trustlayer.inputs import task_runs

    if not args.report:
        return _judged(model, args)
    from trustlayer.judge.explain import analyse_runs  # its analysis holds the verdicts
    from trustlayer.judge.status import VALIDATE_FIELDS
    from trustlayer.show.html import write_report
    runs = _readable(model, args)
    views = analyse_runs(model, runs)
    references = task_runs(model, [args.train], args.quiet) if args.train else []
    write_report(model, views, args.report, references)
    return [view.status.to_json(VALIDATE_FIELDS) for view in views], [r.source for r in runs]


def cmd_validate(args: argparse.Namespace) -> int:
    """Judge the runs once; write the verdicts in every form asked for (standard output or
    ``-o``, ``--junit``, ``--markdown``, ``--report``, ``--github-output``); close with
    pytest's summary line (on standard error when standard output holds a format)."""
    from trustlayer.inputs import task_runs
    from trustlayer.judge.fleet import is_models_dir
    from trustlayer.show import ci as outputs
    from trustlayer.show.terminal import Painter, summary_line, verdict_text, wants_colour

    started = time.perf_counter()
    if args.otel_verdicts:
        from trustlayer.show.delivery import check_endpoint
        check_endpoint(args.otel_verdicts)  # before judging: a typo costs no judgement
    if is_models_dir(args.model):  # a fleet: each run judged by its task's model
        from trustlayer.fleet_commands import validate_fleet
        records, task, runs_judged = validate_fleet(args)
    else:
        model = command_model(args)
        records, judged = _validate_one(model, args)
        task, runs_judged = model.task, functools.partial(task_runs, model, judged, True)
    plain = args.format == "text" and not args.output
    summary_to = sys.stdout if plain else sys.stderr
    paint = Painter(wants_colour(summary_to))
    if not plain:
        outputs.write(records, task, args.format, args.output, _plain_line)
    else:
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
        for record in records:
            print(verdict_text(record, paint, args.verbose, width))
    for fmt, path in (("junit", args.junit), ("markdown", args.markdown)):
        if path:
            outputs.write(records, task, fmt, path, _plain_line)
    undelivered = False
    if args.otel_verdicts:
        from trustlayer.show.delivery import send_verdicts
        undelivered = not send_verdicts(records, runs_judged(), args.otel_verdicts)
    if args.github_output:
        with open(args.github_output, "a", encoding="utf-8") as out:
            out.writelines(f"{name}={count}\n" for name, count in outputs.counts(records).items())
    if plain or not args.quiet:
        print(summary_line(records, time.perf_counter() - started, paint), file=summary_to)
    if undelivered:
        return EXIT_UNDELIVERED
    return EXIT_FAIL if outputs.failed(records, args.fail_on) else EXIT_OK
