"""Acknowledging processed events only once what they changed is durable.

The judge agent takes events without acknowledging them (:mod:`stream.worker.fetched`), processes
them and sends their verdicts without waiting. Every interval :meth:`Checkpoint.settle`
writes the runs changed meanwhile (one changelog record per run, however many of its events
came), waits until those records and the verdicts are delivered, and only then acknowledges
the events. Faust commits acknowledged offsets only, so a committed offset never runs ahead
of the table: after a crash the records since the last commit come again and
:class:`stream.judging.processor.StreamProcessor` resumes from the runs as written.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from stream.judging.records import Output
from stream.judging.runbook import RunBook


class Settling(Protocol):
    """A store whose writes are awaitable (:class:`stream.worker.tables.TableStore`)."""

    async def settled(self) -> None: ...


class Checkpoint:
    """Events processed but not yet acknowledged, and what their processing sent."""

    def __init__(self, runs: RunBook, store: Settling, ack: Callable[[Any], Any]):
        """`runs`' changes are written to `store`; `ack` acknowledges one event (Faust's
        ``consumer.ack(message)``)."""
        self.runs, self.store, self.ack = runs, store, ack
        self.events: list[Any] = []
        self.sends: list[Awaitable] = []
        self.verdicts: list[tuple[str, dict]] = []

    def add(self, events: Iterable[Any], out: Output, sends: Iterable[Awaitable]) -> None:
        """`events` were processed into `out`, whose records `sends` deliver."""
        self.events += events
        self.sends += sends
        self.verdicts += out.verdicts

    async def settle(self) -> int:
        """Write the changed runs, wait for every write and send, then acknowledge the
        events; returns how many were acknowledged."""
        events, sends, verdicts = self.events, self.sends, self.verdicts
        self.events, self.sends, self.verdicts = [], [], []
        self.runs.flush()
        await asyncio.gather(self.store.settled(), *sends)
        self.runs.delivered(verdicts)
        for event in events:
            self.ack(event)
        return len(events)
