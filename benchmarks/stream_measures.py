"""What the streaming benchmarks measure on the broker, each in its own run: events/s of
workers over events published beforehand (and of a do-nothing Faust agent and a plain
aiokafka loop on the same broker: the ceilings) and publish -> verdict latency at a fixed
load (the processor's costs without a broker: :mod:`processor_costs`)."""
from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import NamedTuple

from aiokafka import AIOKafkaConsumer, TopicPartition

# the benchmark modules put the repository on sys.path for the imports below them
from stream_workloads import (
    PARTITIONS,
    events_processed,
    machine_idle,
    machine_steal,
    produce,
    start_worker,
    steal_during,
    tree_cpu,
    wait_ready,
)

from stream.commands.demo import READY, ready_partitions
from stream.commands.replay import round_robin as interleave
from stream.kafka import clients
from stream.kafka.names import topic_names
from stream.kafka.processes import free_port, stop_process
from stream.kafka.topics import ensure_topics
from stream.worker import transport
from stream.worker.config import GC_THRESHOLDS

FLEET_AGENTS = 24  # runners publishing at once in the latency runs

NOTHING_APP = textwrap.dedent('''
    import gc, os, sys, time
    import faust

    gc.set_threshold(*map(int, os.environ["GC"].split(",")))  # as the worker does

    app = faust.App(os.environ["APP_ID"], broker="kafka://" + os.environ["BOOTSTRAP"],
                    store="memory://", autodiscover=False, web_enabled=False,
                    processing_guarantee="at_least_once", consumer_auto_offset_reset="earliest",
                    consumer_max_fetch_size=int(os.environ["FETCH"]), broker_commit_interval=1.0,
                    stream_recovery_delay=0.05, stream_wait_empty=False)
    topic = app.topic(os.environ["TOPIC"], key_type=bytes, value_type=bytes,
                      key_serializer="raw", value_serializer="raw")
    N = int(os.environ["N"])
    seen = {"n": 0, "t0": None}

    @app.agent(topic)
    async def nothing(stream):
        async for batch in stream.take_events(500, within=0.005):
            if seen["t0"] is None:
                seen["t0"], seen["first"] = time.time(), len(batch)
                seen["cpu0"] = time.process_time()
            seen["n"] += len(batch)
            if seen["n"] >= N:
                print(f"DONE {seen['n'] - seen['first']} {seen['t0']} {time.time()} "
                      f"{time.process_time() - seen['cpu0']}", flush=True)

    if __name__ == "__main__":
        faust.Worker(app, loglevel="warning", quiet=True, stdout=sys.stderr,
                     redirect_stdouts=False).execute_from_commandline()
''')


async def plain_loop(bootstrap: str, topic: str, out_topic: str, n: int) -> tuple[float, float]:
    """Events/s of a plain aiokafka loop that json-decodes each event and produces one
    small record for it (awaiting each fetched batch's records, as at-least-once would), and
    the CPU it used meanwhile (s/s)."""
    consumer = clients.consumer(bootstrap, topic, auto_offset_reset="earliest")
    producer = clients.producer(bootstrap, linger_ms=0)
    await consumer.start()
    await producer.start()
    count, t0 = 0, None
    try:
        while count < n:
            batches = await consumer.getmany(timeout_ms=500, max_records=500)
            sent = []
            for records in batches.values():
                if t0 is None and records:
                    t0, cpu0, first = time.perf_counter(), time.process_time(), len(records)
                for record in records:
                    event = json.loads(record.value)
                    sent.append(await producer.send(out_topic, key=record.key, value=json.dumps(
                        {"run_id": event["run_id"], "seq": event["seq"]}).encode()))
                count += len(records)
            await asyncio.gather(*sent)
        seconds = time.perf_counter() - t0
        return (count - first) / seconds, (time.process_time() - cpu0) / seconds
    finally:
        await consumer.stop()
        await producer.stop()


