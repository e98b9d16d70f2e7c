"""The Faust app of the streaming worker: topics, tables, agents and the timer, wired to the
plain logic of :mod:`stream.processor`, :mod:`stream.registry` and :mod:`stream.refine`.

- agent ``judge`` over ``trustlayer.events`` (key run_id): ``stream.take_events()`` batches
  go through :class:`~stream.processor.StreamProcessor`; per-run state in the table ``runs``
  (changelog ``<app_id>-runs-changelog``), written explicitly to the run's partition;
  verdicts to ``trustlayer.verdicts``, bad records to ``trustlayer.events.dlq``. A batch is
  acknowledged only after everything it sent was delivered.
- timer ``tick``: deadlines and reorder timeouts of silent runs; its verdicts are stored in
  the run's outbox and delivered before they are sent, then confirmed.
- task ``follow_models``: every ``trustlayer.models`` record (all partitions, from the start,
  no consumer group: every worker needs every model) signed with the worker's key
  (:mod:`stream.signing`; any other goes to the DLQ), plus the model files of ``--models``.
- agent ``refine`` over ``<app_id>-finished-runs`` (key task, so one worker refines a task):
  reads a finished run's events back from ``trustlayer.events`` by offset, merges it
  (:class:`~stream.refine.Refiner` in a thread, learning in a child process:
  :class:`~stream.offload.LearnPool`) and publishes the new version; merged and held runs
  live in the table ``training``.
- stall guard (in ``tick``, :class:`~stream.stall.StallGuard`): a partition whose records
  wait unprocessed is resumed and sought back; if it stays stalled, the worker stops with
  :data:`~stream.supervise.RESTART` and its supervisor starts it again.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import faust
from faust.types import TP
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from trustlayer.observe.traces import Run, run_of_events

from trustlayer.errors import TraceError

from stream.checkpoint import Checkpoint
from stream.deadletter import Rejected, dead_letter
from stream.offload import LearnPool
from stream.refine import Refiner
from stream.registry import ModelRegistry, encode_model, training_set
from stream.signing import model_key, signed_headers, verified_model
from stream.stall import RESTART, STALLED, StallGuard
from stream.supervise import RESTART as EXIT_RESTART
from stream.topics import (MAX_MESSAGE_BYTES, RUNS_TABLE, TRAINING_TABLE, TopicNames,
                           finished_topic, worker_topics)
from stream.metrics import Metrics
from stream.config import WorkerConfig
from stream.processor import StreamProcessor
from stream.records import Output, Source

log = logging.getLogger("trustlayer.worker")

#: Largest request the producer sends (a record with inline screenshots, plus overhead).
PRODUCER_MAX_REQUEST = MAX_MESSAGE_BYTES + 1024 * 1024
#: Seconds without a fetch response for a partition after which the timer takes the broker
#: as away (or the worker as stuck) and counts no silence there (deadlines).
FETCH_STALE = 10.0
#: Records waiting in Faust's producer buffer before it holds events back (Faust: 100).
PRODUCER_BUFFER = 10_000


class TableStore:
    """The :class:`~stream.records.Store` over a Faust table: local data plus an explicit
    changelog record to the run's own partition (in a ``take()`` batch Faust's current
    event is not the run's)."""

    def __init__(self, table: Any):
        self.table = table
        self.inflight: set[asyncio.Future] = set()

    def get(self, key: str) -> bytes | None:
        return self.table.data.get(key)

    def put(self, key: str, partition: int, value: bytes | None) -> None:
        if value is None:
            self.table.data.pop(key, None)
        else:
            self.table.data[key] = value
        future = self.table.send_changelog(partition, key, value)
        self.inflight.add(future)
        future.add_done_callback(self.inflight.discard)

    def items(self) -> list[tuple[str, bytes | dict]]:
        """Every (key, value); a value recovered from the changelog may come back decoded."""
        return [(k, v) for k, v in list(self.table.data.items()) if v is not None]

    async def settled(self) -> None:
        """Wait until every changelog record written so far is delivered."""
        await asyncio.gather(*self.inflight)


