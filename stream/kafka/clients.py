"""The streaming service's Kafka clients, made in one place so that what must agree does:
the topics take records as large as :data:`MAX_MESSAGE_BYTES` (inline screenshots), a
producer sends requests that large plus overhead, and a consumer fetches records as large.

:func:`consumer` and :func:`producer` make the clients (not started; ``async with`` starts
and stops them), :func:`admin` a started admin client for an ``async with`` block;
:func:`topic_partitions` and :func:`committed_offsets` ask the cluster; :func:`assign_all`
puts a consumer at the start of every partition of a topic; :class:`WorkerTransport` is the
Faust worker's (its consumer in the worker's own event loop, its fetches held briefly, a
topic's records handed over a fetch at a time).
"""
from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from faust.transport.drivers import aiokafka as faust_kafka
from faust.types import TP, Message
from mode.utils.futures import maybe_async

#: Largest record the events/DLQ topics accept (inline screenshots). Set per topic so that a
#: broker with the stock 1 MB ``message.max.bytes`` (e.g. docker-compose) still takes them.
MAX_MESSAGE_BYTES = 10 * 1024 * 1024
#: Largest request a producer sends and largest record a consumer fetches per partition:
#: a record at the topics' limit plus room for its batch and request headers.
MAX_REQUEST_BYTES = MAX_MESSAGE_BYTES + 1024 * 1024


#: How long the broker may hold a fetch of the worker's consumer for records to come (ms;
#: Faust asks 1,500). aiokafka leaves out of its next fetch the partitions whose records
#: it still holds, and sends no other fetch while one is out: a fetch of only quiet
#: partitions (finished runs, changelogs) kept events already on the broker from the
#: worker for 1.5 s: nearly every fetch then lasted 1.5 s, and publish -> verdict at 500
#: events/s (benchmarks/stream_throughput.py, one worker) was p50 1.36-1.37 s, p99 1.85-1.92
#: s, and with 20 ms p50 20-30 ms, p99 0.10-0.15 s (A/B on one busy 2-core machine). A
#: quiet worker asks the broker 50 times a second.
WORKER_FETCH_MAX_WAIT_MS = 20


#: How long aiokafka lets a partition's fetched, not yet consumed records hold back the next
#: fetch of every partition on their broker (s; aiokafka: 0.1). Faust leaves the records of
#: its tables' changelog partitions unconsumed once a table is recovered, but the consumer
#: still fetches them: the changelog writes of a checkpoint stopped all fetching for 100 ms
#: (timing a worker's fetch requests at 500 events/s: none for 101-102 ms after a response
#: that brought changelog records, the judge idle meanwhile). The records the worker does
#: consume it takes at once (:mod:`stream.worker.fetched`), so a short hold costs no fetches.
WORKER_PREFETCH_BACKOFF = 0.002


#: After a fetch that brought records the worker's next fetch waits at the broker until it
#: has this many bytes or :data:`WORKER_BUSY_FETCH_MAX_WAIT_MS` has passed; after an empty
#: one, until the first record (at most :data:`WORKER_FETCH_MAX_WAIT_MS`). Under a steady
#: flow of small events most of a worker's CPU went to a fetch per one or two events (the
#: fetch, the handover between threads, a judge batch, a produce request). Gathering 5 ms of
#: them, A/B at 500 events/s on one warm 2-core machine (five pairs): the worker's CPU
#: 0.75-0.80 -> 0.57-0.59 s/s, p99 53/72/52/48/35 -> 46/38/45/35/34 ms, p50 15/21/20/17/14
#: -> 18/17/17/14/13 ms; idle, it still asks the broker 50 times a second (idle CPU 0.075 ->
#: 0.078 s/s; with 5 ms always it was 0.19). Backlogs are unchanged: their fetches fill at once.
WORKER_BUSY_FETCH_MIN_BYTES = 16 * 1024
WORKER_BUSY_FETCH_MAX_WAIT_MS = 5


