"""Head-of-line blocking: a good run's verdict latency alone, and published right after a run
of 30 heavy screenshots (16-bit PNGs under the pixel limit), on a real broker and worker.

Prints the two latencies (from publishing the good run's last event to its final verdict,
medians) and their ratio; issue 29's goal is within 2x of alone. The heavy screenshots are
decoded in the worker's child processes (stream.judging.screenshots), each within
--decode-budget seconds, while the records of other partitions are judged (a good run on
the heavy run's partition still waits for it).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from aiokafka.partitioner import DefaultPartitioner
from stream_workloads import EXAMPLES, PARTITIONS, produce, start_worker, wait_ready

from stream.commands.replay import read_events
from stream.kafka import clients
from stream.kafka.broker import EmbeddedKafka
from stream.kafka.names import TopicNames, topic_names
from stream.kafka.processes import free_port, stopped_as_by_ctrl_c
from stream.kafka.topics import ensure_topics
from trustlayer.learn.learner import learn
from trustlayer.observe.traces import read_runs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from brokenimages import heavy_run


def on_another_partition(prefix: str, taken: str) -> str:
    """A run id starting with `prefix` whose records go to another partition than `taken`'s
    (the producer's default partitioner)."""
    partition = DefaultPartitioner()
    every = list(range(PARTITIONS))
    return next(f"{prefix}-{n}" for n in range(100)
                if partition(f"{prefix}-{n}".encode(), every, every) !=
                partition(taken.encode(), every, every))


async def final_after(bootstrap: str, topics: TopicNames, events: list[dict],
                      run_id: str) -> float:
    """Publish `events`; seconds from the last one sent to `run_id`'s final verdict."""
    consumer = clients.consumer(bootstrap, topics.verdicts, auto_offset_reset="earliest")
    await consumer.start()
    try:
        await consumer.getmany(timeout_ms=500)  # joined: what comes next is read
        await produce(bootstrap, topics.events, events)
        sent = time.monotonic()
        while True:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                for record in records:
                    verdict = json.loads(record.value)
                    if verdict["run_id"] == run_id and verdict["final"]:
                        return time.monotonic() - sent
    finally:
        await consumer.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heavy", type=int, default=30, help="heavy screenshots before it")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each, median taken")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="trustlayer-heavy-"))
    model = learn(read_runs([EXAMPLES / "train"]))
    models = work / "models"
    models.mkdir()
    model.save(models / f"{model.task}.json")
    good = read_events([EXAMPLES / "test" / "jl-save-textfile-test-05.jsonl"])[0]
    with EmbeddedKafka(log_level="WARN") as kafka:
        prefix = f"heavy-{uuid.uuid4().hex[:6]}"
        topics = topic_names(prefix)
        ensure_topics(kafka.bootstrap, topics, PARTITIONS)
        worker = start_worker(kafka.bootstrap, prefix, f"{prefix}-w", models, free_port(),
                              work / "worker.log")
        try:
            wait_ready(worker)
            warm = [{**e, "run_id": "good-warm"} for e in good]
            asyncio.run(final_after(kafka.bootstrap, topics, warm, "good-warm"))
            t_alone = statistics.median(
                asyncio.run(final_after(kafka.bootstrap, topics,
                                        [{**e, "run_id": f"good-alone-{n}"} for e in good],
                                        f"good-alone-{n}")) for n in range(args.repeat))
            behind = []
            for n in range(args.repeat):
                heavy = f"heavy-{n}"
                good_id = on_another_partition(f"good-behind-{n}", heavy)
                behind.append(asyncio.run(final_after(
                    kafka.bootstrap, topics, [*heavy_run(heavy, model.task, args.heavy),
                                              *({**e, "run_id": good_id} for e in good)],
                    good_id)))
                asyncio.run(final_after(kafka.bootstrap, topics, [], heavy))  # done first
            t_behind = statistics.median(behind)
        finally:
            worker.stop()
            shutil.rmtree(work, ignore_errors=True)
    print(f"good run's verdict latency (median of {args.repeat}): alone {t_alone * 1000:.0f} ms, "
          f"behind {args.heavy} heavy screenshots {t_behind * 1000:.0f} ms = "
          f"{t_behind / t_alone:.1f}x "
          f"alone (goal <= 2x; the heavy run and the good one on different partitions)")
    return 0


if __name__ == "__main__":
    with stopped_as_by_ctrl_c():
        sys.exit(main())
