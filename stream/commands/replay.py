"""Publish recorded runs to ``trustlayer.events`` as live runners would.

Every run of a trace directory starts at once (or `stagger` seconds apart) and its events are
published at their recorded offsets from the run's first event, divided by `speed` (``0``: as
fast as possible, still interleaved in that order). Screenshots travel inline as ``data:``
URIs (``"inline"``; the broker's message limit applies), as the paths the trace has
(``"path"``), for a worker that reads the same directory (``--images``), or as their
fingerprints (``"fingerprint"``, see :mod:`trustlayer.observe.runner_prints`): small events, and the
worker decodes no image. Events keep their recorded
``ts``: the worker's timer measures silence by the wall time since publication, so a faster
replay never makes a run look late.
"""
from __future__ import annotations

import asyncio
import base64
import json
import mimetypes
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from stream.kafka import clients
from stream.models.attest import Signer, local_signer
from trustlayer.observe.runner_prints import fingerprint_screenshots
from trustlayer.observe.traces import read_run, trace_files


def inline_screenshot(event: dict, base_dir: Path) -> dict:
    """`event` with its screenshot path (relative to `base_dir`) replaced by a data URI."""
    observation = event.get("observation")
    if not isinstance(observation, dict):
        return event
    shot = observation.get("screenshot")
    if not isinstance(shot, str) or shot.startswith("data:"):
        return event
    path = base_dir / shot
    mime = mimetypes.guess_type(path.name)[0] or "image/png"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return {**event, "observation": {**observation, "screenshot": f"data:{mime};base64,{data}"}}


SCREENSHOT_MODES = {"inline": inline_screenshot, "path": lambda event, base_dir: event,
                    "fingerprint": fingerprint_screenshots}


def read_events(paths: Sequence[str | Path], screenshots: str = "inline") -> list[list[dict]]:
    """The events of every run under `paths`, as JSON objects, one list per run, with their
    screenshots as `screenshots` says (a key of SCREENSHOT_MODES).

    Each file is read with :func:`trustlayer.observe.traces.read_run` (lines end at ``\n`` only, so
    a raw U+2028 inside a string stays in it), so a bad trace fails here with its file and
    line (:class:`~trustlayer.errors.TraceError`), not in the worker.
    """
    convert = SCREENSHOT_MODES[screenshots]
    return [[convert(event.raw, path.parent) for event in read_run(path).events]
            for path in trace_files(paths)]


def schedule(runs: Iterable[list[dict]], speed: float = 1.0,
             stagger: float = 0.0) -> list[tuple[float, dict]]:
    """``(seconds after start, event)`` for every event, in publishing order.

    >>> a = [{"run_id": "a", "seq": 0, "ts": 10.0}, {"run_id": "a", "seq": 1, "ts": 12.0}]
    >>> b = [{"run_id": "b", "seq": 0, "ts": 50.0}, {"run_id": "b", "seq": 1, "ts": 51.0}]
    >>> [(t, e["run_id"], e["seq"]) for t, e in schedule([a, b], speed=2)]
    [(0.0, 'a', 0), (0.0, 'b', 0), (0.5, 'b', 1), (1.0, 'a', 1)]
    """
    plan = []
    for number, events in enumerate(runs):
        start = events[0]["ts"]
        for event in events:
            offset = number * stagger + (event["ts"] - start)
            plan.append((offset, number, event["seq"], event))
    plan.sort(key=lambda item: item[:3])
    factor = 0.0 if speed <= 0 else 1.0 / speed
    return [(offset * factor, event) for offset, _, _, event in plan]


def round_robin(runs: Iterable[Sequence[dict]], runners: int | None = None) -> list[dict]:
    """The runs' events as `runners` runners publish them (default: one runner per run):
    each runner goes through its runs one after another, and the runners take turns event
    by event (so with fewer runners, runs start and end all the time, not all at once).

    >>> runs = [[{"seq": 0}, {"seq": 1}], [{"seq": 5}]]
    >>> [e["seq"] for e in round_robin(runs)], [e["seq"] for e in round_robin(runs, 1)]
    ([0, 5, 1], [0, 1, 5])
    """
    runs = list(runs)
    count = runners or len(runs)
    queues = [deque(e for run in runs[i::count] for e in run) for i in range(count)]
    out = []
    while any(queues):
        for queue in queues:
            if queue:
                out.append(queue.popleft())
    return out


@dataclass
class ReplayStats:
    runs: int
    events: int
    bytes: int
    seconds: float


async def publish(bootstrap: str, topic: str, plan: Sequence[tuple[float, dict]],
                  producer=None, signer: Signer | None = None) -> ReplayStats:
    """Publish `plan` (see :func:`schedule`) to `topic`, key = run_id, at its times, each
    run's ``end`` attested by `signer` (default: this machine's runner, ``local``)."""
    signer = signer or local_signer()
    own = producer is None
    if own:
        producer = clients.producer(bootstrap, linger_ms=2)
        await producer.start()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    sent = size = 0
    pending = []
    try:
        for offset, event in plan:
            delay = t0 + offset - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            value = json.dumps(signer.sign(event), separators=(",", ":")).encode("utf-8")
            pending.append(await producer.send(topic, key=event["run_id"].encode("utf-8"),
                                               value=value))
            sent, size = sent + 1, size + len(value)
        await asyncio.gather(*pending)
    finally:
        if own:
            await producer.stop()
    return ReplayStats(len({e["run_id"] for _, e in plan}), sent, size, loop.time() - t0)


def replay(bootstrap: str, topic: str, paths: Sequence[str | Path], speed: float = 1.0,
           stagger: float = 0.0, screenshots: str = "inline") -> ReplayStats:
    """Read the runs under `paths` and publish them (blocking)."""
    plan = schedule(read_events(paths, screenshots), speed, stagger)
    started = time.monotonic()
    stats = asyncio.run(publish(bootstrap, topic, plan))
    stats.seconds = time.monotonic() - started
    return stats
