"""``trustlayer eval``: verdicts scored against labels. A model on a labelled folder gives
its confusion counts and wrong verdicts; a folder of tasks (each learned from its train/ and
judged on its test/), ``--baselines`` or ``--markdown`` score every judge side by side
(:mod:`trustlayer.score.evaluation`)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from trustlayer.cli_options import unsigned_ok
from trustlayer.errors import EXIT_OK, UsageError

# (what judging and scoring need is imported when the command runs: `trustlayer --help`
# builds this command's parser and must stay quick)
USAGE = "trustlayer eval MODEL.json DIR"


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``eval`` to the ``trustlayer`` commands."""
    p = sub.add_parser("eval", help="score verdicts against DIR/labels.json")
    p.add_argument("model", metavar="MODEL.json", help="model file, or a folder of them (each "
                   "run judged by its task's model); or, alone, a folder of tasks (each with "
                   "train/ and test/) to learn and judge one by one")
    p.add_argument("directory", nargs="?", metavar="DIR",
                   help="labelled runs: .jsonl files and their labels.json")
    p.add_argument("--json", action="store_true", help="print the scores as JSON")
    unsigned_ok(p)
    p.add_argument("--baselines", action="store_true",
                   help="score self-report, record-and-replay, visual regression, trajectory "
                   "superset and final-state check beside trustlayer")
    p.add_argument("--reference", metavar="TRAIN_DIR",
                   help="successful runs the baselines compare with (default DIR/../train)")
    p.add_argument("--markdown", metavar="FILE", help="also write the table as Markdown")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Score a model's verdicts on a labelled folder, or compare the judges."""
    if args.baselines or args.markdown or args.directory is None:
        return _compare_judges(args)
    from trustlayer.observe.traces import load_labels
    from trustlayer.score.scores import score

    verdicts = _verdicts(args)  # first: a model and a folder swapped is said as such
    summary = score(verdicts, load_labels(args.directory)).summary()
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


def _verdicts(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The verdicts on the labelled folder: by the model, or by each run's task's model
    when MODEL.json is a folder of models (runs without one named on standard error)."""
    from trustlayer.inputs import load_model
    from trustlayer.judge.batch import judge_paths
    from trustlayer.judge.fleet import is_models_dir, judge_fleet, read_fleet

    if not is_models_dir(args.model):
        return judge_paths(load_model(args.model, USAGE, verify=not args.unsigned_ok),
                           [args.directory], args.quiet)
    fleet = read_fleet(args.model, [args.directory], args.quiet, verify=not args.unsigned_ok)
    for line in fleet.missing_lines(args.model):
        print(f"trustlayer eval: {line}", file=sys.stderr)
    return judge_fleet(fleet, args.quiet)


def _compare_judges(args: argparse.Namespace) -> int:
    """``trustlayer eval`` with ``--baselines``, ``--markdown`` or a folder of tasks: every
    judge (trustlayer and the baselines) scored per task."""
    from trustlayer.inputs import load_model
    from trustlayer.observe.trace_events import Run
    from trustlayer.observe.traces import load_labels, read_runs
    from trustlayer.score.evaluation import (
        TaskResult,
        compare,
        evaluate_task,
        render_markdown,
        render_text,
        task_dirs,
    )

    if args.directory is None:
        folders = task_dirs(args.model)
        if not folders:
            raise UsageError(f"{args.model}: no task folders (each with train/ and test/); "
                             "or give MODEL.json DIR")
        results = []
        for folder in folders:
            if not args.quiet:
                print(f"evaluating {folder} ...", file=sys.stderr)
            results.append(evaluate_task(folder, args.baselines))
    else:
        model = load_model(args.model, USAGE, verify=not args.unsigned_ok)
        references: list[Run] = []
        if args.baselines:
            train = Path(args.reference) if args.reference \
                else Path(args.directory).parent / "train"
            if not train.is_dir():
                raise UsageError(f"{train}: no reference runs for the baselines; give "
                                 "--reference TRAIN_DIR (the successful runs the model was "
                                 "learned from)")
            references = [r for r in read_runs([train]) if r.outcome != "failure"]
        runs = read_runs([args.directory])
        results = [TaskResult(Path(args.directory).name, model.task, len(model.training_runs),
                              len(runs), None, compare(model, references, runs,
                                                       load_labels(args.directory),
                                                       args.baselines))]
    if args.json:
        print(json.dumps([r.to_json() for r in results], indent=1))
    else:
        print(render_text(results))
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(render_markdown(results), encoding="utf-8")
        print(f"markdown table -> {args.markdown}", file=sys.stderr)
    return EXIT_OK
