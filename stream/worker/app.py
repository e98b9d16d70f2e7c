"""The Faust app of the streaming worker: topics, tables, agents and timers, each wired to a
plain method of :class:`stream.worker.runtime.Runtime` (what they do is described there).

- agent ``judge`` over ``trustlayer.events`` (key run_id); per-run state in the table
  ``runs`` (changelog ``<app_id>-runs-changelog``); verdicts to ``trustlayer.verdicts``, bad
  records to ``trustlayer.events.dlq``;
- timer ``checkpoint``: events acknowledged once what they changed is durable
  (:mod:`stream.worker.checkpoint`); timer ``tick``: the watchdog and silent runs;
- service ``models`` (:class:`~stream.worker.model_feed.ModelFeed`): follows ``trustlayer.models``;
- agent ``refine`` over ``<app_id>-finished-runs`` (key task, so one worker refines a task),
  merged and held runs in the table ``training`` (:mod:`stream.worker.training`).

:func:`run_worker` runs it in this process until it is stopped, or stops itself to be
started again (:mod:`stream.worker.watchdog`).
"""
from __future__ import annotations

import asyncio
import gc
import logging
import sys
import tempfile
from collections.abc import Awaitable
from functools import partial
from pathlib import Path
from typing import Any

import faust
from faust.types import TP, TableT, TopicT
from mode.types import BaseSignalT

from stream.kafka import clients
from stream.kafka.partitioner import keyed_partition
from stream.kafka.topics import worker_topics
from stream.worker import transport
from stream.worker.config import GC_THRESHOLDS, WorkerConfig
from stream.worker.runtime import Runtime
from stream.worker.supervise import RESTART as EXIT_RESTART
from stream.worker.tables import declare_tables

log = logging.getLogger("trustlayer.worker")

#: Records waiting in Faust's producer buffer before it holds events back (Faust: 100).
PRODUCER_BUFFER = 10_000


def create_app(cfg: WorkerConfig, datadir: Path | None = None) -> tuple[faust.App, Runtime]:
    """The Faust app for `cfg` and the runtime state its agents share; Faust's data
    directory is `datadir` (its default is ``<app id>-data`` in the working directory)."""
    app = faust_app(cfg, datadir)
    topics = declare_topics(app, cfg)
    runs, training = declare_tables(app, cfg)
    rt = Runtime(cfg, app, topics, (runs, training))
    # faust annotates service() for classes; an instance is started as it is
    # (App._prepare_subservice)
    app.service(rt.models)  # type: ignore[arg-type]
    wire(app, rt, topics, runs, training)
    return app, rt


def faust_app(cfg: WorkerConfig, datadir: Path | None) -> faust.App:
    """The Faust app with `cfg`'s settings and the worker's transport (no topics yet)."""
    where: dict[str, Any] = {"datadir": str(datadir)} if datadir is not None else {}
    app = faust.App(
        cfg.app_id,
        **where,
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
        producer_max_request_size=clients.MAX_REQUEST_BYTES,
        producer_linger=0.0,
        producer_partitioner=keyed_partition,  # Kafka's default, each key hashed once
        consumer_max_fetch_size=clients.MAX_REQUEST_BYTES,
        consumer_auto_offset_reset="earliest",
        stream_recovery_delay=0.05,
        stream_wait_empty=False,
    )
    # Faust's conductor stops handing events to agents while its producer buffer holds over
    # 100 records; a checkpoint writes one record per run changed in the last second, and
    # waited for them by itself: the stop cost throughput (docs/benchmarks.md)
    app.producer.buffer.max_messages = PRODUCER_BUFFER
    app.transport = transport.WorkerTransport(app.conf.broker_consumer, app)  # (see there)
    return app


def declare_topics(app: faust.App, cfg: WorkerConfig) -> dict[str, TopicT]:
    """The worker's Faust topics, raw bytes in and out, by role."""
    names = cfg.topics
    raw_topic = partial(app.topic, key_type=bytes, value_type=bytes, key_serializer="raw",
                        value_serializer="raw")
    return {
        "events": raw_topic(names.events, partitions=cfg.partitions),
        "verdicts": raw_topic(names.verdicts, partitions=cfg.partitions),
        "dlq": raw_topic(names.dlq, partitions=cfg.partitions),
        "models": raw_topic(names.models),
        "finished": raw_topic(cfg.finished_topic, partitions=cfg.partitions, internal=True),
    }