def worker_throughput(kafka, models: Path, events: list[dict], workers: int,
                      work: Path) -> tuple[float, list[float]]:
    """Events/s of `workers` workers over `events` published beforehand, and the CPU each,
    then the broker used, then the machine left idle meanwhile (seconds per second), from
    the moment they share the partitions (one worker: its first processed event) until the
    last one counted."""
    prefix = f"bt-{uuid.uuid4().hex[:6]}"
    ensure_topics(kafka.bootstrap, topic_names(prefix), PARTITIONS)
    asyncio.run(produce(kafka.bootstrap, topic_names(prefix).events, events))
    ports = [free_port() for _ in range(workers)]
    app_id = f"bench-{uuid.uuid4().hex[:6]}"
    procs = [start_worker(kafka.bootstrap, prefix, app_id, models, port, work / f"w{i}.log")
             for i, port in enumerate(ports)]
    try:
        for proc in procs:
            wait_ready(proc)
        deadline = time.monotonic() + 300
        while workers > 1 and not _shared(procs):
            if time.monotonic() > deadline:
                raise RuntimeError("the workers did not share the partitions")
            time.sleep(0.05)
        t0 = first = None
        counted = (0.0, 0.0)  # (events counted, when the count last grew)
        while time.monotonic() < deadline:
            done = events_processed(ports)
            now = time.perf_counter()
            if t0 is None and (done > 0 or workers > 1):
                if done >= len(events):
                    raise RuntimeError("every event was processed before the workers shared "
                                       "the partitions: publish more")
                t0, first = now, done
                counted = (done, now)
                pids = [proc.proc.pid for proc in procs] + [kafka.pid]
                cpu0 = [tree_cpu(pid) for pid in pids] + [machine_idle()]
            elif t0 is not None and done > counted[0]:
                counted = (done, now)
                used = [tree_cpu(pid) for pid in pids] + [machine_idle()]
                cpu = [(u - c) / (now - t0) for u, c in zip(used, cpu0)]
            # Events a worker judged before a rebalance and whose runs it wrote, but that
            # were not yet committed, come again to the new owner, which skips them without
            # counting them: then the count stops short, and the end is when every event is
            # committed.
            if done >= len(events) or (now - counted[1] > 3 and
                                       _committed(kafka.bootstrap, app_id, prefix) >= len(events)):
                if counted[1] == t0:
                    raise RuntimeError("no event was counted after the workers shared the "
                                       "partitions: publish more")
                return (counted[0] - first) / (counted[1] - t0), cpu
            time.sleep(0.1)
        raise RuntimeError(f"only {events_processed(ports)} of {len(events)} events processed")
    finally:
        for proc in procs:
            proc.stop(20)


def _committed(bootstrap: str, group: str, prefix: str) -> int:
    """Events of the topics `prefix` that consumer `group` committed."""
    tps = [TopicPartition(topic_names(prefix).events, p) for p in range(PARTITIONS)]
    return sum(asyncio.run(clients.committed_offsets(bootstrap, group, tps)).values())


def _shared(procs: list) -> bool:
    """Whether the workers' latest ready lines split the events topic's partitions."""
    shares = []
    for proc in procs:
        lines = [line for line in proc.lines if READY in line]
        if not lines:
            return False
        shares.append(ready_partitions(lines[-1]))
    taken = [p for share in shares for p in share]
    return all(shares) and sorted(taken) == list(range(PARTITIONS))


def nothing_throughput(kafka, topic: str, n: int, work: Path) -> tuple[float, float]:
    """Events/s of a do-nothing Faust agent over `n` events of `topic` published beforehand
    (from its first batch on), and the CPU it used meanwhile (s/s)."""
    script = work / "nothing_app.py"
    script.write_text(NOTHING_APP)
    env = dict(os.environ, APP_ID=f"nothing-{uuid.uuid4().hex[:6]}", BOOTSTRAP=kafka.bootstrap,
               TOPIC=topic, N=str(n), FETCH=str(clients.MAX_REQUEST_BYTES),
               GC=",".join(map(str, GC_THRESHOLDS)))
    proc = subprocess.Popen([sys.executable, str(script), "worker"], env=env, cwd=work,
                            stdout=subprocess.PIPE, stderr=open(work / "nothing.log", "ab"),
                            text=True)
    try:
        for line in proc.stdout:
            if line.startswith("DONE"):
                _, count, t0, t1, cpu = line.split()
                seconds = float(t1) - float(t0)
                return int(count) / seconds, float(cpu) / seconds
        raise RuntimeError("the do-nothing agent exited")
    finally:
        stop_process(proc, 20)


class Timing(NamedTuple):
    """p50, p99 (ms) of publish -> verdict, how many verdicts were timed, and the CPU
    (seconds per second) the workers, the broker and the benchmark process used meanwhile,
    and what the hypervisor took from the machine (``steal``)."""

    p50: float
    p99: float
    count: int
    cpu: dict[str, float]


