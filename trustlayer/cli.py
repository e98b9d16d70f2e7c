"""The `trustlayer` command line: learn models from successful runs, judge runs, report.

Exit codes: 0 all runs pass, 1 some run fails, 2 bad input or usage (with the file and line).
Other packages add commands through the ``trustlayer.commands`` entry-point group: each
entry is a function ``register(subparsers)`` (the streaming service uses it).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from importlib.metadata import entry_points, version
from typing import Any, Sequence

from trustlayer.compare.llm import judge_for
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
from trustlayer.inputs import labels_near, load_model, progress, read_traces, task_runs
from trustlayer.judge.matcher import judge_run
from trustlayer.judge.status import VALIDATE_FIELDS
from trustlayer.learn.learner import LearnError, learn
from trustlayer.model import Model
from trustlayer.observe.traces import Run, load_labels
from trustlayer.score.scores import score
from trustlayer.score.selfcheck import CheckReport, check
from trustlayer.settings import Settings


def cmd_learn(args: argparse.Namespace) -> int:
    runs = read_traces(args.paths, "reading", args.quiet)
    labels = labels_near(args.paths)
    settings = Settings()
    if args.llm_base_url:
        settings.llm.enabled, settings.llm.base_url = True, args.llm_base_url
    model = learn(runs, settings, causes={rid: lab.get("cause") for rid, lab in labels.items()},
                  progress=lambda items: progress(list(items), "fingerprinting", args.quiet))
    model.save(args.output)
    print(f"learned '{model.task}' from {len(model.training_runs)} successful runs: "
          f"{len(model.states)} states, {len(model.essential)} essential, "
          f"{len(model.negative)} negative -> {args.output}", file=sys.stderr)
    _print_check(model, runs, args.loo, args.quiet)
    return EXIT_OK


def _print_check(model: Model, runs: Sequence[Run], loo: bool, quiet: bool) -> CheckReport:
    report = check(model, runs, loo,
                   progress=lambda items: progress(list(items), "leave-one-out", quiet))
    print("\n".join(report.lines()), file=sys.stderr)
    return report


def cmd_check(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    report = _print_check(model, task_runs(model, args.paths, args.quiet), not args.no_loo,
                          args.quiet)
    return EXIT_FAIL if report.own_failures or report.loo_failures else EXIT_OK


def judge_paths(model: Model, paths: Sequence[str], quiet: bool) -> list[dict[str, Any]]:
    """Verdict records for every run under `paths`."""
    llm = judge_for(model.settings.llm)
    runs = task_runs(model, paths, quiet)
    return [judge_run(model, run, llm).to_json(VALIDATE_FIELDS)
            for run in progress(runs, "validating", quiet)]


def _text_line(record: dict[str, Any]) -> str:
    if record["verdict"] == "pass":
        return f"PASS {record['run_id']}  coverage {record['coverage']:.0%}"
    return (f"FAIL {record['run_id']}  coverage {record['coverage']:.0%}  cause "
            f"{record['cause']}\n     {record['reason']}")


def cmd_validate(args: argparse.Namespace) -> int:
    """Judge the runs once; write the verdicts in every form asked for (standard output or
    ``-o``, ``--junit``, ``--markdown``, ``--report``, ``--github-output``)."""
    from trustlayer.show import ci as outputs
    model = load_model(args.model)
    if args.report:  # the report's analysis holds the verdicts: one judgement, not two
        from trustlayer.judge.explain import analyse_runs
        from trustlayer.show.html import write_report
        views = analyse_runs(model, task_runs(model, args.paths, args.quiet))
        records = [view.status.to_json(VALIDATE_FIELDS) for view in views]
        references = task_runs(model, [args.train], args.quiet) if args.train else []
        write_report(model, views, args.report, references)
    else:
        records = judge_paths(model, args.paths, args.quiet)
    if args.format in ("junit", "markdown") or args.output:
        outputs.write(records, model.task, args.format, args.output, _text_line)
    else:
        for record in records:
            print(json.dumps(record) if args.format == "json" else _text_line(record))
    for fmt, path in (("junit", args.junit), ("markdown", args.markdown)):
        if path:
            outputs.write(records, model.task, fmt, path, _text_line)
    if args.github_output:
        with open(args.github_output, "a", encoding="utf-8") as out:
            out.writelines(f"{name}={count}\n" for name, count in outputs.counts(records).items())
    return EXIT_FAIL if outputs.failed(records, args.fail_on) else EXIT_OK


def cmd_eval(args: argparse.Namespace) -> int:
    if args.baselines or args.markdown or args.directory is None:
        from trustlayer.score.evaluation import cmd_eval as compare_judges
        return compare_judges(args)
    model = load_model(args.model)
    labels = load_labels(args.directory)
    summary = score(judge_paths(model, [args.directory], args.quiet), labels).summary()
    if args.json:
        print(json.dumps(summary, indent=1))
        return EXIT_OK
    c = summary["confusion"]
    print(f"runs {summary['runs']}  accuracy {summary['accuracy']:.3f}  precision "
          f"{summary['precision']:.3f}  recall {summary['recall']:.3f}  F1 {summary['f1']:.3f}  "
          f"cause F1 {summary['cause_f1']:.3f}   (failure = positive)")
    print("                 said fail  said pass")
    print(f"  truly failed   {c['tp']:>9}  {c['fn']:>9}")
    print(f"  truly passed   {c['fp']:>9}  {c['tn']:>9}")
    for wrong in summary["wrong"]:
        print(f"  wrong: {wrong['run_id']} truth {wrong['truth']}/{wrong['truth_cause']} said "
              f"{wrong['verdict']}/{wrong['cause']}: {wrong['reason']}")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    if args.png:
        from trustlayer.show.png import save_png
        save_png(model, args.png)
    print(f"task {model.task}  version {model.version}  trained on "
          f"{len(model.training_runs)} runs  {len(model.states)} states")
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
    from trustlayer.judge.explain import analyse_runs
    from trustlayer.show.html import write_report
    model = load_model(args.model)
    runs = task_runs(model, args.runs, args.quiet) if args.runs else []
    references = task_runs(model, [args.train], args.quiet) if args.train else []
    write_report(model, analyse_runs(model, runs), args.output, references)
    print(f"report of {len(runs)} runs -> {args.output}", file=sys.stderr)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trustlayer", description=__doc__.splitlines()[0],
                                     epilog=EXIT_CODES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {version('trustlayer')}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("learn", help="learn a model from successful runs")
    p.add_argument("paths", nargs="+", help=".jsonl files or directories of them")
    p.add_argument("-o", "--output", required=True, help="model file to write")
    p.add_argument("--llm-base-url", help="enable the LLM tier with this OpenAI-compatible URL")
    p.add_argument("--loo", action="store_true", help="also judge each training run by the "
                   "model learned from the others (leave-one-out: one learning per run)")
    p.set_defaults(func=cmd_learn)
    p = sub.add_parser("check", help="judge a model's training runs against it (must all "
                       "pass) and each against the model learned from the others")
    p.add_argument("model")
    p.add_argument("paths", nargs="+", help="the model's training runs (.jsonl files or "
                   "directories of them)")
    p.add_argument("--no-loo", action="store_true", help="skip leave-one-out")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("validate", help="judge runs against a model")
    p.add_argument("model")
    p.add_argument("paths", nargs="+")
    p.add_argument("--format", choices=["text", "json", "junit", "markdown"], default="text",
                   help="junit: one test case per run; markdown: a summary table for "
                   "$GITHUB_STEP_SUMMARY")
    p.add_argument("-o", "--output", help="write the verdicts to this file")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    p.add_argument("--markdown", metavar="FILE", help="also write the Markdown summary to FILE")
    p.add_argument("--report", metavar="FILE", help="also write the HTML report to FILE (the "
                   "same judgement, not a second one)")
    p.add_argument("--train", metavar="DIR", help="with --report: the model's training runs, "
                   "to show the expected states as they really looked")
    p.add_argument("--github-output", metavar="FILE", help="append passed=, failed=, "
                   "product-bugs=, agent-errors= lines to FILE ($GITHUB_OUTPUT)")
    p.add_argument("--fail-on", choices=["any", "product_bug"], default="any",
                   help="exit 1 on any failed run (default), or only on product bugs")
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("eval", help="score verdicts against DIR/labels.json")
    p.add_argument("model", help="model file; or, alone, a folder of tasks (each with train/ "
                   "and test/) to learn and judge one by one")
    p.add_argument("directory", nargs="?")
    p.add_argument("--json", action="store_true")
    p.add_argument("--baselines", action="store_true",
                   help="score self-report, record-and-replay, visual regression, trajectory "
                   "superset and final-state check beside trustlayer")
    p.add_argument("--reference", metavar="TRAIN_DIR",
                   help="successful runs the baselines compare with (default DIR/../train)")
    p.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown")
    p.set_defaults(func=cmd_eval)
    p = sub.add_parser("show", help="print a model's milestones")
    p.add_argument("model")
    p.add_argument("--png", metavar="FILE", help="also draw the model's graph as a PNG")
    p.set_defaults(func=cmd_show)
    p = sub.add_parser("report", help="write a self-contained HTML report of a model and runs")
    p.add_argument("model")
    p.add_argument("runs", nargs="*", help=".jsonl files or directories of them")
    p.add_argument("-o", "--output", required=True, help="HTML file to write")
    p.add_argument("--train", metavar="DIR", help="the model's training runs: the expected "
                   "states are shown as they really looked, not as stored thumbnails")
    p.set_defaults(func=cmd_report)
    for entry in entry_points(group="trustlayer.commands"):
        try:
            register = entry.load()
        except ImportError as exc:  # e.g. installed without the [stream] extra
            logging.getLogger(__name__).debug("commands of %s unavailable: %s", entry.name, exc)
            continue
        register(sub)
    for command in sub.choices.values():
        _allow_quiet_after(command)
    return parser


def _allow_quiet_after(command: argparse.ArgumentParser) -> None:
    """``-q`` after the subcommand too (``trustlayer validate -q ...``), and the exit codes
    in each subcommand's ``--help``."""
    command.epilog = command.epilog or EXIT_CODES
    command.formatter_class = argparse.RawDescriptionHelpFormatter
    with contextlib.suppress(argparse.ArgumentError):  # the command has its own -q
        command.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                             help="no progress bars")


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="trustlayer: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (TraceError, ModelError, LearnError, UsageError) as exc:
        print(f"trustlayer: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except UnjudgeableEvent as exc:  # an HTML report shows every screenshot it judged
        print(f"trustlayer: error: {exc}: the run cannot be shown", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:  # a path that cannot be read or written
        # a failed write names no file: it was the output (report -o /dev/full)
        where = exc.filename or getattr(args, "output", None) or getattr(args, "report", None)
        print(f"trustlayer: error: {where}: {exc.strerror or exc}" if where else
              f"trustlayer: error: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
