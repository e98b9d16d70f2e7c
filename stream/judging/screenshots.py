"""Screenshots decoded off the event loop, each within a time budget, without holding up
the events of other partitions.

Decoding a large screenshot takes the CPU for a second or more; done in the worker's event
loop it held the consumer's heartbeats, fetches and timers (a 2 GB file, read whole, blocked
the loop for 20 s and the group expired the worker's session), and every event fetched
after it waited. The judge reads each fetched record ahead (:class:`ReadAhead`) and decodes
its screenshot in a small thread pool (Pillow releases the GIL while it decodes); a record
whose screenshot is still decoding waits, with the later records of its partition (their
order, and the order of their acknowledgements, is kept), while other partitions' records
are judged. A screenshot still decoding ``budget`` seconds after it started is marked
failed, and its event then ends its run with cause ``stream_fault`` (its thread finishes in
the background, unused).
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from stream.judging.events import Decoded
from trustlayer.errors import UnjudgeableEvent
from trustlayer.observe.fingerprints import SIGNATURE_SIDE
from trustlayer.observe.images import ImageRef
from trustlayer.observe.traces import Event


def screenshot_of(event: Event) -> ImageRef | None:
    """The screenshot of `event` whose pixels the judge will need, if any."""
    observation = event.observation
    return None if observation is None else observation.screenshot


class Decoder:
    """Decodes screenshots in `threads` threads, each within `budget` seconds (more threads
    than cores: a partition's heavy screenshot holds one thread, and the small screenshots
    of runs on other partitions need one free meanwhile)."""

    def __init__(self, budget: float, threads: int = 4):
        self.budget = budget
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="decode")

    async def decode(self, shot: ImageRef) -> None:
        """Decode `shot` as the judge will use it (cached in it), or mark it failed."""
        loop = asyncio.get_running_loop()
        started = asyncio.Event()

        def work() -> None:
            loop.call_soon_threadsafe(started.set)
            shot.gray(min_side=SIGNATURE_SIDE)

        future = loop.run_in_executor(self.pool, work)
        await started.wait()  # the budget counts from the start, not the wait in line
        try:
            await asyncio.wait_for(asyncio.shield(future), self.budget)
        except asyncio.TimeoutError:
            shot.failure = (f"screenshot {shot.origin} took over {self.budget:g} s to decode "
                            "(setting decode_budget)")
        except UnjudgeableEvent:
            pass  # marked failed by gray() itself

    def stop(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


class ReadAhead:
    """Fetched records read before they are judged (`read`: a record to its event, None if
    refused), their screenshots decoding in the background by `decoder`."""

    def __init__(self, read: Callable[[Any], Decoded | None], decoder: Decoder):
        self.read, self.decoder = read, decoder
        self.records: dict[tuple[int, int], tuple[Decoded | None, asyncio.Task | None]] = {}

    def ready(self, message: Any) -> bool:
        """Can the record be judged now (its screenshot decoded, or failed)? Reads it and
        starts decoding its screenshot the first time it is asked."""
        key = (message.partition, message.offset)
        if key not in self.records:
            decoded = self.read(message)
            shot = None if decoded is None else screenshot_of(decoded.event)
            task = None if shot is None else asyncio.ensure_future(self.decoder.decode(shot))
            self.records[key] = (decoded, task)
        task = self.records[key][1]
        return task is None or task.done()

    def take(self, message: Any) -> Decoded | None:
        """The record's event as read (and decoded), for the judge; forgotten here."""
        return self.records.pop((message.partition, message.offset))[0]

    async def wait(self) -> None:
        """Until one of the screenshots decoding is done (or failed)."""
        pending = [task for _, task in self.records.values() if task and not task.done()]
        if pending:
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)

    def clear(self) -> None:
        """A rebalance: the records read ahead will be fetched again by their owner."""
        self.records.clear()
