"""The judge hands the event loop a turn within :data:`stream.worker.runtime.JUDGE_TURN` seconds
(the consumer's heartbeats and fetches run in that loop): a batch is judged until its turn
ends, and the records not judged yet wait first in line for the next turn, as do those of a
partition whose record's screenshot is still decoding."""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter

from stream.worker.fetched import FetchedEvents
from stream.worker.runtime import first_of, within_turn


@dataclass
class Record:
    offset: int
    value: bytes = b"x" * 10
    topic: str = "events"
    partition: int = 0
    generation_id: int = 1


def test_a_turn_ends_at_its_deadline_after_one_record_at_least():
    batch = [Record(k) for k in range(10)]
    judged: list = []
    waiting: list = []
    handed = []
    for record in within_turn(batch, time.monotonic() + 0.05, judged, waiting):
        handed.append(record)
        time.sleep(0.02)  # a slow record
    assert 2 <= len(handed) <= 4 and handed == judged == batch[:len(handed)]
    assert waiting == batch[len(handed):]
    late: list = []
    assert list(within_turn(batch, time.monotonic() - 1, late, [])) == late == batch[:1]
    every: list = []
    assert list(within_turn(batch, time.monotonic() + 60, every, [])) == every == batch


def test_a_record_still_decoding_holds_back_its_partition_only():
    """A screenshot decoding (not ready) keeps its record and the later ones of its
    partition waiting, in order; the other partitions' records are judged meanwhile."""
    batch = [Record(k, partition=k % 2) for k in range(8)]
    judged: list = []
    waiting: list = []
    handed = list(within_turn(batch, time.monotonic() + 60, judged, waiting,
                              ready=lambda record: record.offset != 2))
    assert [r.offset for r in handed] == [0, 1, 3, 5, 7]
    assert [r.offset for r in waiting] == [2, 4, 6]


def test_records_put_back_come_first_again_in_their_order():
    async def go() -> tuple[list, list, int]:
        pauses = Counter("pauses", "fetch pauses", registry=CollectorRegistry())
        fetched = FetchedEvents(lambda: None, lambda: 1, 1 << 20, pauses)
        fetched.put([Record(k) for k in range(6)])
        first = await fetched.take(4)
        fetched.put_back(first[2:])
        fetched.put([Record(6)])
        again = await fetched.take(10)
        return first, again, fetched.bytes

    first, again, left = asyncio.run(go())
    assert [r.offset for r in first] == [0, 1, 2, 3]
    assert [r.offset for r in again] == [2, 3, 4, 5, 6]
    assert left == 0


def test_a_judge_waiting_on_a_decoding_screenshot_wakes_for_records_fetched_meanwhile():
    """Records put back (a partition held by its screenshot) are no news; records fetched
    after the judge's take are, though the screenshot still decodes: a run of another
    partition is judged without waiting for it (issue 29's heavy screenshots)."""
    async def go() -> tuple[bool, bool]:
        pauses = Counter("pauses", "fetch pauses", registry=CollectorRegistry())
        fetched = FetchedEvents(lambda: None, lambda: 1, 1 << 20, pauses)
        fetched.put([Record(0)])
        held = await fetched.take(10)
        fetched.put_back(held)
        woke_on_put_back = await _woke(first_of(_decoding(), fetched.fresh()))
        asyncio.get_running_loop().call_later(0.05, fetched.put, [Record(1, partition=1)])
        woke_on_fetch = await _woke(first_of(_decoding(), fetched.fresh()))
        return woke_on_put_back, woke_on_fetch

    woke_on_put_back, woke_on_fetch = asyncio.run(go())
    assert not woke_on_put_back and woke_on_fetch


async def _decoding() -> None:
    """A screenshot that takes longer than the test."""
    await asyncio.sleep(60)


async def _woke(wait) -> bool:
    """Did `wait` end within half a second?"""
    try:
        await asyncio.wait_for(asyncio.shield(asyncio.ensure_future(wait)), 0.5)
    except asyncio.TimeoutError:
        return False
    return True
