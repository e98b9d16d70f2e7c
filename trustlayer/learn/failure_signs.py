"""What shows a failure in a run, learned from what successful runs left behind.

Milestones say what a run must reach; these say what it must not end with. Each is read
from the successful runs, never from words of one application:

* **gone lines**: per state where successful runs ended, the lines every run ending
  there showed at the same place before its end and none showed at its end (the old
  name in the list the agent renamed, the file's untouched fact before its edit). The
  work is what made them go: a run ending there still showing one did not do it.
* **checks**: the tools every successful run used after its last change of the files
  they all changed (the test suite run after the edit of the source). A run that changed
  those files and never checked its work afterwards shows no evidence of the goal.
* **overcome shapes**: for each check, the shapes of lines (numbers as wildcards,
  :func:`~trustlayer.observe.templates.shape_of`) that the agent's changes brought into
  an answer of it in a successful run (new since its answer before, files changed in
  between) and that a fix took out again (gone from a later answer, the files every
  successful run changed having changed in between), never shown in a successful run's
  last answer of it: the red test run the fix turned green (``<*> failed , <*> passed``).
  A run whose last answer of that check still shows one stopped at a report successful
  runs went on to overcome.
* **required words**: names every successful run's diffs added to the files they all
  changed (:func:`trustlayer.observe.edits.required_words`: the option's name, the
  call doing the work): a run whose edits never add one did not implement what they did.
  From fewer than five runs, only those the task's goal names (:func:`asked_for`).
* **statuses**: the HTTP statuses their pages received: an error answer no successful run
  received, and no later answer to the same request made good, shows a failure (a 5xx
  is the product's).
* **end texts**: text every successful run typed and showed verbatim at its end (a new
  name): a run ending without it, as typed, did not enter it.
* **files only added to**: files successful runs' diffs changed and never took a line
  out of (:func:`trustlayer.observe.edits.added_only`), and files none of them changed
  (``changed_files`` are those some did): a run taking lines out of one changed what
  they all kept (a pinned test edited or deleted).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from trustlayer.learn.evidence import place_lines
from trustlayer.observe.canonical import PLACE_PREFIXES
from trustlayer.observe.edits import IDENTIFIER, added_only, changed_in_facts, required_words
from trustlayer.observe.steps import Step
from trustlayer.observe.templates import shape_of, word_tokens
from trustlayer.observe.trace_events import Run

Path = Sequence[Step]  # one successful run's steps, in order
CHANGED = "F|changed "


def _telling(line: str) -> bool:
    """A line that says something (a word), about what is shown, not where."""
    return not line.startswith(PLACE_PREFIXES) and bool(word_tokens(line))


def _shown_at_end_place(path: Path) -> frozenset[str]:
    """The content lines a run showed before its last state, at that state's place."""
    end_place = place_lines(path[-1])
    return frozenset().union(*(step.fingerprint.content for step in path[:-1]
                               if place_lines(step) == end_place))


def gone_lines(paths: Sequence[tuple[str, Path]]) -> dict[str, list[str]]:
    """For each state where two or more successful runs ended (`paths`: per run, that
    state's id and its steps): the content lines every such run showed at its end's place
    (title and address) before its end, and none of them showed at its end. One run
    cannot tell habit from work.

    >>> from trustlayer.observe.fingerprints import Fingerprint
    >>> def step(*lines): return Step(0, 0.0, Fingerprint(frozenset({"U|/list", *lines})), ())
    >>> runs = [("s4", [step("X|Mystery", "X|History"), step("X|Crime and Mystery", "X|History")]),
    ...         ("s4", [step("X|Mystery"), step("X|Crime and Mystery")])]
    >>> gone_lines(runs)
    {'s4': ['X|Mystery']}
    """
    ends: dict[str, list[Path]] = {}
    for end, path in paths:
        ends.setdefault(end, []).append(path)
    gone = {}
    for end, runs in ends.items():
        if len(runs) < 2:
            continue
        before = [_shown_at_end_place(path) for path in runs]
        at_ends = frozenset().union(*(path[-1].fingerprint.content for path in runs))
        if lines := sorted(line for line in frozenset.intersection(*before) - at_ends
                           if _telling(line)):
            gone[end] = lines
    return gone


