"""Large screenshots decoded off the event loop, each within a time budget, without holding
up the events of other partitions.

Decoding a large screenshot takes the CPU for a second or more; done in the worker's event
loop it would hold the consumer's heartbeats, fetches and timers (long enough for the group
to expire the worker's session), and every event fetched after it would wait. The judge
reads each fetched record ahead (:class:`ReadAhead`) and decodes a screenshot larger than a
screen in a child process (:class:`Decoder`); a record whose screenshot is still decoding
waits, with the later records of its partition (their order, and the order of their
acknowledgements, is kept), while other partitions' records are judged. A screenshot still
decoding ``budget`` seconds after it started is marked failed, and its event then ends its
run with cause ``stream_fault`` (its process finishes in the background, unused).
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Executor
from typing import Any

from stream.judging.events import Decoded
from trustlayer.errors import UnjudgeableEvent
from trustlayer.observe.fingerprints import SIGNATURE_SIDE
from trustlayer.observe.images import ImageRef, Pixels, decode_gray
from trustlayer.observe.trace_events import Event

#: Pixels of the largest screenshot decoded in the judge's turn: up to a common screen's
#: size a decode is short enough for the loop's other work to wait, while the hand-over to
#: a process costs more than it saves (figures: docs/benchmarks.md, "A good run behind 30
#: heavy screenshots").
INLINE_PIXELS = 1_100_000


def screenshot_of(event: Event) -> ImageRef | None:
    """The screenshot of `event` whose pixels the judge will need, if any."""
    observation = event.observation
    return None if observation is None else observation.screenshot


class Decoder:
    """Decodes screenshots in a pool of `slots` processes that `pools` makes (given the
    size), each within `budget` seconds.

    Processes, not threads: a decoding thread takes the GIL for Pillow's Python parts and
    slows the event loop's own work (docs/benchmarks.md). `slots` is the pool's size: a
    screenshot's budget starts when a process takes it, not while it waits for one. A pool
    whose process died (killed, out of memory) fails the screenshot it decoded, and the next
    screenshot gets a new pool.
    """

    def __init__(self, budget: float, pools: Callable[[int], Executor], slots: int):
        self.budget, self.pools, self.size = budget, pools, slots
        self.pool: Executor | None = None
        self.slots = asyncio.Semaphore(slots)

    @staticmethod
    def inline(shot: ImageRef) -> bool:
        """Is `shot` small enough to decode in the judge's turn (it costs less there than
        handing it to a process and back)?"""
        return shot.size is not None and shot.size[0] * shot.size[1] <= INLINE_PIXELS

    async def decode(self, shot: ImageRef) -> None:
        """Decode `shot` as the judge will use it (cached in it), or mark it failed."""
        await self.slots.acquire()  # the budget counts from the start, not the wait in line
        if self.pool is None:
            self.pool = self.pools(self.size)
        pool = self.pool
        future = asyncio.get_running_loop().run_in_executor(
            pool, decode_gray, shot.data, SIGNATURE_SIDE)
        future.add_done_callback(lambda _: self.slots.release())  # over budget: still busy
        try:
            pixels: Pixels | Exception = await asyncio.wait_for(asyncio.shield(future),
                                                                self.budget)
        except asyncio.TimeoutError:
            shot.failure = (f"screenshot {shot.origin} took over {self.budget:g} s to decode "
                            "(setting decode_budget)")
            return
        except BrokenExecutor as exc:
            if self.pool is pool:
                self.pool = None
                pool.shutdown(wait=False, cancel_futures=True)
            pixels = exc
        except Exception as exc:  # Pillow's, raised in the process and sent back
            pixels = exc
        with contextlib.suppress(UnjudgeableEvent):  # marked failed by adopt() itself
            shot.adopt(pixels)

    def stop(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None


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
            task = None if shot is None or self.decoder.inline(shot) else \
                asyncio.ensure_future(self.decoder.decode(shot))
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
