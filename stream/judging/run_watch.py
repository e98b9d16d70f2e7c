"""What the worker's timer reads at every tick, kept up to date as the run book's runs
change, so that a tick costs the runs it has to look at, not every run kept: a finished run
stays an hour, and a worker judging 400 runs a second keeps over a million
(benchmarks/retained_runs.py); an open run needs looking at when one of its events came
or when the time it was given comes (its deadline, the end of its silence), and a fleet
keeps thousands open at once (benchmarks/retained_runs.py --open)."""
from __future__ import annotations

import heapq
from collections import Counter as Tally
from collections.abc import Callable, Container
from itertools import count

from stream.judging.records import RunRecord


class RunWatch:
    """The runs a run book holds, as its timer reads them: the open ones (in the order they
    came), by task, and when each is to be looked at again (a heap: an entry is stale once
    its run was given another time or left) or which partition it waits for (:meth:`park`);
    the finished ones, in memory or let go to the store, by when they closed (a heap: an
    entry is stale once its run closed again later or left); the partitions of those in
    memory."""

    def __init__(self) -> None:
        self.open: dict[str, RunRecord] = {}
        self._came: dict[str, int] = {}  # open run -> its place in the order runs came
        self._order = count()
        self._tasks: Tally = Tally()  # open runs by task
        self._touched: set[str] = set()  # open runs to look at, whatever their time
        self._wake: list[tuple[float, str]] = []
        self._wake_at: dict[str, float] = {}  # open run -> its live entry's time
        self._parked: dict[int, set[str]] = {}  # partition -> open runs waiting for it
        self._closed: list[tuple[float, str]] = []
        self._partitions: Tally = Tally()

    def held(self, rec: RunRecord) -> None:
        """`rec` is held in memory from now on."""
        self._partitions[rec.partition] += 1
        if not rec.final:
            self.open[rec.run_id] = rec
            self._came[rec.run_id] = next(self._order)
            self._tasks[rec.task] += 1
            self._touched.add(rec.run_id)
        elif rec.closed_at is not None:
            self.closed(rec, rec.closed_at)

    def touched(self, rec: RunRecord) -> None:
        """An event of open run `rec` came: the next tick looks at it."""
        if rec.run_id in self.open:
            self._touched.add(rec.run_id)

    def look_again(self) -> None:
        """The next tick looks at every open run (what they were given was counted from
        partitions' fetches that start again)."""
        self._touched.update(self.open)

    def wake(self, rec: RunRecord, at: float | None) -> None:
        """Look at open run `rec` again at the first tick at or after `at` (None: only
        once an event of it comes)."""
        if at is None:
            self._wake_at.pop(rec.run_id, None)
            return
        self._wake_at[rec.run_id] = at
        heapq.heappush(self._wake, (at, rec.run_id))
        if len(self._wake) > 2 * len(self._wake_at) + 64:  # mostly stale: built again
            self._wake = [(when, run_id) for run_id, when in self._wake_at.items()]
            heapq.heapify(self._wake)

    def park(self, rec: RunRecord) -> None:
        """Look at open run `rec` again once its partition is no longer waited for
        (:meth:`unpark`) or one of its events comes: a partition behind its backlog keeps
        its runs waiting, and looking at each of them at every tick would cost every open
        run of it, whatever came."""
        self._parked.setdefault(rec.partition, set()).add(rec.run_id)

    def unpark(self, waiting: Container[int]) -> None:
        """The partitions not in `waiting` are no longer waited for: the next :meth:`due`
        has their parked runs."""
        for partition in [p for p in self._parked if p not in waiting]:
            self._touched.update(self._parked.pop(partition))

    def due(self, now: float) -> list[RunRecord]:
        """The open runs to look at `now`, in the order they came: those an event of which
        came, and those whose time came (no longer waited for: :meth:`wake` again)."""
        due, self._touched = self._touched, set()
        while self._wake and self._wake[0][0] <= now:
            at, run_id = heapq.heappop(self._wake)
            if self._wake_at.get(run_id) == at:
                del self._wake_at[run_id]
                due.add(run_id)
        return sorted((self.open[run_id] for run_id in due if run_id in self.open),
                      key=lambda rec: self._came[rec.run_id])

    def closed(self, rec: RunRecord, at: float) -> None:
        """`rec`'s verdict became final, or its run closed again, at `at`."""
        self._left_open(rec)
        heapq.heappush(self._closed, (at, rec.run_id))

    def dropped(self, rec: RunRecord) -> None:
        """`rec` is no longer held in memory (a finished run's entry by when it closed
        stays: it is let go to the store until its retention passes)."""
        self._partitions[rec.partition] -= 1
        if not self._partitions[rec.partition]:
            del self._partitions[rec.partition]
        self._left_open(rec)

    def _left_open(self, rec: RunRecord) -> None:
        if self.open.pop(rec.run_id, None) is None:
            return
        del self._came[rec.run_id]
        self._tasks[rec.task] -= 1
        if not self._tasks[rec.task]:
            del self._tasks[rec.task]
        self._touched.discard(rec.run_id)
        self._wake_at.pop(rec.run_id, None)
        self._parked.get(rec.partition, set()).discard(rec.run_id)

    def clear(self) -> None:
        for held in (self.open, self._came, self._tasks, self._touched, self._wake,
                     self._wake_at, self._parked, self._closed, self._partitions):
            held.clear()

    def open_by_task(self) -> Tally:
        """How many runs are open, by task."""
        return Tally(self._tasks)

    def partitions(self) -> list[int]:
        """The partitions of the runs held."""
        return list(self._partitions)

    def closed_before(self, when: float, find: Callable[[str], RunRecord | None],
                      keep: Callable[[RunRecord], bool]) -> list[RunRecord]:
        """The finished runs (their records: `find` by id) that closed before `when`, taken
        out of the watch, but for those to `keep` (looked at again next time)."""
        due, kept, seen = [], [], set()
        while self._closed and self._closed[0][0] < when:
            closed_at, run_id = entry = heapq.heappop(self._closed)
            rec = find(run_id)
            if rec is None or rec.closed_at != closed_at or run_id in seen:
                continue  # left, closed again later (its later entry stands), or read back
            seen.add(run_id)
            if keep(rec):
                kept.append(entry)
            else:
                due.append(rec)
        for entry in kept:
            heapq.heappush(self._closed, entry)
        return due