def latency(kafka, models: Path, runs: list[list[dict]], rate: float, workers: int,
            work: Path, warmup: list[list[dict]]) -> tuple[Timing, Timing]:
    """Publish -> verdict timings of the `warmup` runs, then of `runs`, both from a fleet of
    FLEET_AGENTS runners at `rate` events/s, each timed on its own: the warm-up is the load
    a fresh broker's JIT compiles its paths under (a 2-core machine's broker took 0.8-0.9 CPU
    s/s at first, 0.33-0.37 after two minutes, and p99 fell with it), the runs after it are
    the steady state. On a small machine the workers, the broker and this process (the fleet
    and the verdicts' reader) compete for its cores: the CPU of each is in the timings."""
    quiet_collector()
    prefix = f"bl-{uuid.uuid4().hex[:6]}"
    topics = topic_names(prefix)
    ensure_topics(kafka.bootstrap, topics)
    app_id = f"lat-{uuid.uuid4().hex[:6]}"
    procs = [start_worker(kafka.bootstrap, prefix, app_id, models, 0, work / f"l{i}.log")
             for i in range(workers)]
    sent_at: dict = {}

    def cpu_now() -> dict[str, float]:
        return {"wall": time.monotonic(), "workers": sum(tree_cpu(p.proc.pid) for p in procs),
                "broker": tree_cpu(kafka.pid), "benchmark": time.process_time(),
                "steal": machine_steal()}

    async def until_final(consumer: AIOKafkaConsumer, run_ids: set[str],
                          publisher: asyncio.Task, samples: list[float]) -> None:
        finals: set[str] = set()
        while not run_ids <= finals:
            batches = await consumer.getmany(timeout_ms=1000)
            now = time.time()
            for records in batches.values():
                for record in records:
                    verdict = json.loads(record.value)
                    if verdict["final"]:
                        finals.add(verdict["run_id"])
                    # event_ts: the ts of the event that caused the verdict (a "running"
                    # after an early warning comes from a later event than the run's first)
                    cause = (verdict["run_id"], verdict["event_ts"])
                    if sent_at.get(cause) is not None:
                        samples.append(now - sent_at[cause])
            if not batches and publisher.done() and publisher.exception():
                raise publisher.exception()

    async def timed(consumer: AIOKafkaConsumer, fleet: list[list[dict]]) -> Timing:
        samples: list[float] = []
        before = cpu_now()
        publisher = asyncio.create_task(produce(kafka.bootstrap, topics.events,
                                                interleave(fleet, FLEET_AGENTS), rate, sent_at))
        try:
            await until_final(consumer, {run[0]["run_id"] for run in fleet}, publisher, samples)
        finally:
            await publisher
        after = cpu_now()
        wall = after.pop("wall") - before.pop("wall")
        return Timing(*_quantiles(samples), {k: (after[k] - before[k]) / wall for k in after})

    async def go() -> tuple[Timing, Timing]:
        # (a fetch of the verdicts' quiet partitions would hold the others' for 500 ms)
        consumer = clients.consumer(kafka.bootstrap, topics.verdicts, auto_offset_reset="latest",
                                    fetch_max_wait_ms=transport.WORKER_FETCH_MAX_WAIT_MS)
        await consumer.start()
        await asyncio.sleep(1.0)
        try:
            return await timed(consumer, warmup), await timed(consumer, runs)
        finally:
            await consumer.stop()

    try:
        for proc in procs:
            wait_ready(proc)
        if workers > 1:
            time.sleep(2.0)  # the group settles
        return asyncio.run(go())
    finally:
        for proc in procs:
            proc.stop(20)


def quiet_collector() -> None:
    """Leave what this process holds so far (the workloads) out of the garbage collector's
    full collections: one that walked them paused the fleet and the verdicts' reader
    100-176 ms, which the latency figures then counted as the worker's."""
    gc.freeze()


def _quantiles(samples: list[float]) -> tuple[float, float, int]:
    """p50, p99 (ms) of `samples` (seconds), and how many there are."""
    samples = sorted(samples)

    def quantile(q: float) -> float:
        return samples[min(len(samples) - 1, int(q * len(samples)))] * 1000

    return quantile(0.5), quantile(0.99), len(samples)


def broker_latency(kafka, runs: list[list[dict]], rate: float) -> Timing:
    """p50, p99 (ms) from publishing an event to a plain aiokafka consumer (in this process,
    fetching as the worker does) receiving it, the same fleet at the same rate: what the
    broker, the publisher and this machine take with no worker (one hop; a verdict takes two);
    the :class:`Timing`'s ``cpu`` holds only ``steal``."""
    quiet_collector()
    topics = topic_names(f"hop-{uuid.uuid4().hex[:6]}")
    ensure_topics(kafka.bootstrap, topics)
    sent_at: dict = {}
    samples: list[float] = []

    async def go() -> None:
        consumer = clients.consumer(kafka.bootstrap, topics.events, auto_offset_reset="latest",
                                    fetch_max_wait_ms=transport.WORKER_FETCH_MAX_WAIT_MS)
        await consumer.start()
        await asyncio.sleep(1.0)
        publisher = asyncio.create_task(produce(kafka.bootstrap, topics.events,
                                                interleave(runs, FLEET_AGENTS), rate, sent_at))
        pending = sum(len(run) for run in runs)
        try:
            while pending:
                batches = await consumer.getmany(timeout_ms=1000)
                now = time.time()
                for records in batches.values():
                    pending -= len(records)
                    for record in records:
                        event = json.loads(record.value)
                        key = (event["run_id"], event["ts"])
                        if sent_at.get(key) is not None:
                            samples.append(now - sent_at[key])
                if not batches and publisher.done() and publisher.exception():
                    raise publisher.exception()
        finally:
            await publisher
            await consumer.stop()

    _, steal = steal_during(lambda: asyncio.run(go()))
    return Timing(*_quantiles(samples), {"steal": steal})
