"""The worker's fetches on a real broker: gathered at the broker while records flow, sent to
wait for the first record when the partitions are quiet (stream.worker.transport.pace_fetches),
and not held by aiokafka's fetch loop after a fetch that brought nothing
(stream.worker.transport.tune_fetcher)."""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from stream.kafka import clients
from stream.kafka.names import topic_names
from stream.kafka.topics import ensure_topics_async
from stream.worker import transport


def test_a_fetch_after_records_gathers_more_and_one_after_none_waits_for_the_first(kafka):
    names = topic_names(f"pace-{uuid.uuid4().hex[:6]}")
    quiet = (1, transport.WORKER_FETCH_MAX_WAIT_MS)
    busy = (transport.WORKER_BUSY_FETCH_MIN_BYTES, transport.WORKER_BUSY_FETCH_MAX_WAIT_MS)

    async def fetches_around_one_record() -> tuple[list[tuple[int, int]], list[bytes]]:
        await ensure_topics_async(kafka.bootstrap, names, 1)
        consumer = clients.consumer(kafka.bootstrap, names.events, auto_offset_reset="earliest",
                                    fetch_max_wait_ms=transport.WORKER_FETCH_MAX_WAIT_MS)
        async with consumer, clients.producer(kafka.bootstrap) as producer:
            transport.pace_fetches(consumer._fetcher)
            sent: list[tuple[int, int]] = []
            send = consumer._client.send

            def observed(node_id, request, *args, **kwargs):  # the requests, as sent
                if type(request).__name__ == "FetchRequest":
                    sent.append((request._min_bytes, request._max_wait_ms))
                return send(node_id, request, *args, **kwargs)

            consumer._client.send = observed
            assert not await consumer.getmany(timeout_ms=300)
            await producer.send_and_wait(names.events, b"one")
            got = await consumer.getmany(timeout_ms=5000)
            await asyncio.sleep(0.3)
        return sent, [record.value for records in got.values() for record in records]

    sent, values = asyncio.run(asyncio.wait_for(fetches_around_one_record(), 60))
    assert values == [b"one"]
    assert set(sent) == {quiet, busy}
    # the response that brought the record is followed by one fetch that gathers (nothing
    # more comes: it returns empty after its short wait), then the quiet ones again
    assert sent.count(busy) == 1
    after = sent[sent.index(busy) + 1:]
    assert after and set(after) == {quiet}
    assert sent[0] == quiet


def test_a_fetch_done_as_the_judge_takes_records_does_not_hold_the_next_one(kafka):
    """aiokafka's fetch loop, woken by records being taken in the loop turn in which a fetch
    ends, finds the fetch done but its node still busy and sends nothing: the next fetch
    waited for aiokafka's 0.2 s timeout (see transport.WORKER_FETCHER_TIMEOUT). Here every
    empty fetch ends so: records being taken wake the loop just before the fetch is done.
    The limit is measured in the same run: the same records through a fetcher left as
    aiokafka makes it (paced as the worker paces it), never a fixed number of seconds."""

    async def delays(tune: Callable[[Any], None]) -> list[float]:
        names = topic_names(f"stale-{uuid.uuid4().hex[:6]}")
        await ensure_topics_async(kafka.bootstrap, names, 1)
        consumer = clients.consumer(kafka.bootstrap, names.events, auto_offset_reset="latest",
                                    fetch_max_wait_ms=transport.WORKER_FETCH_MAX_WAIT_MS)
        async with consumer, clients.producer(kafka.bootstrap) as producer:
            fetcher = consumer._fetcher
            tune(fetcher)
            fetch = fetcher._proc_fetch_request

            async def taken_as_it_ends(assignment, node_id, request) -> bool:
                got_records = await fetch(assignment, node_id, request)
                if not got_records:
                    fetcher._notify(fetcher._wait_consume_future)  # as a take does
                    await asyncio.sleep(0)  # the loop's wake-up queued before this ends
                return got_records

            fetcher._proc_fetch_request = taken_as_it_ends
            assert not await consumer.getmany(timeout_ms=300)
            taken: list[float] = []
            for i in range(12):
                await asyncio.sleep(0.06)  # empty fetches meanwhile
                sent = time.monotonic()
                await producer.send_and_wait(names.events, str(i).encode())
                got = await consumer.getmany(timeout_ms=5000)
                assert [r.value for rs in got.values() for r in rs] == [str(i).encode()]
                taken.append(time.monotonic() - sent)
        return taken

    untuned = asyncio.run(asyncio.wait_for(delays(transport.pace_fetches), 60))
    tuned = asyncio.run(asyncio.wait_for(delays(transport.tune_fetcher), 60))
    # aiokafka's timeout holds most records about 0.2 s; the worker's, a fetch or two (the
    # medians keep one slow turn of a busy machine out of it)
    assert statistics.median(tuned) < statistics.median(untuned) / 2, (
        [round(t, 3) for t in tuned], [round(t, 3) for t in untuned])
