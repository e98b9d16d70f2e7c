"""Hostile records against a real worker on the real broker: forged, wrongly signed and
broken models are refused to the DLQ (the worker lives on with its model); a second ``end``
with the opposite outcome leaves one final verdict and one ``after_end`` DLQ record."""
from __future__ import annotations

import asyncio
import json

from streamkit import (
    TEST,
    Worker,
    all_final,
    await_topic,
    batch_verdicts,
    example_events,
    final_by_run,
    model,
    publish_events,
    renamed,
    setup,
    unique,
)

from stream.kafka import clients
from stream.models.registry import encode_model
from stream.models.signing import model_key, signed_headers
from trustlayer.judge.matcher import judge_run
from trustlayer.model import Model
from trustlayer.observe.traces import read_runs


def produce_with_headers(bootstrap: str, topic: str,
                         records: list[tuple[bytes, bytes, list[tuple[str, bytes]]]]) -> None:
    async def run() -> None:
        async with clients.producer(bootstrap) as producer:
            for key, value, headers in records:
                await producer.send_and_wait(topic, key=key, value=value, headers=headers)

    asyncio.run(run())


def forged_model() -> Model:
    """The example model without milestones or signs of failure, ending anywhere, as
    version 99: it passes a run that the real model fails (an agent error)."""
    data = model().to_json()
    data.update(version=99, essential=[], soft=[], negative=[], idom={}, incidental=[],
                required_outputs={}, accepting=[state["id"] for state in data["states"]],
                gone_lines={}, end_texts=[], end_evidence={})
    return Model.from_json(data)


def test_forged_and_broken_models_are_refused_and_a_second_end_changes_nothing(kafka,
                                                                              tmp_path):
    prefix, topics, models = setup(kafka, tmp_path)
    task = model().task.encode()
    failing_id = "jl-save-textfile-test-14"  # (its agent does not report its failure)
    assert batch_verdicts()[failing_id]["verdict"] == "fail"
    [failing_run] = [r for r in read_runs([TEST]) if r.run_id == failing_id]
    forged = encode_model(forged_model())
    assert judge_run(forged_model(), failing_run).verdict == "pass"  # the forgery matters
    broken = model().to_json()
    broken.update(version=98, essential=[*broken["essential"], "s-no-such-state"])
    broken = json.dumps(broken).encode()
    key = model_key()
    bad_models = [
        (task, forged, [], "unsigned_model"),
        (task, forged, signed_headers(forged, b"another key" * 4), "bad_signature"),
        (task, broken, signed_headers(broken, key), "bad_model"),
        (task, b"[" * 50_000, signed_headers(b"[" * 50_000, key), "bad_model"),
    ]
    by_id = {run[0]["run_id"]: run for run in example_events()}
    failing = renamed(by_id[failing_id], f"{prefix}-failing")
    passing = renamed(by_id["jl-save-textfile-test-05"], f"{prefix}-passing")
    end = failing[-1]
    second_end = {**end, "seq": end["seq"] + 1,
                  "outcome": "success" if end["outcome"] != "success" else "failure"}
    worker = Worker(kafka.bootstrap, prefix, unique("hostile"), models, tmp_path / "w.log")
    try:
        worker.wait_ready()
        produce_with_headers(kafka.bootstrap, topics.models,
                             [(k, v, h) for k, v, h, _ in bad_models])
        dead = await_topic(kafka.bootstrap, topics.dlq, lambda v: len(v) >= len(bad_models),
                           worker, timeout=60)
        publish_events(kafka.bootstrap, topics.events, failing + passing)
        await_topic(kafka.bootstrap, topics.verdicts, all_final([failing, passing]), worker,
                    timeout=60)
        publish_events(kafka.bootstrap, topics.events, [second_end])
        dead = await_topic(kafka.bootstrap, topics.dlq,
                           lambda v: len(v) >= len(bad_models) + 1, worker, timeout=60)
        verdicts = await_topic(kafka.bootstrap, topics.verdicts, all_final([failing, passing]),
                               worker, timeout=5)
        assert worker.process.proc.poll() is None, worker.log_tail()
    finally:
        worker.stop()
    # the DLQ's partitions are read in their order, not in the order written: the bad
    # models' records (key: the task) and the late end's (key: a random run id) may come
    # either way round
    [late] = [d for d in dead if d["reason"] == "after_end"]
    assert [d["reason"] for d in dead if d is not late] == [r for *_, r in bad_models]
    assert late["key"] == failing[0]["run_id"]
    assert json.loads(late["value"])["outcome"] == second_end["outcome"]
    assert {rid: len(records) for rid, records in final_by_run(verdicts).items()} == \
        {failing[0]["run_id"]: 1, passing[0]["run_id"]: 1}
    final = {v["run_id"]: v for v in verdicts if v["final"]}
    assert final[failing[0]["run_id"]]["verdict"] == "fail"
    assert final[failing[0]["run_id"]]["model_version"] == model().version
    assert final[passing[0]["run_id"]]["verdict"] == "pass"
    # nothing after the final verdict: the run never went back to running
    last = max(i for i, v in enumerate(verdicts) if v["run_id"] == failing[0]["run_id"])
    assert verdicts[last]["final"]
