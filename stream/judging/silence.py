"""The processor's timer: runs that went silent past their learned deadline are at risk
(their next event decides, as the file validator would), runs whose missing event never
came fail after ``reorder_timeout``, runs whose end never came are finalised as
``incomplete`` (cause ``stream_fault``) after ``end_silence`` (default:
:func:`learned_silence`); finished runs leave after ``retention``.

Silence is counted only where it means something: from the later of a run's last event
(its publish time) and the moment the partition's fetches last resumed (this worker's first
tick with it, or the broker's return after an outage), and only on a partition whose every
published record has been processed. Runs quiet while the broker was away or no worker had
them get their whole deadline again, rather than failing all at once.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Container
from dataclasses import replace

from stream.judging.emitter import Emitter
from stream.judging.records import Output, RunRecord
from stream.judging.runbook import RunBook
from stream.judging.settings import WorkerSettings
from trustlayer.judge.deadlines import learned_silence
from trustlayer.judge.status import AT_RISK, Status

#: How much earlier than worked out a run is looked at again (see :meth:`Silence._look`).
_EARLY = 1e-3


class Silence:
    """Deadlines and reorder timeouts of the runs in a :class:`~stream.judging.runbook.RunBook`."""

    def __init__(self, runs: RunBook, emitter: Emitter, settings: WorkerSettings,
                 clock: Callable[[], float]):
        self.runs, self.emitter, self.settings, self.clock = runs, emitter, settings, clock
        #: partition -> since when its fetches have succeeded without a break
        self.reachable_since: dict[int, float] = {}

    def tick(self, wall: float | None = None,
             caught_up: Callable[[int], bool] = lambda partition: True,
             fetched: Callable[[int], bool] = lambda partition: True) -> Output:
        """Fail silent runs whose deadline passed or whose missing event never came.

        `caught_up(partition)`: every record published to the partition so far has been
        processed (a worker behind its backlog must not call runs silent); `fetched(
        partition)`: the consumer fetched from it lately (the broker answers). A run's clock
        is its last event's ``ts`` plus its silence (see the module doc). Verdicts made here
        go to the run's outbox: flush the runs, wait for the store, send them, then confirm
        them (:meth:`RunBook.confirm`). Also drops finished runs older than ``retention``.
        """
        wall = self.clock() if wall is None else wall
        out = Output()
        runs = self.runs
        waiting = set()  # partitions whose runs' silence does not count now
        for partition in runs.partitions():
            if fetched(partition):
                self.reachable_since.setdefault(partition, wall)
                if not caught_up(partition):
                    waiting.add(partition)
            else:
                self.reachable_since.pop(partition, None)
                waiting.add(partition)
        runs.unpark(waiting)
        for rec in runs.closed_before(wall - self.settings.retention):
            runs.forget(rec)
        for rec in runs.due(wall):
            runs.wake(rec, self._look(rec, out, wall, waiting))
        runs.export_open_runs()
        return out

    def _look(self, rec: RunRecord, out: Output, wall: float,
              waiting: Container[int]) -> float | None:
        """Fail open run `rec` if its missing event never came or its end never came, or
        say it is at risk past a learned deadline (see :meth:`tick`); return when to look
        at it again (None: once one of its events comes or its partition, `waiting` now,
        is no longer), a moment early: each time is worked out the other way round from
        its test, and float rounding must not put it after the tick at which the test
        first holds."""
        if not self.runs.active(rec):
            return None
        if rec.partition in waiting:
            self.runs.park(rec)
            return None
        since = self.reachable_since[rec.partition]
        times = []
        held_since = rec.held_since
        if held_since is not None:
            start = max(held_since, since)
            if wall - start > self.settings.reorder_timeout:
                self.emitter.events_missing(rec, out, None, run_clock(rec, wall, since), None,
                                            f"seq {rec.next_seq} did not come within "
                                            f"{self.settings.reorder_timeout:.0f} s")
                return None if rec.final else wall
            times.append(start + self.settings.reorder_timeout)
        if rec.last_pub is not None and rec.last_ts is not None:
            start = max(rec.last_pub, since)
            now, silent = run_clock(rec, wall, since), wall - start
            late = self._overdue(rec, out, now, silent) if self.settings.deadlines else None
            end = self.end_silence(rec)
            if silent > end:
                self.emitter.incomplete(rec, out, now, silent, late)
                return None if rec.final else wall
            times.append(start + end)
            due = self.runs.matcher(rec).late_from() \
                if self.settings.deadlines and late is None else None
            if due is not None:  # (the run's own time, as `now`)
                times.append(due - rec.last_ts + start)
        return min(times) - _EARLY if times else None

    def _overdue(self, rec: RunRecord, out: Output, now: float,
                 silent: float) -> Status | None:
        """A learned deadline passed while the run sent nothing: the run is at risk, not
        failed. Whether the product hung or the runner or the broker went away is not
        known until an event comes: the next one judges the run as the file validator
        would (its ``ts`` shows the delay), and none within the end silence ends it
        ``incomplete`` (cause ``stream_fault``), never a product bug for an outage."""
        matcher = self.runs.matcher(rec)
        if matcher.late(now) is None:  # (most ticks: the copy below costs four times this)
            return None
        status = matcher.current
        probe = copy.copy(matcher)  # the core's deadline rule, asked on a copy of the status
        probe.status = replace(status, missing=list(status.missing))
        late = probe.tick(now)
        if late is None or not late.final:
            return None
        at_risk = replace(status, status=AT_RISK, code=late.code, details=late.details,
                          reason=f"no event for {silent:.0f} s after seq {rec.next_seq - 1}: "
                                 f"{late.details} (the product, the agent, the runner or the "
                                 "broker is late: the next event decides)")
        self.emitter.emit(rec, at_risk, out, None, now, None)
        return at_risk

    def end_silence(self, rec: RunRecord) -> float:
        """Seconds without events after which a run without its end is finalised as
        ``incomplete``: ``settings.end_silence``, else :func:`learned_silence` of its model."""
        if self.settings.end_silence is not None:
            return self.settings.end_silence
        return learned_silence(self.runs.model(rec))

    def reset(self) -> None:
        """Partitions were assigned: every one's silence counts from its first fetch here."""
        self.reachable_since.clear()
        self.runs.look_again()


def run_clock(rec: RunRecord, wall: float, since: float) -> float:
    """Now in the run's own time: its last event's ts (or its earliest held event's) plus
    the wall time since that event was published or since `since`, whichever is later (no
    clock shared with runners)."""
    if rec.last_pub is not None and rec.last_ts is not None:
        return rec.last_ts + (wall - max(rec.last_pub, since))
    first = min(rec.held.values(), key=lambda h: h.pub)
    return first.event["ts"] + (wall - max(first.pub, since))
