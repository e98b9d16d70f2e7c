"""The runner library's Kafka sink against the real broker: events keyed by run, in order,
at most `buffer` unacknowledged; a missing or vanished broker is one clear error; and the
Playwright example (headless Chromium on a local page) publishes runs the worker judges
as the file validator does."""
from __future__ import annotations

import asyncio
import json

import pytest
from playwright_example import CASES, run_agent
from streamkit import Worker, await_topic, read_topic, unique

from stream.kafka.broker import EmbeddedKafka
from stream.kafka.names import topic_names
from stream.kafka.processes import free_port
from stream.kafka.runner_sink import AsyncKafkaSink, KafkaSink, SinkError
from stream.kafka.topics import ensure_topics
from trustlayer.learn.learner import learn
from trustlayer.observe.traces import read_runs
from trustlayer.runner import AsyncRun, Run


def test_no_broker_is_one_clear_error_before_the_agent_starts():
    with pytest.raises(SinkError, match=r"Kafka at 127\.0\.0\.1:\d+: connecting failed .*"
                                        r"is the broker running and reachable\?"):
        KafkaSink(f"127.0.0.1:{free_port()}", timeout=3)


def test_events_go_keyed_by_run_in_order_with_a_bounded_buffer(kafka):
    topic = topic_names(unique("runner")).events
    ensure_topics(kafka.bootstrap, topic_names(topic.removesuffix(".events")))
    waiting: list[int] = []

    async def record() -> None:
        async with AsyncKafkaSink(kafka.bootstrap, topic, buffer=2) as sink:
            for run_id in ("a", "b"):
                async with AsyncRun("t", sink, run_id) as run:
                    for k in range(5):
                        await run.state(text=f"step {k}")
                        waiting.append(sink.unacknowledged)
                    await run.end("success")

    asyncio.run(record())
    assert max(waiting) <= 2
    records = read_topic(kafka.bootstrap, topic, lambda values: len(values) >= 12,
                         decode=lambda value: value)
    events = [json.loads(value) for value in records]
    for run_id in ("a", "b"):
        assert [e["seq"] for e in events if e["run_id"] == run_id] == list(range(6))


def test_a_broker_that_goes_away_mid_run_is_one_clear_error(tmp_path):
    with EmbeddedKafka() as broker:
        topics = topic_names("gone")
        ensure_topics(broker.bootstrap, topics)
        sink = KafkaSink(broker.bootstrap, topics.events, timeout=3)
        run = Run("t", sink, "r")
        run.state(text="before")
        sink.flush()
        broker.kill()
        with pytest.raises(SinkError, match=r"Kafka at .*failed .*is the broker running"):
            for k in range(20):  # the buffer holds a few; the broker's absence shows soon
                run.state(text=f"after {k}")
            sink.flush()
        with pytest.raises(SinkError):
            sink.close()


def test_the_playwright_example_publishes_runs_the_worker_judges(kafka, tmp_path):
    run_agent("--runs", str(tmp_path / "train"), count=3)
    models = tmp_path / "models"
    models.mkdir()
    model = learn(read_runs([tmp_path / "train"]))
    model.save(models / f"{model.task}.json")
    prefix = unique("pw")
    topics = topic_names(prefix)
    ensure_topics(kafka.bootstrap, topics)
    worker = Worker(kafka.bootstrap, prefix, unique("pw"), models, tmp_path / "w.log")
    try:
        worker.wait_ready()
        expected = {run_agent("--kafka", kafka.bootstrap, "--topic", topics.events,
                              *options)[0]: (verdict, cause)
                    for _, options, verdict, cause in CASES}
        values = await_topic(kafka.bootstrap, topics.verdicts,
                             lambda values: set(expected) <= {v["run_id"] for v in values
                                                               if v.get("final")},
                             worker, timeout=120)
    finally:
        worker.stop()
    finals = {v["run_id"]: (v["verdict"], v["cause"]) for v in values if v.get("final")}
    assert finals == expected
