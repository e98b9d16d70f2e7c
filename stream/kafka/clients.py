"""The streaming service's Kafka clients, made in one place so that what must agree does:
the topics take records as large as :data:`MAX_MESSAGE_BYTES` (inline screenshots), a
producer sends requests that large plus overhead, and a consumer fetches records as large.

:func:`consumer` and :func:`producer` make the clients (not started; ``async with`` starts
and stops them), :func:`admin` a started admin client for an ``async with`` block;
:func:`topic_partitions` and :func:`committed_offsets` ask the cluster; :func:`assign_all`
puts a consumer at the start of every partition of a topic. (The Faust worker's transport is
:mod:`stream.worker.transport`.)
"""
from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from stream.kafka.partitioner import keyed_partition

#: Largest record the events/DLQ topics accept (inline screenshots). Set per topic so that a
#: broker with the stock 1 MB ``message.max.bytes`` (e.g. docker-compose) still takes them.
MAX_MESSAGE_BYTES = 10 * 1024 * 1024
#: Largest request a producer sends and largest record a consumer fetches per partition:
#: a record at the topics' limit plus room for its batch and request headers.
MAX_REQUEST_BYTES = MAX_MESSAGE_BYTES + 1024 * 1024


def consumer(bootstrap: str, *topics: str, group: str | None = None,
             **options: Any) -> AIOKafkaConsumer:
    """A consumer of `topics` (none: assign partitions yourself) that takes the largest
    records; it commits offsets only when it is in a consumer `group`."""
    settings: dict[str, Any] = dict(group_id=group, enable_auto_commit=group is not None,
                                    max_partition_fetch_bytes=MAX_REQUEST_BYTES)
    return AIOKafkaConsumer(*topics, bootstrap_servers=bootstrap, **{**settings, **options})


def producer(bootstrap: str, **options: Any) -> AIOKafkaProducer:
    """A producer that sends the largest records and waits for every in-sync replica (keys
    partitioned as by Kafka's default, each key hashed once: :mod:`stream.kafka.partitioner`)."""
    settings: dict[str, Any] = dict(acks="all", max_request_size=MAX_REQUEST_BYTES,
                                    partitioner=keyed_partition)
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
