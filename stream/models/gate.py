"""What merging successful runs would change in what a task's model accepts.

Online refinement (:mod:`stream.models.refine`) lets no one runner change what the model
passes. Milestones are one part of that; the others are judged here:

* per run (:func:`slower`): a run that took longer to reach a milestone or to leave a state
  than the current model's deadline for it (the stream would have failed it), so that
  learning from it would lengthen that deadline and the end-of-run silence;
* per new version (:func:`gated_changes`): every deadline (to reach each milestone, to leave
  each state), the end-of-run silence, the end evidence, the negative milestones and the
  required words of the version learned, against the version in use. The timing profiles
  count through what they decide: a statistic that moves no deadline changes nothing (a
  milestone dropped is the milestones' gate).

The learned times themselves are robust (:func:`trustlayer.learn.learner.time_bound`): even
with the K runners a change needs, no learned time exceeds ten times the median run nor a
day.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stream.models.registry import milestone_twins
from trustlayer.judge.deadlines import deadline, learned_silence
from trustlayer.judge.matcher import judged
from trustlayer.model import Model
from trustlayer.observe.trace_events import Run


def _durations(model: Model, run: Run) -> Iterator[tuple[str, str, float]]:
    """(``reach`` or ``leave``, state id, seconds) for each milestone `run` reached and each
    known state it left, as `model`'s matcher saw them."""
    matcher = judged(model, run)
    history, start = matcher.history, matcher.start_ts
    if not history or start is None:
        return
    reached: set[str] = set()
    for row in history:
        for sid in row.ids:
            if sid in model.essential and sid not in reached:
                reached.add(sid)
                yield "reach", sid, row.ts - start
    for row, following in zip(history, history[1:]):
        if row.ids:
            yield "leave", row.ids[0], following.ts - row.ts


def slower(model: Model, run: Run) -> list[str]:
    """Each deadline of `model` that `run` missed: the stream would have failed it, so
    learning from it would lengthen that deadline (the names carry no number, so that the
    runners showing the same change can be counted)."""
    found: list[str] = []
    for kind, sid, seconds in _durations(model, run):
        limit = deadline(model.timing["time_to_reach" if kind == "reach" else "dwell"].get(sid),
                         model.settings)
        change = f"misses the deadline to {kind} '{model.name(sid)}'"
        if limit is not None and seconds > limit and change not in found:
            found.append(change)
    return found


def _deadlines(old: Model, new: Model) -> Iterator[tuple[str, float | None, float | None]]:
    """(what, before, after) for each deadline the two versions set: to reach each milestone
    (matched by the observations it holds, :func:`milestone_twins`) and the longest any
    state may last (states are regrouped and renamed by learning, their longest stay is not)."""
    def limit(model: Model, kind: str, sid: str | None) -> float | None:
        stats = model.timing[kind].get(sid) if sid is not None else None
        return deadline(stats, model.settings)

    twins = milestone_twins(old, new)
    for sid in old.essential:
        yield (f"deadline to reach '{old.name(sid)}'", limit(old, "time_to_reach", sid),
               limit(new, "time_to_reach", twins.get(sid)))

    def longest(model: Model) -> float | None:
        return max((x for sid in model.timing["dwell"] if (x := limit(model, "dwell", sid))),
                   default=None)
    yield "longest deadline to leave a state", longest(old), longest(new)


def _seconds(value: float | None) -> str:
    return "none" if value is None else f"{value:.0f} s"


def gated_changes(old: Model, new: Model) -> list[str]:
    """What `new` changes against `old` beyond its milestones (see the module doc), one
    line each, e.g. ``deadline to reach 'Saved': 63 s -> 540 s``."""
    found = [f"{what}: {_seconds(before)} -> {_seconds(after)}"
             for what, before, after in _deadlines(old, new) if before != after]
    if learned_silence(old) != learned_silence(new):
        found.append(f"end-of-run silence: {_seconds(learned_silence(old))} -> "
                     f"{_seconds(learned_silence(new))}")

    def named(model: Model) -> dict[str, Any]:
        # the evidence of each way to end, whatever the state is named after relearning
        return {"end evidence": sorted(sorted(lines) for lines in model.end_evidence.values()),
                "negative milestones": sorted(model.name(s) for s in model.negative),
                "required words": {path: sorted(words)
                                   for path, words in model.required_words.items()}}
    was, now = named(old), named(new)
    found += [part for part in was if was[part] != now[part]]
    return found
