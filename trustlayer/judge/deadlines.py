"""How long a run may take to reach its next milestone or leave a state, learned from the
successful runs' timing (the stream's timer, :meth:`trustlayer.judge.matcher.Matcher.tick`)."""
from __future__ import annotations

from collections.abc import Sequence

from trustlayer.judge.history import Observed
from trustlayer.model import Model

#: A deadline needs this many timed observations from successful runs (fewer: none).
DEADLINE_MIN_OBSERVATIONS = 3
#: No deadline is shorter than this many seconds, whatever the successful runs took.
DEADLINE_FLOOR = 30.0


def deadline(stats: dict | None, factor: float) -> float | None:
    """Seconds a duration may last given its statistics from successful runs (``max``, and
    ``n`` observations): `factor` times the slowest, at least :data:`DEADLINE_FLOOR`;
    None when fewer than :data:`DEADLINE_MIN_OBSERVATIONS` were seen (a deadline learned
    from one or two runs fails runs that are merely a little slower).

    >>> deadline({"max": 2.0, "n": 8}, 3.0), deadline({"max": 20.0, "n": 3}, 3.0)
    (30.0, 60.0)
    >>> deadline({"max": 20.0, "n": 2}, 3.0) is None, deadline(None, 3.0) is None
    (True, True)
    """
    if not stats or stats.get("n", 0) < DEADLINE_MIN_OBSERVATIONS:
        return None
    return max(DEADLINE_FLOOR, factor * stats["max"])


def overdue(model: Model, position: int, start_ts: float | None, history: Sequence[Observed],
            now: float) -> tuple[int, str] | None:
    """The seq to fail a run at and why, if at time `now` a learned deadline has passed: its
    next milestone (``model.essential[position]``) not reached, or its current state not
    left, within its :func:`deadline`. None without one (too few successful runs timed)."""
    timing, factor = model.timing, model.settings.deadline_factor
    upcoming = model.essential[position] if position < len(model.essential) else None
    reach = timing["time_to_reach"].get(upcoming) if upcoming is not None else None
    limit = deadline(reach, factor)
    if upcoming is not None and reach is not None and limit is not None \
            and start_ts is not None and now - start_ts > limit:
        return (history[-1].seq if history else 0,
                f"'{model.name(upcoming)}' not reached within {limit:.0f} s; "
                f"successful runs reached it within {reach['max']:.0f} s")
    if history and history[-1].ids:
        current = history[-1].ids[0]
        dwell = timing["dwell"].get(current)
        limit = deadline(dwell, factor)
        lasted = now - history[-1].ts
        if dwell is not None and limit is not None and lasted > limit:
            return (history[-1].seq, f"'{model.name(current)}' lasted {lasted:.0f} s; "
                    f"successful runs left it within {dwell['max']:.0f} s")
    return None
