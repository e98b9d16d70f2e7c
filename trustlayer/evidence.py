"""What in the successful runs is evidence of the goal, learned from those runs.

Three things a run must show, each read from the training data, never from rules about
one application:

* **accepting states**: the model states where successful runs ended. A run that ends
  anywhere else has shown no evidence of the goal, whatever milestones it passed.
* **incidental milestones**: essential states that, in every successful run, left no
  trace and were stale by the end. No trace: what the state added (a tool's output, a
  status line, a file's text read) is gone again by the run's last state, and it opened
  no place of its own (its title and URL are those of the state before). Stale: the run
  changed something lasting after it (a file written, text typed), so what it showed
  was about a world that no longer is (a bug reproduced before the fix, a baseline test
  run, a cursor position before typing). Successful runs merely shared such a habit; a
  run may skip it with a warning. A milestone that leaves something behind, is a
  place, or observed the finished work (the last test run) stays required.
* **habit lines**: lines of a state that are gone by the run's last state and either
  restate what the agent put into the action that led to it (a command line, an edit's
  text), or receipt a write (a diff, "Edited in...": the files are the evidence), or
  are facts of files the step did not touch (context that the order of the agent's
  steps decides: a file not yet edited). They tell how the agent chose to work, not what its
  step did, and never make a template salient on their own (typed text that stays in
  the document is not such a line).
* **required outputs**: tool calls every successful run made with one and the same value
  (an answer reported, an id passed); a run making that call with another value did
  something no successful run did.
"""
from __future__ import annotations

import json
import re
from typing import Iterable, Mapping, Sequence

from trustlayer.canonical import PLACE_PREFIXES, content_lines, mask
from trustlayer.steps import Step
from trustlayer.traces import Action

Path = Sequence[tuple[str, Step]]  # a run's (model state id, step) in order
OUTPUT_ACTION_TYPES = ("tool", "api")
MIN_ECHO_CHARS = 6  # shorter bodies ("ok", "+ x") are too common to be taken as echoes
_DIFF_MARK = re.compile(r"^[-+>$#]+ ?")  # diff, prompt and quote marks before an echo


def _action_text(actions: Iterable[Action]) -> str:
    parts = []
    for action in actions:
        parts += [action.target or "", action.value or ""]
        if action.args:
            parts.append(json.dumps(action.args, ensure_ascii=False))
    return " ".join(mask(part) for part in parts)


def _file_facts(step: Step) -> frozenset[str]:
    return frozenset(line for line in step.fingerprint.lines if line.startswith("F|"))


def habit_lines(step: Step, before: Step | None, last_lines: frozenset[str]) -> frozenset[str]:
    """Content lines of `step` (after `before`, the run's previous step) that restate its
    actions or receipt a write, and are gone from the run's last state (`last_lines`).

    >>> from trustlayer.fingerprints import Fingerprint
    >>> fp = Fingerprint(frozenset({"X|$ pytest -q tests", "X|3 passed", "U|/lab"}))
    >>> step = Step(1, 0.0, fp, (Action("tool", "run_tests", "pytest -q tests"),))
    >>> before = Step(0, 0.0, Fingerprint(frozenset({"U|/lab"})), ())
    >>> sorted(habit_lines(step, before, frozenset()))
    ['X|$ pytest -q tests']
    """
    transient = content_lines(step.fingerprint.lines) - last_lines
    if before is None:
        return frozenset()
    inherited = transient & _file_facts(before)
    if _file_facts(step) != _file_facts(before):
        return inherited | {line for line in transient if line.startswith("X|")}
    text = _action_text(step.actions)
    habits = set(inherited)
    for line in transient:
        body = _DIFF_MARK.sub("", line.partition("|")[2]).strip()
        if len(body) >= MIN_ECHO_CHARS and body in text:
            habits.add(line)
    return frozenset(habits)


def accepting_states(paths: Mapping[str, Path]) -> list[str]:
    """Model states holding a successful run's last state, in first-seen order.

    >>> from trustlayer.fingerprints import Fingerprint
    >>> step = Step(0, 0.0, Fingerprint(frozenset({"X|done"})), ())
    >>> accepting_states({"r1": [("s0", step), ("s3", step)], "r2": [("s4", step)]})
    ['s3', 's4']
    """
    return list(dict.fromkeys(path[-1][0] for path in paths.values() if path))


def _place(step: Step) -> frozenset[str]:
    return frozenset(line for line in step.fingerprint.lines if line.startswith(PLACE_PREFIXES))


def _lasting_additions(path: Path) -> list[bool]:
    """For each step of a run: whether it opened a place of its own or added something
    still there in the run's last state (the first step always counts)."""
    last = content_lines(path[-1][1].fingerprint.lines)
    lasting = [True]
    for (_, before), (_, here) in zip(path, path[1:]):
        added = content_lines(here.fingerprint.lines) - content_lines(before.fingerprint.lines)
        lasting.append(_place(here) != _place(before) or bool(added & last))
    return lasting


def _habit(path: Path, first: int) -> bool:
    """Whether the state first visited at `first` left no trace and was made stale by a
    lasting change later in the run (before its last state)."""
    lasting = _lasting_additions(path)
    return not lasting[first] and any(lasting[first + 1:-1])


def incidental_milestones(essential: Sequence[str], accepting: Sequence[str],
                          paths: Mapping[str, Path]) -> list[str]:
    """Essential states that were a habit in every successful run: no trace, stale by
    the end (see the module docstring); accepting states are never incidental."""
    incidental = []
    for state_id in essential:
        if state_id in accepting:
            continue
        firsts = [(path, next(i for i, (sid, _) in enumerate(path) if sid == state_id))
                  for path in paths.values()]
        if all(_habit(path, first) for path, first in firsts):
            incidental.append(state_id)
    return incidental


def _output_calls(path: Path) -> dict[str, set[str]]:
    calls: dict[str, set[str]] = {}
    for _, step in path:
        for action in step.actions:
            if action.type in OUTPUT_ACTION_TYPES and action.value is not None:
                calls.setdefault(f"{action.type}:{action.target or ''}", set()).add(action.value)
    return calls


def required_outputs(paths: Mapping[str, Path]) -> dict[str, str]:
    """``"type:target" -> value`` for tool calls that every successful run made, always
    with the same value (with two runs or more)."""
    if len(paths) < 2:
        return {}
    per_run = [_output_calls(path) for path in paths.values()]
    shared = set.intersection(*(set(calls) for calls in per_run))
    required = {}
    for call in sorted(shared):
        values = set().union(*(calls[call] for calls in per_run))
        if len(values) == 1:
            required[call] = values.pop()
    return required
