"""trustlayer beside the baselines on labelled runs: scores, timings and their tables.

Used by ``trustlayer eval``: one task (a model and a labelled directory) or several (a
directory holding one folder per task, each with ``train/`` and ``test/``), where every
task is learned from its ``train/`` runs and judged on its ``test/`` runs. Failure is the
positive class; the cause score counts ``agent_error`` among the failures caught (see
:mod:`trustlayer.score.scores`).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustlayer.compare.llm import judge_for
from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn
from trustlayer.model import Model
from trustlayer.observe.trace_events import Run
from trustlayer.observe.traces import load_labels, read_runs, read_training
from trustlayer.score.baselines import BASELINES, NOT_APPLICABLE
from trustlayer.score.scores import Scores
from trustlayer.settings import Settings

TRUSTLAYER = "trustlayer"


@dataclass
class JudgeScore:
    """How one judge did on one set of labelled runs."""

    judge: str
    scores: Scores = field(default_factory=Scores)
    seconds: float = 0.0
    judged: int = 0
    gives_causes: bool = False

    @property
    def applicable(self) -> bool:
        return self.judged > 0

    def row(self) -> dict[str, Any]:
        """The judge's line of the table (None where not applicable)."""
        summary = self.scores.summary() if self.applicable else {}
        return {"judge": self.judge, "runs": self.judged,
                **{key: summary.get(key) for key in ("accuracy", "precision", "recall", "f1")},
                "cause_f1": summary.get("cause_f1") if self.gives_causes else None,
                "seconds": round(self.seconds, 3),
                "confusion": summary.get("confusion")}


@dataclass
class TaskResult:
    """One task's evaluation: where it came from, how long learning took, each judge."""

    name: str
    task: str
    train_runs: int
    test_runs: int
    learn_seconds: float | None
    judges: list[JudgeScore]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "task": self.task, "train_runs": self.train_runs,
                "test_runs": self.test_runs, "learn_seconds": None if self.learn_seconds is None
                else round(self.learn_seconds, 3), "judges": [j.row() for j in self.judges]}


def compare(model: Model, references: Sequence[Run], runs: Sequence[Run],
            labels: dict[str, dict[str, Any]], baselines: bool = True) -> list[JudgeScore]:
    """Judge every labelled run with trustlayer and (if `baselines`) each baseline."""
    labelled = [run for run in runs if run.run_id in labels]
    llm = judge_for(model.settings.llm)
    ours = JudgeScore(TRUSTLAYER, gives_causes=True)
    start = time.perf_counter()
    for run in labelled:
        status = judge_run(model, run, llm)
        ours.scores.add(run.run_id, labels[run.run_id], status.verdict or "fail", status.cause,
                        status.reason)
        ours.judged += 1
    ours.seconds = time.perf_counter() - start
    results = [ours]
    for name, baseline in (BASELINES.items() if baselines else ()):
        result = JudgeScore(name)
        start = time.perf_counter()
        for run in labelled:
            verdict, cause = baseline(model, references, run)
            if verdict == NOT_APPLICABLE:
                continue
            result.scores.add(run.run_id, labels[run.run_id], verdict, cause, None)
            result.judged += 1
        result.seconds = time.perf_counter() - start
        results.append(result)
    return results


def is_task_dir(path: Path) -> bool:
    """A task folder holds ``train/`` and ``test/``."""
    return (path / "train").is_dir() and (path / "test").is_dir()


def task_dirs(root: str | Path, depth: int = 2) -> list[Path]:
    """`root` itself when it is a task folder, else the task folders below it, up to
    `depth` levels down (``traces/coding-dev2/<task>``), sorted."""
    root = Path(root)
    if is_task_dir(root):
        return [root]
    if depth == 0 or not root.is_dir():
        return []
    return [task for child in sorted(root.iterdir()) if child.is_dir()
            for task in task_dirs(child, depth - 1)]


