"""How long a run may take to reach its next milestone or leave a state, learned from the
successful runs' timing (the stream's timer, :meth:`trustlayer.judge.matcher.Matcher.tick`)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from trustlayer.judge.history import Observed
from trustlayer.judge.reasons import DEADLINE, Reason, quoted
from trustlayer.model import Model, per_model
from trustlayer.settings import Settings

#: A deadline needs this many timed observations from successful runs (fewer: none).
DEADLINE_MIN_OBSERVATIONS = 3


def slowest(stats: dict) -> float:
    """The longest a duration lasted in successful runs: its robust ``bound``
    (:func:`trustlayer.learn.learner.time_bound`), or ``max`` in models learned before it."""
    return float(stats.get("bound", stats["max"]))


def allowed(seconds: float, settings: Settings) -> float:
    """How long a wait that took at most `seconds` in successful runs may take:
    ``deadline_factor`` times it, at least ``deadline_floor`` (`settings`)."""
    return max(settings.deadline_floor, settings.deadline_factor * seconds)


def deadline(stats: dict | None, settings: Settings) -> float | None:
    """Seconds a duration may last given its statistics from successful runs (``n``
    observations): the :func:`slowest` :func:`allowed`; None when fewer than
    :data:`DEADLINE_MIN_OBSERVATIONS` were seen (a deadline learned from one or two runs
    fails runs that are merely a little slower).

    >>> s = Settings()
    >>> deadline({"max": 2.0, "n": 8}, s), deadline({"max": 20.0, "n": 3}, s)
    (30.0, 60.0)
    >>> deadline({"max": 20.0, "n": 2}, s) is None, deadline(None, s) is None
    (True, True)
    """
    if not stats or stats.get("n", 0) < DEADLINE_MIN_OBSERVATIONS:
        return None
    return allowed(slowest(stats), settings)


class _Limit(NamedTuple):
    """A learned deadline that applies: for which state, from its successful runs'
    statistics, how many seconds."""

    state: str
    stats: dict
    seconds: float


def _reach_limit(model: Model, position: int) -> _Limit | None:
    """The deadline of reaching the next milestone (`position`), counted from the run's start."""
    essential = model.essential
    upcoming = essential[position] if position < len(essential) else None
    reach = model.timing["time_to_reach"].get(upcoming) if upcoming is not None else None
    limit = deadline(reach, model.settings)
    return _Limit(upcoming, reach, limit) if upcoming is not None and reach is not None \
        and limit is not None else None


def _dwell_limit(model: Model, history: Sequence[Observed]) -> _Limit | None:
    """The deadline of leaving the state the run shows last, counted from its ``ts``."""
    if not history or not history[-1].ids:
        return None
    current = history[-1].ids[0]
    dwell = model.timing["dwell"].get(current)
    limit = deadline(dwell, model.settings)
    return _Limit(current, dwell, limit) if dwell is not None and limit is not None else None


def overdue(model: Model, history: Sequence[Observed], position: int, start_ts: float,
            now: float) -> tuple[Reason, str] | None:
    """The short reason and the details when a learned deadline has passed at time `now`
    for a run at milestone `position` that started at `start_ts`: the next milestone not
    reached, or the current state not left, within its :func:`deadline`; else None."""
    seq = history[-1].seq if history else 0
    reach = _reach_limit(model, position)
    if reach is not None and now - start_ts > reach.seconds:
        name, limit = model.name(reach.state), reach.seconds
        return (Reason(DEADLINE, f"{quoted(name)} within {slowest(reach.stats):.0f} s",
                       f"the screen showed it not reached within {limit:.0f} s", seq),
                f"'{name}' not reached within {limit:.0f} s; successful runs reached it "
                f"within {slowest(reach.stats):.0f} s")
    dwell = _dwell_limit(model, history)
    lasted = now - history[-1].ts if history else 0.0
    if dwell is not None and lasted > dwell.seconds:
        current, limit = model.name(dwell.state), dwell.seconds
        return (Reason(DEADLINE, f"{quoted(current)} left within {slowest(dwell.stats):.0f} s",
                       f"the screen showed it and it lasted {lasted:.0f} s", seq),
                f"'{current}' lasted {lasted:.0f} s; successful runs left it within "
                f"{slowest(dwell.stats):.0f} s")
    return None


def overdue_from(model: Model, history: Sequence[Observed], position: int,
                 start_ts: float) -> float | None:
    """The time after which :func:`overdue` finds a deadline passed, as the run stands (a
    later `now` only adds to the time taken); None when no deadline applies."""
    reach, dwell = _reach_limit(model, position), _dwell_limit(model, history)
    times = [start_ts + reach.seconds] if reach is not None else []
    if dwell is not None:
        times.append(history[-1].ts + dwell.seconds)
    return min(times, default=None)


@per_model  # (the streaming worker's timer asks it of every run it looks at)
def learned_silence(model: Model) -> float:
    """How long a run of `model` may go without events before it counts as abandoned: what
    is :func:`allowed` after the longest any successful run took to reach a milestone or
    stayed in a state (a gap between two events is shorter than either; robust:
    :func:`slowest`)."""
    longest = max((slowest(stats) for durations in model.timing.values()
                   for stats in durations.values()), default=0.0)
    return allowed(longest, model.settings)
