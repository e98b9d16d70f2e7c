"""Online refinement of a task's model, River-style: ``Refiner.learn_one(run)``.

A run whose end event says ``outcome: success`` (the runner's own oracle; the validator's
verdict only when ``use_verdicts`` is set) is merged into its task's training runs and the
model is learned again from them with the core's :func:`trustlayer.learn.learner.learn`, which
recomputes the merged graph and its dominators. The result is a new version with its diff
(:func:`stream.registry.milestone_diff`) in the change log.

Guard: one mislabelled run must not silently delete a milestone. A run that bypasses a
milestone of the current model (judged by the model, the milestone is never matched) is held
back until at least K successful runs (``drop_after``, default the model's
``settings.drop_after_bypasses``, 2) bypassed that same milestone; then they are merged
together. A new version that would drop a milestone fewer than K runs bypassed (learning
regrouped states) is refused and its runs are held.

Nothing here needs a broker; the worker calls :meth:`Refiner.learn_one` and publishes the
returned version.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from trustlayer.compare.equivalence import judge
from trustlayer.learn.learner import LearnError, learn
from trustlayer.model import Model
from trustlayer.observe.steps import run_steps
from trustlayer.observe.traces import Run

from stream.registry import ModelRegistry, milestone_diff

log = logging.getLogger(__name__)


def is_success(outcome: str | None, verdict: str | None = None, use_verdicts: bool = False) -> bool:
    """Is a finished run a success to learn from? Its end event's `outcome` says so; the
    validator's own `verdict` counts only with `use_verdicts` and no known outcome.

    >>> is_success("success"), is_success("unknown", "pass"), is_success(None, "pass", True)
    (True, False, True)
    """
    if outcome == "success":
        return True
    return use_verdicts and outcome in (None, "unknown") and verdict == "pass"


def bypassed_milestones(model: Model, run: Run) -> list[str]:
    """Names of `model`'s milestones that no state of `run` matches, wherever it occurs
    (the matcher's own ``matched`` stops at the first milestone out of order)."""
    seen = {sid for step in run_steps(run, model.settings) for sid in model.essential
            if judge(model, step.fingerprint, sid).same}
    return [model.name(sid) for sid in model.essential if sid not in seen]


@dataclass
class Refinement:
    """What :meth:`Refiner.learn_one` did with one run.

    Attributes
    ----------
    model : the new version to publish (already numbered, change log extended), or None.
    merged : runs merged into the training runs now (this one and held runs it unlocked).
    held : runs held back now (this one, or runs a refused version would have merged).
    bypasses : milestone -> how many successful runs (held ones and this) bypass it.
    diff : ``{"added": [...], "dropped": [...]}`` of the new version against the old.
    reason : one line saying what happened.
    """

    task: str
    run_id: str
    reason: str
    model: Model | None = None
    merged: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    bypasses: dict[str, int] = field(default_factory=dict)
    diff: dict[str, list[str]] = field(default_factory=lambda: {"added": [], "dropped": []})


class Refiner:
    """Merges successful runs into their task's model one at a time.

    Parameters
    ----------
    registry : where the models, the training runs and the held runs live.
    drop_after : K, the bypasses needed before a milestone may be dropped (default: the
        model's ``settings.drop_after_bypasses``).
    use_verdicts : also take runs without a known outcome that the validator passed (off:
        the validator would confirm its own blind spots).
    learner : the learning function (``trustlayer.learn.learner.learn``).
    """

    def __init__(self, registry: ModelRegistry, drop_after: int | None = None,
                 use_verdicts: bool = False, learner: Callable[..., Model] = learn):
        self.registry, self.drop_after = registry, drop_after
        self.use_verdicts, self.learner = use_verdicts, learner

    def wants(self, outcome: str | None, verdict: str | None = None) -> bool:
        """Is a run with this end-event `outcome` (and validator `verdict`) a success?"""
        return is_success(outcome, verdict, self.use_verdicts)

    def learn_one(self, run: Run, verdict: str | None = None) -> Refinement:
        """Merge one finished run if it is a success; return what was done."""
        task, registry = run.task, self.registry
        current = registry.latest(task)
        if current is None:
            return Refinement(task, run.run_id, f"no model for task {task!r}")
        if not self.wants(run.outcome, verdict):
            return Refinement(task, run.run_id, f"not a successful run (outcome {run.outcome})")
        training = registry.runs.get(task, {})
        pending = registry.pending.setdefault(task, {})
        if task not in registry.seeded:
            return Refinement(task, run.run_id, "no training runs of this task are known "
                              "(give the worker --train DIR): refinement needs them")
        if run.run_id in training or run.run_id in pending:
            return Refinement(task, run.run_id, "already merged or held")

        threshold = self.drop_after or current.settings.drop_after_bypasses
        candidates = {**pending, run.run_id: run}
        bypassed = {rid: bypassed_milestones(current, r) for rid, r in candidates.items()}
        bypasses: dict[str, int] = {}
        for names in bypassed.values():
            for name in names:
                bypasses[name] = bypasses.get(name, 0) + 1
        merged = [rid for rid, names in bypassed.items()
                  if all(bypasses[name] >= threshold for name in names)]
        if run.run_id not in merged:
            pending[run.run_id] = run
            short = [f"'{n}' ({bypasses[n]} of {threshold})" for n in bypassed[run.run_id]
                     if bypasses[n] < threshold]
            return Refinement(task, run.run_id, "held: it bypasses " + ", ".join(short) +
                              " successful runs needed to drop a milestone",
                              held=[run.run_id], bypasses=bypasses)

        runs = {**training, **{rid: candidates[rid] for rid in merged}}
        try:
            learned = self.learner(list(runs.values()), current.settings,
                                   causes=registry.causes.get(task), version=current.version + 1)
        except LearnError as exc:
            pending[run.run_id] = run
            return Refinement(task, run.run_id, f"held: learning failed ({exc})",
                              held=[run.run_id], bypasses=bypasses)
        diff = milestone_diff(current, learned)
        unexplained = [name for name in diff["dropped"] if bypasses.get(name, 0) < threshold]
        if unexplained:
            for rid in merged:
                pending[rid] = candidates[rid]
            return Refinement(task, run.run_id, "held: the new version would drop " +
                              ", ".join(f"'{n}'" for n in unexplained) + f" which fewer than "
                              f"{threshold} successful runs bypassed", held=merged,
                              bypasses=bypasses, diff=diff)

        for rid in merged:
            training[rid] = candidates[rid]
            pending.pop(rid, None)
        model = registry.derive(learned, "refined", parent=current, runs=sorted(merged),
                                bypasses=bypasses or None)
        log.info("task %s: version %d from %d runs (+%s), added %s, dropped %s", task,
                 model.version, len(runs), ", ".join(merged), diff["added"], diff["dropped"])
        return Refinement(task, run.run_id, f"merged into version {model.version}", model=model,
                          merged=sorted(merged), bypasses=bypasses, diff=diff)