#: Longest aiokafka's fetch loop waits, when it sends no fetch, before it looks again (s;
#: aiokafka: 0.2). It counts a node as busy until a done-callback of the node's fetch runs;
#: woken in that loop turn by something else (the judge taking records), it finds the fetch
#: done but its node busy, sends nothing and waits for records to be taken or for this
#: timeout; after a fetch that brought nothing, none are. Timing the worker's fetches at 500
#: events/s: 11 such waits in one latency run of four, each 201 ms with no fetch and the
#: worker idle, their events then judged in one batch (p99 103 ms; 350 ms in another run).
#: A/B on one warm broker, three rounds (backlog events/s; p99 at 500 events/s): aiokafka's
#: 0.2 s 3,040 / 2,909 / 3,045 (28.8 / 35.0 / 32.8 ms); a done-callback waking the loop only
#: in that race 3,400 / 3,395 / 3,313 (27.0 / 41.9 / 43.4 ms); this timeout 3,755 / 3,507 /
#: 3,466 (32.3 / 24.8 / 25.9 ms), the worker's CPU the same (so, by the throughput, other
#: waits end early too). While a fetch is out the loop wakes up to 4 times to find it out.
WORKER_FETCHER_TIMEOUT = 0.005


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
    :data:`stream.worker.runtime.JUDGE_TURN` seconds, and learning runs in its own process). Every
    fetch then crossed between the threads twice, and the two contended for the GIL: at
    500 events/s the consumer's thread used 0.19-0.21 of the worker's 0.59-0.60
    CPU s/s. In the loop (A/B on one warm broker, three pairs): worker CPU 0.50-0.52 s/s, p99
    publish -> verdict 55.2 / 67.3 / 99.1 -> 31.3 / 49.1 / 50.9 ms. Calls into the "thread"
    are plain awaits, and its serving coroutine is a task of the loop."""

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

    async def seek_to_committed(self) -> dict[TopicPartition, int | None]:
        """Faust's seek back to the committed offsets at the end of a rebalance, also for
        the partitions nothing was committed for yet: those start again at their beginning,
        where the group started (``auto_offset_reset="earliest"``). aiokafka seeks only to a
        committed offset above 0 and leaves the others where fetching got to, past the
        records Faust dropped while the rebalance went on: a worker of a new group that kept
        a partition lost the first events of its runs, held every later one and failed the
        runs as missing events (two workers started together on a backlog, as
        benchmarks/stream_throughput.py does: one of them fed no event in 13 runs of 23).
        Tables' changelogs are left to Faust's recovery."""
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
        self.fetch_sinks: dict[str, Callable[[list[Message]], None]] = {}

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
        # seek, would be dropped and never read again (runs failed as missing their first
        # events, one test run in nine).
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


class WorkerTransport(faust_kafka.Transport):
    """Faust's Kafka transport whose consumer runs in the worker's own event loop (see
    :class:`_WorkerConsumerThread`), whose fetches the broker holds at most
    :data:`WORKER_FETCH_MAX_WAIT_MS` and whose consumer hands the records of a topic in its
    ``fetch_sinks`` to the sink a fetch at a time (see :class:`_WorkerConsumer`):
    ``app.transport = WorkerTransport(app.conf.broker_consumer, app)`` before the app's
    consumer is made."""

    Consumer = _WorkerConsumer


def consumer(bootstrap: str, *topics: str, group: str | None = None,
             **options: Any) -> AIOKafkaConsumer:
    """A consumer of `topics` (none: assign partitions yourself) that takes the largest
    records; it commits offsets only when it is in a consumer `group`."""
    settings: dict[str, Any] = dict(group_id=group, enable_auto_commit=group is not None,
                                    max_partition_fetch_bytes=MAX_REQUEST_BYTES)
    return AIOKafkaConsumer(*topics, bootstrap_servers=bootstrap, **{**settings, **options})


def producer(bootstrap: str, **options: Any) -> AIOKafkaProducer:
    """A producer that sends the largest records and waits for every in-sync replica."""
    settings: dict[str, Any] = dict(acks="all", max_request_size=MAX_REQUEST_BYTES)
    return AIOKafkaProducer(bootstrap_servers=bootstrap, **{**settings, **options})


@asynccontextmanager
async def admin(bootstrap: str, **options: Any) -> AsyncIterator[AIOKafkaAdminClient]:
    """A started admin client of the cluster at `bootstrap`, closed after the block."""
    client = AIOKafkaAdminClient(bootstrap_servers=bootstrap, **options)
    await client.start()
    try:
        yield client
    finally:
        await client.close()


async def topic_partitions(bootstrap: str, topic: str) -> int | None:
    """How many partitions `topic` has (None if it does not exist)."""
    async with admin(bootstrap) as client:
        [desc] = await client.describe_topics([topic])
    return len(desc["partitions"]) if desc.get("error_code") == 0 else None


async def committed_offsets(bootstrap: str, group: str,
                            tps: list[TopicPartition]) -> dict[TopicPartition, int]:
    """The offsets `group` committed for `tps` (those it committed none for are left out)."""
    async with admin(bootstrap) as client:
        committed = await client.list_consumer_group_offsets(group, partitions=tps)
    return {tp: committed[tp].offset for tp in tps if tp in committed and committed[tp].offset >= 0}


async def assign_all(client: AIOKafkaConsumer, bootstrap: str,
                     topic: str) -> dict[TopicPartition, int] | None:
    """Assign every partition of `topic` to the started consumer `client`, from the
    beginning; returns each partition's end offset (None if the topic does not exist)."""
    count = await topic_partitions(bootstrap, topic)
    if not count:
        return None
    tps = [TopicPartition(topic, partition) for partition in range(count)]
    client.assign(tps)
    await client.seek_to_beginning(*tps)
    return await client.end_offsets(tps)


class RetriedAsWarning(logging.Filter):
    """aiokafka logs a failed group coordinator lookup as an ERROR even when the error is
    retriable and it retries: a fresh consumer group on a healthy broker ("the coordinator
    is not available" while the offsets topic is made) put an ERROR in every new worker's
    log. Such records are logged as warnings; a lasting outage shows in the metrics."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.args[0] if isinstance(record.args, tuple) and record.args else None
        if record.levelno == logging.ERROR and getattr(error, "retriable", False):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def retried_errors_as_warnings() -> None:
    """Install :class:`RetriedAsWarning` on aiokafka's group coordinator logger."""
    logging.getLogger("aiokafka.consumer.group_coordinator").addFilter(RetriedAsWarning())
