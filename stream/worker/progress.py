"""How far the worker got in each topic partition it reads (events and finished runs):
where reading started at the last assignment, the last offset processed and when. The stall
guard and the deadlines' "caught up" check read it (:mod:`stream.worker.watchdog`)."""
from __future__ import annotations

import time
from typing import Any

from aiokafka import TopicPartition

from stream.kafka.clients import committed_offsets


class Progress:
    """Per topic partition: ``start`` (next offset to read when assigned), ``processed``
    (last offset processed), ``progress`` (monotonic time of the last progress); ``busy``:
    partitions whose record is being worked on for long (learning), which count as
    progressing; ``assigned``: the first assignment's table recovery is done."""

    def __init__(self) -> None:
        self.start: dict[TopicPartition, int] = {}
        self.processed: dict[TopicPartition, int] = {}
        self.progress: dict[TopicPartition, float] = {}
        self.busy: set[TopicPartition] = set()
        self.assigned = False
        self._decoding: set[TopicPartition] = set()

    def decoding(self, tps: set[TopicPartition]) -> None:
        """`tps` wait for a screenshot being decoded (a decoding is progress): they are busy,
        and the partitions that waited before but no longer do are not."""
        self.busy.difference_update(self._decoding - tps)
        self.busy.update(tps)
        self._decoding = tps

    def reset(self, tps: list[TopicPartition], start: dict[TopicPartition, int]) -> None:
        """`tps` were assigned, to be read from `start`: offsets processed of partitions
        not among them are forgotten, and every one of them made progress now."""
        self.start = start
        self.processed = {tp: offset for tp, offset in self.processed.items() if tp in start}
        self.progress = {tp: time.monotonic() for tp in tps}
        self.assigned = True

    def done(self, tp: TopicPartition, offset: int, now: float | None = None) -> None:
        """The record at `offset` of `tp` was processed."""
        self.processed[tp] = offset
        self.progress[tp] = time.monotonic() if now is None else now

    def moved(self, tp: TopicPartition) -> None:
        """`tp` made progress now (its record's long work ended)."""
        self.progress[tp] = time.monotonic()

    def next_offset(self, tp: TopicPartition) -> int | None:
        """The next offset of `tp` to process (None if unknown)."""
        done = self.processed.get(tp)
        return done + 1 if done is not None else self.start.get(tp)

    def last_progress(self, tp: TopicPartition, now: float) -> float:
        """When `tp` last made progress (`now` while it is busy)."""
        return now if tp in self.busy else self.progress[tp]


async def start_offsets(consumer: Any, bootstrap: str, group: str,
                        tps: list[TopicPartition]) -> dict[TopicPartition, int]:
    """Where reading `tps` starts: the offset `group` committed, else the earliest
    (asked of Faust's `consumer`)."""
    start = await committed_offsets(bootstrap, group, tps)
    missing = [tp for tp in tps if tp not in start]
    if missing:
        start.update(await consumer.earliest_offsets(*missing))
    return start
