"""Phases: the learned graph cut at its milestones, a coarser picture of a task.

A phase is the stretch of a task from one essential milestone to the next: every state
that successful runs pass between them, closing with the milestone that ends it, and
named after that milestone ("Saving completed"). Interruptions (milestones that runs may
skip) do not cut phases; they belong to the phase they appear in. States after the last
milestone, if any, form a last phase named "after '<last milestone>'".

A state belongs to the phase after its nearest essential dominator (``model.nearest_milestone``):
every successful run reaches it only after that milestone. A run's frames belong to the
phase whose milestone the run was heading for when it showed them, so a failure can be
placed: "in phase 'Saving completed' after 'hello world'" (:func:`where`).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from trustlayer.graph_marks import START
from trustlayer.judge.history import Observed
from trustlayer.model import Model


@dataclass(frozen=True)
class Phase:
    """One milestone-to-milestone segment of the task.

    Attributes
    ----------
    index : position of the phase, from 0.
    name : the closing milestone's name, without the part every milestone name shares.
    milestone : id of the closing milestone (None for a last phase after every milestone).
    after : id of the milestone that opens the phase (None for the first).
    states : ids of the phase's states, in model order, the closing milestone last.
    """

    index: int
    name: str
    milestone: str | None
    after: str | None
    states: tuple[str, ...]


def hard_milestones(model: Model) -> list[str]:
    """The essential milestones that a run may not skip, in order."""
    soft = set(model.soft)
    return [sid for sid in model.essential if sid not in soft]


def short_names(names: Sequence[str]) -> list[str]:
    """Names without the leading ``"<common>: "`` that all of them share (a window title
    that every milestone of the task carries).

    >>> short_names(["notes.txt - Editor: Open", "notes.txt - Editor: Saved"])
    ['Open', 'Saved']
    >>> short_names(["Home", "Search: results"])
    ['Home', 'Search: results']
    >>> short_names(["notes.txt", "notes.txt: Saved"])  # the first named by the title alone
    ['notes.txt', 'Saved']
    """
    if len(names) < 2:
        return list(names)
    stem = min(names, key=len)
    if names.count(stem) == 1 and all(name.startswith(f"{stem}: ") for name in names
                                       if name != stem):
        return [name if name == stem else name[len(stem) + 2:] for name in names]
    common = os.path.commonprefix(list(names))
    cut = common.rfind(": ")
    if cut < 0 or any(len(name) <= cut + 2 for name in names):
        return list(names)
    return [name[cut + 2:] for name in names]


def _order(state_id: str) -> tuple[int, str]:
    digits = "".join(ch for ch in state_id if ch.isdigit())
    return (int(digits) if digits else 0, state_id)


def phases(model: Model) -> list[Phase]:
    """The phases of `model`, in order (none for a model without milestones)."""
    hard = hard_milestones(model)
    if not hard:
        return []
    position = {sid: i for i, sid in enumerate(model.essential)}
    members: list[list[str]] = [[] for _ in range(len(hard) + 1)]
    for state_id in sorted(model.states, key=_order):
        if state_id in model.negative:
            continue
        if state_id in hard:
            members[hard.index(state_id)].append(state_id)
            continue
        dominator = model.nearest_milestone.get(state_id, START)
        before = position.get(dominator, -1)  # index of the milestone it comes after
        phase = sum(1 for sid in hard if position[sid] <= before)
        members[phase].append(state_id)
    for index, milestone in enumerate(hard):  # the closing milestone last
        members[index].remove(milestone)
        members[index].append(milestone)
    names = short_names([model.name(sid) for sid in hard])
    result = [Phase(i, names[i], hard[i], hard[i - 1] if i else None, tuple(members[i]))
              for i in range(len(hard))]
    if members[-1]:
        result.append(Phase(len(hard), f"after '{names[-1]}'", None, hard[-1],
                            tuple(members[-1])))
    return result


def phase_of(model: Model, state_id: str) -> Phase | None:
    """The phase holding `state_id` (None for a negative milestone or unknown id)."""
    return next((phase for phase in phases(model) if state_id in phase.states), None)


def frame_phases(model: Model, history: Sequence[Observed]) -> list[int]:
    """For each observed state of a run (``Matcher.history``, with the model state ids
    each matched), the index of the phase the run was in: the phase of the
    next hard milestone not yet reached (a frame that reaches a milestone closes its
    phase). After the last milestone, the last phase."""
    hard = hard_milestones(model)
    last = max(len(phases(model)) - 1, 0)
    reached, result = 0, []
    for entry in history:
        result.append(min(reached, last))
        if reached < len(hard) and hard[reached] in entry.ids:
            reached += 1
    return result


def phase_gaps(model: Model, position: int) -> range:
    """The gaps between milestones (indices of ``model.segment_actions``: gap ``i`` comes
    before ``model.essential[i]``) that make up the phase of a run whose next milestone
    is ``model.essential[position]``: from the gap after the last hard milestone before it
    to the gap before the next hard one. Milestones a run may skip do not cut a phase, so
    what successful runs did on either side of one is done at the same point of the task.

    >>> from trustlayer.model import Model
    >>> from trustlayer.settings import Settings
    >>> model = Model(task="t", version=1, states={}, edges=[], essential=["a", "b", "c"],
    ...               soft=["b"], negative=[], nearest_milestone={}, timing={},
    ...               training_runs=[], settings=Settings())
    >>> list(phase_gaps(model, 1)), list(phase_gaps(model, 2)), list(phase_gaps(model, 3))
    ([1, 2], [1, 2], [3])
    """
    soft = set(model.soft)
    hard = [i for i, sid in enumerate(model.essential) if sid not in soft]
    first = max((i + 1 for i in hard if i < position), default=0)
    last = min((i for i in hard if i >= position), default=len(model.essential))
    return range(first, last + 1)


def where(model: Model, missing: str | None = None) -> str:
    """Where a run that never reached milestone `missing` (an id, or its name) failed:
    ``"in phase 'Saving completed' after 'hello world'"`` (phases named as in
    :func:`phases`). Without `missing`, or for a state that closes no phase, ``""``."""
    by_name = {model.name(sid): sid for sid in model.states}
    if missing is not None:
        missing = by_name.get(missing, missing)
    found = phases(model)
    for phase in found:
        if phase.milestone == missing:
            after = f" after '{found[phase.index - 1].name}'" if phase.index else \
                " from the start"
            return f"in phase '{phase.name}'{after}"
    return ""
