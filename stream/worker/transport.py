"""The Faust worker's Kafka transport (:class:`WorkerTransport`): its consumer in the
worker's own event loop, its fetches held briefly and paced, a topic's records handed over a
fetch at a time. It subclasses faust-streaming's consumer and sets private attributes of
aiokafka's fetcher: :mod:`stream.worker.internals` checks at start that they are there.
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from faust.transport.drivers import aiokafka as faust_kafka
from faust.types import TP, AppT, Message
from mode.utils.futures import maybe_async

#: How long the broker may hold a fetch of the worker's consumer for records to come (ms;
#: Faust asks 1,500). aiokafka sends no other fetch while one is out, so a fetch of only
#: quiet partitions (finished runs, changelogs) kept events already on the broker from the
#: worker that long. A quiet worker asks the broker 50 times a second (measured:
#: docs/benchmarks.md, "Why the worker's settings are what they are").
WORKER_FETCH_MAX_WAIT_MS = 20


#: How long aiokafka lets a partition's fetched, not yet consumed records hold back the next
#: fetch of every partition on their broker (s; aiokafka: 0.1). Faust leaves the records of
#: its tables' changelog partitions unconsumed once a table is recovered, so a checkpoint's
#: changelog writes stopped all fetching that long; the records the worker does consume it
#: takes at once (:mod:`stream.worker.fetched`), so a short hold costs no fetches.
WORKER_PREFETCH_BACKOFF = 0.002


#: After a fetch that brought records the worker's next fetch waits at the broker until it
#: has this many bytes or :data:`WORKER_BUSY_FETCH_MAX_WAIT_MS` has passed; after an empty
#: one, until the first record (at most :data:`WORKER_FETCH_MAX_WAIT_MS`): under a steady
#: flow of small events a fetch per one or two events took most of a worker's CPU, and
#: backlogs are unchanged (their fetches fill at once).
WORKER_BUSY_FETCH_MIN_BYTES = 16 * 1024
WORKER_BUSY_FETCH_MAX_WAIT_MS = 5


#: Longest aiokafka's fetch loop waits, when it sends no fetch, before it looks again (s;
#: aiokafka: 0.2). It counts a node as busy until a done-callback of the node's fetch runs;
#: woken in that loop turn by something else (the judge taking records), it finds the fetch
#: done but its node busy, sends nothing and waits for records to be taken or for this
#: timeout; after a fetch that brought nothing, none are.
WORKER_FETCHER_TIMEOUT = 0.005

#: Takes the new records of a topic from one fetch (see :class:`_WorkerConsumer`).
Sink = Callable[[list[Message]], None]


def tune_fetcher(fetcher: Any) -> None:
    """Make aiokafka's `fetcher` (of a started consumer) fetch as the worker needs: see
    :data:`WORKER_PREFETCH_BACKOFF`, :data:`WORKER_FETCHER_TIMEOUT` and
    :func:`pace_fetches` (no option of aiokafka's consumer sets them: its fetcher, made at
    start, reads them for every fetch)."""
    fetcher._prefetch_backoff = WORKER_PREFETCH_BACKOFF
    fetcher._fetcher_timeout = WORKER_FETCHER_TIMEOUT
    pace_fetches(fetcher)


def pace_fetches(fetcher: Any) -> None:
    """Make aiokafka's `fetcher` gather records at the broker while they flow (see
    :data:`WORKER_BUSY_FETCH_MIN_BYTES`); it builds each fetch from these two attributes."""
    fetch = fetcher._proc_fetch_request

    async def paced(assignment: Any, node_id: int, request: Any) -> bool:
        got_records = await fetch(assignment, node_id, request)
        fetcher._fetch_min_bytes, fetcher._fetch_max_wait_ms = (
            (WORKER_BUSY_FETCH_MIN_BYTES, WORKER_BUSY_FETCH_MAX_WAIT_MS) if got_records
            else (1, WORKER_FETCH_MAX_WAIT_MS))
        return got_records

    fetcher._proc_fetch_request = paced


class _WorkerConsumerThread(faust_kafka.AIOKafkaConsumerThread):
    """Faust's aiokafka consumer "thread", run in the worker's own event loop, not a thread.

    Faust runs aiokafka in a thread of its own (so that an agent that blocks does not starve
    the heartbeats; this worker's judge gives the loop a turn every
    :data:`stream.worker.runtime.JUDGE_TURN` seconds, and learning runs in its own process).
    Every fetch then crossed between the threads twice, and the two contended for the GIL
    (measured: docs/benchmarks.md, "aiokafka in the worker's own event loop"). Calls into
    the "thread" are plain awaits, and its serving coroutine is a task of the loop."""

    def __init__(self, consumer: Any, *, loop: asyncio.AbstractEventLoop, **kwargs: Any):
        super().__init__(consumer, loop=loop, thread_loop=loop, **kwargs)

    async def start(self) -> None:
        """Serve as a task of this loop (mode's ``ServiceThread.start`` starts a thread)."""
        self._thread_started.set()
        self._thread_running = asyncio.Future(loop=self.parent_loop)
        self._serving = asyncio.ensure_future(self._serve())  # held: the loop keeps weak refs
        try:
            await self._thread_running  # set once started (an exception if it crashed)
        finally:
            self._thread_running = None

    async def call_thread(self, fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await maybe_async(fun(*args, **kwargs))

    async def _gather_remaining_tasks(self) -> None:
        """Nothing: mode cancels every other task of the thread's loop here, which is now the
        worker's own."""

    def _create_worker_consumer(self, transport: Any) -> AIOKafkaConsumer:
        client = super()._create_worker_consumer(transport)
        client._fetch_max_wait_ms = WORKER_FETCH_MAX_WAIT_MS  # read when it starts
        return client

    async def on_start(self) -> None:
        await super().on_start()
        tune_fetcher(self._ensure_consumer()._fetcher)

    # faust says Mapping[TP, int]: aiokafka's gives None for a partition never committed
    async def seek_to_committed(  # type: ignore[override]
            self) -> dict[TopicPartition, int | None]:
        """Faust's seek back to the committed offsets at the end of a rebalance, also for
        the partitions nothing was committed for yet: those start again at their beginning,
        where the group started (``auto_offset_reset="earliest"``). aiokafka seeks only to a
        committed offset above 0 and leaves the others where fetching got to, past the
        records Faust dropped while the rebalance went on. A worker of a new group that kept
        a partition would then never read the first events of its runs, hold every later
        one and fail the runs as missing events (docs/benchmarks.md, "Why the worker's
        settings are what they are"). Tables' changelogs are left to Faust's recovery."""
        return await self.call_thread(self._seek_to_committed)

    async def _seek_to_committed(self) -> dict[TopicPartition, int | None]:
        client = self._ensure_consumer()
        committed = await client.seek_to_committed()
        changelogs = self.app.tables.changelog_topics
        fresh = [tp for tp, offset in committed.items()
                 if (offset is None or offset <= 0) and tp.topic not in changelogs]
        if fresh:
            await client.seek_to_beginning(*fresh)
        return committed


class _WorkerConsumer(faust_kafka.Consumer):
    """Faust's consumer whose records of the topics in :attr:`fetch_sinks` go to their sink
    a fetch at a time, past Faust's conductor, channels and streams: Faust hands a record
    over in its own loop turn and tasks (``wait_first``) and builds an event for it, which
    cost more than judging a text event. A sink takes the records it is given (kept,
    tracked as not acknowledged) and acknowledges each with ``consumer.ack(message)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fetch_sinks: dict[str, Sink] = {}

    def _new_consumer_thread(self) -> faust_kafka.AIOKafkaConsumerThread:
        return _WorkerConsumerThread(self, loop=self.loop, beacon=self.beacon)

    async def getmany(self, timeout: float) -> AsyncIterator[tuple[TP, Message]]:
        sinks = self.fetch_sinks
        taken: dict[str, list[Message]] = {}
        async for tp, message in super().getmany(timeout):
            if tp.topic in sinks:
                taken.setdefault(tp.topic, []).append(message)
            else:
                yield tp, message
        if not taken or not self.flow_active:
            return  # a rebalance began: read again from the committed offsets, as Faust does
        # Each message holds the generation it was fetched in (as Faust's getmany counts it:
        # after the fetch). Not the one this call began in: it waits out a whole rebalance
        # for flow to resume, and the records it then fetches, from the new generation's
        # seek, would be dropped and never read again: their runs would fail as missing
        # their first events.
        generation = self.app.consumer_generation_id
        for topic, messages in taken.items():
            sinks[topic]([message for message in messages
                          if message.generation_id == generation and await self._read(message)])

    async def _read(self, message: Message) -> bool:
        """Whether `message` is new (what Faust's drain loop does before delivering one):
        past the partition's read offset, a jump over offsets recorded as a gap (so that
        commits pass it), the read offset moved and the message tracked as not acknowledged."""
        tp, offset = message.tp, message.offset
        read = self._read_offset[tp]
        if read is not None and offset < read:
            return False
        if read and offset - read > 1:
            await self._add_gap(tp, read + 1, offset)
        self._read_offset[tp] = offset
        message.tracked = True
        self.track_message(message)
        return True


def fetch_sinks(app: AppT) -> dict[str, Sink]:
    """The sinks of `app`'s consumer, by topic (see :class:`_WorkerConsumer`); `app` has a
    :class:`WorkerTransport`."""
    consumer = app.consumer
    if not isinstance(consumer, _WorkerConsumer):
        raise TypeError(f"{type(consumer).__name__} is not the worker's consumer: set "
                        "app.transport = WorkerTransport(...) before it is made")
    return consumer.fetch_sinks


class WorkerTransport(faust_kafka.Transport):
    """Faust's Kafka transport whose consumer runs in the worker's own event loop (see
    :class:`_WorkerConsumerThread`), whose fetches the broker holds at most
    :data:`WORKER_FETCH_MAX_WAIT_MS` and whose consumer hands the records of a topic in its
    ``fetch_sinks`` to the sink a fetch at a time (see :class:`_WorkerConsumer`):
    ``app.transport = WorkerTransport(app.conf.broker_consumer, app)`` before the app's
    consumer is made."""

    Consumer = _WorkerConsumer
