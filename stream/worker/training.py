"""Online refinement on the worker's side: the training runs of ``--train`` given to the
registry, a finished run read back from ``trustlayer.events`` by its offsets and learned
from (:class:`~stream.models.refine.Refiner` in a thread, learning itself in a child process:
:class:`~stream.worker.offload.LearnPool`), the runs merged or held back kept in the ``training``
table, and the new version published."""
from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from stream.kafka import clients
from stream.models.refine import Refiner
from stream.models.registry import ModelRegistry
from stream.worker.config import WorkerConfig
from stream.worker.model_feed import ModelFeed
from stream.worker.progress import Progress
from stream.worker.tables import TableStore
from trustlayer.errors import TraceError
from trustlayer.observe.event_parsing import run_of_events
from trustlayer.observe.trace_events import Run
from trustlayer.observe.traces import read_training

log = logging.getLogger("trustlayer.worker")


def seed_runs(registry: ModelRegistry, directories: list[Path]) -> int:
    """Give the registry the training runs of `directories` (with ``labels.json`` causes)."""
    count = 0
    for directory in directories:
        runs, causes = read_training([directory])
        registry.add_runs(runs, causes)
        count += len(runs)
    return count


class EventFetcher:
    """Reads records of a topic partition back by offset (a finished run's events)."""

    def __init__(self, bootstrap: str, topic: str):
        self.bootstrap, self.topic = bootstrap, topic
        self.consumer: AIOKafkaConsumer | None = None

    async def fetch(self, partition: int, offsets: list[int],
                    timeout: float = 30.0) -> dict[int, bytes]:
        """The values at `offsets` of `partition` (those no longer in the topic are left out)."""
        if self.consumer is None:
            self.consumer = clients.consumer(self.bootstrap)
            await self.consumer.start()
        tp = TopicPartition(self.topic, partition)
        self.consumer.assign([tp])
        self.consumer.seek(tp, min(offsets))
        wanted, found = set(offsets), dict[int, bytes]()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while wanted - set(found) and loop.time() < deadline:
            batches = await self.consumer.getmany(tp, timeout_ms=500)
            for message in batches.get(tp, []):
                if message.offset in wanted:
                    found[message.offset] = message.value
            if batches.get(tp) and batches[tp][-1].offset >= max(offsets):
                break
        return found


class TrainingRuns:
    """What the ``refine`` agent and the ``training`` table's recovery do."""

    def __init__(self, cfg: WorkerConfig, registry: ModelRegistry, store: TableStore,
                 refiner: Refiner, feed: ModelFeed, progress: Progress):
        self.cfg, self.registry, self.store, self.refiner = cfg, registry, store, refiner
        self.feed, self.progress = feed, progress
        self.fetcher = EventFetcher(cfg.bootstrap, cfg.topics.events)

    def restore(self, partitions: set[int]) -> None:
        """The table was recovered: give the registry the merged and held runs of
        `partitions`."""
        for _, value in self.store.items():
            entry = value if isinstance(value, dict) else json.loads(value)
            if entry["partition"] not in partitions:
                continue
            run = self._run_of(entry["events"])
            if run is None:
                continue
            place = self.registry.runs if entry["state"] == "merged" else self.registry.pending
            place.setdefault(run.task, {})[run.run_id] = run

    async def refine(self, message: Any) -> None:
        """Learn from the finished run that the ``<app_id>-finished-runs`` record
        `message` names, keep what was merged or held back, publish a new version."""
        tp = TopicPartition(message.topic, message.partition)
        self.progress.done(tp, message.offset)
        payload = json.loads(message.value)
        values = await self.fetcher.fetch(payload["partition"], payload["offsets"])
        if len(values) != len(payload["offsets"]):
            log.warning("run %s: %d of %d events no longer in %s, not merged",
                        payload["run_id"], len(values), len(payload["offsets"]),
                        self.cfg.topics.events)
            return
        run = self._run_of([json.loads(values[o]) for o in payload["offsets"]])
        if run is None:
            return
        self.progress.busy.add(tp)
        try:
            result = await asyncio.get_running_loop().run_in_executor(
                None, self.refiner.learn_one, run, payload.get("verdict"))
        except Exception:  # noqa: BLE001 - one run must not stop refinement
            log.exception("refine %s failed", run.run_id)
            return
        finally:
            self.progress.busy.discard(tp)
        log.info("refine %s: %s", run.run_id, result.reason)
        for rid in result.merged + result.held:
            source = self.registry.runs.get(run.task, {}).get(rid) or \
                self.registry.pending.get(run.task, {}).get(rid)
            assert source is not None, "learn_one merges or holds runs it gave the registry"
            state = "merged" if rid in result.merged else "held"
            self.store.put(f"{run.task}/{rid}", message.partition, json.dumps(
                {"partition": message.partition, "state": state,
                 "events": [e.raw for e in source.events]}).encode())
        await self.store.settled()
        if result.model is not None:
            await self.feed.publish(result.model)
        self.progress.moved(tp)

    def _run_of(self, raw_events: list[dict]) -> Run | None:
        """A run from its events' JSON (in any order), or None if one no longer reads."""
        try:
            return run_of_events(raw_events, self.cfg.settings.images_dir)
        except TraceError as exc:
            log.warning("a finished run no longer reads: %s", exc)
            return None