class EventFetcher:
    """Reads records of a topic partition back by offset (a finished run's events)."""

    def __init__(self, bootstrap: str, topic: str):
        self.bootstrap, self.topic = bootstrap, topic
        self.consumer: AIOKafkaConsumer | None = None

    async def fetch(self, partition: int, offsets: list[int], timeout: float = 30.0) -> dict[int, bytes]:
        if self.consumer is None:
            self.consumer = AIOKafkaConsumer(
                bootstrap_servers=self.bootstrap, enable_auto_commit=False, group_id=None,
                max_partition_fetch_bytes=PRODUCER_MAX_REQUEST, fetch_max_bytes=PRODUCER_MAX_REQUEST)
            await self.consumer.start()
        tp = TopicPartition(self.topic, partition)
        self.consumer.assign([tp])
        self.consumer.seek(tp, min(offsets))
        wanted, found = set(offsets), {}
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

    async def stop(self) -> None:
        if self.consumer is not None:
            await self.consumer.stop()
            self.consumer = None


async def topic_partitions(bootstrap: str, topic: str) -> int | None:
    """How many partitions `topic` has (None if it does not exist)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        [desc] = await admin.describe_topics([topic])
        return len(desc["partitions"]) if desc.get("error_code") == 0 else None
    finally:
        await admin.close()


def seed_runs(registry: ModelRegistry, directories: list[Path]) -> int:
    """Give the registry the training runs of `directories` (with ``labels.json`` causes)."""
    count = 0
    for directory in directories:
        runs, causes = training_set(directory)
        registry.add_runs(runs, causes)
        count += len(runs)
    return count


class Runtime:
    """The worker's state shared by the agents (one per process)."""

    def __init__(self, cfg: WorkerConfig, table: Any, training: Any):
        self.cfg = cfg
        self.model_key = model_key()
        self.registry = ModelRegistry()
        self.metrics = Metrics()
        self.store = TableStore(table)
        self.training = TableStore(training)
        self.processor = StreamProcessor(self.registry, self.store, cfg.settings, self.metrics)
        self.checkpoint = Checkpoint(self.processor, self.store)
        self.learner = LearnPool()
        self.refiner = Refiner(self.registry, cfg.drop_after, cfg.settings.refine_on_verdict,
                               learner=self.learner)
        self.fetcher = EventFetcher(cfg.bootstrap, cfg.topics.events)
        self.stalls = StallGuard(cfg.stall_seconds, cfg.stall_restart)
        #: topic partitions whose record is being worked on for long (learning)
        self.busy: set[TopicPartition] = set()
        #: set when the worker gives up on its consumer and stops to be started again
        self.restart = False
        #: since when the consumer's metadata has lacked a topic it reads (None: it has not)
        self.missing_since: float | None = None
        self.recovered = False
        self.ready = asyncio.Event()
        #: next offset to read of each assigned partition when it was assigned
        self.start: dict[TopicPartition, int] = {}
        #: last offset processed and when, by topic partition (events and finished runs)
        self.processed: dict[TopicPartition, int] = {}
        self.progress: dict[TopicPartition, float] = {}


