"""The runner's Kafka sink loses no run in an outage (a broker of its own, killed during a
100-run publish): the runs it could not deliver wait whole in the spool, ``trustlayer
replay`` sends them once the broker is back, and every run gets one final verdict, the
file validator's; a missing topic is named as such."""
from __future__ import annotations

import json

import pytest
from streamkit import (
    Worker,
    await_topic,
    batch_verdicts,
    example_events,
    final_by_run,
    read_topic,
    renamed,
    setup,
    unique,
)

from stream.commands.replay import replay
from stream.kafka.broker import EmbeddedKafka
from stream.kafka.processes import free_port
from stream.kafka.runner_sink import KafkaSink, SinkError, TopicMissing
from trustlayer.observe.traces import read_runs
from trustlayer.runner import Run

RUNS = 100
KILLED_AT = 30  # the run during which the broker dies, after its first events


def test_a_broker_killed_during_a_publish_loses_no_run(tmp_path):
    examples = example_events()
    runs = [renamed(examples[k % len(examples)], f"fleet-{k:03d}") for k in range(RUNS)]
    origin = {run[0]["run_id"]: examples[k % len(examples)][0]["run_id"]
              for k, run in enumerate(runs)}
    spool = tmp_path / "spool"
    with EmbeddedKafka() as kafka:
        prefix, topics, models = setup(kafka, tmp_path)
        worker = Worker(kafka.bootstrap, prefix, unique("spool"), models, tmp_path / "w.log")
        try:
            worker.wait_ready()
            sink = KafkaSink(kafka.bootstrap, topics.events, timeout=3, spool=spool)
            for number, events in enumerate(runs):
                for seq, event in enumerate(events):
                    if (number, seq) == (KILLED_AT, 3):
                        sink.flush()  # the run's first events are on the broker
                        kafka.kill()
                    sink.write(event)
            sink.close()
            assert sink.spool is not None
            assert sink.spool.runs == {run[0]["run_id"] for run in runs[KILLED_AT:]}
            kafka.restart()
            replay(kafka.bootstrap, topics.events, [spool], speed=0)
            values = await_topic(kafka.bootstrap, topics.verdicts,
                                 lambda got: len(final_by_run(got)) >= RUNS, worker,
                                 timeout=240)
        finally:
            worker.stop()
    finals = final_by_run(values)
    assert sorted(finals) == sorted(origin)  # no run lost
    expected = batch_verdicts()
    for run_id, records in finals.items():
        assert len(records) == 1, (run_id, records)  # one final verdict, never a second
        final = json.loads(next(iter(records)))
        truth = expected[origin[run_id]]
        assert (final["verdict"], final["cause"], final["coverage"]) == \
            (truth["verdict"], truth["cause"], truth["coverage"]), (run_id, final, truth)


def test_without_a_spool_an_outage_fails_the_next_write_not_silently(tmp_path):
    with EmbeddedKafka() as kafka:
        prefix, topics, _ = setup(kafka, tmp_path)
        sink = KafkaSink(kafka.bootstrap, topics.events, timeout=2)
        events = renamed(example_events()[0], "cut-off")
        sink.write(events[0])
        sink.flush()
        kafka.kill()
        with pytest.raises(SinkError, match="is the broker running"):
            for event in events[1:]:  # the end, if reached, waits for the acknowledgement
                sink.write(event)
        with pytest.raises(SinkError):
            sink.close()


def test_a_missing_topic_is_named_before_the_agent_starts(kafka):
    with pytest.raises(TopicMissing, match=r"topic 'no-such-topic\.events' not found"):
        KafkaSink(kafka.bootstrap, "no-such-topic.events", timeout=5)


def test_leaving_a_run_returns_once_the_broker_has_all_of_it(kafka, tmp_path):
    _, topics, _ = setup(kafka, tmp_path)
    with KafkaSink(kafka.bootstrap, topics.events, timeout=5) as sink:
        with Run("t", sink, "left") as run:  # no end: leaving the block writes it
            for step in range(5):
                run.state(text=f"step {step}")
        assert sink.unacknowledged == 0  # the end waited for the broker's acknowledgement
    events = [json.loads(value) for value in read_topic(
        kafka.bootstrap, topics.events, lambda got: len(got) >= 6, decode=lambda v: v)]
    assert [e["seq"] for e in events] == list(range(6)) and events[-1]["kind"] == "end"


def test_with_a_spool_an_agent_starts_without_a_broker_and_its_runs_wait_on_disk(tmp_path):
    spool = tmp_path / "spool"
    with KafkaSink(f"127.0.0.1:{free_port()}", timeout=2, spool=spool) as sink:
        with Run("t", sink, "offline") as run:
            run.state(text="working")
            run.end("success")
    [spooled] = read_runs([spool])  # the trace format, as `trustlayer replay` reads it
    assert (spooled.run_id, [e.kind for e in spooled.events]) == ("offline", ["state", "end"])
