"""Check a model against its own training runs, as a user of ``learn`` would want to.

Two figures, both judged without the exact-screenshot tier (the bytes of a training
screenshot say nothing of a new run's, which may be re-encoded, in another theme or zoom):

* **own runs**: every training run must pass the model learned from it. Anything less is
  a learner bug, never the runs' fault.
* **leave-one-out**: each training run judged by the model learned from the others, an
  estimate of how often a new successful run would be failed (the false-failure rate),
  with the runs that would fail and why, and the milestones they would miss (*doubted*:
  what a few runs shared may be their habit). A low figure asks for more varied
  successful runs.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from trustlayer.judge.matcher import judge_run
from trustlayer.judge.status import Status
from trustlayer.learn.learner import learn
from trustlayer.model import Model
from trustlayer.observe.trace_events import Run
from trustlayer.settings import Settings

Progress = Callable[[Iterable], Iterable]


@dataclass
class CheckReport:
    """Training runs that fail their own model, and (when checked) their leave-one-out
    model, each as ``(run_id, reason)``; the learner's warnings."""

    runs: int
    own_failures: list[tuple[str, str]] = field(default_factory=list)
    loo_failures: list[tuple[str, str]] | None = None
    warnings: list[str] = field(default_factory=list)
    #: milestones a run judged by the model of the others would miss, with how many would
    doubted: dict[str, int] = field(default_factory=dict)

    @property
    def own_pass_rate(self) -> float:
        return 1.0 - len(self.own_failures) / self.runs if self.runs else 1.0

    @property
    def loo_pass_rate(self) -> float | None:
        if self.loo_failures is None:
            return None
        return 1.0 - len(self.loo_failures) / self.runs if self.runs else 1.0

    def lines(self) -> list[str]:
        """The report for a person, one line each."""
        out = [f"self-check: {self.runs - len(self.own_failures)}/{self.runs} training runs "
               f"pass their own model ({self.own_pass_rate:.0%}; screenshots compared without "
               "their bytes)"]
        out += [f"  LEARNER BUG: {run_id} fails its own model: {reason}"
                for run_id, reason in self.own_failures]
        rate = self.loo_pass_rate
        if self.loo_failures is not None and rate is not None:
            passed = self.runs - len(self.loo_failures)
            out.append(f"leave-one-out: {passed}/{self.runs} training runs pass the model "
                       f"learned from the others ({rate:.0%}; estimated "
                       f"false-failure rate {1 - rate:.0%})")
            out += [f"  would fail: {run_id}: {reason}" for run_id, reason in self.loo_failures]
            if self.loo_failures:
                out.append("  add more varied successful runs (the routes, looks and habits "
                           "these runs alone show)")
            out += [f"  doubted milestone: '{name}' (missed by {count} of {self.runs} runs "
                    "judged by the others' model): may be a habit of these runs, not the task"
                    for name, count in sorted(self.doubted.items(), key=lambda kv: -kv[1])]
        out += [f"warning: {warning}" for warning in self.warnings]
        return out


def without_image_bytes(model: Model) -> Model:
    """A copy of `model` that cannot match a screenshot by its exact bytes."""
    copy = Model.from_json(model.to_json())
    for state in [*copy.states.values(), *([copy.ending] if copy.ending else [])]:
        state.image_shas = []
    return copy


def failed(model: Model, runs: Sequence[Run]) -> list[Status]:
    """The statuses of the runs that `model` fails, judged without image bytes."""
    blind = without_image_bytes(model)
    return [status for run in runs if (status := judge_run(blind, run)).verdict != "pass"]


def failures(model: Model, runs: Sequence[Run]) -> list[tuple[str, str]]:
    """``(run_id, reason)`` of the runs that `model` fails, judged without image bytes."""
    return [(status.run_id, status.reason or "") for status in failed(model, runs)]


def check(model: Model, runs: Sequence[Run], loo: bool = True,
          progress: Progress | None = None) -> CheckReport:
    """Judge the successful `runs` that `model` was learned from against it and, with
    `loo`, each against the model learned from the others (with `model`'s settings)."""
    successes = [run for run in runs if run.outcome != "failure"]
    report = CheckReport(len(successes), failures(model, successes),
                         warnings=list(model.warnings))
    if loo and len(successes) > 1:
        progress = progress or (lambda items: items)
        settings = Settings.from_json(model.settings.to_json())
        statuses = [status for run in progress(successes)
                    for status in failed(learn([r for r in successes if r is not run],
                                               settings), [run])]
        report.loo_failures = [(status.run_id, status.reason or "") for status in statuses]
        report.doubted = dict(Counter(status.missing[0] for status in statuses
                                      if status.missing))
    return report
