"""How long a run may take to reach its next milestone or leave a state, learned from the
successful runs' timing (the stream's timer, :meth:`trustlayer.judge.matcher.Matcher.tick`)."""
from __future__ import annotations

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
