"""What the worker's timer reads at every tick, kept up to date as the run book's runs
change, so that a tick costs the open runs and the finished runs whose retention passed,
not every run kept: a finished run stays an hour, and a worker judging 400 runs a second
keeps over a million (benchmarks/retained_runs.py)."""
from __future__ import annotations

import heapq
from collections import Counter as Tally
from collections.abc import Callable, Mapping

from stream.judging.records import RunRecord


class RunWatch:
    """The runs a run book holds in memory, as its timer reads them: the open ones (in the
    order they came), the finished ones by when they closed (a heap: an entry is stale once
    its run closed again later or left), and the partitions of them all."""

    def __init__(self) -> None:
        self.open: dict[str, RunRecord] = {}
        self._closed: list[tuple[float, str]] = []
        self._partitions: Tally = Tally()

    def held(self, rec: RunRecord) -> None:
        """`rec` is held in memory from now on."""
        self._partitions[rec.partition] += 1
        if not rec.final:
            self.open[rec.run_id] = rec
        elif rec.closed_at is not None:
            self.closed(rec, rec.closed_at)

    def closed(self, rec: RunRecord, at: float) -> None:
        """`rec`'s verdict became final, or its run closed again, at `at`."""
        self.open.pop(rec.run_id, None)
        heapq.heappush(self._closed, (at, rec.run_id))

    def dropped(self, rec: RunRecord) -> None:
        """`rec` is no longer held in memory."""
        self._partitions[rec.partition] -= 1
        if not self._partitions[rec.partition]:
            del self._partitions[rec.partition]
        self.open.pop(rec.run_id, None)

    def clear(self) -> None:
        self.open.clear()
        self._closed.clear()
        self._partitions.clear()

    def partitions(self) -> list[int]:
        """The partitions of the runs held."""
        return list(self._partitions)

    def closed_before(self, when: float, held: Mapping[str, RunRecord],
                      keep: Callable[[RunRecord], bool]) -> list[RunRecord]:
        """The finished runs of `held` (the run book's, by id) that closed before `when`,
        taken out of the watch, but for those to `keep` (looked at again next time)."""
        due, kept = [], []
        while self._closed and self._closed[0][0] < when:
            closed_at, run_id = entry = heapq.heappop(self._closed)
            rec = held.get(run_id)
            if rec is None or rec.closed_at != closed_at:
                continue  # left, or closed again later (its later entry stands)
            if keep(rec):
                kept.append(entry)
            else:
                due.append(rec)
        for entry in kept:
            heapq.heappush(self._closed, entry)
        return due