def call_names(step: Step) -> set[str]:
    """The tools (``type:target``) whose answer `step` is."""
    return {action.call for action in step.actions}


def _last_change(path: Path, files: frozenset[str]) -> int | None:
    """Index of the run's last step that changed one of `files` (None: none did)."""
    found = None
    for i in range(1, len(path)):
        if changed_in_facts(path[i - 1].fingerprint.facts, path[i].fingerprint.facts) & files:
            found = i
    return found


def changed_everywhere(paths: Sequence[Path]) -> frozenset[str]:
    """The files every successful run changed, from their last states' file facts."""
    changed = [{line[len(CHANGED):] for line in path[-1].fingerprint.lines
                if line.startswith(CHANGED)} for path in paths if path]
    return frozenset(set.intersection(*changed)) if changed else frozenset()


def _used_after_change(paths: Sequence[Path]) -> list[set[str]]:
    """Per successful run, the tools it used after its last change of the files they all
    changed (none with fewer than two runs, or when a run did not change them). Used by
    every run: the model's ``checks``; by some only: its ``some_checks`` (a warning)."""
    files = changed_everywhere(paths)
    if len(paths) < 2 or not files:
        return []
    after: list[set[str]] = []
    for path in paths:
        last = _last_change(path, files)
        if last is None:
            return []
        after.append(set().union(*(call_names(step) for step in path[last + 1:])))
    return after


def _answers(path: Path, kind: str) -> list[int]:
    return [i for i, step in enumerate(path) if kind in call_names(step)]


def _shapes(step: Step) -> set[str]:
    """The shapes of what a tool answered in a step: its telling lines, the agent's own
    words (its request) and the files' facts aside."""
    fingerprint = step.fingerprint
    return {shape_of(line) for line in fingerprint.content - fingerprint.context
            - fingerprint.facts if _telling(line)}


def _files_changed(path: Path, first: int, last: int,
                   files: frozenset[str] | None = None) -> bool:
    """Whether the run's files (of `files`, when given) changed after step `first` up to
    step `last`."""
    for i in range(max(first, 0) + 1, last + 1):
        before, after = path[i - 1].fingerprint.facts, path[i].fingerprint.facts
        if files is None and after != before \
                or files is not None and changed_in_facts(before, after) & files:
            return True
    return False


def overcome_shapes(paths: Sequence[Path], kinds: Sequence[str],
                    files: frozenset[str]) -> dict[str, list[str]]:
    """For each tool of `kinds`, the shapes successful runs overcame (see the module
    docstring), those more runs overcame first.

    >>> from trustlayer.observe.fingerprints import Fingerprint
    >>> from trustlayer.observe.trace_events import Action
    >>> test, edit = Action("tool", "run_tests", "pytest"), Action("tool", "edit", "m.py")
    >>> def step(action, *lines): return Step(0, 0.0, Fingerprint(frozenset(lines)), (action,))
    >>> run = [step(test, "X|3 passed , 1 deselected"), step(edit, "F|content m.py 1f"),
    ...        step(test, "X|1 failed , 3 passed", "F|content m.py 1f"),
    ...        step(edit, "F|content m.py 2e"), step(test, "X|4 passed", "F|content m.py 2e")]
    >>> overcome_shapes([run, [step(test, "X|5 passed")]], ["tool:run_tests"], frozenset({"m.py"}))
    {'tool:run_tests': ['X|<*> failed , <*> passed']}
    """
    found: dict[str, list[str]] = {}
    for kind in kinds:
        overcome: Counter[str] = Counter()  # shape -> runs that overcame it
        at_last: set[str] = set()
        for path in paths:
            in_run: set[str] = set()
            answers = _answers(path, kind)
            if not answers:
                continue
            at_last |= _shapes(path[answers[-1]])
            previous: tuple[int, set[str]] = (-1, set())
            for number, here in enumerate(answers):
                shapes = _shapes(path[here])
                if _files_changed(path, previous[0], here):
                    brought = shapes - previous[1]
                    in_run |= {shape for shape in brought if any(
                        shape not in _shapes(path[later])
                        and _files_changed(path, here, later, files)
                        for later in answers[number + 1:])}
                previous = (here, shapes)
            overcome.update(in_run)
        # the shapes most runs overcame first: the report's summary, not one traceback
        if ordered := sorted(set(overcome) - at_last, key=lambda shape: (-overcome[shape], shape)):
            found[kind] = ordered
    return found


