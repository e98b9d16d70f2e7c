"""The worker's models: every ``trustlayer.models`` record, followed for as long as the
worker runs (all partitions, from the start, no consumer group: every worker needs every
model), used when signed with the worker's key (:mod:`stream.models.signing`; any other goes to the
DLQ, the previous version stays in use), plus the model files of ``--models``, published
once the topic has been read to its end."""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import faust

from stream.deadletter import Rejected, dead_letter
from stream.judging.metrics import Metrics
from stream.judging.records import Source
from stream.kafka import clients
from stream.models.registry import ModelRegistry, encode_model
from stream.models.signing import model_key, signed_headers, verified_model
from stream.worker.config import WorkerConfig
from trustlayer.model import Model

log = logging.getLogger("trustlayer.worker")


class ModelFeed(faust.Service):
    """Keeps `registry` up to date with the models topic; ``ready`` is set once the topic
    was read to its end and the model files were adopted (judging waits for it)."""

    def __init__(self, cfg: WorkerConfig, registry: ModelRegistry, metrics: Metrics,
                 models: Any, dlq: Any, model_files: list[Model], **kwargs: Any):
        super().__init__(**kwargs)
        self.cfg, self.registry, self.metrics = cfg, registry, metrics
        self.models, self.dlq, self.model_files = models, dlq, model_files
        self.model_key = model_key()
        self.ready = asyncio.Event()

    @faust.Service.task
    async def _follow(self) -> None:
        topic = self.cfg.topics.models
        consumer = clients.consumer(self.cfg.bootstrap)
        await consumer.start()
        try:
            end = await clients.assign_all(consumer, self.cfg.bootstrap, topic)
            if end is None:
                raise RuntimeError(f"topic {topic} does not exist")
            while not self.should_stop:
                batches = await consumer.getmany(timeout_ms=200)
                for records in batches.values():
                    for record in records:
                        await self.adopt_record(record)
                if not self.ready.is_set() and all(
                        [await consumer.position(tp) >= end[tp] for tp in end]):
                    await self.adopt_files()
                    self.ready.set()
                    log.info("models: %s", self._versions())
        finally:
            await consumer.stop()

    def _versions(self) -> str:
        """The model version each task's new runs use, for the log."""
        latest = {task: self.registry.latest(task) for task in self.registry.tasks()}
        return ", ".join(f"{task} v{model.version}" if model else f"{task} in shadow only"
                         for task, model in latest.items()) or "none"

    async def adopt_record(self, record: Any) -> None:
        """Use a model record signed with the worker's key; refuse any other to the DLQ
        (the previous model stays in use)."""
        try:
            self.registry.add(verified_model(record, self.model_key))
            return
        except Rejected as exc:
            reason, error = exc.reason, exc.message
        except Exception as exc:  # noqa: BLE001 - one record must not stop the worker
            log.exception("models record at offset %d: failed on it", record.offset)
            reason, error = "bad_model", f"offset {record.offset}: not a usable model ({exc!r})"
        log.warning("model record refused (%s): %s", reason, error[:500])
        self.metrics.dlq.labels(reason).inc()
        source = Source(record.partition, record.offset, (record.timestamp or 0) / 1000,
                        record.topic)
        await self.dlq.send(key=record.key, value=json.dumps(
            dead_letter(record.key, record.value, source, reason, error)).encode())

    async def adopt_files(self) -> None:
        """Publish the model files read at start that the topic does not hold yet."""
        for model in self.model_files:
            adopted = self.registry.adopt(model)
            if adopted is not None:
                await self.publish(adopted)
        if not self.registry.tasks():
            log.warning("no model yet: events of every task go to the DLQ until one is "
                        "published to %s", self.cfg.topics.models)
        if self.cfg.settings.refine and self.cfg.train_dirs:
            unseeded = [task for task in self.registry.tasks()
                        if task not in self.registry.seeded]
            if unseeded:
                log.warning("online refinement is off for %s: --train gave no runs of it",
                            ", ".join(unseeded))

    async def publish(self, model: Model) -> None:
        """Publish a new version of a model, signed, and use it."""
        value = encode_model(model)
        await self.models.send(key=model.task.encode(), value=value,
                               headers=signed_headers(value, self.model_key), force=True)
        self.registry.add(model)
        log.info("published %s version %d", model.task, model.version)
