"""The streaming benchmarks' workloads: the repo's examples/jupyter runs (text and a11y
only, or as recorded) copied under new run ids, published to a topic (paced or at once),
and the worker processes that judge them, with what they report (events processed, CPU
used)."""
from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stream.commands.demo import WorkerProcess  # noqa: E402
from stream.kafka import clients  # noqa: E402

EXAMPLES = REPO / "examples" / "jupyter"
PARTITIONS = 4  # of the events topic: up to 4 workers share the load
T = TypeVar("T")


def text_only(event: dict) -> dict:
    observation = event.get("observation")
    if isinstance(observation, dict) and "screenshot" in observation:
        observation = {k: v for k, v in observation.items() if k != "screenshot"}
        if not any(observation.get(k) for k in ("text", "a11y", "files")):
            observation["text"] = "(blank)"
        return {**event, "observation": observation}
    return event


def copies(runs: list[list[dict]], count: int, tag: str) -> list[list[dict]]:
    out = []
    for k in range(count):
        run = runs[k % len(runs)]
        rid = f"{tag}-{k}-{run[0]['run_id']}"
        out.append([{**e, "run_id": rid} for e in run])
    return out


async def produce(bootstrap: str, topic: str, events: list[dict], rate: float | None = None,
                  sent_at: dict | None = None) -> float:
    """Publish `events` (paced at `rate` per second if given); return the seconds taken."""
    producer = clients.producer(bootstrap, linger_ms=0 if rate else 5)
    await producer.start()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    pending = []
    try:
        for i, event in enumerate(events):
            if rate:
                delay = t0 + i / rate - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            future = await producer.send(topic, key=event["run_id"].encode(),
                                         value=json.dumps(event).encode())
            if sent_at is not None:
                # a verdict names the ts of the event that caused it: of two events of a run
                # at one ts (an end event written in the same millisecond as the step before
                # it) neither is timed, as it is not known which one a verdict came from
                # (timing the first added the fleet's spacing, 48 ms, to its run's finals)
                key = (event["run_id"], event["ts"])
                sent_at[key] = None if key in sent_at else time.time()
            pending.append(future)
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return loop.time() - t0


def machine_steal() -> float:
    """CPU seconds the hypervisor took from this machine's cores so far (the ``steal``
    column of /proc/stat; 0 where there is none): on a shared 2-core VM it went from 0 to
    0.94 s/s within one latency run, and the latency tail with it."""
    return _machine_cpu(8)


def machine_idle() -> float:
    """CPU seconds this machine's cores had nothing to run so far (``idle`` and ``iowait``
    of /proc/stat): near 0 while workers are measured, they wait for a core, not for each
    other or the broker."""
    return _machine_cpu(4, 5)


def _machine_cpu(*columns: int) -> float:
    """Seconds of all cores counted so far in `columns` of /proc/stat's ``cpu`` line."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
        return sum(int(fields[c]) for c in columns) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def steal_during(measure: Callable[[], T]) -> tuple[T, float]:
    """What `measure()` returns, and the CPU the hypervisor took meanwhile (seconds per
    second, of all cores: see :func:`machine_steal`)."""
    steal, t0 = machine_steal(), time.monotonic()
    result = measure()
    return result, (machine_steal() - steal) / (time.monotonic() - t0)


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process `pid` and its descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    total, pending = 0.0, [pid]
    while pending:
        current = pending.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, IndexError):
            continue  # exited meanwhile
    return total


def start_worker(bootstrap: str, prefix: str, app_id: str, models: Path, port: int,
                 log: Path) -> WorkerProcess:
    return WorkerProcess(["--broker", bootstrap, "--topics", prefix, "--app-id", app_id,
                          "--models", str(models), "--no-refine", "--metrics-port", str(port),
                          "--session-timeout", "6"], log)


def wait_ready(worker: WorkerProcess, timeout: float = 90) -> None:
    if not worker.wait_ready(timeout):
        raise RuntimeError(f"worker not ready (exit code {worker.proc.poll()})")


def events_processed(ports: list[int]) -> float:
    total = 0.0
    for port in ports:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as page:
                text = page.read().decode()
        except OSError:
            continue
        counts = re.findall(r"^trustlayer_events_total\{[^}]*\} (\S+)", text, re.M)
        total += sum(float(v) for v in counts)
    return total