# fewer successful runs than this share words by the habit of their one approach (three
# runs all building a dict): then only the words the task's goal names are required
FEW_RUNS = 5


def asked_for(runs: Sequence[Run], required: dict[str, list[str]]) -> dict[str, list[str]]:
    """`required` words, when fewer than :data:`FEW_RUNS` runs found them, cut to those
    the task's goal names (the first event's ``meta.goal``; without one, all kept).

    >>> from trustlayer.observe.trace_events import Event
    >>> run = Run("r", "t", [Event("r", "t", 0, 0.0, "action", meta={"goal": "Add --lines"})])
    >>> asked_for([run, run], {"cli.py": ["dict", "lines"], "x.py": ["dict"]})
    {'cli.py': ['lines']}
    """
    goals = [str(run.events[0].meta.get("goal", "")) for run in runs
             if run.events and run.events[0].meta]
    named = set().union(*(IDENTIFIER.findall(goal) for goal in goals))
    if len(runs) >= FEW_RUNS or not named:
        return required
    cut = {path: [word for word in words if word in named] for path, words in required.items()}
    return {path: words for path, words in cut.items() if words}


def changed_anywhere(paths: Sequence[Path]) -> list[str]:
    """The files some successful run changed (its states' file facts)."""
    return sorted({line[len(CHANGED):] for path in paths for step in path
                   for line in step.fingerprint.lines if line.startswith(CHANGED)})


def failure_signs(runs: Sequence[Run], paths: Sequence[tuple[str, Path]]) -> dict[str, Any]:
    """The model's fields that tell a failure, learned from successful runs (`paths`:
    per run, the model state it ended in and its steps)."""
    steps = [path for _, path in paths]
    files, after = changed_everywhere(steps), _used_after_change(steps)
    every = sorted(set.intersection(*after)) if after else []
    return {"gone_lines": gone_lines(paths), "checks": every,
            "some_checks": sorted(set.union(*after) - set(every)) if after else [],
            "added_only": added_only(runs),
            "required_words": asked_for(runs, required_words(runs, files)),
            "statuses": statuses(runs), "end_texts": end_texts(runs),
            "check_files": sorted(files), "overcome": overcome_shapes(steps, every, files),
            "changed_files": changed_anywhere(steps)}


def statuses(runs: Sequence[Run]) -> list[int]:
    """The HTTP statuses successful runs' pages received (``observation.network``)."""
    return sorted({response.status for run in runs for event in run.events
                   if event.observation is not None for response in event.observation.network})


def end_texts(runs: Sequence[Run]) -> list[str]:
    """Text every successful run typed, the same, and showed verbatim in its last state
    (a new name, the words of a note): the run's end must show it as typed, where a
    tokenised comparison would take ``Crime &Mystery`` for ``Crime & Mystery``."""
    if len(runs) < 2:
        return []
    typed, shown = [], []
    for run in runs:
        states = [event.observation for event in run.events if event.observation is not None]
        typed.append({" ".join(action.value.split()) for event in run.events
                      if (action := event.action) is not None and action.type == "type"
                      and action.value and any(c.isalpha() for c in action.value)})
        shown.append(states[-1].shown_text() if states else "")
    return sorted(text for text in set.intersection(*typed)
                  if all(text in last for last in shown))
