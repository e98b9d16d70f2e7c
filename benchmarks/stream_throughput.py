"""Streaming benchmarks on the embedded Kafka 4.4, printed as ratios against limits
measured in the same run (nothing asserted).

    .venv/bin/python benchmarks/stream_throughput.py [--events N] [--rate R] [--seconds S]

1. throughput on text/a11y events (screenshots stripped), published beforehand: the worker
   (``trustlayer worker``, refinement off) ÷ a do-nothing Faust agent (same broker, topic,
   events and batching: the framework's ceiling; goal >= 0.5) and ÷ a plain aiokafka loop
   that json-decodes each event and produces one small record; two workers in one group
   ÷ one worker, with the CPU each worker process used;
2. per-screenshot-event cost in the worker's processor (data URI decode, checks,
   fingerprint, match) ÷ PNG decode cost of the same frames (goal <= 1.5), and the same for
   events whose screenshots the runner fingerprinted (``trustlayer replay --fingerprint``);
3. p50/p99 publish -> verdict latency at a fixed offered load (default 500 events/s; goal
   p99 <= 50 ms), with one worker and with two workers in one group.

The runs are the repo's examples/jupyter test runs, copied under new run ids.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
import uuid
from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer  # noqa: E402

from stream.broker import EmbeddedKafka  # noqa: E402
from stream.processes import free_port, stop_process  # noqa: E402
from stream.topics import topic_names  # noqa: E402
from stream.demo import WorkerProcess  # noqa: E402
from stream.registry import ModelRegistry  # noqa: E402
from stream.replay import read_events  # noqa: E402
from stream.replay import round_robin as interleave
from stream.topics import MAX_MESSAGE_BYTES, ensure_topics  # noqa: E402
from stream.config import WorkerSettings  # noqa: E402
from stream.processor import StreamProcessor  # noqa: E402
from stream.records import DictStore, Source  # noqa: E402
from trustlayer.learn.learner import learn  # noqa: E402
from trustlayer.observe.traces import run_of_events  # noqa: E402

EXAMPLES = REPO / "examples" / "jupyter"
FLEET_AGENTS = 24  # runners publishing at once in the latency runs
FETCH = MAX_MESSAGE_BYTES + 2 ** 20
PARTITIONS = 4  # of the events topic: up to 4 workers share the load

NOTHING_APP = textwrap.dedent('''
    import os, sys, time
    import faust

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
            seen["n"] += len(batch)
            if seen["n"] >= N:
                print(f"DONE {seen['n'] - seen['first']} {seen['t0']} {time.time()}", flush=True)

    if __name__ == "__main__":
        faust.Worker(app, loglevel="warning", quiet=True, stdout=sys.stderr,
                     redirect_stdouts=False).execute_from_commandline()
''')


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
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_request_size=FETCH, linger_ms=0 if rate else 5)
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
            if sent_at is not None:  # the first event of a run at this ts caused its verdicts
                sent_at.setdefault((event["run_id"], event["ts"]), time.time())
            pending.append(future)
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return loop.time() - t0


async def plain_loop(bootstrap: str, topic: str, out_topic: str, n: int) -> float:
    """Events/s of a plain aiokafka loop that json-decodes each event and produces one
    small record for it (awaiting each fetched batch's records, as at-least-once would)."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=None,
                                auto_offset_reset="earliest", enable_auto_commit=False,
                                max_partition_fetch_bytes=FETCH)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    await consumer.start()
    await producer.start()
    count, t0 = 0, None
    try:
        while count < n:
            batches = await consumer.getmany(timeout_ms=500, max_records=500)
            sent = []
            for records in batches.values():
                if t0 is None and records:
                    t0, first = time.perf_counter(), len(records)
                for record in records:
                    event = json.loads(record.value)
                    sent.append(await producer.send(out_topic, key=record.key, value=json.dumps(
                        {"run_id": event["run_id"], "seq": event["seq"]}).encode()))
                count += len(records)
            await asyncio.gather(*sent)
        return (count - first) / (time.perf_counter() - t0)
    finally:
        await consumer.stop()
        await producer.stop()


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
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
        except OSError:
            continue
        total += sum(float(v) for v in re.findall(r"^trustlayer_events_total\{[^}]*\} (\S+)", text, re.M))
    return total


