"""The runner library's Kafka sink (see trustlayer.runner): a runner's events published
to the events topic as the worker reads them, key ``run_id`` (a run's events stay in one
partition, in order). The producer is idempotent (a retried send is not a duplicate
event, which the worker would refuse as a repeated ``seq``); at most `buffer` events wait
for the broker's acknowledgement, then ``write`` waits (the runner slows down rather than
holding a stalled broker's backlog in memory); a broker that is gone or does not answer
within `timeout` seconds is one :class:`SinkError` that says so."""
from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from stream.kafka import clients
from stream.kafka.names import TopicNames

if TYPE_CHECKING:
    from typing_extensions import Self

T = TypeVar("T")


class SinkError(RuntimeError):
    """Events could not be handed to Kafka; the message says where and why."""


class AsyncKafkaSink:
    """Publishes events from an asyncio runner: ``async with AsyncKafkaSink(bootstrap)
    as sink:`` and ``AsyncRun(task, sink)``."""

    def __init__(self, bootstrap: str, topic: str = TopicNames.events, *, buffer: int = 1000,
                 timeout: float = 10.0):
        if buffer < 1:
            raise ValueError("buffer must hold at least one event")
        self.bootstrap, self.topic, self.buffer, self.timeout = bootstrap, topic, buffer, timeout
        self._producer: AIOKafkaProducer | None = None
        self._pending: deque[asyncio.Future] = deque()
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
        """Connect (called by the first ``write`` otherwise); fails fast without a broker."""
        if self._producer is not None:
            return
        timeout_ms = int(self.timeout * 1000)
        producer = clients.producer(self.bootstrap, enable_idempotence=True, linger_ms=5,
                                  request_timeout_ms=timeout_ms)
        try:
            await asyncio.wait_for(producer.start(), self.timeout)
        except (KafkaError, OSError, asyncio.TimeoutError) as exc:
            await producer.stop()
            raise self._error("connecting", exc) from None
        self._producer = producer

    async def write(self, event: dict[str, Any]) -> None:
        """Send `event`; waits while `buffer` events are still unacknowledged."""
        if self._broken:
            raise self._broken
        await self.start()
        assert self._producer is not None
        while len(self._pending) >= self.buffer:
            await self._settle(self._pending.popleft())
        value = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        try:
            self._pending.append(await asyncio.wait_for(
                self._producer.send(self.topic, value=value,
                                    key=event["run_id"].encode("utf-8")), self.timeout))
        except (KafkaError, asyncio.TimeoutError) as exc:
            raise self._error(f"sending event {event['seq']} of run {event['run_id']}",
                              exc) from None

    async def _settle(self, delivery: asyncio.Future) -> None:
        try:
            await asyncio.wait_for(delivery, self.timeout)
        except (KafkaError, asyncio.TimeoutError) as exc:
            raise self._error("delivering events", exc) from None

    async def flush(self) -> None:
        """Wait until the broker has acknowledged every event written."""
        if self._broken:
            raise self._broken
        while self._pending:
            await self._settle(self._pending.popleft())

    async def close(self) -> None:
        """Flush, then disconnect (at once when the broker is gone: what it did not
        acknowledge is lost, and the error says so)."""
        try:
            await self.flush()
        finally:
            if self._producer is not None:
                if self._broken:
                    for delivery in self._pending:
                        delivery.cancel()
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
    its event loop runs in a thread of its own. Connects at once, so a missing broker is
    an error before the agent starts."""

    def __init__(self, bootstrap: str, topic: str = TopicNames.events, *, buffer: int = 1000,
                 timeout: float = 10.0):
        self._sink = AsyncKafkaSink(bootstrap, topic, buffer=buffer, timeout=timeout)
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

    def write(self, event: dict[str, Any]) -> None:
        """Send `event` (returns once it is in the buffer)."""
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
