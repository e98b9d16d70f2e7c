"""The `trustlayer` command line: learn models from successful runs, judge runs, report.

Exit codes: 0 all runs pass, 1 some run fails, 2 bad input or usage (with the file and line).
Results go to standard output, progress and diagnostics to standard error. Other packages
add commands through the ``trustlayer.commands`` entry-point group: each entry is a
function ``register(subparsers)`` (the streaming service uses it). The judging stack is
imported by the command that needs it, so ``--version`` and ``--help`` answer at once.
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import os
import sys
import textwrap
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path
from typing import TYPE_CHECKING

from trustlayer.cli_options import unsigned_ok
from trustlayer.cli_table import Command, add_commands, option
from trustlayer.errors import (
    EXIT_BAD_INPUT,
    EXIT_CODES,
    EXIT_FAIL,
    EXIT_OK,
    ModelError,
    TraceError,
    UnjudgeableEvent,
    UsageError,
)
from trustlayer.judge.reasons import COVERAGE
from trustlayer.show.escape import escape_log_records, printable
from trustlayer.validate_command import cmd_validate
from trustlayer.validate_command import command_model as _model

if TYPE_CHECKING:
    from trustlayer.model import Model
    from trustlayer.observe.trace_events import Run
    from trustlayer.score.selfcheck import CheckReport

DISTRIBUTION = "trustlayer-judge"  # the name on the package index; `trustlayer` is taken
INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it
FEW_RUNS = 5  # learn reports leave-one-out itself with so few runs (habits look like milestones)
def cmd_learn(args: argparse.Namespace) -> int:
    from trustlayer.inputs import progress, read_traces
    from trustlayer.learn.learner import learn
    from trustlayer.observe.traces import read_training
    from trustlayer.settings import Settings

    folder = Path(args.output).parent
    if not folder.is_dir():  # said before learning, not after
        raise UsageError(f"-o {args.output}: no folder {folder} to write it in")
    runs, causes = read_training(args.paths,
                                 lambda paths: read_traces(paths, "reading", args.quiet))
    settings = Settings()
    if args.llm_base_url:
        settings.llm.enabled, settings.llm.base_url = True, args.llm_base_url
    background = read_traces(args.background, "background", args.quiet) if args.background else []
    model = learn(runs, settings, causes=causes,
                  progress=lambda items: progress(list(items), "fingerprinting", args.quiet),
                  background=background)
    model.save(args.output)
    print(f"learned '{model.task}' from {len(model.training_runs)} successful runs: "
          f"{len(model.states)} states, {len(model.essential)} essential, "
          f"{len(model.negative)} negative -> {args.output}")
    _print_check(model, runs, args.loo or len(model.training_runs) <= FEW_RUNS, args.quiet)
    return EXIT_OK


def _print_check(model: Model, runs: Sequence[Run], loo: bool, quiet: bool) -> CheckReport:
    from trustlayer.inputs import progress
    from trustlayer.score.selfcheck import check

    report = check(model, runs, loo,
                   progress=lambda items: progress(list(items), "leave-one-out", quiet))
    print("\n".join(report.lines()))
    return report


def cmd_check(args: argparse.Namespace) -> int:
    from trustlayer.inputs import task_runs

    model = _model(args)
    report = _print_check(model, task_runs(model, args.paths, args.quiet), not args.no_loo,
                          args.quiet)
    return EXIT_FAIL if report.own_failures or report.loo_failures else EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    model = _model(args)
    if args.png:
        from trustlayer.show.png import save_png
        save_png(model, args.png)
    print(f"task {model.task}  version {model.version}  trained on "
          f"{len(model.training_runs)} runs  {len(model.states)} states")
    if model.effects is not None:
        from trustlayer.show.spine import spine_lines
        print("\n".join(spine_lines(model.effects)))
        return EXIT_OK
    print("essential chain:")
    for number, sid in enumerate(model.essential, 1):
        reach = model.timing["time_to_reach"].get(sid, {})
        soft = "  (interruption: may be skipped)" if sid in model.soft else ""
        print(f"  {number}. {model.name(sid)}  [reached by {reach.get('max', 0):.1f} s]{soft}")
    if model.convergence:
        print("convergence points: " + ", ".join(model.name(s) for s in model.convergence))
    print("optional states:")
    for sid in model.optional:
        print(f"  - {model.name(sid)}")
    print("negative milestones:" if model.negative else "negative milestones: none")
    for sid in model.negative:
        print(f"  ! {model.name(sid)}  (cause {model.states[sid].negative_cause})")
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    """``trustlayer report MODEL.json [RUN...] -o report.html``."""
    from trustlayer.inputs import task_runs
    from trustlayer.judge.explain import analyse_runs
    from trustlayer.judge.fleet import is_models_dir
    from trustlayer.show.html import write_report

    if is_models_dir(args.model):
        from trustlayer.fleet_commands import report_fleet
        return report_fleet(args)
    model = _model(args)
    runs = task_runs(model, args.runs, args.quiet) if args.runs else []
    references = task_runs(model, [args.train], args.quiet) if args.train else []
    views = analyse_runs(model, runs)
    write_report(model, views, args.output, references)
    if not runs:
        print(f"report of the model only (no runs given: add RUN... to judge runs) -> "
              f"{args.output}")
        return EXIT_OK
    failed = sum(view.status.verdict != "pass" for view in views)
    print(f"report of {len(runs)} runs ({failed} failed, {len(runs) - failed} passed) -> "
          f"{args.output}")
    return EXIT_OK


def _version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


LEARN = Command("learn", cmd_learn, [
    option("paths", nargs="+", metavar="RUN", help="successful runs: .jsonl files or folders of "
           "them (failed runs labelled in labels.json add negative milestones)"),
    option("-o", "--output", required=True, metavar="MODEL.json", help="model file to write"),
    option("--llm-base-url", metavar="URL",
           help="enable the LLM tier with this OpenAI-compatible URL"),
    option("--loo", action="store_true", help="also judge each training run by the model "
           "learned from the others (leave-one-out: one learning per run; always with "
           f"{FEW_RUNS} runs or fewer)"),
    option("--background", nargs="+", metavar="PATH", help="runs of other tasks of the same "
           "application (.jsonl files or directories): the layout they all show is no "
           "milestone of this task"),
], dict(help="learn a model from successful runs"))

CHECK = Command("check", cmd_check, [
    option("model", metavar="MODEL.json", help="the model file"),
    unsigned_ok,
    option("paths", nargs="+", metavar="RUN", help="the model's training runs (.jsonl files or "
           "folders of them)"),
    option("--no-loo", action="store_true", help="skip leave-one-out"),
], dict(help="judge a model's training runs against it (must all pass) and each against the "
        "model learned from the others"))

VALIDATE = Command("validate", cmd_validate, [
    option("model", metavar="MODEL.json", help="the model file (from `learn`), or a folder of "
           "them: each run is judged by the model of its task"),
    unsigned_ok,
    option("paths", nargs="+", metavar="RUN", help="runs to judge: .jsonl files or folders of "
           "them"),
    option("--format", choices=["text", "json", "junit", "markdown"], default="text",
           help="text (default): a line per run; json: a JSON object per line; junit: one test "
           "case per run; markdown: a summary table for $GITHUB_STEP_SUMMARY"),
    option("-o", "--output", metavar="FILE", help="write the verdicts to this file"),
    option("-v", "--verbose", action="store_true", help="text: under each verdict, the decision "
           "path behind its reason (json holds it as `details`)"),
    option("--junit", metavar="FILE", help="also write JUnit XML to FILE"),
    option("--markdown", metavar="FILE", help="also write the Markdown summary to FILE"),
    option("--report", metavar="FILE", help="also write the HTML report to FILE (the same "
           "judgement, not a second one)"),
    option("--train", metavar="DIR", help="with --report: the model's training runs, to show "
           "the expected states as they really looked"),
    option("--github-output", metavar="FILE", help="append passed=, failed=, product-bugs=, "
           "agent-errors= lines to FILE ($GITHUB_OUTPUT)"),
    option("--fail-on", choices=["any", "product_bug"], default="any",
           help="exit 1 on any failed run (default), or only on product bugs"),
    option("--otel-verdicts", metavar="URL", help="also send each verdict as a "
           "gen_ai.evaluation.result event to this OTLP/HTTP logs endpoint"),
    option("--strict", action="store_true", help="a trace file that does not read stops the "
           "command (exit 2); by default it is reported in one line and the other runs are "
           "judged (exit 2 only when none reads)"),
], dict(help="judge runs against a model",
        description="Judge runs against a model: a verdict, a coverage and a reason per run.\n\n"
        + textwrap.fill(COVERAGE[0].upper() + COVERAGE[1:] + ".", 78)))

SHOW = Command("show", cmd_show, [
    option("model", metavar="MODEL.json", help="the model file"),
    unsigned_ok,
    option("--png", metavar="FILE", help="also draw the model's graph as a PNG"),
], dict(help="print a model's milestones"))

REPORT = Command("report", cmd_report, [
    option("model", metavar="MODEL.json", help="the model file, or a folder of them (then -o is "
           "a folder: one TASK.html per task with runs)"),
    unsigned_ok,
    option("runs", nargs="*", metavar="RUN", help="runs to judge and show: .jsonl files or "
           "folders of them (none: the model only)"),
    option("-o", "--output", required=True, metavar="FILE", help="HTML file to write"),
    option("--train", metavar="DIR", help="the model's training runs: the expected states are "
           "shown as they really looked, not as stored thumbnails"),
], dict(help="write a self-contained HTML report of a model and runs"))


def build_parser() -> argparse.ArgumentParser:
    """The command line: the commands above, ``eval`` and those of installed plug-ins."""
    parser = argparse.ArgumentParser(prog="trustlayer", description=__doc__.splitlines()[0],
                                     epilog=EXIT_CODES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_commands(sub, [LEARN, CHECK, VALIDATE])
    from trustlayer.score import eval_command
    eval_command.register(sub)
    add_commands(sub, [SHOW, REPORT])
    _add_plugins(sub)
    for command in sub.choices.values():
        _allow_quiet_after(command)
    return parser


def _add_plugins(sub: argparse._SubParsersAction) -> None:
    """The commands of the ``trustlayer.commands`` entry points whose modules import."""
    # once each: a source tree installed under the old name too lists every entry twice
    for entry in {e.value: e for e in entry_points(group="trustlayer.commands")}.values():
        try:
            register = entry.load()
        except ImportError as exc:  # a plug-in whose own dependencies are missing
            logging.getLogger(__name__).debug("commands of %s unavailable: %s", entry.name, exc)
            continue
        register(sub)


def _allow_quiet_after(command: argparse.ArgumentParser) -> None:
    """``-q`` after the subcommand too (``trustlayer validate -q ...``), and the exit codes
    in each subcommand's ``--help``."""
    command.epilog = command.epilog or EXIT_CODES
    command.formatter_class = argparse.RawDescriptionHelpFormatter
    with contextlib.suppress(argparse.ArgumentError):  # the command has its own -q
        command.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                             help="no progress bars")


