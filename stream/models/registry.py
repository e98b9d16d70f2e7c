"""Models per task, with every version, a change log, and the runs they were learned from.

The streaming worker keeps one :class:`ModelRegistry`. It is filled from a directory of
model files at start and from the ``trustlayer.models`` topic (key: task; value: one model
version as JSON) while it runs: a new version is used for runs that start after it arrives,
runs already under way finish on the version they started with (:meth:`ModelRegistry.get`
with the run's version).

Every version carries the whole change log of its task in ``model.history``: one entry per
version with what made it (``learned``, ``loaded``, ``refined``, ``rollback``), its parent,
and the milestones added or dropped against the parent (:func:`milestone_diff`). A rollback
is a new version whose body is an old one (:meth:`ModelRegistry.rollback`), so versions only
grow and a worker never has to forget one.

A rollback quarantines the runs merged into the versions it undoes (its entry's
``quarantined``): no later refinement learns from them (:meth:`ModelRegistry.training`) until
a ``released`` version names them (:meth:`ModelRegistry.release`, ``trustlayer models
release``). The change log carries both, so every worker, restarted or not, agrees.

>>> registry = ModelRegistry()
>>> registry.tasks()
[]
"""
from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trustlayer.compare.index import index_of
from trustlayer.errors import ModelError
from trustlayer.model import Model
from trustlayer.observe.trace_events import Run

log = logging.getLogger(__name__)

#: How the change log names what made a version.
ACTIONS = ("learned", "loaded", "refined", "rollback", "promoted", "released")
#: The actions whose change-log entry lists the runs merged into that version.
MERGING = ("refined", "promoted")


def in_shadow(model: Model) -> bool:
    """Was `model` made to be tried in shadow first (see :mod:`stream.judging.shadow`)?"""
    return bool(model.history) and model.history[-1].get("shadow") is True


def encode_model(model: Model) -> bytes:
    """A model version as the value of a ``trustlayer.models`` record."""
    return json.dumps(model.to_json(), sort_keys=True).encode("utf-8")


def decode_model(value: bytes | str) -> Model:
    """Inverse of :func:`encode_model`; raises :class:`ModelError` for anything else."""
    try:
        data = json.loads(value)
    except RecursionError:
        raise ModelError("not a model: JSON nested too deep") from None
    except ValueError as exc:  # bad JSON or UTF-8, a number of over 4,300 digits
        raise ModelError(f"not a JSON model ({exc})") from None
    if not isinstance(data, dict):
        raise ModelError("not a trustlayer model")
    return Model.from_json(data)


def _members(model: Model, state_id: str) -> set[tuple]:
    return {tuple(member) for member in model.states[state_id].members}


def _same_milestone(old: Model, old_id: str, new: Model, new_id: str) -> bool:
    """The same milestone in two versions: most of the old state's observations (run, seq)
    are in the new one (learning from more runs only adds members), else the same name."""
    before, after = _members(old, old_id), _members(new, new_id)
    if before and after:
        return 2 * len(before & after) >= len(before)
    return old.name(old_id) == new.name(new_id)


def milestone_twins(old: Model, new: Model) -> dict[str, str]:
    """Each milestone of `old` -> the same milestone in `new` (see :func:`_same_milestone`),
    for those `new` kept."""
    twins: dict[str, str] = {}
    for old_id in old.essential:
        twin = next((new_id for new_id in new.essential if new_id not in twins.values()
                     and _same_milestone(old, old_id, new, new_id)), None)
        if twin is not None:
            twins[old_id] = twin
    return twins


def milestone_diff(old: Model | None, new: Model) -> dict[str, list[str]]:
    """Milestones (essential states) the new version added and dropped against the old.

    States are matched by the training observations they hold, not by id or name, which
    learning may renumber; a version without a parent adds all its milestones.
    """
    if old is None:
        return {"added": [new.name(s) for s in new.essential], "dropped": []}
    twins = milestone_twins(old, new)
    return {"added": [new.name(s) for s in new.essential if s not in twins.values()],
            "dropped": [old.name(s) for s in old.essential if s not in twins]}


def change_entry(model: Model, parent: Model | None, action: str, **details: Any) -> dict:
    """The change-log entry for `model` made from `parent`."""
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {', '.join(ACTIONS)}, not {action!r}")
    entry = {"version": model.version, "parent": parent.version if parent else None,
             "action": action, "ts": round(details.pop("ts", None) or time.time(), 3),
             **milestone_diff(parent, model)}
    entry.update({k: v for k, v in details.items() if v is not None})
    return entry


