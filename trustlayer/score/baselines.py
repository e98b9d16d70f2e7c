"""What people judge agent runs with today, each as a small pure function, so that
``trustlayer eval --baselines`` can score them beside trustlayer on the same runs.

Every baseline answers ``(verdict, cause)``: ``verdict`` is ``"pass"`` or ``"fail"``
(or :data:`NOT_APPLICABLE` where the baseline has nothing to compare, e.g. visual
regression on runs without screenshots); ``cause`` is None, since none of them can tell a
product bug from an agent error. Each is given the strongest fair reading:

* :func:`self_report`: the agent's own claim in its end event.
* :func:`record_and_replay`: the run repeats, state for state, the recorded sequence of
  one of the successful training runs (taken from the model's state members, so states
  are compared with trustlayer's own equivalence tiers); no extra state is allowed, a
  state repeated in place is.
* :func:`visual_regression`: every screenshot equals the one a reference run took at the
  same step, pixel for pixel within Playwright's ``toHaveScreenshot`` defaults
  (pixelmatch YIQ threshold 0.2, ``maxDiffPixels`` 0, sizes must match), for some
  reference run. Pixelmatch's anti-aliasing exemption is not applied.
* :func:`trajectory_superset`: as LangChain agentevals' superset trajectory match, the
  run's actions include every action of some reference run, in any order (actions
  compared by their canonical signature, :meth:`trustlayer.observe.trace_events.Action.signature`).
* :func:`final_state`: as outcome evaluators do, the run's last state is equivalent (the
  same tiers) to a state that ended a successful training run.
"""
from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
from PIL import Image

from trustlayer.compare.equivalence import judge
from trustlayer.graph_marks import SUCCESS
from trustlayer.model import Model
from trustlayer.observe.steps import run_steps
from trustlayer.observe.trace_events import Run

PASS, FAIL, NOT_APPLICABLE = "pass", "fail", "n/a"
PLAYWRIGHT_THRESHOLD = 0.2  # toHaveScreenshot's default `threshold` (pixelmatch, YIQ)
PLAYWRIGHT_MAX_DIFF_PIXELS = 0  # no maxDiffPixels / maxDiffPixelRatio by default
YIQ_MAX_DELTA = 35215.0  # pixelmatch: the largest possible YIQ colour delta

Verdict = tuple[str, "str | None"]


def self_report(run: Run) -> Verdict:
    """Believe the agent: fail when its end event says ``self_report: failure``.

    A run that claims nothing (no end event or no ``self_report``) is not failed.
    """
    claim = run.end.self_report if run.end is not None else None
    return (FAIL if claim == "failure" else PASS), None


def recorded_paths(model: Model) -> dict[str, list[str]]:
    """The state sequence of every training run, rebuilt from the model's state members
    (consecutive repeats collapsed)."""
    visits: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for state_id, state in model.states.items():
        if state_id in model.negative:
            continue
        for run_id, seq in state.members:
            visits[run_id].append((seq, state_id))
    paths = {}
    for run_id, seen in visits.items():
        path: list[str] = []
        for _, state_id in sorted(seen):
            if not path or path[-1] != state_id:
                path.append(state_id)
        paths[run_id] = path
    return paths


def _replays(path: Sequence[str], same: Callable[[int, str], bool], steps: int) -> bool:
    """Whether `steps` observed states can be read as `path`, each state shown one or
    more times in a row. A state may match several model states, so every position it
    could stand for is followed.

    >>> _replays(["a", "b"], lambda i, s: s == "aab"[i], 3)
    True
    >>> _replays(["a", "b"], lambda i, s: s == "acb"[i], 3)
    False
    """
    positions = {-1}
    for index in range(steps):
        positions = {p for p in range(len(path)) if (p in positions or p - 1 in positions)
                     and same(index, path[p])}
        if not positions:
            return False
    return len(path) - 1 in positions


def record_and_replay(model: Model, run: Run) -> Verdict:
    """Pass when the run shows exactly the states of one recorded successful run, in
    order: no state skipped, none added (a state repeated in place is fine)."""
    steps = run_steps(run, model.settings)
    cache: dict[tuple[int, str], bool] = {}

    def same(index: int, state_id: str) -> bool:
        key = (index, state_id)
        if key not in cache:
            cache[key] = judge(model, steps[index].fingerprint, state_id).same
        return cache[key]

    for path in recorded_paths(model).values():
        if _replays(path, same, len(steps)):
            return PASS, None
    return FAIL, None


