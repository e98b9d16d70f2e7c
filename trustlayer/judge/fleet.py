"""A fleet's runs judged in one command: a folder of models (one ``*.json`` per task, as
``trustlayer learn -o`` writes them) and runs of many tasks, each run judged by the model
of its own task (``trustlayer validate MODELS_DIR RUN...``; ``report`` and ``eval`` alike).
Runs of a task without a model are kept apart and named, never judged by another task's
model."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustlayer.compare.llm import judge_for
from trustlayer.errors import UsageError
from trustlayer.inputs import load_model, progress, read_traces
from trustlayer.judge.matcher import judge_run
from trustlayer.judge.status import VALIDATE_FIELDS
from trustlayer.model import Model
from trustlayer.observe.trace_events import Run


def is_models_dir(path: str | Path) -> bool:
    """Whether `path` is a folder of model files (``*.json``, no trace files): a folder of
    traces given first is the usual mix-up, which :func:`load_model` names as such."""
    folder = Path(path)
    return folder.is_dir() and any(folder.glob("*.json")) and not any(folder.glob("*.jsonl"))


def load_models(directory: str | Path, verify: bool = True) -> dict[str, Model]:
    """Every model in `directory` by its task (each checked against its digest unless not
    `verify`); two models of one task are an error (which one judges would be a guess)."""
    models: dict[str, Model] = {}
    where: dict[str, Path] = {}
    for path in sorted(Path(directory).glob("*.json")):
        if path.name == "labels.json":  # a labelled folder's labels are no model
            continue
        model = load_model(str(path), verify=verify)
        if model.task in models:
            raise UsageError(f"{path}: a second model of task '{model.task}' (the first is "
                             f"{where[model.task]}); keep one model per task in {directory}")
        models[model.task], where[model.task] = model, path
    if not models:
        raise UsageError(f"{directory}: no model files (*.json from `trustlayer learn`)")
    return models


@dataclass
class Fleet:
    """Runs sorted by the model that judges them, and the runs no model is for."""

    batches: list[tuple[Model, list[Run]]] = field(default_factory=list)
    unmodelled: dict[str, list[Run]] = field(default_factory=dict)

    @property
    def runs(self) -> list[Run]:
        """Every run a model judges, batch by batch."""
        return [run for _, runs in self.batches for run in runs]

    def missing_lines(self, directory: str | Path) -> list[str]:
        """One line per task whose runs had no model, naming the runs."""
        lines = []
        for task, runs in sorted(self.unmodelled.items()):
            names = ", ".join(run.source for run in runs[:3]) + (", ..." if len(runs) > 3 else "")
            lines.append(f"no model for task '{task}' in {directory}: {len(runs)} "
                         f"run{'s' if len(runs) > 1 else ''} not judged ({names})")
        return lines


def sort_runs(models: dict[str, Model], runs: Sequence[Run]) -> Fleet:
    """`runs` grouped by the model of their task (in the order of the tasks' names)."""
    fleet = Fleet()
    by_task: dict[str, list[Run]] = {}
    for run in runs:
        by_task.setdefault(run.task, []).append(run)
    for task, task_runs in sorted(by_task.items()):
        if task in models:
            fleet.batches.append((models[task], task_runs))
        else:
            fleet.unmodelled[task] = task_runs
    return fleet


def read_fleet(directory: str | Path, paths: Sequence[str], quiet: bool,
               verify: bool = True) -> Fleet:
    """The models of `directory` and the runs under `paths`, sorted by task; an error
    when no run has a model (nothing would be judged)."""
    models = load_models(directory, verify)
    fleet = sort_runs(models, read_traces(paths, "reading", quiet))
    if not fleet.batches:
        raise UsageError(f"{directory} holds no model for the tasks of the runs given "
                         f"({', '.join(sorted(fleet.unmodelled))}); its models are for "
                         f"{', '.join(sorted(models))}")
    return fleet


def judge_fleet(fleet: Fleet, quiet: bool) -> list[dict[str, Any]]:
    """Verdict records of every run a model judges, each by its task's model."""
    records: list[dict[str, Any]] = []
    for model, runs in fleet.batches:
        llm = judge_for(model.settings.llm)
        records.extend(judge_run(model, run, llm).to_json(VALIDATE_FIELDS)
                       for run in progress(runs, f"validating {model.task}", quiet))
    return records