def worker_throughput(kafka, models: Path, events: list[dict], workers: int,
                      work: Path) -> tuple[float, list[float]]:
    """Events/s of `workers` workers over `events` published beforehand (startup excluded),
    and the CPU each used meanwhile (seconds per second)."""
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
        t0 = first = None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            done = events_processed(ports)
            if t0 is None and done > 0:
                t0, first = time.perf_counter(), done
                cpu0 = [tree_cpu(proc.proc.pid) for proc in procs]
            if done >= len(events):
                wall = time.perf_counter() - t0
                cpu = [(tree_cpu(proc.proc.pid) - c) / wall for proc, c in zip(procs, cpu0)]
                return (done - first) / wall, cpu
            time.sleep(0.1)
        raise RuntimeError(f"only {events_processed(ports)} of {len(events)} events processed")
    finally:
        for proc in procs:
            proc.stop(20)


def nothing_throughput(kafka, topic: str, n: int, work: Path) -> float:
    script = work / "nothing_app.py"
    script.write_text(NOTHING_APP)
    env = dict(os.environ, APP_ID=f"nothing-{uuid.uuid4().hex[:6]}", BOOTSTRAP=kafka.bootstrap,
               TOPIC=topic, N=str(n), FETCH=str(FETCH))
    proc = subprocess.Popen([sys.executable, str(script), "worker"], env=env, cwd=work,
                            stdout=subprocess.PIPE, stderr=open(work / "nothing.log", "ab"), text=True)
    try:
        for line in proc.stdout:
            if line.startswith("DONE"):
                _, count, t0, t1 = line.split()
                return int(count) / (float(t1) - float(t0))
        raise RuntimeError("the do-nothing agent exited")
    finally:
        stop_process(proc, 20)


def latency(kafka, models: Path, runs: list[list[dict]], rate: float, workers: int,
            work: Path, warmup: list[list[dict]]) -> tuple[float, float, int]:
    """p50, p99 (ms) from publishing an event to receiving the verdict it caused, in a
    steady state: the `warmup` runs go through first (unmeasured), then `runs` come from a
    fleet of FLEET_AGENTS runners at `rate` events/s."""
    prefix = f"bl-{uuid.uuid4().hex[:6]}"
    topics = topic_names(prefix)
    ensure_topics(kafka.bootstrap, topics)
    app_id = f"lat-{uuid.uuid4().hex[:6]}"
    procs = [start_worker(kafka.bootstrap, prefix, app_id, models, 0, work / f"l{i}.log")
             for i in range(workers)]
    sent_at: dict = {}
    samples: list[float] = []

    async def until_final(consumer: AIOKafkaConsumer, run_ids: set[str],
                          publisher: asyncio.Task | None = None) -> None:
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
                    if cause in sent_at:
                        samples.append(now - sent_at[cause])
            if not batches and publisher is not None and publisher.done() \
                    and publisher.exception():
                raise publisher.exception()

    async def go() -> None:
        consumer = AIOKafkaConsumer(topics.verdicts, bootstrap_servers=kafka.bootstrap,
                                    group_id=None, auto_offset_reset="latest")
        await consumer.start()
        await asyncio.sleep(1.0)
        try:
            await produce(kafka.bootstrap, topics.events, interleave(warmup))
            await until_final(consumer, {run[0]["run_id"] for run in warmup})
            publisher = asyncio.create_task(produce(kafka.bootstrap, topics.events,
                                                    interleave(runs, FLEET_AGENTS), rate, sent_at))
            try:
                await until_final(consumer, {run[0]["run_id"] for run in runs}, publisher)
            finally:
                await publisher
        finally:
            await consumer.stop()

    try:
        for proc in procs:
            wait_ready(proc)
        if workers > 1:
            time.sleep(2.0)  # the group settles
        asyncio.run(go())
    finally:
        for proc in procs:
            proc.stop(20)
    samples.sort()
    quantile = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))] * 1000
    return quantile(0.5), quantile(0.99), len(samples)


def processing_cost(registry: ModelRegistry, runs: list[list[dict]]) -> float:
    """Seconds the worker's processor takes for the records of `runs`."""
    records = [(e["run_id"].encode(), json.dumps(e).encode(), Source(0, i, time.time()))
               for i, e in enumerate(interleave(runs))]
    processor = StreamProcessor(registry, DictStore(), WorkerSettings(refine=False))
    start = time.perf_counter()
    processor.process_batch(records)
    processor.flush()
    return time.perf_counter() - start


