"""The embedded Kafka 4.4 broker, topic creation and aiokafka round trips against it."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import pytest
from aiokafka import TopicPartition
from aiokafka.admin import NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from stream.kafka import broker as broker_mod
from stream.kafka import clients
from stream.kafka.broker import EmbeddedKafka, KafkaLibsMissing
from stream.kafka.names import TopicNames
from stream.kafka.probe import broker_ready
from stream.kafka.topics import ensure_topics, ensure_topics_async

MB = 1024 * 1024


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def run(coro, timeout: float = 60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def create_topics(bootstrap: str, *names: str, partitions: int = 1) -> None:
    async with clients.admin(bootstrap) as admin:
        await admin.create_topics([NewTopic(n, partitions, 1) for n in names])


# -- the broker ---------------------------------------------------------------------------

def test_broker_starts(kafka):
    host, port = kafka.bootstrap.split(":")
    assert host == "127.0.0.1" and int(port) > 0
    assert kafka.pid and Path(f"/proc/{kafka.pid}").exists()
    assert broker_ready(host, int(port))
    assert kafka.startup_seconds is not None  # printed by `trustlayer stream broker`
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
        async with clients.admin(kafka.bootstrap) as admin:
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
        async with clients.producer(kafka.bootstrap) as producer:
            for i, v in enumerate(values):
                await producer.send_and_wait(topic, key=f"run-{i}".encode(), value=v)
        consumer = clients.consumer(kafka.bootstrap, topic, group=unique("g"),
                                    auto_offset_reset="earliest", enable_auto_commit=False)
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


def start_broker_command(directory: Path):
    """`trustlayer broker --port 0 --data DIRECTORY` and its bootstrap and Kafka PID."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "trustlayer.cli", "broker", "--port", "0",
                             "--data", str(directory)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    printed = {}
    for line in proc.stdout:
        name, _, value = line.partition(": ")
        printed[name] = value.split()[0] if value else ""
        if line.startswith("Ctrl+C"):
            break
    assert "bootstrap" in printed, proc.stderr.read()
    return proc, printed["bootstrap"], int(printed["pid"])


def test_the_broker_command_keeps_its_data_when_kafka_dies_and_starts_again_on_it(tmp_path):
    import signal

    directory = tmp_path / "kafka"
    proc, bootstrap, pid = start_broker_command(directory)
    topic = unique("kept")
    try:
        run(create_topics(bootstrap, topic))

        async def produce() -> None:
            async with clients.producer(bootstrap) as producer:
                await producer.send_and_wait(topic, key=b"run", value=b"kept across a crash")
        run(produce())
        os.kill(pid, signal.SIGKILL)  # Kafka dies; the command notices and exits
        assert proc.wait(timeout=60) == 1
        said = proc.stderr.read()
        assert f"trustlayer broker --data {directory}" in said, said
        assert (directory / "data" / "meta.properties").is_file()
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=60)
    proc, bootstrap, pid = start_broker_command(directory)
    try:
        async def consume() -> list[bytes]:
            async with clients.consumer(bootstrap, topic,
                                        auto_offset_reset="earliest") as consumer:
                return [(await consumer.getone()).value]
        assert run(consume()) == [b"kept across a crash"]
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 0
    assert (directory / "data" / "meta.properties").is_file()  # a given directory stays