class ModelRegistry:
    """Every known version of every task's model, and the runs to re-learn them from.

    Attributes
    ----------
    versions : task -> version -> Model
    runs : task -> run_id -> Run, the successful (and failed, for negative milestones)
        runs a refined model is learned from: the seed runs given at start, then every run
        online refinement accepted.
    pending : task -> run_id -> Run, successful runs held back because merging them would
        drop a milestone fewer than K runs bypassed (see :mod:`stream.models.refine`).
    causes : task -> run_id -> cause of the failed seed runs (from ``labels.json``).
    seeded : tasks whose seed runs were given (refinement needs them).
    listeners : functions called with every model version added (e.g. metrics).
    """

    def __init__(self) -> None:
        self.versions: dict[str, dict[int, Model]] = {}
        self.runs: dict[str, dict[str, Run]] = {}
        self.pending: dict[str, dict[str, Run]] = {}
        self.causes: dict[str, dict[str, str | None]] = {}
        self.seeded: set[str] = set()
        self.listeners: list = []

    # -- versions -------------------------------------------------------------------------
    def add(self, model: Model) -> bool:
        """Keep `model` as version ``model.version`` of its task; True if it is new.

        The same version again with the same body is ignored; with another body it replaces
        the one held (the topic's last word wins) with a warning.
        """
        held = self.versions.setdefault(model.task, {})
        old = held.get(model.version)
        if old is not None:
            if old.to_json() == model.to_json():
                return False
            log.warning("model %s version %d replaced by another body", model.task, model.version)
        held[model.version] = model
        if model.version == max(held):  # runs start on it from now (or try it in shadow)
            index_of(model)  # built now, or the first event judged on it waits for it
        self._settle_trial(model)
        for listener in self.listeners:
            listener(model)
        return True

    def _settle_trial(self, model: Model) -> None:
        """A version that ends a shadow trial (:mod:`stream.judging.shadow`): the runs held for the
        tried version join the training runs when it is promoted, and are dropped when it
        is rejected."""
        entry = model.history[-1] if model.history else {}
        pending = self.pending.get(model.task, {})
        if entry.get("action") == "promoted":
            for run_id in entry.get("runs", []):
                if run_id in pending:
                    self.runs.setdefault(model.task, {})[run_id] = pending.pop(run_id)
        for run_id in entry.get("rejected_runs", []):
            pending.pop(run_id, None)

    def tasks(self) -> list[str]:
        return sorted(self.versions)

    def latest(self, task: str) -> Model | None:
        """The newest version of `task`'s model not in shadow (used for runs that start
        now)."""
        held = self.versions.get(task, {})
        used = [version for version, model in held.items() if not in_shadow(model)]
        return held[max(used)] if used else None

    def shadow(self, task: str) -> Model | None:
        """The version of `task`'s model tried in shadow: the newest one, when it is in
        shadow (a newer version, e.g. a rollback that rejected it, ends its trial)."""
        newest = self.newest(task)
        return newest if newest is not None and in_shadow(newest) else None

    def get(self, task: str, version: int) -> Model | None:
        """Version `version` of `task`'s model, or None if it is not known here."""
        return self.versions.get(task, {}).get(version)

    def next_version(self, task: str) -> int:
        return max([0, *list(self.versions.get(task, {}))]) + 1

    def find(self, model: Model) -> Model | None:
        """A held version of the same task with the same learned body (version aside)."""
        body = _body(model)
        return next((m for m in self.versions.get(model.task, {}).values() if _body(m) == body),
                    None)

    def derive(self, model: Model, action: str, parent: Model | None = None,
               **details: Any) -> Model:
        """`model` as the task's next version made by `action` from `parent` (default: the
        latest version), its change log = the parent's plus one entry. Not added: publish
        it, then :meth:`add` it (or let the topic bring it back)."""
        parent = parent if parent is not None else self.latest(model.task)
        derived = dataclasses.replace(model, version=self.next_version(model.task))
        base = list(parent.history) if parent is not None else list(model.history)
        return dataclasses.replace(
            derived, history=base + [change_entry(derived, parent, action, **details)])

    def newest(self, task: str) -> Model | None:
        """The newest version of `task`'s model, in shadow or not: its change log is the
        whole story."""
        held = self.versions.get(task)
        return held[max(held)] if held else None

    def rollback(self, task: str, version: int, **details: Any) -> Model:
        """A new version of `task` whose body is version `version`'s (rolled back to); the
        runs merged into the versions after it, and not learned from by it, are quarantined.

        Raises
        ------
        KeyError
            No such task or version here.
        """
        old = self.get(task, version)
        if old is None:
            known = ", ".join(map(str, sorted(self.versions.get(task, {})))) or "none"
            raise KeyError(f"task {task!r} has no version {version} (known: {known})")
        newest = self.newest(task)
        undone = {run_id for entry in (newest.history if newest else [])
                  if entry.get("version", 0) > version and entry.get("action") in MERGING
                  for run_id in entry.get("runs", [])}
        undone -= set(old.training_runs) | set(self.quarantined(task))
        return self.derive(old, "rollback", parent=newest, rolled_back_to=version,
                           quarantined=sorted(undone) or None, **details)

    def quarantined(self, task: str) -> dict[str, int]:
        """Runs of `task` no refinement may learn from -> the rollback version that
        quarantined them (see the module doc)."""
        newest, found = self.newest(task), {}
        for entry in newest.history if newest else []:
            for run_id in entry.get("quarantined", []):
                found[run_id] = entry["version"]
            for run_id in entry.get("released", []):
                found.pop(run_id, None)
        return found

    def release(self, task: str, run_ids: list[str]) -> Model:
        """A new version of `task` (the body of the one in use) that releases quarantined
        runs: later refinements may learn from them again.

        Raises
        ------
        KeyError
            No model of `task`, a version on trial in shadow, or a run not quarantined.
        """
        latest, held, trial = self.latest(task), self.quarantined(task), self.shadow(task)
        if latest is None:
            raise KeyError(f"no model of task {task!r}")
        if trial is not None:
            raise KeyError(f"version {trial.version} of {task!r} is on trial in shadow: "
                           "release runs once the trial has ended")
        unknown = [run_id for run_id in run_ids if run_id not in held]
        if unknown:
            raise KeyError(f"not quarantined in {task!r}: {', '.join(unknown)} (quarantined: "
                           f"{', '.join(sorted(held)) or 'none'})")
        return self.derive(latest, "released", parent=self.newest(task),
                           released=sorted(set(run_ids)))

    def history(self, task: str) -> list[dict[str, Any]]:
        """The change log of `task`: one entry per version held, oldest first.

        Taken from the versions' own ``history`` entries; a version without one (a model
        file learned by ``trustlayer learn``) gets an entry computed against the version
        before it.
        """
        held = self.versions.get(task, {})
        entries = []
        previous = None
        for version in sorted(held):
            model = held[version]
            entry = next((e for e in reversed(model.history) if e.get("version") == version), None)
            if entry is None:
                entry = change_entry(model, previous, "learned" if previous is None else "loaded",
                                     ts=None)
                entry.pop("ts")
            entries.append(entry)
            previous = model
        return entries

    # -- training runs ----------------------------------------------------------------------
    def training(self, task: str) -> dict[str, Run]:
        """The runs a refined version of `task` is learned from: the training runs, less
        the quarantined ones."""
        quarantined = self.quarantined(task)
        return {run_id: run for run_id, run in self.runs.get(task, {}).items()
                if run_id not in quarantined}

    def add_runs(self, runs: Iterable[Run], causes: dict[str, str | None] | None = None) -> None:
        """Seed runs a task's refined models are learned from (e.g. the training set)."""
        for run in runs:
            self.runs.setdefault(run.task, {})[run.run_id] = run
            self.seeded.add(run.task)
            if causes and run.run_id in causes:
                self.causes.setdefault(run.task, {})[run.run_id] = causes[run.run_id]

    # -- files ----------------------------------------------------------------------------
    def load_dir(self, directory: str | Path) -> list[Model]:
        """Read every ``*.json`` model file of `directory` (not added; see :meth:`adopt`).

        Raises
        ------
        ModelError
            The directory does not exist, or a file is not a trustlayer model.
        """
        directory = Path(directory)
        if not directory.is_dir():
            raise ModelError(f"{directory}: no such model directory")
        return [Model.load(path) for path in sorted(directory.glob("*.json"))]

    def adopt(self, model: Model) -> Model | None:
        """A model file read at start, as a version to publish; None if already held.

        Kept at its own version when that is newer than every version held; otherwise it
        becomes the next version (action ``loaded``).
        """
        if self.find(model) is not None:
            return None
        if model.version >= self.next_version(model.task):
            if any(e.get("version") == model.version for e in model.history):
                return model
            return dataclasses.replace(model, history=list(model.history) + [
                change_entry(model, self.latest(model.task), "loaded")])
        return self.derive(model, "loaded")


def _body(model: Model) -> dict:
    body = model.to_json()
    body.pop("version", None)
    body.pop("history", None)
    return body