def wire(app: faust.App, rt: Runtime, topics: dict[str, TopicT], runs: TableT,
         training: TableT) -> None:
    """Connect the agents, timers and table callbacks of `app` to `rt`'s methods."""

    @app.on_partitions_revoked.connect
    async def on_revoked(sender: faust.App, /, *revoked: set[TP], signal: BaseSignalT,
                         **kwargs: Any) -> None:
        # Nothing is awaited here: waiting for deliveries inside the rebalance can stall
        # it (the agent awaits its own batch's deliveries; Faust flushes the producer).
        rt.fetched.clear()
        rt.processor.revoke()
        rt.read_ahead.clear()

    @runs.on_recover
    async def on_runs_recovered() -> None:
        await restart_on_error(rt, "loading the recovered runs", rt.runs_recovered())

    @training.on_recover
    async def on_training_recovered() -> None:
        rt.training_recovered()

    transport.fetch_sinks(app)[rt.cfg.topics.events] = rt.fetched.put

    @app.agent(topics["events"])
    async def judge(stream: Any) -> None:  # the agent subscribes the topic
        await restart_on_error(rt, "the judge", rt.judge())

    @app.timer(rt.cfg.commit_interval)
    async def checkpoint() -> None:
        await restart_on_error(rt, "the checkpoint", rt.checkpoint.settle())

    @app.timer(rt.cfg.tick_interval)
    async def tick() -> None:
        await restart_on_error(rt, "the timer", rt.tick())

    @app.agent(topics["finished"])
    async def refine(stream: Any) -> None:
        await rt.refine(stream)


async def restart_on_error(rt: Runtime, what: str, work: Awaitable) -> None:
    """Await `work`; if it raises (a bug: a record the worker fails on goes to the DLQ, it
    does not raise), stop the worker for its supervisor to start a fresh one. Faust would end
    a crashed timer for good (no checkpoint: nothing acknowledged again) and start a crashed
    agent again (``mode.OneForOneSupervisor``) without the events it had taken: never
    acknowledged, they hold back every commit of their partitions while the run they belong
    to goes on without them. What was not committed is judged again."""
    try:
        await work
    except Exception:  # noqa: BLE001 - any bug; cancellation (a BaseException) goes through
        log.exception("%s failed: restarting the worker", what)
        rt.watchdog.restart_worker()


def run_worker(cfg: WorkerConfig, loglevel: str = "warning", stalls: int = 0) -> int:
    """Start the worker in this process until it is stopped (SIGTERM or Ctrl+C); `stalls`:
    how many times it was started again after a stall (``trustlayer_stalls_total``).
    Returns :data:`stream.worker.supervise.RESTART` when it stopped to be started again."""
    from stream.kafka.topics import ensure_topics

    ensure_topics(cfg.bootstrap, cfg.topics, cfg.partitions)
    actual = asyncio.run(clients.topic_partitions(cfg.bootstrap, cfg.topics.events))
    if actual and actual != cfg.partitions:
        log.info("%s has %d partitions: using %d", cfg.topics.events, actual, actual)
        cfg.partitions = actual
    # Faust's internal topics too, before the first assignment (see stream.kafka.topics)
    ensure_topics(cfg.bootstrap, cfg.topics, cfg.partitions, extra=worker_topics(cfg.app_id))
    gc.set_threshold(*GC_THRESHOLDS)
    clients.retried_errors_as_warnings()
    # Faust keeps nothing there (tables are in memory, their changelogs in Kafka), but makes
    # it: a scratch directory, not one left in whatever directory the worker started in
    scratch = tempfile.TemporaryDirectory(prefix=f"trustlayer-{cfg.app_id}-")
    app, rt = create_app(cfg, Path(scratch.name))
    # the libraries, the models and the app live as long as the process: a full collection
    # walked them all and held the worker (measured: docs/benchmarks.md)
    gc.freeze()
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
    # spin: aiokafka then builds a debug record per message sent (docs/benchmarks.md)
    worker.spinner = None
    code = 0
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        rt.learner.stop()
        rt.decoder.stop()
        scratch.cleanup()
    return EXIT_RESTART if rt.watchdog.restart else code


if __name__ == "__main__":  # pragma: no cover - `trustlayer worker` is the entry point
    sys.exit(run_worker(WorkerConfig()))
