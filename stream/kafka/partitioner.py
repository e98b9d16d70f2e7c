"""Kafka's default partitioner (murmur2 of the key, as the Java client and aiokafka's
``DefaultPartitioner`` do), each key's hash remembered.

aiokafka computes murmur2 in Python: about 5 us for a run id, paid again for every record
with that key (a worker's verdicts, a runner's events): 1.5 % of a worker's samples in a
profile (py-spy, text events). A run's records share its key, so the hash of a key is
computed once and looked up after.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from aiokafka.partitioner import DefaultPartitioner, murmur2

_random_partition = DefaultPartitioner()
#: Keys whose hash is remembered: the run ids of a worker's open and recent runs.
REMEMBERED_KEYS = 1 << 16
_hash = lru_cache(maxsize=REMEMBERED_KEYS)(murmur2)


def keyed_partition(key: bytes | bytearray | None, all_partitions: Sequence[int],
                    available: Sequence[int]) -> int:
    """The partition aiokafka's ``DefaultPartitioner`` gives: a keyed record's by the hash
    of its key, an unkeyed one's at random among those available."""
    if key is None:
        return _random_partition(key, all_partitions, available)
    digest = _hash(key) if isinstance(key, bytes) else murmur2(key)  # (a bytearray: no key)
    return all_partitions[(digest & 0x7FFFFFFF) % len(all_partitions)]
