"""The streaming service's Kafka clients, made in one place so that what must agree does:
a producer sends requests as large as the largest record a topic takes
(:data:`~stream.topics.MAX_MESSAGE_BYTES`, inline screenshots) plus overhead, and a
consumer fetches records as large.

:func:`consumer`, :func:`producer` and :func:`admin` make the clients (not started);
:func:`topic_partitions` and :func:`committed_offsets` ask the cluster; :func:`assign_all`
puts a consumer at the start of every partition of a topic.
"""
from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from stream.topics import MAX_MESSAGE_BYTES

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
    """A producer that sends the largest records and waits for every in-sync replica."""
    settings: dict[str, Any] = dict(acks="all", max_request_size=MAX_REQUEST_BYTES)
    return AIOKafkaProducer(bootstrap_servers=bootstrap, **{**settings, **options})


def admin(bootstrap: str, **options: Any) -> AIOKafkaAdminClient:
    """An admin client of the cluster at `bootstrap`."""
    return AIOKafkaAdminClient(bootstrap_servers=bootstrap, **options)


async def topic_partitions(bootstrap: str, topic: str) -> int | None:
    """How many partitions `topic` has (None if it does not exist)."""
    client = admin(bootstrap)
    await client.start()
    try:
        [desc] = await client.describe_topics([topic])
        return len(desc["partitions"]) if desc.get("error_code") == 0 else None
    finally:
        await client.close()


async def committed_offsets(bootstrap: str, group: str,
                            tps: list[TopicPartition]) -> dict[TopicPartition, int]:
    """The offsets `group` committed for `tps` (those it committed none for are left out)."""
    client = admin(bootstrap)
    await client.start()
    try:
        committed = await client.list_consumer_group_offsets(group, partitions=tps)
    finally:
        await client.close()
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
