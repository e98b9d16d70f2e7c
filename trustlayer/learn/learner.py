"""Learn a task model from successful runs (and, optionally, failed ones).

Pipeline: fingerprint every state -> group corresponding states across runs
(:mod:`trustlayer.learn.align`) -> learn each group's templates and visual exemplars ->
merge the runs into one graph -> essential chain = dominators of SUCCESS
(:mod:`trustlayer.learn.dominators`) -> interruptions, timing, names, negative milestones.
"""
from __future__ import annotations

import dataclasses
import logging
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence

import networkx as nx

from trustlayer.compare.equivalence import decide, judge
from trustlayer.compare.index import index_of
from trustlayer.learn.dominators import (
    START,
    SUCCESS,
    VISIT_MARK,
    convergence_points,
    essential_chain,
    immediate_dominators,
    merged_graph,
    unroll_visits,
)
from trustlayer.learn.effects import learn_effects
from trustlayer.learn.evidence import (
    accepting_states,
    before_the_work,
    end_evidence,
    milestone_kinds,
    required_outputs,
    untouched_facts,
)
from trustlayer.learn.failure_signs import failure_signs
from trustlayer.learn.merge import Members, build_state, merged_states
from trustlayer.learn.naming import name_states
from trustlayer.model import Model, ModelState
from trustlayer.model_effects import EffectSpine
from trustlayer.observe.edits import required_removals
from trustlayer.observe.steps import Step, action_signatures, run_steps
from trustlayer.observe.trace_events import Run
from trustlayer.settings import Settings

log = logging.getLogger(__name__)
MAX_EXEMPLARS = 3
INTERRUPTION_MIN_KEPT = 0.5  # most of an interruption's text is the screen beneath it
Progress = Callable[[Iterable], Iterable]


class LearnError(ValueError):
    """Runs from which no model can be learned."""


def _interruptions(essential: list[str], paths: dict[str, list[tuple[str, Step]]]) -> list[str]:
    """Essential states that are interruptions in every successful run: they add content
    on top of the previous screen, keeping (nearly) all of its text, and what they added
    is gone again later in the run (a dialog, a menu, a toast; not a tool output that replaces
    the last). Runs may skip them; what they lead to is checked by the next milestone."""
    soft = []
    for state_id in essential:
        verdicts = []
        for path in paths.values():
            first = next(i for i, (sid, _) in enumerate(path) if sid == state_id)
            if first == 0:
                verdicts.append(False)
                continue
            before, here = (path[i][1].fingerprint.content for i in (first - 1, first))
            added = here - before
            after = next((later for later in (step.fingerprint.content
                                              for _, step in path[first + 1:])
                          if not added & later), None)
            if not added or after is None:
                verdicts.append(False)
                continue
            text_here = {line for line in here if line.startswith("X|")} or here
            verdicts.append(len(text_here & after) >= INTERRUPTION_MIN_KEPT * len(text_here))
        if all(verdicts):
            soft.append(state_id)
    return soft


#: No learned duration exceeds this many times the median of the successful runs' ...
TIME_STRETCH = 10.0
#: ... nor this many seconds (a day): one run, or a few with stretched clocks, cannot turn
#: the deadlines off.
TIME_CEILING = 86400.0


def time_bound(values: Sequence[float]) -> float:
    """The slowest a successful run took, robustly: the largest of `values`, at most
    :data:`TIME_STRETCH` times their median and :data:`TIME_CEILING` seconds (the deadlines
    and the end-of-run silence are learned from it, see :mod:`trustlayer.judge.deadlines`).

    >>> time_bound([13.0, 15.0, 21.0]), time_bound([13.0, 15.0, 21.0, 3e7])
    (21.0, 180.0)
    """
    return min(max(values), TIME_STRETCH * statistics.median(values), TIME_CEILING)


def _timing(essential: list[str], paths: dict[str, list[tuple[str, Step]]]) -> dict:
    reach: dict[str, list[float]] = defaultdict(list)
    dwell: dict[str, list[float]] = defaultdict(list)
    for path in paths.values():
        start = path[0][1].ts
        for sid in essential:
            reach[sid].append(next(step.ts for s, step in path if s == sid) - start)
        for (sid, step), (_, following) in zip(path, path[1:]):
            dwell[sid].append(following.ts - step.ts)

    def summary(values: list[float]) -> dict:
        return {"min": min(values), "median": statistics.median(values), "max": max(values),
                "n": len(values), "bound": time_bound(values)}
    return {"time_to_reach": {sid: summary(v) for sid, v in reach.items()},
            "dwell": {sid: summary(v) for sid, v in dwell.items()}}


def _edges(paths: dict[str, list[tuple[str, Step]]]) -> list[dict]:
    """Edges of the merged graph with the action signatures that took runs along them
    and how many runs did."""
    actions: dict[tuple[str, str], Counter] = defaultdict(Counter)
    runs: dict[tuple[str, str], set[str]] = defaultdict(set)
    for run_id, path in paths.items():
        previous = START
        for sid, step in path:
            if sid != previous:
                actions[(previous, sid)].update(action_signatures(step))
                runs[(previous, sid)].add(run_id)
            previous = sid
        runs[(previous, SUCCESS)].add(run_id)
    return [{"source": s, "target": t, "actions": dict(sorted(actions[(s, t)].items())),
             "runs": len(runs[(s, t)])} for s, t in sorted(runs)]