def screenshot_cost() -> tuple[float, float, float]:
    """(ms per screenshot state event in the processor, the same with the screenshots
    fingerprinted by the runner, ms per PNG decode)."""
    train = [[e for e in run] for run in read_events([EXAMPLES / "train"])]
    model = learn([run_of_events(r) for r in train])
    registry = ModelRegistry()
    registry.add(model)
    test = read_events([EXAMPLES / "test"])
    frames = [base64.b64decode(e["observation"]["screenshot"].split(",", 1)[1])
              for run in test for e in run if e["kind"] == "state"
              and e["observation"].get("screenshot")]
    start = time.perf_counter()
    for data in frames:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    decode = (time.perf_counter() - start) / len(frames)
    per_event = processing_cost(registry, test) / len(frames)
    printed = processing_cost(registry, read_events([EXAMPLES / "test"], "fingerprint"))
    return per_event * 1000, printed / len(frames) * 1000, decode * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20000, help="events in the throughput runs")
    parser.add_argument("--rate", type=float, default=500.0, help="offered load for latency")
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="length of the latency runs (the p99 of shorter ones is noisy)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="trustlayer-bench-"))

    train = [[text_only(e) for e in run] for run in read_events([EXAMPLES / "train"], "path")]
    test = [[text_only(e) for e in run] for run in read_events([EXAMPLES / "test"], "path")]
    model = learn([run_of_events(r) for r in train])
    models = work / "models"
    models.mkdir()
    model.save(models / f"{model.task}.json")
    per_run = statistics.mean(len(r) for r in test)
    many = copies(test, int(args.events / per_run) + 1, "t")
    events = interleave(many)
    size = statistics.mean(len(json.dumps(e)) for e in events)
    print(f"workload: {len(events)} text/a11y events of {len(many)} runs, {size / 1024:.1f} KB "
          f"per event on average; machine: {os.cpu_count()} cores")

    with EmbeddedKafka(log_level="WARN") as kafka:
        print(f"Kafka 4.4 at {kafka.bootstrap} (started in {kafka.startup_seconds:.1f} s)")
        worker_1, (cpu_1,) = worker_throughput(kafka, models, events, 1, work)
        topics = topic_names(f"raw-{uuid.uuid4().hex[:6]}")
        ensure_topics(kafka.bootstrap, topics, PARTITIONS)
        asyncio.run(produce(kafka.bootstrap, topics.events, events))
        nothing = nothing_throughput(kafka, topics.events, len(events), work)
        plain = asyncio.run(plain_loop(kafka.bootstrap, topics.events, topics.verdicts,
                                       len(events)))
        worker_2, cpu_2 = worker_throughput(kafka, models, events, 2, work)
        print(f"\n1. throughput, text/a11y events ({PARTITIONS} partitions)")
        print(f"   worker (1 process)          {worker_1:7.0f} events/s, CPU {cpu_1:.2f} s/s")
        print(f"   do-nothing Faust agent      {nothing:7.0f} events/s")
        print(f"   plain aiokafka loop         {plain:7.0f} events/s (json-decodes each event, "
              f"produces one small record)")
        print(f"   worker / do-nothing agent    = {worker_1 / nothing:.2f}  (goal >= 0.5)")
        print(f"   worker / plain aiokafka loop = {worker_1 / plain:.3f}")
        print(f"   2 workers                   {worker_2:7.0f} events/s, {worker_2 / 2:.0f} per "
              f"worker, CPU {' + '.join(f'{c:.2f}' for c in cpu_2)} s/s; "
              f"2 workers / 1 worker = {worker_2 / worker_1:.2f} ({os.cpu_count()} cores)")

        per_event, printed, decode = screenshot_cost()
        print("\n2. screenshot events (in the worker's processor, no broker)")
        print(f"   per screenshot event {per_event:.2f} ms / PNG decode {decode:.2f} ms = "
              f"{per_event / decode:.2f}")
        print(f"   fingerprinted by the runner (replay --fingerprint) {printed:.2f} ms / PNG "
              f"decode = {printed / decode:.2f}")

        n_runs = max(1, int(args.rate * args.seconds / per_run))
        lat_runs = copies(test, n_runs, f"l{uuid.uuid4().hex[:4]}")
        total = sum(len(r) for r in lat_runs)
        print(f"\n3. publish -> verdict latency at {args.rate:.0f} events/s offered "
              f"({total} events, {n_runs} runs from a fleet of {FLEET_AGENTS} runners, "
              f"{total / args.rate:.0f} s, after {len(test)} warm-up runs)")
        for workers in (1, 2):
            tag = uuid.uuid4().hex[:4]
            lat_runs = copies(test, n_runs, f"l{tag}")
            p50, p99, count = latency(kafka, models, lat_runs, args.rate, workers, work,
                                      warmup=copies(test, len(test), f"w{tag}"))
            print(f"   {workers} worker{'s' if workers > 1 else ' '}: p50 {p50:6.1f} ms  "
                  f"p99 {p99:6.1f} ms  ({count} verdicts; goal p99 <= 50 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
