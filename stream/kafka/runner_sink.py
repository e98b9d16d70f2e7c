"""The runner library's Kafka sink (see trustlayer.runner): a runner's events published
to the events topic as the worker reads them, key ``run_id`` (a run's events stay in one
partition, in order). The producer is idempotent (a retried send is not a duplicate
event, which the worker would refuse as a repeated ``seq``).

What is acknowledged when (docs/runner.md has the table): ``write`` of a state or action
returns once the event is in the producer's buffer; ``write`` of an ``end`` returns once
the broker acknowledged every event written so far, so a run the agent finished is on the
broker (or in the spool). At most `buffer` events wait for acknowledgement, then ``write``
waits (the runner slows down rather than holding a stalled broker's backlog in memory);
an event unacknowledged for `timeout` seconds makes the next ``write`` wait for it at most
`timeout` more: a broker that is gone is one :class:`SinkError` that says so, never a
silent loss. With ``spool=DIR`` the sink writes to that trace directory instead of failing
(:mod:`stream.kafka.spool`), for ``trustlayer replay DIR`` once the broker is back."""
from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from stream.kafka import clients
from stream.kafka.names import TopicNames
from stream.kafka.spool import Spool

if TYPE_CHECKING:
    from typing_extensions import Self

T = TypeVar("T")
log = logging.getLogger(__name__)


class SinkError(RuntimeError):
    """Events could not be handed to Kafka; the message says where and why."""


class TopicMissing(SinkError):
    """The broker answers but has not the topic: a setting to fix, never spooled."""


class AsyncKafkaSink:
    """Publishes events from an asyncio runner: ``async with AsyncKafkaSink(bootstrap)
    as sink:`` and ``AsyncRun(task, sink)``."""

    def __init__(self, bootstrap: str, topic: str = TopicNames.events, *, buffer: int = 1000,
                 timeout: float = 10.0, spool: str | Path | None = None):
        if buffer < 1:
            raise ValueError("buffer must hold at least one event")
        self.bootstrap, self.topic, self.buffer, self.timeout = bootstrap, topic, buffer, timeout
        self.spool = Spool(spool) if spool is not None else None
        self._producer: AIOKafkaProducer | None = None
        # (when sent, monotonic; its acknowledgement), oldest first
        self._pending: deque[tuple[float, asyncio.Future]] = deque()
        self._broken: SinkError | None = None  # once the broker failed, every call says so

    def _error(self, doing: str, exc: BaseException) -> SinkError:
        reason = str(exc) or f"no answer in {self.timeout:g} s"  # a timeout has no text
        self._broken = SinkError(f"Kafka at {self.bootstrap}: {doing} failed ({reason}); is "
                                 "the broker running and reachable?")
        return self._broken

    @property
    def unacknowledged(self) -> int:
        """How many events written wait for the broker (at most `buffer`)."""
        return len(self._pending)

    async def start(self) -> None:
        """Connect (called by the first ``write`` otherwise); fails fast without a broker
        or without the topic."""
        if self._producer is not None or self.spool is not None and self.spool.diverted:
            return
        timeout_ms = int(self.timeout * 1000)
        producer = clients.producer(self.bootstrap, enable_idempotence=True, linger_ms=5,
                                    request_timeout_ms=timeout_ms)
        try:
            await asyncio.wait_for(producer.start(), self.timeout)
            cluster = await asyncio.wait_for(producer.client.fetch_all_metadata(), self.timeout)
        except (KafkaError, OSError, asyncio.TimeoutError) as exc:
            await producer.stop()
            failure = self._error("connecting", exc)
            if self.spool is None:
                raise failure from None
            await self._divert(failure)  # the agent works on; its runs wait in the spool
            return
        if self.topic not in cluster.topics():  # else each send waits for it, then times out
            await producer.stop()
            self._broken = TopicMissing(
                f"Kafka at {self.bootstrap}: topic '{self.topic}' not found (the broker "
                "answers; it creates no topics itself): start the worker once, which creates "
                "its topics, or give the topic it reads")
            raise self._broken
        self._producer = producer

    async def write(self, event: dict[str, Any]) -> None:
        """Send `event`; an ``end`` returns once the broker acknowledged every event
        written (the module doc says what waits when). With a spool, a failed broker
        sends this event and the run's earlier ones there instead of raising."""
        if self.spool is not None and self.spool.diverted:
            self.spool.write(event)
            return
        if self.spool is not None:
            self.spool.keep(event)
        try:
            await self._publish(event)
            if event["kind"] == "end":
                await self.flush()
                if self.spool is not None:
                    self.spool.safe(event["run_id"])
        except SinkError as failure:
            if self.spool is None or isinstance(failure, TopicMissing):
                raise
            await self._divert(failure)

    async def _divert(self, failure: SinkError) -> None:
        assert self.spool is not None
        self.spool.divert()
        for _, delivery in self._pending:
            delivery.cancel()
        self._pending.clear()
        await self._disconnect()  # a producer left on would log every reconnection it tries
        log.warning("%s; the runs not acknowledged go to the spool %s: publish them with "
                    "`trustlayer replay %s` once it is back", failure, self.spool.directory,
                    self.spool.directory)

    async def _publish(self, event: dict[str, Any]) -> None:
        if self._broken:
            raise self._broken
        await self.start()
        if self._producer is None:  # no broker at the start: the spool holds the event
            return
        assert self._producer is not None
        while self._pending and (len(self._pending) >= self.buffer or self._overdue()):
            await self._settle(self._pending.popleft()[1])
        value = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        try:
            delivery = await asyncio.wait_for(
                self._producer.send(self.topic, value=value,
                                    key=event["run_id"].encode("utf-8")), self.timeout)
        except (KafkaError, asyncio.TimeoutError) as exc:
            raise self._error(f"sending event {event['seq']} of run {event['run_id']}",
                              exc) from None
        self._pending.append((time.monotonic(), delivery))

    def _overdue(self) -> bool:
        """The oldest event waiting is acknowledged (or failed), or has waited `timeout`
        seconds: settle it before sending more, so that an outage shows in ``write``."""
        sent, delivery = self._pending[0]
        return delivery.done() or time.monotonic() - sent > self.timeout

    async def _settle(self, delivery: asyncio.Future) -> None:
        try:
            await asyncio.wait_for(delivery, self.timeout)
        except (KafkaError, asyncio.TimeoutError) as exc:
            raise self._error("delivering events", exc) from None

    async def flush(self) -> None:
        """Wait until the broker has acknowledged every event written (with a spool: or
        until they are in the spool)."""
        if self.spool is not None and self.spool.diverted:
            return
        if self._broken:
            raise self._broken
        try:
            while self._pending:
                await self._settle(self._pending[0][1])
                self._pending.popleft()
        except SinkError as failure:
            if self.spool is None:
                raise
            await self._divert(failure)

    async def close(self) -> None:
        """Flush, then disconnect (at once when the broker is gone: without a spool, what
        it did not acknowledge is lost, and the error says so)."""
        try:
            await self.flush()
        finally:
            for _, delivery in self._pending:
                delivery.cancel()
            await self._disconnect()

    async def _disconnect(self) -> None:
        if self._producer is None:
            return
        try:  # a producer whose broker is gone would retry its batches for long
            await asyncio.wait_for(self._producer.stop(), self.timeout)
        except asyncio.TimeoutError:
            pass
        self._producer = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def _cancel_other_tasks() -> None:
    rest = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in rest:
        task.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