def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands of `parser`, by name."""
    return next(action.choices for action in parser._actions
                if isinstance(action, argparse._SubParsersAction))


def unknown_command(argv: Sequence[str], known: Sequence[str]) -> str | None:
    """The error for a mistyped command, with the commands it may have meant (as git says
    it), or None when the first word of `argv` that is no option is a command.

    >>> unknown_command(["-q", "valdate", "m.json"], ["learn", "validate"])
    "'valdate' is not a trustlayer command; did you mean 'validate'?"
    """
    word = next((arg for arg in argv if not arg.startswith("-")), None)
    if word is None or word in known:
        return None
    close = difflib.get_close_matches(word, known, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else \
        f"the commands are {', '.join(sorted(known))}"
    return f"{word!r} is not a trustlayer command; {hint}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; Ctrl-C at any moment ends it with exit code 130 and no traceback."""
    try:
        return _run(sys.argv[1:] if argv is None else list(argv))
    except KeyboardInterrupt:
        print(file=sys.stderr)  # the line ^C was typed on ends
        return INTERRUPTED
    except BrokenPipeError:  # the reader had what it wanted (`| head -1`): not an error
        # output still buffered would fail again when Python flushes it at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def _run(argv: list[str]) -> int:
    logging.basicConfig(level=logging.WARNING, format="trustlayer: %(message)s")
    escape_log_records()
    parser = build_parser()
    mistyped = unknown_command(argv, list(commands(parser)))
    if mistyped:
        parser.error(mistyped)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        raise  # not bad input: main ends quietly
    except (TraceError, ModelError, UsageError) as exc:  # may quote a trace: one line, escaped
        print(f"trustlayer {args.command}: error: {printable(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except UnjudgeableEvent as exc:  # an HTML report shows every screenshot it judged
        print(f"trustlayer: error: {printable(exc)}: the run cannot be shown", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:  # a path that cannot be read or written
        # a failed write names no file: it was the output (report -o /dev/full)
        where = exc.filename or getattr(args, "output", None) or getattr(args, "report", None)
        print(printable(f"trustlayer {args.command}: error: {where}: {exc.strerror or exc}"
                        if where else f"trustlayer {args.command}: error: {exc.strerror or exc}"),
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except ValueError as exc:  # LearnError, imported with the learner only
        from trustlayer.learn.learner import LearnError
        if not isinstance(exc, LearnError):
            raise
        print(f"trustlayer {args.command}: error: {printable(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
