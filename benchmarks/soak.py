"""Soak test of the streaming service, run by hand and printed (not a CI test):

    .venv/bin/python benchmarks/soak.py [--starts 20] [--runs 200] [--only demo|faults]

1. ``trustlayer demo`` (refinement on) started `--starts` times back to back while two
   CPU-hog processes run: how many starts reach every run's final verdict, and how long
   each took.
2. A fleet of `--runs` runs (copies of examples/jupyter/test under new run ids) published by
   24 runners to one supervised ``trustlayer worker`` (timer verdicts and refinement off, so
   that its verdicts are comparable with the batch validator's); meanwhile its Faust worker
   is killed with SIGKILL three times and the broker once (then started again on the same
   port and data). Counted: runs without a final verdict, runs with two different final
   verdicts, and final verdicts that differ from ``trustlayer validate``.

Everything runs on this machine: an embedded Kafka, and CPU hogs that stop by themselves.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from streamkit import CpuHogs, child_pids, read_topic  # noqa: E402

from stream.commands.demo import WorkerProcess, learn_models  # noqa: E402
from stream.commands.replay import read_events, round_robin  # noqa: E402
from stream.kafka import clients  # noqa: E402
from stream.kafka.broker import EmbeddedKafka  # noqa: E402
from stream.kafka.names import topic_names  # noqa: E402
from stream.kafka.processes import stopped_as_by_ctrl_c  # noqa: E402
from stream.kafka.topics import ensure_topics  # noqa: E402

EXAMPLES = REPO / "examples" / "jupyter"
TRUSTLAYER = [sys.executable, "-m", "trustlayer.cli"]
#: what must agree between two final verdicts of one run, and with the batch validator
SAME = ("status", "verdict", "reason", "cause")


def demo_starts(starts: int, timeout: float) -> None:
    """`trustlayer demo` `starts` times under two CPU hogs."""
    took, failed = [], []
    with CpuHogs(2, seconds=starts * (timeout + 30)):
        for number in range(1, starts + 1):
            started = time.monotonic()
            demo = subprocess.run([*TRUSTLAYER, "demo", "--timeout", str(timeout)],
                                  capture_output=True, text=True, timeout=timeout + 60)
            seconds = time.monotonic() - started
            print(f"  start {number:2d}: exit {demo.returncode} in {seconds:5.1f} s", flush=True)
            if demo.returncode == 0:
                took.append(seconds)
            else:
                failed.append(number)
                print("    " + "\n    ".join(demo.stderr.splitlines()[-5:]), flush=True)
    print(f"demo under two CPU hogs: {len(took)}/{starts} starts reached every final verdict"
          + (f"; median {statistics.median(took):.1f} s, max {max(took):.1f} s" if took else "")
          + (f"; failed: {failed}" if failed else ""), flush=True)


def fleet(count: int) -> list[list[dict]]:
    """`count` runs: the example test runs again and again under new run ids."""
    runs = read_events([EXAMPLES / "test"])
    return [[{**event, "run_id": f"soak-{k}-{event['run_id']}"} for event in runs[k % len(runs)]]
            for k in range(count)]


async def publish_through_faults(bootstrap: str, topic: str, events: list[dict],
                                 rate: float) -> int:
    """Publish `events` at `rate` per second, sending again whatever a broker outage made
    fail (the worker ignores duplicates); return how many were sent again."""
    producer = clients.producer(bootstrap, linger_ms=5, request_timeout_ms=10000)
    await producer.start()
    loop = asyncio.get_running_loop()
    started, resent = loop.time(), 0

    async def send(event: dict) -> None:
        nonlocal resent
        value = json.dumps(event, separators=(",", ":")).encode()
        for _ in range(60):
            try:
                await (await producer.send(topic, key=event["run_id"].encode(), value=value))
                return
            except Exception:  # noqa: BLE001 - the broker is down: wait and send again
                resent += 1
                await asyncio.sleep(1.0)
        raise RuntimeError(f"could not publish {event['run_id']} seq {event['seq']}")

    pending = []
    try:
        for number, event in enumerate(events):
            delay = started + number / rate - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            pending.append(asyncio.create_task(send(event)))
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return resent


def faust_child(worker: WorkerProcess) -> int | None:
    """The PID of the supervised Faust worker (the child of ``trustlayer worker``)."""
    return next(iter(child_pids(worker.proc.pid)), None)


def faults(count: int, work: Path, timeout: float) -> None:
    """The fleet under worker and broker kills; compare with the batch validator."""
    runs = fleet(count)
    events = round_robin(runs, runners=24)
    rate = 100.0
    span = len(events) / rate
    kills = [span * f for f in (0.15, 0.35, 0.55)]
    broker_kill = span * 0.75
    # its data in the soak's own directory: kept across the kill, removed with the rest
    with EmbeddedKafka(directory=work / "kafka") as kafka:
        topics = topic_names("soak")
        ensure_topics(kafka.bootstrap, topics)
        models = work / "models"
        models.mkdir()
        learn_models(EXAMPLES / "train", models)
        worker = WorkerProcess(["--broker", kafka.bootstrap, "--topics", "soak", "--app-id",
                                "soak-worker", "--models", str(models), "--no-refine",
                                "--no-deadlines", "--metrics-port", "0", "--session-timeout",
                                "6", "--log-level", "info"], work / "worker.log")
        try:
            if not worker.wait_ready(90):
                raise RuntimeError(f"worker not ready; log {work / 'worker.log'}")
            print(f"fleet: {count} runs, {len(events)} events at {rate:.0f}/s ({span:.0f} s); "
                  f"kill -9 of the worker at {', '.join(f'{t:.0f}' for t in kills)} s, of the "
                  f"broker at {broker_kill:.0f} s", flush=True)

            # publish in a thread; kill from this one (the broker is tied to the thread that
            # starts it: see stream.kafka.broker.die_with_parent)
            resent: list[int] = []
            publisher = threading.Thread(target=lambda: resent.append(asyncio.run(
                publish_through_faults(kafka.bootstrap, topics.events, events, rate))))
            started = time.monotonic()
            publisher.start()
            killed: set[int] = set()
            for at in kills:
                time.sleep(max(0.0, started + at - time.monotonic()))
                pid = faust_child(worker)
                while pid is None or pid in killed:  # the supervisor starts it again
                    time.sleep(0.2)
                    pid = faust_child(worker)
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
                print(f"  {time.monotonic() - started:5.1f} s: kill -9 worker {pid}", flush=True)
            time.sleep(max(0.0, started + broker_kill - time.monotonic()))
            kafka.kill()
            print(f"  {time.monotonic() - started:5.1f} s: kill -9 broker", flush=True)
            time.sleep(3.0)
            kafka.restart()
            print(f"  {time.monotonic() - started:5.1f} s: broker back", flush=True)
            publisher.join()
            wanted = {run[0]["run_id"] for run in runs}
            values = read_topic(kafka.bootstrap, topics.verdicts, lambda v: wanted <= {
                r["run_id"] for r in v if r.get("final")}, timeout=timeout)
            print(f"  published ({resent[0] if resent else '?'} sends repeated after "
                  f"failures); final verdicts read {time.monotonic() - started:.0f} s after "
                  "the first event", flush=True)
        finally:
            worker.stop()
        restarts = (work / "worker.log").read_text(errors="replace").count("starting it again")
        stalls = (work / "worker.log").read_text(errors="replace").count("after a stall")
    finals: dict[str, set[tuple]] = {}
    for record in values:
        if record.get("final"):
            finals.setdefault(record["run_id"], set()).add(tuple(record[k] for k in SAME))
    validate = subprocess.run([*TRUSTLAYER, "validate", str(next(models.glob("*.json"))),
                               str(EXAMPLES / "test"), "--format", "json"],
                              capture_output=True, text=True, check=False)
    batch = {r["run_id"]: r for r in map(json.loads, validate.stdout.splitlines())}
    differ = [rid for rid, got in finals.items() if len(got) == 1 and
              [(v, r, c) for _, v, r, c in got] != [tuple(batch[rid.split("-", 2)[2]][k]
                                                         for k in SAME[1:])]]
    print(f"fleet of {count} runs, worker killed -9 3 times (supervisor restarts: {restarts}, "
          f"stall restarts: {stalls}), broker killed -9 once: "
          f"{len(wanted - set(finals))} runs without a final verdict, "
          f"{sum(len(v) > 1 for v in finals.values())} with conflicting final verdicts, "
          f"{len(differ)} final verdicts different from `trustlayer validate`", flush=True)


def main() -> int:
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # the broker outage is on purpose
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=240.0,
                        help="seconds each demo start / the fleet may take")
    parser.add_argument("--only", choices=["demo", "faults"])
    parser.add_argument("--keep", metavar="DIR", help="keep the worker's log in DIR")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trustlayer-soak-") as work:
        if args.only != "demo":
            faults(args.runs, Path(args.keep or work), args.timeout)
        if args.only != "faults":
            demo_starts(args.starts, args.timeout)
    return 0


if __name__ == "__main__":
    with stopped_as_by_ctrl_c():  # a killed soak stops its broker and workers
        sys.exit(main())