def final_state(model: Model, run: Run) -> Verdict:
    """Pass when the run's last state is equivalent to a state in which a successful
    training run ended."""
    steps = run_steps(run, model.settings)
    if not steps:
        return FAIL, None
    final_states = {edge["source"] for edge in model.edges if edge["target"] == SUCCESS}
    last = steps[-1].fingerprint
    ok = any(judge(model, last, sid).same for sid in sorted(final_states) if sid in model.states)
    return (PASS if ok else FAIL), None


def trajectory_superset(references: Sequence[Run], run: Run) -> Verdict:
    """Pass when the run's action signatures include every action signature of some
    reference run (order and extra actions ignored)."""
    done = _signatures(run)
    ok = any(_signatures(reference) <= done for reference in references)
    return (PASS if ok else FAIL), None


def _signatures(run: Run) -> set[str]:
    return {event.action.signature() for event in run.events if event.action is not None}


@lru_cache(maxsize=64)
def _rgb(data: bytes) -> np.ndarray:
    """The image blended over white (as pixelmatch does with alpha), float RGB."""
    with Image.open(io.BytesIO(data)) as image:
        rgba = np.asarray(image.convert("RGBA"), dtype=np.float64)
    alpha = rgba[..., 3:4] / 255.0
    return 255.0 + (rgba[..., :3] - 255.0) * alpha


def differing_pixels(expected: bytes, actual: bytes,
                     threshold: float = PLAYWRIGHT_THRESHOLD) -> int | None:
    """Pixels whose YIQ colour delta exceeds pixelmatch's bound for `threshold`
    (``35215 * threshold**2``); None when the images differ in size.

    >>> white = io.BytesIO(); Image.new("RGB", (4, 4), "white").save(white, "PNG")
    >>> grey = io.BytesIO(); Image.new("RGB", (4, 4), (250, 250, 250)).save(grey, "PNG")
    >>> differing_pixels(white.getvalue(), grey.getvalue())
    0
    >>> black = io.BytesIO(); Image.new("RGB", (4, 4), "black").save(black, "PNG")
    >>> differing_pixels(white.getvalue(), black.getvalue())
    16
    """
    if expected == actual:
        return 0
    left, right = _rgb(expected), _rgb(actual)
    if left.shape != right.shape:
        return None
    weights_y = np.array([0.29889531, 0.58662247, 0.11448223])
    weights_i = np.array([0.59597799, -0.27417610, -0.32180189])
    weights_q = np.array([0.21147017, -0.52261711, 0.31114694])
    delta = left - right
    y, i, q = delta @ weights_y, delta @ weights_i, delta @ weights_q
    colour = 0.5053 * y * y + 0.299 * i * i + 0.1957 * q * q
    return int(np.count_nonzero(colour > YIQ_MAX_DELTA * threshold * threshold))


def _screenshots(run: Run) -> list[bytes | None]:
    return [e.observation.screenshot.data
            if e.observation is not None and e.observation.screenshot is not None else None
            for e in run.states]


def _screens_match(expected: list[bytes | None], actual: list[bytes | None]) -> bool:
    if len(expected) != len(actual):
        return False  # a step without its golden screenshot fails, as in Playwright
    for want, got in zip(expected, actual):
        if want is None or got is None:
            if want is not got:
                return False
            continue
        diff = differing_pixels(want, got)
        if diff is None or diff > PLAYWRIGHT_MAX_DIFF_PIXELS:
            return False
    return True


def visual_regression(references: Sequence[Run], run: Run) -> Verdict:
    """Pass when every screenshot of the run matches, step for step, the screenshots of
    some reference run (same count, same sizes, no pixel over Playwright's threshold).
    Not applicable when neither the run nor the references have screenshots."""
    actual = _screenshots(run)
    golden = [_screenshots(reference) for reference in references]
    if not any(actual) and not any(any(shots) for shots in golden):
        return NOT_APPLICABLE, None
    ok = any(_screens_match(expected, actual) for expected in golden)
    return (PASS if ok else FAIL), None


BASELINES: dict[str, Callable[[Model, Sequence[Run], Run], Verdict]] = {
    "self-report": lambda model, references, run: self_report(run),
    "record-and-replay": lambda model, references, run: record_and_replay(model, run),
    "visual regression": lambda model, references, run: visual_regression(references, run),
    "trajectory superset": lambda model, references, run: trajectory_superset(references, run),
    "final-state check": lambda model, references, run: final_state(model, run),
}
"""The baselines by display name, each called as ``(model, reference runs, run)``."""
