"""What commands read from a user: trace files and folders, labels beside them and model
files, with progress shown on long reads and a :class:`~trustlayer.errors.UsageError`
that says what to give instead."""
from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from trustlayer.errors import ModelError, TraceError, UsageError
from trustlayer.model import Model
from trustlayer.observe.trace_events import Run
from trustlayer.observe.traces import read_run, trace_files


def progress(items: Sequence, description: str, quiet: bool) -> Any:
    """`items` with a progress bar on standard error: only on a terminal (a bar redrawn
    with carriage returns garbles a CI log), never when quiet or for one item."""
    shown = not quiet and len(items) > 1 and sys.stderr.isatty()
    return tqdm(items, desc=description, unit="run", disable=not shown, file=sys.stderr,
                leave=False)


def _trace_files(paths: Sequence[str | Path]) -> list[Path]:
    files = list(trace_files(paths))
    if not files:
        raise UsageError(f"no .jsonl trace files in {', '.join(map(str, paths))}")
    return files


def read_traces(paths: Sequence[str | Path], description: str, quiet: bool) -> list[Run]:
    """Every run in the trace files and folders `paths`."""
    return [read_run(f) for f in progress(_trace_files(paths), description, quiet)]


def readable_runs(paths: Sequence[str | Path], quiet: bool
                  ) -> tuple[list[Run], list[TraceError]]:
    """The runs of the trace files under `paths` that read, and the error of each file
    that does not: one corrupt file in a folder leaves the others to judge. A path that
    does not exist is still an error of the whole call."""
    runs, problems = [], []
    for path in progress(_trace_files(paths), "reading", quiet):
        try:
            runs.append(read_run(path))
        except TraceError as exc:
            problems.append(exc)
    return runs, problems


def load_model(path: str, usage: str = "trustlayer validate MODEL.json RUN...",
               verify: bool = True) -> Model:
    """:meth:`Model.load`, with the `usage` of the command that was run when a trace or a
    folder of traces came first; unless not `verify`, a file edited since `learn` wrote it
    is refused (``--unsigned-ok``)."""
    given = Path(path)
    if given.is_dir() or given.suffix == ".jsonl":
        what = "a folder" if given.is_dir() else "a trace file"
        raise UsageError(f"{path}: is {what}, not a model file; the model comes first: "
                         f"{usage}")
    try:
        return Model.load(path, verify=verify)
    except ModelError:
        raise
    except (ValueError, RecursionError) as exc:  # a number of over 4,300 digits, deep nesting
        raise ModelError(f"{path}: not a JSON model file ({str(exc)[:120]})") from None


def task_runs(model: Model, paths: Sequence[str], quiet: bool) -> list[Run]:
    """The runs under `paths`, each checked to be of the model's task."""
    return of_task(model, read_traces(paths, "reading", quiet))


def of_task(model: Model, runs: list[Run]) -> list[Run]:
    """`runs`, each checked to be of the model's task."""
    for run in runs:
        if run.task != model.task:
            raise UsageError(f"{run.source}: run of task '{run.task}', model is for "
                             f"'{model.task}'")
    return runs