class KafkaSink:
    """:class:`AsyncKafkaSink` for synchronous runners (``Run(task, KafkaSink(bootstrap))``):
    its event loop runs in a thread of its own. Connects at once, so a missing broker (or
    topic) is an error before the agent starts; with a spool, a missing broker is not: the
    runs go to the spool."""

    def __init__(self, bootstrap: str, topic: str = TopicNames.events, *, buffer: int = 1000,
                 timeout: float = 10.0, spool: str | Path | None = None):
        self._sink = AsyncKafkaSink(bootstrap, topic, buffer=buffer, timeout=timeout,
                                    spool=spool)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="trustlayer-kafka-sink")
        self._thread.start()
        try:
            self._call(self._sink.start())
        except BaseException:
            self._stop_loop()
            raise

    def _call(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    @property
    def unacknowledged(self) -> int:
        """How many events written wait for the broker (at most `buffer`)."""
        return self._sink.unacknowledged

    @property
    def spool(self) -> Spool | None:
        """The spool, if one was given (``spool.runs``: the runs written to it)."""
        return self._sink.spool

    def write(self, event: dict[str, Any]) -> None:
        """Send `event` (see :meth:`AsyncKafkaSink.write`: an ``end`` returns once the
        broker acknowledged the run, or the spool holds it)."""
        self._call(self._sink.write(event))

    def flush(self) -> None:
        """Wait until the broker has acknowledged every event written."""
        self._call(self._sink.flush())

    def close(self) -> None:
        """Flush, disconnect and stop the thread."""
        if self._loop.is_closed():
            return
        try:
            self._call(self._sink.close())
        finally:
            self._stop_loop()

    def _stop_loop(self) -> None:
        self._call(_cancel_other_tasks())  # what a dead broker's producer left running
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
