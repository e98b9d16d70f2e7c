"""Events the worker's consumer fetched, waiting for the judge agent.

The consumer (:class:`stream.worker.transport.WorkerTransport`) hands over the records of the events
topic a fetch at a time (:meth:`FetchedEvents.put`); the judge takes up to a batch of them
at once (:meth:`FetchedEvents.take`). Past :data:`MAX_RECORDS` records or ``max_bytes``
bytes waiting (inline screenshots are large), the partitions they came from are no longer
fetched until the judge has taken the backlog below half of both (Faust's consumer
``on_buffer_full``/``on_buffer_drop``, as its own stream buffers do). A
rebalance drops what waits (:meth:`FetchedEvents.clear`): those records are not
acknowledged, so they are read again from the committed offsets by whoever owns their
partitions then.
"""
from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Protocol

from faust.types import TP, Message
from prometheus_client import Counter

#: Records waiting before their partitions are paused (Faust's stream buffer: 4,096).
MAX_RECORDS = 4096


class Pausing(Protocol):
    """What :class:`FetchedEvents` asks of Faust's consumer."""

    def on_buffer_full(self, tp: TP) -> None: ...

    def on_buffer_drop(self, tp: TP) -> None: ...


class FetchedEvents:
    """Fetched records in arrival order, and the partitions paused while too many wait.

    `consumer` gives the consumer to pause and resume partitions on (asked when needed: it
    may be made after this), `generation` the consumer group's current generation (a record
    fetched in an earlier one is dropped when taken, as Faust's streams do); `pauses` counts
    the times fetching paused."""

    def __init__(self, consumer: Callable[[], Pausing], generation: Callable[[], int],
                 max_bytes: int, pauses: Counter):
        self._consumer, self._generation, self.max_bytes = consumer, generation, max_bytes
        self.pauses = pauses
        self.waiting: deque[Message] = deque()
        self.bytes = 0  # of the waiting records' values
        self.paused: set[TP] = set()
        self._arrived = asyncio.Event()
        self._fresh = asyncio.Event()  # records put since the last take

    def put(self, messages: list[Message]) -> None:
        """A fetch's records, in order."""
        if not messages:
            return
        self.waiting.extend(messages)
        self.bytes += _size(messages)
        self._arrived.set()
        self._fresh.set()
        if len(self.waiting) > MAX_RECORDS or self.bytes > self.max_bytes:
            if not self.paused:
                self.pauses.inc()
            consumer = self._consumer()
            # Faust's own TP (not aiokafka's): Faust asserts its active partitions are
            for tp in {TP(m.topic, m.partition) for m in messages} - self.paused:
                consumer.on_buffer_full(tp)
                self.paused.add(tp)

    async def take(self, most: int) -> list[Message]:
        """At least one and at most `most` records, waiting until one comes."""
        while True:
            while not self.waiting:
                self._arrived.clear()
                await self._arrived.wait()
            generation = self._generation()
            self._fresh.clear()
            taken = [self.waiting.popleft() for _ in range(min(most, len(self.waiting)))]
            self.bytes -= _size(taken)
            batch = [m for m in taken if m.generation_id == generation]
            if self.paused and len(self.waiting) <= MAX_RECORDS // 2 and \
                    self.bytes <= self.max_bytes // 2:
                self._resume()
            if batch:
                return batch

    async def fresh(self) -> None:
        """Until records come that the last :meth:`take` could not see (at once if some
        came since)."""
        await self._fresh.wait()

    def put_back(self, messages: list[Message]) -> None:
        """Records taken but not judged (the judge's turn ended): first in line again."""
        if messages:
            self.waiting.extendleft(reversed(messages))
            self.bytes += _size(messages)
            self._arrived.set()

    def clear(self) -> None:
        """A rebalance began: drop what waits (read again from the committed offsets)."""
        self.waiting.clear()
        self.bytes = 0
        self._resume()

    def _resume(self) -> None:
        consumer = self._consumer()
        for tp in self.paused:
            consumer.on_buffer_drop(tp)
        self.paused.clear()


def _size(messages: list[Message]) -> int:
    """Bytes of the records' values."""
    return sum(len(m.value or b"") for m in messages)
