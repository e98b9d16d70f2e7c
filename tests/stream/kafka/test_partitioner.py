"""keyed_partition puts every keyed record where aiokafka's default partitioner (Kafka's
murmur2) does, the first time a key comes and every time after; the worker's and the
runners' producers use it."""
from __future__ import annotations

import asyncio
from typing import Any

from aiokafka.partitioner import DefaultPartitioner
from hypothesis import given
from hypothesis import strategies as st

from stream.kafka import clients
from stream.kafka.partitioner import keyed_partition
from stream.worker.app import faust_app
from stream.worker.config import WorkerConfig

_PARTITIONS = st.lists(st.integers(0, 1000), min_size=1, max_size=64, unique=True).map(sorted)


@given(st.binary(max_size=80), _PARTITIONS)
def test_same_partition_as_kafkas_default(key: bytes, partitions: list[int]) -> None:
    default = DefaultPartitioner()(key, partitions, partitions)
    assert keyed_partition(key, partitions, partitions) == default
    assert keyed_partition(key, partitions, partitions) == default  # remembered
    assert keyed_partition(bytearray(key), partitions, partitions) == default


def test_run_ids_where_the_java_client_puts_them() -> None:
    # Kafka 4.4's Utils.toPositive(Utils.murmur2(key)) % partitions (jshell, kafka-clients)
    assert keyed_partition(b"run-1", range(4), []) == 1
    assert keyed_partition(b"jl-save-textfile-test-01", range(12), []) == 7


def test_an_unkeyed_record_goes_to_an_available_partition() -> None:
    assert {keyed_partition(None, [0, 1, 2, 3], [2]) for _ in range(20)} == {2}


def test_the_producers_use_it() -> None:
    async def runners_producer() -> Any:  # (aiokafka makes its clients in a running loop)
        producer = clients.producer("127.0.0.1:9")
        await producer.stop()
        return producer._partitioner  # noqa: SLF001

    assert faust_app(WorkerConfig(), None).conf.producer_partitioner is keyed_partition
    assert asyncio.run(runners_producer()) is keyed_partition