def evaluate_task(folder: Path, baselines: bool = True,
                  settings: Settings | None = None) -> TaskResult:
    """Learn the task of `folder`/train, judge `folder`/test, score every judge."""
    train, causes = read_training([folder / "train"])
    start = time.perf_counter()
    model = learn(train, settings, causes=causes)
    learned = time.perf_counter() - start
    tests, labels = read_runs([folder / "test"]), load_labels(folder / "test")
    references = [run for run in train if run.outcome != "failure"]
    return TaskResult(folder.name, model.task, len(train), len(tests), learned,
                      compare(model, references, tests, labels, baselines))


def overall(results: Sequence[TaskResult]) -> list[JudgeScore]:
    """Every judge over all tasks: confusion counts pooled, times added."""
    pooled: dict[str, JudgeScore] = {}
    for result in results:
        for judge in result.judges:
            total = pooled.setdefault(judge.judge, JudgeScore(judge.judge,
                                                              gives_causes=judge.gives_causes))
            for name in ("tp", "fp", "fn", "tn", "cause_tp", "cause_fp", "cause_fn"):
                setattr(total.scores, name, getattr(total.scores, name)
                        + getattr(judge.scores, name))
            total.scores.wrong += judge.scores.wrong
            total.seconds += judge.seconds
            total.judged += judge.judged
    return list(pooled.values())


COLUMNS = ("judge", "runs", "accuracy", "precision", "recall", "F1", "cause F1", "time")


def _cells(judge: JudgeScore) -> list[str]:
    row = judge.row()

    def number(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"
    cause = "—" if not judge.gives_causes else number(row["cause_f1"])
    if not judge.applicable:
        cause = "n/a"
    per_run = f" ({1000 * judge.seconds / judge.judged:.0f} ms/run)" if judge.judged else ""
    return [judge.judge, str(judge.judged), number(row["accuracy"]), number(row["precision"]),
            number(row["recall"]), number(row["f1"]), cause, f"{judge.seconds:.2f} s{per_run}"]


def text_table(judges: Sequence[JudgeScore]) -> str:
    """Aligned plain-text table, one judge a line."""
    rows = [list(COLUMNS)] + [_cells(j) for j in judges]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
                     for row in rows)


def markdown_table(judges: Sequence[JudgeScore]) -> str:
    """GitHub-flavoured Markdown table, one judge a row."""
    lines = ["| " + " | ".join(COLUMNS) + " |",
             "|" + "|".join([" --- "] + [" ---: "] * (len(COLUMNS) - 1)) + "|"]
    lines += ["| " + " | ".join(_cells(j)) + " |" for j in judges]
    return "\n".join(lines)


NOTE = ("Failure is the positive class. Cause F1: agent_error vs product_bug among the "
        "failures caught; '—' where the judge cannot tell causes; n/a where it has nothing "
        "to compare (no screenshots).")


def task_heading(result: TaskResult) -> str:
    learned = "" if result.learn_seconds is None else \
        f", learned from {result.train_runs} runs in {result.learn_seconds:.2f} s"
    return f"{result.name} (task '{result.task}'{learned}; {result.test_runs} test runs)"


def render(results: Sequence[TaskResult], table: Callable[[Sequence[JudgeScore]], str],
           heading: Callable[[str], str]) -> str:
    """Every task's table, then the overall one when there are several tasks."""
    parts = []
    for result in results:
        parts += [heading(task_heading(result)), table(result.judges), ""]
    if len(results) > 1:
        parts += [heading(f"overall ({len(results)} tasks, "
                          f"{sum(r.test_runs for r in results)} test runs)"),
                  table(overall(results)), ""]
    parts.append(NOTE)
    return "\n".join(parts)


def render_text(results: Sequence[TaskResult]) -> str:
    return render(results, text_table, lambda title: title)


def render_markdown(results: Sequence[TaskResult]) -> str:
    return "# trustlayer and the baselines\n\n" + render(
        results, markdown_table, lambda title: f"## {title}\n") + "\n"
