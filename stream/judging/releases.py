"""The agent releases a worker labels its metrics with, bounded: per task the newest
`kept` releases (``meta.agent_version`` on a run's first event) keep their own label, any
older one is counted as ``older`` and a run without one as ``unknown``. So a fleet that
ships a release a day adds no series beyond ``kept + 2`` per task.

Which release is newest is decided by the names in natural order (numbers as numbers:
``3.10`` after ``3.9``, ``v2`` after ``v1``), not by which run came first, so every worker,
restarted or not, ranks them alike.
"""
from __future__ import annotations

import re
from collections.abc import Callable

UNKNOWN, OLDER = "unknown", "older"
MAX_RELEASE_CHARS = 64  # a label value, not a text: longer names are cut


def natural_key(release: str) -> tuple:
    """`release` as a sort key: runs of digits compared as numbers.

    >>> sorted(["3.10", "3.9", "3.9.1", "v2", "v10"], key=natural_key)
    ['3.9', '3.9.1', '3.10', 'v2', 'v10']
    """
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.findall(r"\d+|\D+", release))


class Releases:
    """Per task, the newest `kept` releases seen, newest first (:meth:`label`).

    `dropped(task, release)` is called for a release that falls out (its series go); `ranked
    (task, ranks)` with the new ranks (1 = newest) whenever they change.
    """

    def __init__(self, kept: int, dropped: Callable[[str, str], None],
                 ranked: Callable[[str, dict[str, int]], None]):
        if kept < 2:
            raise ValueError("keep at least 2 releases per task (the newest and its predecessor)")
        self.kept, self.dropped, self.ranked = kept, dropped, ranked
        self._newest: dict[str, list[str]] = {}

    def label(self, task: str, release: object) -> str:
        """The label of a run of `task` by `release` (as its meta gave it)."""
        if not isinstance(release, str) or not release.strip():
            return UNKNOWN
        release = release.strip()[:MAX_RELEASE_CHARS]
        if release in (UNKNOWN, OLDER):
            return release
        newest = self._newest.setdefault(task, [])
        if release in newest:
            return release
        if len(newest) == self.kept and natural_key(release) < natural_key(newest[-1]):
            return OLDER
        newest.append(release)
        newest.sort(key=natural_key, reverse=True)
        for gone in newest[self.kept:]:
            self.dropped(task, gone)
        del newest[self.kept:]
        self.ranked(task, {name: rank for rank, name in enumerate(newest, 1)})
        return release
