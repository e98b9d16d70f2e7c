"""Online refinement of a task's model, River-style: ``Refiner.learn_one(run)``.

Only a trusted success is learned from: a run whose ``end`` says ``outcome: success`` and
carries a valid attestation of a known runner (:mod:`stream.models.attest`: an HMAC over the end
and the chain of every earlier event); the validator's verdict counts only with
``use_verdicts``, and only for runs the model passes anyway. It is merged into its task's
training runs (less those a rollback quarantined, :meth:`ModelRegistry.training`) and the
model is learned again from them with the core's :func:`trustlayer.learn.learner.learn`. The
result is a new version with its diff (:func:`stream.models.registry.milestone_diff`) in the
change log.

Guard: no one runner, honest but wrong or holding a stolen key, changes what the model
passes. A run that would (:func:`changes`: it bypasses a milestone of the current model, the
current model fails it, or it would lengthen a deadline, :func:`stream.models.gate.slower`)
is held back until the attested successes of K independent runners (``drop_after``, default
:data:`CORROBORATION`; runners are independent when their keys differ, see
:func:`stream.models.attest.shared_keys`) show that same change. A new version that changes
anything else that decides a verdict (:func:`stream.models.gate.gated_changes`: deadlines,
the end-of-run silence, end evidence, negative milestones, required words), or drops a
milestone fewer than K runners bypassed, is refused and its runs are held, unless the runs
merged into it come from K independent runners. A version that changes what the model passes
is tried in shadow (:mod:`stream.judging.shadow`) and its runs join the training runs only
when it is promoted.

Nothing here needs a broker; the worker calls :meth:`Refiner.learn_one` and publishes the
returned version.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from stream.models.attest import run_attested_by, shared_keys
from stream.models.gate import gated_changes, slower
from stream.models.registry import ModelRegistry, milestone_diff
from trustlayer.compare.equivalence import judge
from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import LearnError, learn
from trustlayer.model import Model
from trustlayer.observe.steps import run_steps
from trustlayer.observe.trace_events import Run

log = logging.getLogger(__name__)


#: Independent runners whose attested successes must agree on a change by default.
CORROBORATION = 3


def is_success(outcome: str | None, verdict: str | None = None, use_verdicts: bool = False,
               runner: str | None = None) -> bool:
    """Is a finished run a success to learn from? Its end event's `outcome` says so when a
    known `runner` attested it; the validator's own `verdict` counts only with
    `use_verdicts` and no known outcome.

    >>> is_success("success"), is_success("success", runner="r1")
    (False, True)
    >>> is_success("unknown", "pass"), is_success(None, "pass", True)
    (False, True)
    """
    if outcome == "success":
        return runner is not None
    return use_verdicts and outcome in (None, "unknown") and verdict == "pass"


def bypassed_milestones(model: Model, run: Run) -> list[str]:
    """Names of `model`'s milestones that no state of `run` matches, wherever it occurs
    (the matcher's own ``matched`` stops at the first milestone out of order)."""
    seen = {sid for step in run_steps(run, model.settings) for sid in model.essential
            if judge(model, step.fingerprint, sid).same}
    return [model.name(sid) for sid in model.essential if sid not in seen]


def changes(model: Model, run: Run) -> list[str]:
    """What merging the successful `run` would change in what `model` passes: each
    milestone it bypasses (by name), each deadline it would lengthen, and ``fails: ...``
    when the model fails it."""
    found = bypassed_milestones(model, run) + slower(model, run)
    status = judge_run(model, run)
    if status.verdict != "pass":
        found.append("fails: " + (f"missing {', '.join(status.missing)}" if status.missing
                                  else status.reason or "no reason"))
    return found


@dataclass
class Refinement:
    """What :meth:`Refiner.learn_one` did with one run.

    Attributes
    ----------
    model : the new version to publish (already numbered, change log extended), or None.
    merged : runs merged into the training runs now (this one and held runs it unlocked).
    held : runs held back now (this one, runs a refused version would have merged, or
        those of a version to try in shadow).
    bypasses : change (see :func:`changes`) -> how many independent runners' attested
        successes (held ones and this) show it.
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
    drop_after : K, the independent runners needed for a change (default: the larger of
        :data:`CORROBORATION` and the model's ``settings.drop_after_bypasses``).
    use_verdicts : also take runs without a known outcome that the validator passed (off:
        the validator would confirm its own blind spots).
    learner : the learning function (``trustlayer.learn.learner.learn``).
    runner_keys : the runners whose attestations are trusted, and their keys (distinct:
        runners sharing a key are one, and are refused with a ValueError naming them).
    """

    def __init__(self, registry: ModelRegistry, drop_after: int | None = None,
                 use_verdicts: bool = False, learner: Callable[..., Model] = learn,
                 runner_keys: dict[str, bytes] | None = None):
        self.registry, self.drop_after = registry, drop_after
        self.use_verdicts, self.learner = use_verdicts, learner
        self.runner_keys = runner_keys or {}
        if shared := shared_keys(self.runner_keys):
            raise ValueError(shared)

    def runner(self, run: Run) -> str | None:
        """The known runner that attests `run`'s end, if any."""
        return run_attested_by([event.raw for event in run.events], self.runner_keys)

    def learn_one(self, run: Run, verdict: str | None = None) -> Refinement:
        """Merge one finished run if it is a success; return what was done."""
        task, registry = run.task, self.registry
        current = registry.latest(task)
        if current is None:
            return Refinement(task, run.run_id, f"no model for task {task!r}")
        refused = self._refused(run, verdict)
        if refused is not None:
            return refused
        pending = registry.pending.setdefault(task, {})
        on_trial = registry.shadow(task)
        if on_trial is not None:
            pending[run.run_id] = run
            return Refinement(task, run.run_id, f"held: version {on_trial.version} is on "
                              "trial in shadow", held=[run.run_id])
        threshold = self.drop_after or max(CORROBORATION, current.settings.drop_after_bypasses)
        quarantined = registry.quarantined(task)
        candidates = {rid: r for rid, r in {**pending, run.run_id: run}.items()
                      if rid not in quarantined}
        changed = {rid: changes(current, r) for rid, r in candidates.items()}
        runners: dict[str, set[str]] = {}
        for rid, found in changed.items():
            runner = self.runner(candidates[rid])
            for change in found:
                runners.setdefault(change, set()).update([runner] if runner else [])
        bypasses = {change: len(names) for change, names in runners.items()}
        merged = {rid: candidates[rid] for rid, found in changed.items()
                  if all(bypasses[change] >= threshold for change in found)}
        if run.run_id not in merged:
            pending[run.run_id] = run
            short = [f"'{c}' ({bypasses[c]} of {threshold})" for c in changed[run.run_id]
                     if bypasses[c] < threshold]
            return Refinement(task, run.run_id, "held: it changes " + ", ".join(short) +
                              " independent runners needed to agree", held=[run.run_id],
                              bypasses=bypasses)
        outcome = Refinement(task, run.run_id, "", bypasses=bypasses)
        return self._relearn(current, merged, any(changed[rid] for rid in merged), threshold,
                             outcome)

    def _refused(self, run: Run, verdict: str | None) -> Refinement | None:
        """Why `run` is not even weighed, if it is not."""
        task, registry = run.task, self.registry
        if not is_success(run.outcome, verdict, self.use_verdicts, self.runner(run)):
            return Refinement(task, run.run_id, f"not a trusted success (outcome "
                              f"{run.outcome}, attested by no known runner)")
        if task not in registry.seeded:
            return Refinement(task, run.run_id, "no training runs of this task are known "
                              "(give the worker --train DIR): refinement needs them")
        if run.run_id in registry.quarantined(task):
            return Refinement(task, run.run_id, "quarantined by the rollback of version "
                              f"{registry.quarantined(task)[run.run_id]} (release it with "
                              "`trustlayer models release`)")
        if run.run_id in registry.runs.get(task, {}) or \
                run.run_id in registry.pending.get(task, {}):
            return Refinement(task, run.run_id, "already merged or held")
        return None

    def _relearn(self, current: Model, merged: dict[str, Run], changing: bool,
                 threshold: int, outcome: Refinement) -> Refinement:
        """Learn the next version from the training runs and `merged`; refuse it (holding
        `merged`) when it changes more than K independent runners vouch for, try it in
        shadow when it changes what the model passes, else use it."""
        task, registry = current.task, self.registry
        pending = registry.pending.setdefault(task, {})
        runs = {**registry.training(task), **merged}
        try:
            learned = self.learner(list(runs.values()), current.settings,
                                   causes=registry.causes.get(task), version=current.version + 1)
        except LearnError as exc:
            pending[outcome.run_id] = merged[outcome.run_id]
            outcome.reason, outcome.held = f"held: learning failed ({exc})", [outcome.run_id]
            return outcome
        outcome.diff = milestone_diff(current, learned)
        vouching = len({self.runner(r) for r in merged.values()} - {None})
        unexplained = [f"drops '{name}'" for name in outcome.diff["dropped"]
                       if outcome.bypasses.get(name, 0) < threshold]
        gated = gated_changes(current, learned)
        if unexplained or gated and vouching < threshold:
            pending.update(merged)
            outcome.held = sorted(merged)
            outcome.reason = ("held: the new version " + "; ".join(unexplained + gated) +
                              f", which fewer than {threshold} independent runners "
                              f"vouch for ({vouching})")
            return outcome
        if changing or gated:  # tried in shadow first (stream.judging.shadow)
            pending.update(merged)
            outcome.model = registry.derive(learned, "refined", parent=current,
                                            runs=sorted(merged), bypasses=outcome.bypasses,
                                            shadow=True, changes=gated or None)
            outcome.held = sorted(merged)
            outcome.reason = f"version {outcome.model.version} to try in shadow"
            return outcome
        registry.runs.setdefault(task, {}).update(merged)
        for rid in merged:
            pending.pop(rid, None)
        outcome.model = registry.derive(learned, "refined", parent=current, runs=sorted(merged),
                                        bypasses=outcome.bypasses or None)
        outcome.merged = sorted(merged)
        outcome.reason = f"merged into version {outcome.model.version}"
        log.info("task %s: version %d from %d runs (+%s), added %s, dropped %s", task,
                 outcome.model.version, len(runs), ", ".join(merged), outcome.diff["added"],
                 outcome.diff["dropped"])
        return outcome
