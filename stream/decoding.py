"""Screenshots decoded off the event loop, each within a time budget.

Decoding a large screenshot takes the CPU for a second or more; done in the worker's event
loop it held the consumer's heartbeats, fetches and timers (a 2 GB file, read whole, blocked
the loop for 20 s and the group expired the worker's session). The worker decodes each
event's screenshot in a small thread pool (Pillow releases the GIL while it decodes) before
the event is judged; a screenshot still decoding ``budget`` seconds after it started is
marked failed, and its event then ends its run with cause ``stream_fault`` (its thread
finishes in the background, unused).
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from trustlayer.errors import UnjudgeableEvent
from trustlayer.observe.fingerprints import SIGNATURE_SIDE
from trustlayer.observe.images import ImageRef
from trustlayer.observe.traces import Event


def screenshot_of(event: Event) -> ImageRef | None:
    """The screenshot of `event` whose pixels the judge will need, if any."""
    observation = event.observation
    return None if observation is None else observation.screenshot


class Decoder:
    """Decodes screenshots in `threads` threads, each within `budget` seconds."""

    def __init__(self, budget: float, threads: int = 2):
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