def _segment_actions(essential: list[str],
                     paths: dict[str, list[tuple[str, Step]]]) -> list[list[str]]:
    """For each gap between milestones (before the first, after each), the action
    signatures successful runs used there."""
    segments: list[set[str]] = [set() for _ in range(len(essential) + 1)]
    for path in paths.values():
        reached = 0
        for sid, step in path:
            segments[reached].update(action.signature() for action in step.actions)
            if reached < len(essential) and sid == essential[reached]:
                reached += 1
    return [sorted(s) for s in segments]


def _nearest_essential(idom: dict, essential: list[str]) -> dict[str, str]:
    marks = set(essential)
    nearest = {}
    for node in idom:
        if node in (START, SUCCESS) or VISIT_MARK in node:
            continue
        up = idom[node]
        while up.split(VISIT_MARK)[0] not in marks and up != START:
            up = idom[up]
        nearest[node] = up.split(VISIT_MARK)[0]
    return nearest


def _negatives(model: Model, failed: Sequence[Run], causes: dict[str, str | None],
               settings: Settings) -> list[ModelState]:
    """States of failed runs, after the last milestone they reached, that match no state of
    the successful runs and show words no successful run ever showed: seen only when
    things go wrong (an error dialog), not merely somewhere the successful runs never went."""
    index = index_of(model)
    unmatched: list[tuple[str, Step]] = []
    for run in failed:
        steps = run_steps(run, settings)
        matched = [[sid for sid in index.plausible(step.fingerprint)
                    if judge(model, step.fingerprint, sid).same] for step in steps]
        reached = max((i for i, ids in enumerate(matched) if set(ids) & set(model.essential)),
                      default=-1)
        unmatched += [(run.run_id, step) for i, step in enumerate(steps)
                      if i > reached and not matched[i] and index.novelty(step.fingerprint)]
    negatives: list[ModelState] = []
    for run_id, step in unmatched:
        if any(decide(step.fingerprint, n, settings).same for n in negatives):
            continue
        state = build_state(f"n{len(negatives)}", [(run_id, step)], settings.thumbnail_size)
        state.negative_cause = causes.get(run_id)
        negatives.append(state)
    return negatives


def _checked(runs: Sequence[Run]) -> tuple[str, list[Run], list[Run]]:
    """The task of `runs`, its successful runs and its failed ones, by run id; raises
    :class:`LearnError` when no model can be learned from them."""
    if not runs:
        raise LearnError("no runs to learn from")
    tasks = sorted({run.task for run in runs})
    if len(tasks) > 1:
        raise LearnError(f"runs of several tasks given ({', '.join(tasks)}); learn one task "
                         "at a time")
    ordered = sorted(runs, key=lambda r: r.run_id)
    successes = [r for r in ordered if r.outcome != "failure"]
    if not successes:
        raise LearnError("no successful run: a model is learned from successful runs")
    if len(successes) == 1:
        log.warning("one successful run only: every state of it is taken as essential")
    return tasks[0], successes, [r for r in ordered if r.outcome == "failure"]


def _steps(successes: Sequence[Run], settings: Settings, progress: Progress
           ) -> dict[str, list[Step]]:
    """The steps of each successful run that has states, by run id."""
    steps = {run.run_id: run_steps(run, settings) for run in progress(successes)}
    steps = {rid: s for rid, s in steps.items() if s}
    if not steps:
        raise LearnError("the successful runs have no state events")
    return steps


def _essential(graph: nx.DiGraph) -> list[str]:
    """The essential chain: the dominators of SUCCESS (a state every run visits twice is
    one milestone, met at its first visit)."""
    return list(dict.fromkeys(str(node).split(VISIT_MARK)[0] for node in essential_chain(graph)))


def _name(states: dict[str, ModelState], paths: dict[str, list[tuple[str, Step]]],
          members: Members) -> None:
    """Name the model's states from their members' labels, titles and the calls that led
    to them (:func:`~trustlayer.learn.naming.name_states`)."""
    labels: defaultdict[str, list[str]] = defaultdict(list)
    titles: defaultdict[str, list[str]] = defaultdict(list)
    commands: defaultdict[str, list[str]] = defaultdict(list)
    for path in paths.values():
        for sid, step in path:
            if step.fingerprint.label:
                labels[sid].append(step.fingerprint.label)
            if step.fingerprint.title:
                titles[sid].append(step.fingerprint.title)
            commands[sid] += action_signatures(step)
    name_states(list(states.values()), labels, titles, dict(members), commands)


