"""The embedded Kafka 4.4 broker, topic creation, aiokafka round trips and Faust against it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from stream import broker as broker_mod
from stream.broker import EmbeddedKafka, KafkaLibsMissing, broker_ready
from stream.topics import TopicNames, ensure_topics, ensure_topics_async

MB = 1024 * 1024


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def run(coro, timeout: float = 60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def create_topics(bootstrap: str, *names: str, partitions: int = 1) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(n, partitions, 1) for n in names])
    finally:
        await admin.close()


# -- the broker ---------------------------------------------------------------------------

def test_broker_starts(kafka):
    host, port = kafka.bootstrap.split(":")
    assert host == "127.0.0.1" and int(port) > 0
    assert kafka.pid and Path(f"/proc/{kafka.pid}").exists()
    assert broker_ready(host, int(port))
    assert kafka.startup_seconds < 60
    props = (kafka.dir / "server.properties").read_text()
    assert "process.roles=broker,controller" in props
    assert "auto.create.topics.enable=false" in props
    # slf4j is bound: the broker logs through log4j2 into its temp dir
    assert "Kafka version: " + broker_mod.KAFKA_VERSION in kafka.log_file.read_text()


def test_second_broker_stops_by_pid_and_cleans_up(kafka):
    with EmbeddedKafka(stop_timeout=15) as other:
        assert other.bootstrap != kafka.bootstrap
        pid, tmp = other.pid, other.dir
        assert tmp.is_dir()
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    assert not tmp.exists()
    assert other.pid is None


def test_missing_libs_say_how_to_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv(broker_mod.LIBS_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(KafkaLibsMissing, match="deploy/kafka/fetch.sh"):
        EmbeddedKafka()


# -- topics -------------------------------------------------------------------------------

def test_ensure_topics_creates_the_four_topics_idempotently(kafka):
    names = TopicNames(
        events=unique("ev"), verdicts=unique("vd"), models=unique("md"), dlq=unique("dlq")
    )
    assert sorted(ensure_topics(kafka.bootstrap, names, partitions=4)) == sorted(names.all())
    assert ensure_topics(kafka.bootstrap, names, partitions=4) == []  # already there

    async def check():
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap)
        await admin.start()
        try:
            descs = await admin.describe_topics(list(names.all()))
            assert {d["topic"]: len(d["partitions"]) for d in descs} == {n: 4 for n in names.all()}
            [resp] = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, n) for n in names.all()]
            )
            configs = {
                res[3]: {entry[0]: entry[1] for entry in res[4]} for res in resp.resources
            }
            assert configs[names.models]["cleanup.policy"] == "compact"
            for n in (names.events, names.verdicts, names.dlq):
                assert configs[n]["cleanup.policy"] == "delete"
            assert int(configs[names.events]["max.message.bytes"]) >= 10 * MB
            # idempotent from a running loop too
            assert await ensure_topics_async(kafka.bootstrap, names) == []
            assert ensure_topics(kafka.bootstrap, names) == []
        finally:
            await admin.close()

    run(check())


def test_default_topic_names():
    assert TopicNames().all() == (
        "trustlayer.events", "trustlayer.verdicts", "trustlayer.models", "trustlayer.events.dlq"
    )


# -- aiokafka -----------------------------------------------------------------------------

def test_produce_consume_round_trip_with_1mb_values(kafka):
    topic = unique("roundtrip")
    values = [os.urandom(MB) for _ in range(3)] + [b"small"]

    async def go():
        await create_topics(kafka.bootstrap, topic)
        producer = AIOKafkaProducer(
            bootstrap_servers=kafka.bootstrap, max_request_size=10 * MB, acks="all"
        )
        await producer.start()
        try:
            for i, v in enumerate(values):
                await producer.send_and_wait(topic, key=f"run-{i}".encode(), value=v)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=kafka.bootstrap, auto_offset_reset="earliest",
            group_id=unique("g"), enable_auto_commit=False,
        )
        await consumer.start()
        got = []
        try:
            async for msg in consumer:
                got.append((msg.key, msg.value))
                if len(got) == len(values):
                    break
            await consumer.commit()
            tp = TopicPartition(topic, 0)
            assert await consumer.committed(tp) == len(values)
        finally:
            await consumer.stop()
        return got

    got = run(go())
    assert got == [(f"run-{i}".encode(), v) for i, v in enumerate(values)]


# -- Faust (faust-streaming) against Kafka 4.x ----------------------------------------------

FAUST_APP = textwrap.dedent(
    '''
    import os
    import faust

    app = faust.App(
        os.environ["APP_ID"],
        broker="kafka://" + os.environ["BOOTSTRAP"],
        store="memory://",
        web_enabled=False,
        topic_partitions=1,
        topic_replication_factor=1,
        processing_guarantee="at_least_once",
        broker_session_timeout=6,
        broker_heartbeat_interval=1,
        broker_commit_interval=0.2,
        consumer_auto_offset_reset="earliest",
    )
    src = app.topic(os.environ["SRC"], key_type=str, value_type=str, partitions=1)
    out = app.topic(os.environ["OUT"], key_type=str, value_type=str, partitions=1)
    counts = app.Table("counts", default=int, partitions=1)

    @app.agent(src)
    async def count(stream):
        async for key, value in stream.items():
            counts[key] += 1
            await out.send(key=key, value=f"{value}:{counts[key]}")

    if __name__ == "__main__":
        app.main()
    '''
)


def test_faust_table_app_processes_commits_and_recovers(kafka, tmp_path):
    """A Faust app with a changelog-backed Table: processes, commits, and a restarted worker
    resumes the table from its changelog (this is what the worker's per-run state relies on)."""
    app_id, src, out = unique("faustapp"), unique("src"), unique("out")
    (tmp_path / "counter_app.py").write_text(FAUST_APP)
    env = dict(os.environ, APP_ID=app_id, BOOTSTRAP=kafka.bootstrap, SRC=src, OUT=out)
    log = tmp_path / "worker.log"

    async def produce(records):
        producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap)
        await producer.start()
        try:
            for key, value in records:
                await producer.send_and_wait(src, key=key.encode(), value=f'"{value}"'.encode())
        finally:
            await producer.stop()

    async def read_out(n, consumer):
        got = []
        async for msg in consumer:
            got.append((msg.key.decode(), msg.value.decode().strip('"')))
            if len(got) == n:
                return got

    async def unless_worker_dies(coro, proc, timeout):
        task = asyncio.ensure_future(coro)
        deadline = asyncio.get_running_loop().time() + timeout
        while not task.done():
            if proc.poll() is not None:
                task.cancel()
                raise AssertionError(f"the Faust worker exited with {proc.returncode}")
            if asyncio.get_running_loop().time() > deadline:
                task.cancel()
                raise AssertionError("timed out waiting for the Faust worker's output")
            await asyncio.wait([task], timeout=0.2)
        return task.result()

    async def committed(admin, n):
        for _ in range(100):
            offsets = await admin.list_consumer_group_offsets(app_id)
            done = offsets.get(TopicPartition(src, 0))
            if done is not None and done.offset == n:
                return True
            await asyncio.sleep(0.1)
        return False

    def worker():
        with open(log, "ab") as fh:
            return subprocess.Popen(
                # --without-web: the CLI's default --with-web overrides web_enabled=False, and
                # the web server would bind 0.0.0.0:6066 (taken when two workers run here)
                [sys.executable, "counter_app.py", "worker", "--without-web", "-l", "info"],
                cwd=tmp_path, env=env, stdout=fh, stderr=subprocess.STDOUT,
            )

    def stop(proc):
        proc.terminate()
        try:
            return proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()

    async def scenario():
        await create_topics(kafka.bootstrap, src, out)
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap)
        await admin.start()
        consumer = AIOKafkaConsumer(out, bootstrap_servers=kafka.bootstrap, auto_offset_reset="earliest")
        await consumer.start()
        try:
            await produce([("a", "v0"), ("b", "v1"), ("a", "v2"), ("b", "v3"), ("a", "v4")])
            proc = worker()
            try:
                first = await unless_worker_dies(read_out(5, consumer), proc, 45)
                assert await committed(admin, 5), "Faust did not commit the source offsets"
            finally:
                assert stop(proc) == 0
            assert first == [("a", "v0:1"), ("b", "v1:1"), ("a", "v2:2"), ("b", "v3:2"), ("a", "v4:3")]

            changelog = f"{app_id}-counts-changelog"
            assert changelog in await admin.list_topics()

            # A new worker (same app id) restores the table from the changelog.
            await produce([("a", "v5"), ("b", "v6")])
            proc = worker()
            try:
                second = await unless_worker_dies(read_out(2, consumer), proc, 45)
                assert await committed(admin, 7)
            finally:
                assert stop(proc) == 0
            assert second == [("a", "v5:4"), ("b", "v6:3")]
        finally:
            await consumer.stop()
            await admin.close()

    t0 = time.monotonic()
    try:
        run(scenario(), timeout=120)
    except BaseException:
        print(log.read_text(errors="replace")[-6000:])
        raise
    assert time.monotonic() - t0 < 60
