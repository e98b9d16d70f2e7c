"""What the worker's agents, timers and table callbacks do, over the objects they share
(one :class:`Runtime` per process); :mod:`stream.worker.app` only wires them to Faust.

- ``judge`` over ``trustlayer.events``: the records the consumer fetched
  (:mod:`stream.worker.fetched`), a batch at a time through the
  :class:`~stream.judging.processor.StreamProcessor`, acknowledged by the checkpoint once what they
  changed is durable (:mod:`stream.worker.checkpoint`);
- ``tick``: the watchdog (:mod:`stream.worker.watchdog`), then the deadlines and reorder timeouts of
  silent runs, whose verdicts are stored in the run's outbox and delivered before they are
  confirmed;
- the ``runs`` table recovered: where reading starts, the runs of the assigned partitions
  and their outboxes; the ``training`` table recovered: the training runs of refinement.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import faust
from aiokafka import TopicPartition
from faust.types import ProducerT, TableT, TopicT

from stream.judging.metrics import Metrics
from stream.judging.processor import StreamProcessor
from stream.judging.records import Output, Source
from stream.judging.screenshots import Decoder, ReadAhead
from stream.models.refine import Refiner
from stream.models.registry import ModelRegistry
from stream.worker.checkpoint import Checkpoint
from stream.worker.config import WorkerConfig
from stream.worker.fetched import FetchedEvents
from stream.worker.model_feed import ModelFeed
from stream.worker.offload import LearnPool, child_processes
from stream.worker.progress import Progress, start_offsets
from stream.worker.tables import TableStore
from stream.worker.training import TrainingRuns, seed_runs
from stream.worker.watchdog import Watchdog

log = logging.getLogger("trustlayer.worker")


#: Seconds the judge works before the event loop gets a turn (the rest of its batch waits
#: for the next one): the consumer's heartbeats, fetches and the producer run in that loop
#: (:mod:`stream.kafka.clients`), and a batch of slow records (large screenshots, hostile ones) took
#: seconds, past the group's session timeout.
JUDGE_TURN = 0.1

#: Processes decoding screenshots: a heavy one takes a core for up to decode_budget
#: seconds, small ones of other runs take another meanwhile (a 2-core machine, measured).
DECODERS = 2


def within_turn(batch: list[Any], deadline: float, judged: list[Any], waiting: list[Any],
                ready: Callable[[Any], bool] = lambda message: True) -> Iterator[Any]:
    """`batch`'s records until the monotonic clock passes `deadline` (one at least), each
    added to `judged` as it is handed out; the rest, in order, to `waiting`, and with them
    a record not `ready` (its screenshot still decoding) and every later record of its
    partition (a partition's records are judged, and acknowledged, in their order)."""
    held: set[int] = set()
    for number, message in enumerate(batch):
        if judged and time.monotonic() > deadline:
            waiting += batch[number:]
            return
        if message.partition in held or not ready(message):
            held.add(message.partition)
            waiting.append(message)
            continue
        judged.append(message)
        yield message


class Outlets:
    """The topics that what processing produced (:class:`~stream.judging.records.Output`) goes to.

    Records go straight to the producer (Faust's, over aiokafka's batches). Not through
    Faust's ``send_soon`` buffer: that buffer hands one record at a time to the producer,
    and the table's changelog writes of a checkpoint (hundreds at once) go through it, so
    verdicts judged just after a checkpoint waited behind them: most of the publish ->
    verdict tail (measured: docs/benchmarks.md). Nor through ``Topic.send``: its future
    message, sensors and callbacks cost a worker more than the producer's own work."""

    def __init__(self, producer: ProducerT, verdicts: TopicT, dlq: TopicT, finished: TopicT):
        self.producer = producer
        self.verdicts, self.dlq, self.finished = (
            topic.get_topic_name() for topic in (verdicts, dlq, finished))

    async def send(self, out: Output) -> list[Awaitable]:
        """Hand `out`'s records to the producer, in order; the returned awaitables say when
        each is delivered."""
        records: list[tuple[str, bytes | None, dict]] = [
            (self.verdicts, run_id.encode(), record) for run_id, record in out.verdicts]
        records += [(self.dlq, key, record) for key, record in out.dlq]
        records += [(self.finished, task.encode(), payload) for task, payload in out.finished]
        return [await self.producer.send(topic, key, json.dumps(value).encode(), None, None,
                                         None) for topic, key, value in records]


class Runtime:
    """The worker's state shared by the agents (one per process).

    `topics`: the Faust topics ``events``, ``verdicts``, ``dlq``, ``models``, ``finished``;
    `tables`: the ``runs`` and ``training`` tables (:func:`stream.worker.tables.declare_tables`).
    The model files of ``--models`` and the runs of ``--train`` are read here, before
    anything starts, so that a bad file stops the command with its message.
    """

    def __init__(self, cfg: WorkerConfig, app: faust.App, topics: dict[str, TopicT],
                 tables: tuple[TableT, TableT]):
        self.cfg, self.app = cfg, app
        self.registry = ModelRegistry()
        self.metrics = Metrics()
        self.store = TableStore(tables[0])
        self.processor = StreamProcessor(self.registry, self.store, cfg.settings, self.metrics)
        self.checkpoint = Checkpoint(self.processor.runs, self.store, lambda m: app.consumer.ack(m))
        self.fetched = FetchedEvents(lambda: app.consumer, lambda: app.consumer_generation_id,
                                     cfg.fetch_buffer_bytes, self.metrics.fetch_pauses)
        self.outlets = Outlets(app.producer, topics["verdicts"], topics["dlq"],
                               topics["finished"])
        self.progress = Progress()
        self.watchdog = Watchdog(app, cfg, self.progress, self.metrics)
        model_files = self.registry.load_dir(cfg.models_dir) if cfg.models_dir is not None else []
        self.models = ModelFeed(cfg, self.registry, self.metrics, topics["models"],
                                topics["dlq"], model_files, beacon=app.beacon)
        if cfg.train_dirs:
            log.info("%d training runs for refinement", seed_runs(self.registry, cfg.train_dirs))
        self.learner = LearnPool()
        self.decoder = Decoder(cfg.settings.decode_budget, child_processes, DECODERS)
        self.read_ahead = ReadAhead(
            lambda message: self.processor.read(message.key, message.value,
                                                source_of(message)), self.decoder)
        refiner = Refiner(self.registry, cfg.drop_after, cfg.settings.refine_on_verdict,
                          learner=self.learner, runner_keys=cfg.settings.runner_keys)
        self.training = TrainingRuns(cfg, self.registry, TableStore(tables[1]), refiner,
                                     self.models, self.progress)

    @property
    def ready(self) -> asyncio.Event:
        """Set once the models are known (see :class:`~stream.worker.model_feed.ModelFeed`)."""
        return self.models.ready

    def active_partitions(self, topic: str) -> set[int]:
        return {tp.partition for tp in self.app.assignor.assigned_actives() if tp.topic == topic}

    async def judge(self) -> None:
        """The ``judge`` agent: the fetched events a batch at a time, acknowledged by the
        checkpoint (its Faust stream stays empty: the consumer hands the events topic's
        records to :attr:`fetched`)."""
        await self.ready.wait()
        log.info("judging events")
        while True:
            # Records of a partition revoked while they were judged are processed to the
            # end: their offsets are not committed, the new owner processes them again, and
            # both give the same verdicts and table records (processing is deterministic).
            batch = await self.fetched.take(self.cfg.batch_max)
            judged, waiting, out = self._judge_turn(batch)
            self.fetched.put_back(waiting)
            self.progress.decoding({self._events_tp(m) for m in waiting})
            for model in out.models:  # a shadow trial ended (stream.judging.shadow)
                await self.models.publish(model)
            self.checkpoint.add(judged, out, await self.outlets.send(out))
            self._processed(judged)
            if not judged:  # only records whose screenshots are decoding: on when one
                # is decoded, or when records come that may be of other partitions (not
                # after the decoding: a screenshot takes up to decode_budget seconds)
                await first_of(self.read_ahead.wait(), self.fetched.fresh())
            # take() returns at once while records wait: without this the producer (the
            # verdicts just judged), the fetching and the timers would wait until the
            # judge had emptied the fetch buffer (up to 4,096 records, seconds of work)
            await asyncio.sleep(0)

    def _judge_turn(self, batch: list[Any]) -> tuple[list[Any], list[Any], Output]:
        """Judge `batch`'s records for one turn (:data:`JUDGE_TURN`): those judged, those
        left waiting (the turn ended, or a screenshot is decoding) and what judging made."""
        judged: list[Any] = []
        waiting: list[Any] = []
        out = Output()
        for message in within_turn(batch, time.monotonic() + JUDGE_TURN, judged, waiting,
                                   self.read_ahead.ready):
            self.processor.process(message.key, message.value, source_of(message), out,
                                   self.read_ahead.take(message))
        self.processor.count()
        return judged, waiting, out

    def _processed(self, judged: list[Any]) -> None:
        """The `judged` records count as progress of their partitions (the stall guard)."""
        now = time.monotonic()
        for message in judged:
            self.progress.done(self._events_tp(message), message.offset, now)

    def _events_tp(self, message: Any) -> TopicPartition:
        return TopicPartition(self.cfg.topics.events, message.partition)

    async def refine(self, stream: Any) -> None:
        """The ``refine`` agent: one finished run at a time (see :mod:`stream.worker.training`)."""
        await self.ready.wait()
        async for event in stream.events():
            await self.training.refine(event.message)

    async def tick(self) -> None:
        """The timer: watch the consumer, then fail silent runs; their verdicts are stored
        in the runs' outboxes before they are sent, and confirmed once delivered."""
        if not self.ready.is_set() or self.watchdog.topics_missing() or \
                not self.processor.runs.assigned:
            return
        await self.watchdog.unstall()
        out = self.processor.silence.tick(caught_up=self.watchdog.caught_up,
                                  fetched=self.watchdog.fetched)
        if out.verdicts:
            timed = [run_id for run_id, _ in out.verdicts]
            runs = self.processor.runs
            runs.flush(timed)
            await self.store.settled()  # outboxes stored before their verdicts go
            await asyncio.gather(*await self.outlets.send(out))
            for run_id, record in out.verdicts:
                runs.confirm(run_id, [record])
            runs.flush(timed)
            await self.store.settled()

    async def runs_recovered(self) -> None:
        """The ``runs`` table was recovered for this worker's partitions: reading starts at
        the committed offsets, their runs are loaded, their outboxes sent again."""
        cfg = self.cfg
        partitions = self.active_partitions(cfg.topics.events)
        tps = sorted(TopicPartition(tp.topic, tp.partition)
                     for tp in self.app.assignor.assigned_actives()
                     if tp.topic in (cfg.topics.events, cfg.finished_topic))
        start = await start_offsets(self.app.consumer, cfg.bootstrap, cfg.app_id, tps) \
            if tps else {}
        self.progress.reset(tps, start)
        out = self.processor.assign(partitions, self.store.items())
        await asyncio.gather(*await self.outlets.send(out))
        print(f"trustlayer worker ready: {cfg.app_id} partitions {sorted(partitions)} "
              f"open runs {sum(self.processor.runs.open_runs().values())}", flush=True)

    def training_recovered(self) -> None:
        """The ``training`` table was recovered: its runs of this worker's partitions."""
        self.training.restore(self.active_partitions(self.cfg.finished_topic))


async def first_of(*waits: Awaitable[None]) -> None:
    """Until the first of `waits` is done; the others are cancelled."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


def source_of(message: Any) -> Source:
    """Where a fetched record came from."""
    return Source(message.partition, message.offset, message.timestamp or 0.0, message.topic)
