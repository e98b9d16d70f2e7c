"""``trustlayer worker`` keeps its Faust worker running: a child process, started again when
it asks to be (a partition that stays stalled: :data:`RESTART`) or dies (killed, crashed).

The child is the same command with ``$TRUSTLAYER_WORKER_CHILD`` set to the number of stalls
so far (``trustlayer_stalls_total`` goes on from there). SIGTERM and SIGINT go to the child,
and its exit code is the command's; a child that exits with 2 (bad input, no broker) is not
started again, nor one that ends after this command was told to stop. A child stopped alone
(SIGTERM to its PID: it ends with 0) is started again. The child dies with this process,
even by SIGKILL.

A stop is bounded: a child still running :data:`STOP_WITHIN` seconds after SIGTERM or
SIGINT (its shutdown waits for a broker that is gone: committing offsets, flushing
verdicts) is killed, and the command says what that leaves undone. Nothing is lost: the
records it judged since its last commit are judged again by the next worker (the changelog
keeps the open runs, and a verdict sent twice is the same verdict).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from stream.kafka.processes import die_with_parent

#: Exit code of a worker that gave up on its consumer and wants a fresh start (EX_TEMPFAIL).
RESTART = 75
CHILD_ENV = "TRUSTLAYER_WORKER_CHILD"
#: Seconds to wait before a restart after a crash; doubled per quick crash, at most this.
BACKOFF_MAX = 10.0
#: Seconds a told-to-stop child has to end before it is killed.
STOP_WITHIN = 5.0
#: Exit code of a stop that had to kill the worker (its last commit may not have happened).
STOPPED_HARD = 1


def child_stalls() -> int | None:
    """The stalls before this process if it is a supervised child, else None."""
    value = os.environ.get(CHILD_ENV)
    return int(value) if value is not None else None


def supervise(command: list[str]) -> int:
    """Run `command` as a child until it ends for good; return its exit code."""
    stalls, backoff = 0, 1.0
    child: subprocess.Popen | None = None
    stopping: float | None = None  # when this command was told to stop

    def forward(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = stopping or time.monotonic()
        if child is not None and child.poll() is None:
            child.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        while True:
            started = time.monotonic()
            child = subprocess.Popen(command, env={**os.environ, CHILD_ENV: str(stalls)},
                                     preexec_fn=lambda: die_with_parent(signal.SIGKILL))
            code = _wait(child, lambda: stopping)
            if stopping or code == 2:
                return code
            if code == RESTART:
                stalls += 1
                print(f"trustlayer worker: restarting after a stall ({stalls} so far)",
                      file=sys.stderr, flush=True)
                continue
            backoff = 1.0 if time.monotonic() - started > 60 else min(BACKOFF_MAX, backoff * 2)
            # a worker ends with 0 only when stopped: here someone stopped the child alone
            why = "was stopped, but not this command," if code == 0 else f"exited with {code}"
            print(f"trustlayer worker: the worker {why}; starting it again in "
                  f"{backoff:.0f} s", file=sys.stderr, flush=True)
            resume = time.monotonic() + backoff
            while time.monotonic() < resume and not stopping:
                time.sleep(0.1)
            if stopping:
                return code
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _wait(child: subprocess.Popen, stopping: Callable[[], float | None]) -> int:
    """The exit code of `child`; killed :data:`STOP_WITHIN` seconds after `stopping()`
    says when this command was told to stop (then :data:`STOPPED_HARD`)."""
    while True:
        try:
            return child.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            told = stopping()
            if told is None or time.monotonic() - told < STOP_WITHIN:
                continue
        child.kill()
        child.wait()
        print(f"trustlayer worker: the worker did not stop within {STOP_WITHIN:.0f} s (is the "
              "broker reachable?): stopped it hard. It could not commit what it judged since "
              "its last commit nor confirm its last verdicts: the next worker judges those "
              "events again from the changelog (the same verdicts; none lost)",
              file=sys.stderr, flush=True)
        return STOPPED_HARD
