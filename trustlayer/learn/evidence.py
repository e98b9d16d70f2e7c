"""What in the successful runs is evidence of the goal, learned from those runs.

Each read from the training data, never from rules about one application:

* **accepting states**: the model states where successful runs ended. A run that ends
  anywhere else has shown no evidence of the goal, whatever milestones it passed; a
  milestone that is such a state is met by any state like the successful runs' ends. A
  run's end must also show what every run ending in that state showed of its finished
  work (:func:`end_evidence`: a notebook's name once saved), where the state's members
  from earlier in runs lack it.
* **incidental milestones**: essential states that, in every successful run, left no
  trace and were stale by the end. No trace: what the state added (a tool's output, a
  status line, a file's text read, a page left for another) is not in the run's last
  state at the same place (title and URL), or the product showed it on its own (a
  screen loaded, a news toast left open: not the agent's work). Stale: the run changed
  something lasting after it (a file written, text typed, a filter applied), so what it
  showed was about a world that no longer is (a bug reproduced before the fix, a baseline
  test run, a cursor position before typing, the table before filtering). Successful runs merely
  shared such a habit; a run may skip it with a warning. A milestone that leaves
  something behind, or observed the finished work (the last test run, the page visited
  last before the end) stays required.
* **habit lines**: context lines of a state (:mod:`trustlayer.observe.context`: echoes of the
  agent's own action, receipts of a write, facts of files the step did not touch) that
  are gone by the run's last state: how the agent chose to work, not what the product
  did. They never make a template salient (typed text that stays in the document is
  not such a line).
* **untouched facts**: the facts of files a state shows as the run found them. What
  successful runs left alone is no requirement: another run may also touch such a file
  (a changelog entry, its test in another file): its facts then are optional templates.
  Removing it still shows (its ``exists`` fact stays), and what the successful runs
  changed stays required.
* **required outputs**: tool calls every successful run made with one and the same value
  and that the product did not answer (an answer reported); a run making that call with
  another value did something no successful run did. A call the product answered (a
  command run, a page asked for) is a request: another one may ask the same another way.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from trustlayer.observe.canonical import PLACE_PREFIXES
from trustlayer.observe.context import context_lines
from trustlayer.observe.steps import Step, by_agent
from trustlayer.observe.templates import WILDCARD, Profile, says_something, template_form
from trustlayer.observe.trace_events import Observation, Run

Path = Sequence[tuple[str, Step]]  # a run's (model state id, step) in order
OUTPUT_ACTION_TYPES = ("tool", "api")
UNCHANGED, CONTENT = "F|unchanged ", "F|content "


def habit_lines(step: Step, before: Step | None, last_lines: frozenset[str]) -> frozenset[str]:
    """The context lines of `step` (see :mod:`trustlayer.observe.context`; `before` is the run's
    previous step) that are gone from the run's last state (`last_lines`).

    >>> from trustlayer.observe.fingerprints import Fingerprint
    >>> from trustlayer.observe.trace_events import Action
    >>> fp = Fingerprint(frozenset({"X|$ pytest -q tests", "X|3 passed", "U|/lab"}))
    >>> step = Step(1, 0.0, fp, (Action("tool", "run_tests", "pytest -q tests"),))
    >>> before = Step(0, 0.0, Fingerprint(frozenset({"U|/lab"})), ())
    >>> sorted(habit_lines(step, before, frozenset()))
    ['X|$ pytest -q tests']
    """
    return context_lines(step.fingerprint.lines,
                         before.fingerprint.lines if before is not None else None,
                         step.actions) - last_lines


def untouched_facts(lines: frozenset[str]) -> frozenset[str]:
    """The facts of files that canonical `lines` show unchanged since the run's first
    snapshot: ``unchanged`` and ``content`` (see the module docstring).

    >>> sorted(untouched_facts(frozenset({"F|exists a.py", "F|unchanged a.py",
    ...     "F|content a.py 1f", "F|changed b.py", "F|content b.py 2e", "X|ok"})))
    ['F|content a.py 1f', 'F|unchanged a.py']
    """
    untouched = {line[len(UNCHANGED):] for line in lines if line.startswith(UNCHANGED)}
    return frozenset(line for line in lines if line.startswith(UNCHANGED) or (
        line.startswith(CONTENT) and line[len(CONTENT):].rpartition(" ")[0] in untouched))


def touch_templates(untouched: frozenset[str]) -> list[str]:
    """Templates of the facts a run shows when it touches files that `untouched` facts
    (:func:`untouched_facts`) show as left alone: the file ``changed``, its content any.

    >>> touch_templates(frozenset({"F|unchanged notes.md", "F|content notes.md 1f"}))
    ['F|changed notes . md', 'F|content notes . md <*>']
    """
    paths = sorted(line[len(UNCHANGED):] for line in untouched if line.startswith(UNCHANGED))
    return [template_form(form) for path in paths
            for form in (f"F|changed {path}", f"{CONTENT}{path} {WILDCARD}")]


def accepting_states(paths: Mapping[str, Path]) -> list[str]:
    """Model states holding a successful run's last state, in first-seen order.

    >>> from trustlayer.observe.fingerprints import Fingerprint
    >>> from trustlayer.observe.trace_events import Action
    >>> step = Step(0, 0.0, Fingerprint(frozenset({"X|done"})), ())
    >>> accepting_states({"r1": [("s0", step), ("s3", step)], "r2": [("s4", step)]})
    ['s3', 's4']
    """
    return list(dict.fromkeys(path[-1][0] for path in paths.values() if path))


def place_lines(step: Step) -> frozenset[str]:
    return frozenset(line for line in step.fingerprint.lines if line.startswith(PLACE_PREFIXES))


def _lasting_additions(path: Path) -> list[bool]:
    """For each step of a run: whether the agent's action added something still there in
    the run's last state, at the same place (title and URL) as the last state: what a
    page showed is not carried to another page, and what the product showed on its own
    (a page loading, a news toast left open) is not the agent's work. The first step adds
    all it shows: a page a run started on counts only if the run ended there."""
    last_step = path[-1][1]
    last, last_place = last_step.fingerprint.content, place_lines(last_step)
    lasting = []
    previous: frozenset[str] = frozenset()
    for _, here in path:
        added = here.fingerprint.content - previous
        previous = here.fingerprint.content
        lasting.append(by_agent(here) and place_lines(here) == last_place and bool(added & last))
    return lasting


def before_the_work(path: Path) -> list[Step]:
    """The steps of a run before its first lasting step: what it showed before the agent
    changed anything that lasted (the start, pages and outputs looked at).

    >>> from trustlayer.observe.fingerprints import Fingerprint
    >>> from trustlayer.observe.trace_events import Action
    >>> start = Step(0, 0.0, Fingerprint(frozenset({"X|Editor"})), ())
    >>> typed = Step(1, 1.0, Fingerprint(frozenset({"X|Editor", "X|hello"})),
    ...              (Action("type", "editor", "hello"),))
    >>> [step.seq for step in before_the_work([("s0", start), ("s1", typed)])]
    [0]
    """
    lasting = _lasting_additions(path)
    first = next((i for i, flag in enumerate(lasting) if flag), len(path))
    return [step for _, step in path[:first]]


def end_evidence(profile: Profile,
                 ends: Sequence[tuple[frozenset[str], frozenset[str]]]) -> list[str]:
    """What an accepting state's ends showed of the finished work, beyond what the state
    requires: the templates of `profile` that every run ending there showed in its last
    state and not before its work (`ends`: per such run, its last state's lines and the
    lines of its steps :func:`before_the_work`). The state's members from earlier in runs
    (a notebook before it was saved under its name) may lack them; an end may not. None
    from fewer than two ends: one end cannot show what varies.

    >>> p = Profile(["T|<*> . ipynb", "X|42", "X|News"], [True, True, False])
    >>> end_evidence(p, [(frozenset({"T|answer.ipynb", "X|42", "X|News"}), frozenset({"X|News"})),
    ...                  (frozenset({"T|answer.ipynb", "X|42", "X|News"}), frozenset({"X|News"}))])
    []
    >>> p = Profile(["T|<*> . ipynb", "X|42", "X|answer . ipynb"], [True, True, False])
    >>> end_evidence(p, [(frozenset({"T|answer.ipynb", "X|42", "X|answer.ipynb"}), frozenset()),
    ...                  (frozenset({"T|answer.ipynb", "X|42", "X|answer.ipynb"}), frozenset())])
    ['X|answer . ipynb']
    """
    if len(ends) < 2:
        return []
    shown = [{profile.template_of(line) for line in last - early} for last, early in ends]
    common = {i for i in set.intersection(*shown) if i is not None}
    return [profile.templates[i] for i in sorted(common)
            if not profile.salient[i] and says_something(profile.templates[i])]


def _first_visits(state_id: str, paths: Mapping[str, Path]) -> list[tuple[str, int]]:
    return [(run_id, next(i for i, (sid, _) in enumerate(path) if sid == state_id))
            for run_id, path in paths.items()]


def milestone_kinds(essential: Sequence[str], accepting: Sequence[str],
                    paths: Mapping[str, Path]) -> tuple[list[str], list[str]]:
    """The essential states that are *incidental* (a habit in every successful run: no
    trace, stale by the end; see the module docstring) and those that are *transient*
    (no trace in any run, but not stale in all: a last test run's output; kept as
    milestones, yet a run showing the same result another way misses them: worth a look
    by a person). States where successful runs end are neither."""
    lasting = {run_id: _lasting_additions(path) for run_id, path in paths.items()}
    incidental: list[str] = []
    transient: list[str] = []
    for state_id in essential:
        if state_id in accepting:
            continue
        visits = _first_visits(state_id, paths)
        if any(lasting[run_id][first] for run_id, first in visits):
            continue
        stale = all(any(lasting[run_id][first + 1:-1]) for run_id, first in visits)
        (incidental if stale else transient).append(state_id)
    return incidental, transient


def _shown(observation: Observation) -> tuple:
    return (observation.text, observation.a11y, observation.url, observation.title,
            observation.files)


def _output_calls(run: Run) -> dict[str, set[str]]:
    """The run's tool calls that the product did not answer (the next state shows what
    the one before it showed, or none follows): what the agent reported, not a request
    such as a command it ran."""
    calls: dict[str, set[str]] = {}
    shown: tuple | None = None
    pending: list[tuple[str, str]] = []  # (call, value) not answered yet

    def keep(made: list[tuple[str, str]]) -> None:
        for call, value in made:
            calls.setdefault(call, set()).add(value)

    for event in run.events:
        action = event.action
        if action is not None and action.type in OUTPUT_ACTION_TYPES \
                and action.value is not None:
            pending.append((action.call, action.value))
        elif event.observation is not None:  # a state
            now = _shown(event.observation)
            if now == shown:
                keep(pending)
            shown, pending = now, []
    keep(pending)
    return calls


def required_outputs(runs: Sequence[Run]) -> dict[str, str]:
    """``"type:target" -> value`` for tool calls that every successful run made, always
    with the same value, and that the product did not answer (with two runs or more; a
    call after the last state counts): an answer reported, not a command run."""
    if len(runs) < 2:
        return {}
    per_run = [_output_calls(run) for run in runs]
    shared = set.intersection(*(set(calls) for calls in per_run))
    required = {}
    for call in sorted(shared):
        values = set().union(*(calls[call] for calls in per_run))
        if len(values) == 1:
            required[call] = values.pop()
    return required