def create_app(cfg: WorkerConfig) -> tuple[faust.App, Runtime]:
    """The Faust app for `cfg` and the runtime state its agents share."""
    app = faust.App(
        cfg.app_id,
        broker=f"kafka://{cfg.bootstrap}",
        store="memory://",
        autodiscover=False,
        web_enabled=False,
        processing_guarantee="at_least_once",
        topic_partitions=cfg.partitions,
        topic_replication_factor=1,
        topic_allow_declare=True,
        table_standby_replicas=cfg.standby_replicas,
        broker_session_timeout=cfg.session_timeout,
        consumer_group_instance_id=cfg.instance_id,
        broker_heartbeat_interval=cfg.heartbeat_interval,
        broker_commit_interval=cfg.commit_interval,
        broker_request_timeout=max(30.0, 3 * cfg.session_timeout),
        producer_max_request_size=PRODUCER_MAX_REQUEST,
        producer_linger=0.0,
        consumer_max_fetch_size=PRODUCER_MAX_REQUEST,
        consumer_auto_offset_reset="earliest",
        stream_recovery_delay=0.05,
        stream_wait_empty=False,
    )
    # Faust's conductor stops handing events to agents while its producer buffer holds over
    # 100 records; a checkpoint writes one record per run changed in the last second (675
    # in the benchmark), and waited for them by itself: the stop cost 20-30% of throughput
    app.producer.buffer.max_messages = PRODUCER_BUFFER
    names = cfg.topics
    raw = dict(key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")
    events = app.topic(names.events, partitions=cfg.partitions, **raw)
    verdicts = app.topic(names.verdicts, partitions=cfg.partitions, **raw)
    dlq = app.topic(names.dlq, partitions=cfg.partitions, **raw)
    models = app.topic(names.models, **raw)
    finished = app.topic(cfg.finished_topic, partitions=cfg.partitions, internal=True, **raw)
    big = {"max.message.bytes": str(MAX_MESSAGE_BYTES)}
    schema = faust.Schema(key_type=str, value_type=bytes, key_serializer="raw",
                          value_serializer="raw")
    table = app.Table(RUNS_TABLE, partitions=cfg.partitions, schema=schema,
                      extra_topic_configs=big)
    training = app.Table(TRAINING_TABLE, partitions=cfg.partitions, schema=schema,
                         extra_topic_configs=big)
    rt = Runtime(cfg, table, training)
    # read before anything starts, so that a bad file stops the command with its message
    model_files = rt.registry.load_dir(cfg.models_dir) if cfg.models_dir is not None else []
    if cfg.train_dirs:
        log.info("%d training runs for refinement", seed_runs(rt.registry, cfg.train_dirs))

    def send(out: Output) -> list[asyncio.Future]:
        futures = []
        for run_id, record in out.verdicts:
            futures.append(verdicts.send_soon(key=run_id.encode(), value=json.dumps(record).encode()))
        for key, record in out.dlq:
            futures.append(dlq.send_soon(key=key, value=json.dumps(record).encode()))
        for task, payload in out.finished:
            futures.append(finished.send_soon(key=task.encode(), value=json.dumps(payload).encode()))
        return futures

    def active_partitions(topic: str) -> set[int]:
        return {tp.partition for tp in app.assignor.assigned_actives() if tp.topic == topic}

    # -- rebalancing ------------------------------------------------------------------------
    @app.on_partitions_revoked.connect
    async def on_revoked(sender: Any, revoked: Any, **kwargs: Any) -> None:
        # Nothing is awaited here: waiting for deliveries inside the rebalance can stall
        # it (the agent awaits its own batch's deliveries; Faust flushes the producer).
        rt.processor.revoke()

    async def start_offsets(tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Where reading starts: the committed offset, else the earliest."""
        admin = AIOKafkaAdminClient(bootstrap_servers=cfg.bootstrap)
        await admin.start()
        try:
            committed = await admin.list_consumer_group_offsets(cfg.app_id, partitions=tps)
        finally:
            await admin.close()
        start = {tp: committed[tp].offset for tp in tps
                 if tp in committed and committed[tp].offset >= 0}
        missing = [tp for tp in tps if tp not in start]
        if missing:
            start.update(await app.consumer.earliest_offsets(*missing))
        return start

    def next_offset(tp: TopicPartition) -> int | None:
        done = rt.processed.get(tp)
        return done + 1 if done is not None else rt.start.get(tp)

    @table.on_recover
    async def on_runs_recovered() -> None:
        partitions = active_partitions(names.events)
        tps = sorted(TopicPartition(tp.topic, tp.partition) for tp in app.assignor.assigned_actives()
                     if tp.topic in (names.events, cfg.finished_topic))
        rt.start = await start_offsets(tps) if tps else {}
        rt.processed = {tp: offset for tp, offset in rt.processed.items() if tp in rt.start}
        rt.progress = {tp: time.monotonic() for tp in tps}
        rt.recovered = True
        out = rt.processor.assign(partitions, rt.store.items())
        await asyncio.gather(*send(out))
        print(f"trustlayer worker ready: {cfg.app_id} partitions {sorted(partitions)} "
              f"open runs {sum(rt.processor.open_runs().values())}", flush=True)

    @training.on_recover
    async def on_training_recovered() -> None:
        partitions = active_partitions(cfg.finished_topic)
        for key, value in rt.training.items():
            entry = value if isinstance(value, dict) else json.loads(value)
            if entry["partition"] not in partitions:
                continue
            run = _run_of(entry["events"], rt.cfg.settings.images_dir)
            if run is None:
                continue
            place = rt.registry.runs if entry["state"] == "merged" else rt.registry.pending
            place.setdefault(run.task, {})[run.run_id] = run

    # -- models -------------------------------------------------------------------------------
    @app.task
    async def follow_models() -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=cfg.bootstrap, enable_auto_commit=False, group_id=None,
            max_partition_fetch_bytes=PRODUCER_MAX_REQUEST, fetch_max_bytes=PRODUCER_MAX_REQUEST)
        await consumer.start()
        try:
            count = await topic_partitions(cfg.bootstrap, names.models)
            if not count:
                raise RuntimeError(f"topic {names.models} does not exist")
            tps = [TopicPartition(names.models, p) for p in range(count)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            end = await consumer.end_offsets(tps)
            while True:
                batches = await consumer.getmany(timeout_ms=200)
                for records in batches.values():
                    for record in records:
                        await adopt_model_record(record)
                if not rt.ready.is_set() and all(
                        [await consumer.position(tp) >= end[tp] for tp in tps]):
                    await adopt_model_files()
                    rt.ready.set()
                    log.info("models: %s", ", ".join(
                        f"{task} v{rt.registry.latest(task).version}"
                        for task in rt.registry.tasks()) or "none")
        finally:
            await consumer.stop()

    async def adopt_model_record(record: Any) -> None:
        """Use a model record signed with the worker's key; refuse any other to the DLQ
        (the previous model stays in use)."""
        try:
            rt.registry.add(verified_model(record, rt.model_key))
            return
        except Rejected as exc:
            reason, error = exc.reason, exc.message
        except Exception as exc:  # noqa: BLE001 - one record must not stop the worker
            log.exception("models record at offset %d: failed on it", record.offset)
            reason, error = "bad_model", f"offset {record.offset}: not a usable model ({exc!r})"
        log.warning("model record refused (%s): %s", reason, error[:500])
        rt.metrics.dlq.labels(reason).inc()
        source = Source(record.partition, record.offset, (record.timestamp or 0) / 1000,
                        record.topic)
        await dlq.send(key=record.key, value=json.dumps(
            dead_letter(record.key, record.value, source, reason, error)).encode())

    async def adopt_model_files() -> None:
        for model in model_files:
            adopted = rt.registry.adopt(model)
            if adopted is not None:
                await publish_model(adopted)
        if not rt.registry.tasks():
            log.warning("no model yet: events of every task go to the DLQ until one is "
                        "published to %s", names.models)
        if cfg.settings.refine and cfg.train_dirs:
            unseeded = [task for task in rt.registry.tasks() if task not in rt.registry.seeded]
            if unseeded:
                log.warning("online refinement is off for %s: --train gave no runs of it",
                            ", ".join(unseeded))

    async def publish_model(model: Any) -> None:
        value = encode_model(model)
        await models.send(key=model.task.encode(), value=value,
                          headers=signed_headers(value, rt.model_key), force=True)
        rt.registry.add(model)
        log.info("published %s version %d", model.task, model.version)

    # -- the events -----------------------------------------------------------------------------
    @app.agent(events)
    async def judge(stream: Any) -> None:
        await rt.ready.wait()
        log.info("judging events")
        # acknowledged by the timer `checkpoint` once what they changed is durable
        async for batch in stream.noack_take(cfg.batch_max, within=cfg.batch_within):
            # Records of a partition revoked meanwhile are processed too: their offsets are
            # not committed, the new owner processes them again, and both give the same
            # verdicts and table records (processing is deterministic).
            records = [(e.message.key, e.message.value,
                        Source(e.message.partition, e.message.offset, e.message.timestamp or 0.0,
                               e.message.topic)) for e in batch]
            out = rt.processor.process_batch(records)
            rt.checkpoint.add(stream, batch, out, send(out))
            now = time.monotonic()
            for _, _, source in records:
                tp = TopicPartition(names.events, source.partition)
                rt.processed[tp], rt.progress[tp] = source.offset, now

    @app.timer(cfg.commit_interval)
    async def checkpoint() -> None:
        await rt.checkpoint.settle()

    def caught_up(partition: int) -> bool:
        """Every record of the partition published so far has been processed."""
        tp = TopicPartition(names.events, partition)
        try:
            highwater = app.consumer.highwater(tp)
        except Exception:  # noqa: BLE001 - no fetch yet, no assignment
            return False
        position = next_offset(tp)
        return highwater is not None and position is not None and position >= highwater

    def fetched(partition: int) -> bool:
        """The consumer fetched from the partition within :data:`FETCH_STALE` seconds: the
        broker answers, and the worker reads (aiokafka's time of its last fetch response,
        empty or not)."""
        tp = TopicPartition(names.events, partition)
        try:
            stamp = app.consumer._thread._ensure_consumer().last_poll_timestamp(tp)
        except Exception:  # noqa: BLE001 - not assigned, not started
            return False
        return stamp is not None and time.time() - stamp / 1000 < FETCH_STALE

    def consumer_state(tp: TopicPartition) -> str:
        """What faust's consumer thinks of `tp` (for the log of a stall)."""
        consumer = app.consumer
        return (f"active={tp in consumer._get_active_partitions()} "
                f"paused={tp in consumer._paused_partitions} "
                f"buffered={tp in consumer._buffered_partitions} "
                f"flow={consumer.flow_active} recovery={app.in_recovery}")

    async def unstall() -> None:
        """Resume and seek back a partition whose records stay undelivered (see
        :mod:`stream.stall`); stop the worker to be started again if that does not help.
        Processing is idempotent, so a needless seek only makes duplicates, which are
        ignored."""
        now = time.monotonic()
        rt.stalls.forget(set(rt.progress))
        for tp in sorted(rt.progress):
            try:
                highwater = app.consumer.highwater(tp)
            except Exception:  # noqa: BLE001 - not fetched yet
                continue
            position = next_offset(tp)
            progress = now if tp in rt.busy else rt.progress[tp]
            verdict = rt.stalls.check(tp, now, progress, position, highwater)
            if verdict == RESTART:
                log.error("%s: records from offset %d still not delivered after %.0f s (%s): "
                          "restarting the worker", tp, position, cfg.stall_restart,
                          consumer_state(tp))
                restart_worker()
                return
            if verdict == STALLED:
                log.warning("%s: records from offset %d not delivered for %.0f s (%s); "
                            "resuming and seeking back", tp, position, now - rt.progress[tp],
                            consumer_state(tp))
                rt.metrics.stalls.labels("resumed").inc()
                if app.consumer.flow_active and not app.in_recovery:
                    # Faust's own TP: its active set asserts that type, and crashed on ours
                    app.consumer.resume_partitions([TP(tp.topic, tp.partition)])
                await app.consumer.seek(tp, position)

    def topics_missing() -> bool:
        """Restart the worker if the group's assignment was made without one of its topics
        for `stall_restart` seconds: a broker that restarts answers metadata without topics
        for a moment, Faust then ignores them ("Ignoring missing topic") and only a metadata
        refresh minutes later would assign them again. Only the group's leader can tell:
        its aiokafka keeps the metadata the assignment was made from, a follower's is empty
        or stale (every follower of a fleet used to restart every 30 s)."""
        if not rt.recovered or not group_leader():
            rt.missing_since = None
            return False
        now = time.monotonic()
        missing = [topic for topic in (names.events, cfg.finished_topic)  # None or empty
                   if not app.consumer.topic_partitions(topic)]
        if not missing:
            rt.missing_since = None
            return False
        rt.missing_since = rt.missing_since or now
        if now - rt.missing_since >= cfg.stall_restart:
            log.error("the consumer's assignment has left out %s for %.0f s: restarting the "
                      "worker", ", ".join(missing), now - rt.missing_since)
            restart_worker()
        return True

    def group_leader() -> bool:
        consumer = app.consumer._thread._consumer
        return consumer is not None and consumer._coordinator._group_subscription is not None

    def restart_worker() -> None:
        """Stop the worker (Faust's own shutdown commits what was processed) so that its
        supervisor starts a fresh one; if the shutdown hangs, exit hard after 20 s (the
        changelog keeps every open run)."""
        if rt.restart:
            return
        rt.restart = True
        rt.metrics.stalls.labels("restarted").inc()
        timer = threading.Timer(20.0, os._exit, (EXIT_RESTART,))
        timer.daemon = True
        timer.start()
        os.kill(os.getpid(), signal.SIGTERM)

    @app.timer(cfg.tick_interval)
    async def tick() -> None:
        if not rt.ready.is_set() or topics_missing() or rt.processor.active is None:
            return
        await unstall()
        out = rt.processor.tick(caught_up=caught_up, fetched=fetched)
        if out.verdicts:
            timed = [run_id for run_id, _ in out.verdicts]
            rt.processor.flush(timed)
            await rt.store.settled()  # outboxes stored before their verdicts go
            await asyncio.gather(*send(out))
            for run_id, record in out.verdicts:
                rt.processor.confirm(run_id, [record])
            rt.processor.flush(timed)
            await rt.store.settled()

    # -- online refinement ------------------------------------------------------------------------
    @app.agent(finished)
    async def refine(stream: Any) -> None:
        await rt.ready.wait()
        loop = asyncio.get_running_loop()
        async for event in stream.events():
            tp = TopicPartition(event.message.topic, event.message.partition)
            rt.processed[tp], rt.progress[tp] = event.message.offset, time.monotonic()
            payload = json.loads(event.value)
            values = await rt.fetcher.fetch(payload["partition"], payload["offsets"])
            if len(values) != len(payload["offsets"]):
                log.warning("run %s: %d of %d events no longer in %s, not merged",
                            payload["run_id"], len(values), len(payload["offsets"]), names.events)
                continue
            raw_events = [json.loads(values[o]) for o in payload["offsets"]]
            run = _run_of(raw_events, cfg.settings.images_dir)
            if run is None:
                continue
            rt.busy.add(tp)
            try:
                result = await loop.run_in_executor(None, rt.refiner.learn_one, run,
                                                    payload.get("verdict"))
            except Exception:  # noqa: BLE001 - one run must not stop refinement
                log.exception("refine %s failed", run.run_id)
                continue
            finally:
                rt.busy.discard(tp)
            log.info("refine %s: %s", run.run_id, result.reason)
            partition = event.message.partition
            for rid in result.merged + result.held:
                source = rt.registry.runs.get(run.task, {}).get(rid) or \
                    rt.registry.pending.get(run.task, {}).get(rid)
                state = "merged" if rid in result.merged else "held"
                rt.training.put(f"{run.task}/{rid}", partition, json.dumps(
                    {"partition": partition, "state": state,
                     "events": [e.raw for e in source.events]}).encode())
            await rt.training.settled()
            if result.model is not None:
                await publish_model(result.model)
            rt.progress[tp] = time.monotonic()

    return app, rt


def _run_of(raw_events: list[dict], images_dir: Path | None) -> Run | None:
    """A run from its events' JSON (in any order), or None if one no longer reads."""
    try:
        return run_of_events(raw_events, images_dir)
    except TraceError as exc:
        log.warning("a finished run no longer reads: %s", exc)
        return None


def run_worker(cfg: WorkerConfig, loglevel: str = "warning", stalls: int = 0) -> int:
    """Start the worker in this process until it is stopped (SIGTERM or Ctrl+C); `stalls`:
    how many times it was started again after a stall (``trustlayer_stalls_total``).
    Returns :data:`stream.supervise.RESTART` when it stopped to be started again."""
    from stream.topics import ensure_topics

    ensure_topics(cfg.bootstrap, cfg.topics, cfg.partitions)
    actual = asyncio.run(topic_partitions(cfg.bootstrap, cfg.topics.events))
    if actual and actual != cfg.partitions:
        log.info("%s has %d partitions: using %d", cfg.topics.events, actual, actual)
        cfg.partitions = actual
    # Faust's internal topics too, before the first assignment (see stream.topics)
    ensure_topics(cfg.bootstrap, cfg.topics, cfg.partitions, extra=worker_topics(cfg.app_id))
    app, rt = create_app(cfg)
    rt.metrics.stalls.labels("restarted").inc(stalls)
    if cfg.settings.refine and not cfg.train_dirs:
        log.warning("online refinement is off: it needs the training runs (--train DIR)")
    if cfg.settings.refine and cfg.train_dirs:
        rt.learner.start()  # from this (the main) thread: the child dies with the worker
    if cfg.metrics_port:
        rt.metrics.serve(cfg.metrics_port, cfg.metrics_addr)
    # Faust's own terminal output (spinner, banner) goes to stderr: stdout carries the
    # "trustlayer worker ready" lines that the demo and the tests wait for.
    worker = faust.Worker(app, loglevel=loglevel, quiet=True, redirect_stdouts=False,
                          stdout=sys.stderr)
    # Faust's startup spinner sets the root logger to DEBUG so that every record makes it
    # spin: aiokafka then builds a debug record per message sent (~6% of the worker's time)
    worker.spinner = None
    code = 0
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        rt.learner.stop()
    return EXIT_RESTART if rt.restart else code


if __name__ == "__main__":  # pragma: no cover - `trustlayer worker` is the entry point
    sys.exit(run_worker(WorkerConfig()))
