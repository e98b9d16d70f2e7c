"""CPU-heavy work off the worker's event loop and out of its GIL: learning and decoding
screenshots in child processes.

Refinement learns a task's model again from all its training runs (a second or more on a
busy machine). In a thread of the worker it holds the GIL for most of that time, and the
consumer's own thread (heartbeats, fetches, rebalance callbacks) starves: the group drops
the worker and a rebalance follows while records are in flight. :class:`LearnPool` runs
:func:`trustlayer.learn.learner.learn` in one spawned process instead; the calling thread only
waits.
"""
from __future__ import annotations

import multiprocessing
import signal
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from stream.kafka.processes import die_with_parent
from trustlayer.learn.learner import learn
from trustlayer.model import Model


def _ready() -> bool:
    return True


def child_processes(count: int) -> ProcessPoolExecutor:
    """A pool of up to `count` spawned processes, each killed with the worker, even by
    SIGKILL (the kernel ties that to the thread that starts a process: use the pool from
    the main thread, where the worker's event loop runs, first)."""
    return ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn"),
                               initializer=die_with_parent, initargs=(signal.SIGKILL,))


class LearnPool:
    """A learner for :class:`stream.models.refine.Refiner` that learns in a child process.

    Call :meth:`start` from the main thread (the child is tied to the thread that started
    it and is killed with the worker, even by SIGKILL); then call it like ``learn``.
    """

    def __init__(self) -> None:
        self.pool: ProcessPoolExecutor | None = None

    def start(self) -> LearnPool:
        self.pool = child_processes(1)
        self.pool.submit(_ready).result()  # the process exists now, started by this thread
        return self

    def __call__(self, runs: list, settings: Any, **kwargs: Any) -> Model:
        if self.pool is None:
            raise RuntimeError("LearnPool.start() was not called")
        return self.pool.submit(learn, runs, settings, **kwargs).result()

    def stop(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
