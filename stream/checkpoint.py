"""Acknowledging processed events only once what they changed is durable.

The judge agent takes events without acknowledging them (``stream.noack_take``), processes
them and sends their verdicts without waiting. Every interval :meth:`Checkpoint.settle`
writes the runs changed meanwhile (one changelog record per run, however many of its events
came), waits until those records and the verdicts are delivered, and only then acknowledges
the events. Faust commits acknowledged offsets only, so a committed offset never runs ahead
of the table: after a crash the records since the last commit come again and
:class:`stream.processor.StreamProcessor` resumes from the runs as written.
"""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Iterable, Protocol

from stream.processor import StreamProcessor

from stream.records import Output


class Settling(Protocol):
    """A store whose writes are awaitable (:class:`stream.tables.TableStore`)."""

    async def settled(self) -> None: ...


class Checkpoint:
    """Events processed but not yet acknowledged, and what their processing sent."""

    def __init__(self, processor: StreamProcessor, store: Settling):
        self.processor, self.store = processor, store
        self.events: list[tuple[Any, Any]] = []  # (stream, event)
        self.sends: list[Awaitable] = []
        self.verdicts: list[tuple[str, dict]] = []

    def add(self, stream: Any, events: Iterable[Any], out: Output,
            sends: Iterable[Awaitable]) -> None:
        """`events` of `stream` were processed into `out`, whose records `sends` deliver."""
        self.events += [(stream, event) for event in events]
        self.sends += sends
        self.verdicts += out.verdicts

    async def settle(self) -> int:
        """Write the changed runs, wait for every write and send, then acknowledge the
        events; returns how many were acknowledged."""
        events, sends, verdicts = self.events, self.sends, self.verdicts
        self.events, self.sends, self.verdicts = [], [], []
        self.processor.flush()
        await asyncio.gather(self.store.settled(), *sends)
        self.processor.delivered(verdicts)
        for stream, event in events:
            await stream.ack(event)
        return len(events)