def _ends(states: dict[str, ModelState], paths: dict[str, list[tuple[str, Step]]],
          accepting: list[str], frame: frozenset[str],
          settings: Settings) -> tuple[ModelState, dict[str, list[str]]]:
    """All successful runs' last states as one state (``model.ending``), and per state where
    runs ended what every run ending there showed of its finished work."""
    ending = build_state("end", [(rid, path[-1][1]) for rid, path in sorted(paths.items())],
                         settings.thumbnail_size,
                         [untouched_facts(path[-1][1].fingerprint.lines) | frame
                          for _, path in sorted(paths.items())])
    ends_of = {sid: [(path[-1][1].fingerprint.lines,
                      frozenset().union(*(step.fingerprint.lines
                                          for step in before_the_work(path))))
                     for path in paths.values() if path[-1][0] == sid] for sid in accepting}
    return ending, {sid: found for sid, ends in ends_of.items()
                    if (found := end_evidence(states[sid].profile, ends))}


def learn(runs: Sequence[Run], settings: Settings | None = None,
          causes: dict[str, str | None] | None = None, progress: Progress | None = None,
          version: int = 1, background: Sequence[Run] = ()) -> Model:
    """Learn the model of one task.

    Parameters
    ----------
    runs : runs of one task. Runs whose end event says ``failure`` only feed negative
        milestones; all others are taken as successful.
    settings : thresholds and limits, saved in the model.
    causes : optional ``run_id -> cause`` for failed runs (from ``labels.json``).
    progress : optional wrapper that shows progress over an iterable (e.g. tqdm).
    background : runs of other tasks of the same application: the layout most of their
        states show (:func:`~trustlayer.learn.profiles.layout_lines`) is never salient.

    Raises
    ------
    LearnError
        No runs, runs of several tasks, or no successful run.
    """
    settings = settings or Settings()
    progress = progress or (lambda items: items)
    task, successes, failed = _checked(runs)
    steps = _steps(successes, settings, progress)
    run_ids = sorted(steps)
    states, paths, members, frame = merged_states(steps, settings, background)
    graph = merged_graph([unroll_visits([sid for sid, _ in path]) for path in paths.values()])
    essential = _essential(graph)
    _name(states, paths, members)
    accepting = accepting_states(paths)
    ending, evidence_of_ends = _ends(states, paths, accepting, frame, settings)
    interruptions = _interruptions(essential, paths)
    incidental, transient = ([sid for sid in kind if sid not in interruptions]
                             for kind in milestone_kinds(essential, accepting, paths))
    # a milestone that is a tool's report is the task's own output, no habit: doubts about
    # milestones come from leave-one-out (`learn` names those the left-out runs miss)
    warnings = [] if len(run_ids) >= 3 else [
        f"learned from {len(run_ids)} successful run(s): add more varied successful runs, so "
        "that what varies can be told from what must match"]
    learned_from = [run for run in successes if run.run_id in steps]
    model = Model(task=task, version=version, states=states, edges=_edges(paths),
                  essential=essential, negative=[],
                  soft=[sid for sid in essential if sid in interruptions or sid in incidental],
                  accepting=accepting, ending=ending, incidental=incidental,
                  transient=transient,
                  warnings=warnings,
                  required_outputs=required_outputs(learned_from),
                  required_removals=required_removals(learned_from),
                  nearest_milestone=_nearest_essential(immediate_dominators(graph), essential),
                  timing=_timing(essential, paths),
                  segment_actions=_segment_actions(essential, paths),
                  convergence=convergence_points(graph),
                  training_runs=run_ids, settings=settings, end_evidence=evidence_of_ends,
                  files_change_alone=any(step.files_moved for run in steps.values()
                                         for step in run),
                  **failure_signs(learned_from, [(path[-1][0], steps[rid])
                                                 for rid, path in paths.items()]))
    if (spine := learn_effects(learned_from)) is not None:
        model = as_conversation(model, spine)
    return with_negatives(model, _named_negatives(model, failed, causes or {}, settings))


def _named_negatives(model: Model, failed: Sequence[Run], causes: dict[str, str | None],
                     settings: Settings) -> list[ModelState]:
    """The negative milestones of `failed` runs (:func:`_negatives`), named."""
    negatives = _negatives(model, failed, causes, settings)
    name_states(negatives, {}, {}, {})
    for negative in negatives:
        negative.name = f"{negative.name} (seen in failed runs)"
    return negatives


def with_negatives(model: Model, negatives: Sequence[ModelState]) -> Model:
    """`model` with the negative milestones `negatives` added: a new model (a model is not
    changed once learned; what is cached about it is keyed by the model)."""
    return dataclasses.replace(model, states={**model.states, **{n.id: n for n in negatives}},
                               negative=[*model.negative, *(n.id for n in negatives)])


def as_conversation(model: Model, spine: EffectSpine) -> Model:
    """`model`, learned from conversations, judged by what they changed and told: the
    states of their turns (the person's words, the agent's reads) stay for the report and
    names, but none is a milestone or evidence of the end."""
    return dataclasses.replace(model, effects=spine, essential=[], soft=[], accepting=[],
                               incidental=[], transient=[], required_outputs={},
                               end_evidence={}, gone_lines={}, end_texts=[],
                               nearest_milestone={}, segment_actions=[[]],
                               timing={"time_to_reach": {}, "dwell": model.timing["dwell"]})
