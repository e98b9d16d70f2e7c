"""The stream under an adversary and a careless fleet, on the real broker (issue 29): forged
and corroborated-too-little successes of a failing run, a conflicting duplicate sent before
its original, keys that are not valid UTF-8, undecodable screenshots, heavy screenshots
and a run whose end never comes, among good runs, all in a burst after an idle spell.
Every good run gets the batch validator's verdict, the faults end their runs as
``stream_fault`` with a dead letter, the model does not change and the worker never restarts;
and a genuine new route attested by three runners is learned."""
from __future__ import annotations

import json
import time

import pytest
from aiokafka.partitioner import DefaultPartitioner
from brokenimages import BREAKAGES, broken_run, heavy_run
from streamkit import (
    RUNNER_KEYS,
    TRAIN,
    Worker,
    all_final,
    await_topic,
    batch_verdicts,
    drop_state,
    example_events,
    model,
    produce,
    publish_events,
    renamed,
    setup,
    train_runs,
    unique,
)

from stream.commands.replay import inline_screenshot, read_events
from stream.models.attest import KEYS_ENV, Signer

FAILING, PASSING = "jl-save-textfile-test-11", "jl-save-textfile-test-05"


@pytest.fixture
def runner_keys(tmp_path, monkeypatch) -> None:
    """The workers trust runner-1..4 (not the machine's own runner, which publishes the
    good runs: their successes must not refine the model here)."""
    path = tmp_path / "runners.json"
    path.write_text(json.dumps({r: k.decode() for r, k in RUNNER_KEYS.items()}))
    monkeypatch.setenv(KEYS_ENV, str(path))


def by_id(run_id: str, new_id: str) -> list[dict]:
    [run] = [run for run in example_events() if run[0]["run_id"] == run_id]
    return renamed(run, new_id)


def claimed_success(events: list[dict]) -> list[dict]:
    return [*events[:-1], {**events[-1], "outcome": "success"}]


def partition_of(run_id: str, partitions: int = 4) -> int:
    """The events partition of `run_id`'s records (the producer's default partitioner)."""
    every = list(range(partitions))
    return DefaultPartitioner()(run_id.encode(), every, every)


def by_partition(runs: list[list[dict]]) -> list[list[dict]]:
    """`runs` with those of the lowest partition first: the records of the last partition
    are fetched behind (and wait for) those of the others."""
    return sorted(runs, key=lambda run: partition_of(run[0]["run_id"]))


def versions(bootstrap: str, topic: str) -> set[int]:
    return {m["version"] for m in await_topic(bootstrap, topic, lambda v: bool(v), timeout=10)}


def test_the_stream_under_an_adversary(kafka, tmp_path, runner_keys):
    prefix, topics, models = setup(kafka, tmp_path)
    good = [renamed(run, f"{prefix}-good-{n}") for n, run in enumerate(example_events())]
    # attested by the machine's own runner, which these workers do not know: forged
    forged = [claimed_success(by_id(FAILING, f"{prefix}-forged-{n}")) for n in range(2)]
    stolen = claimed_success(by_id(FAILING, f"{prefix}-stolen"))  # runner-1's key, stolen
    duplicated = by_id(PASSING, f"{prefix}-dup")
    conflict = {**duplicated[3], "action": {"type": "key", "value": "Escape"}}
    broken = []
    for name, breakage in sorted(BREAKAGES.items()):
        broken_run(tmp_path / name, breakage, f"{prefix}-broken-{name}")
        broken += read_events([tmp_path / name])
    bad_key = {**good[0][0], "run_id": f"{prefix}-k\ufffd"}
    abandoned = by_id(PASSING, f"{prefix}-abandoned")[:-1]  # its end never comes
    heavy = heavy_run(f"{prefix}-heavy", model().task, 10)  # slow to decode, within budget
    first = renamed(example_events()[0], f"{prefix}-first")
    # the guard checks five times a second whether records wait, and the idle spell before
    # the burst is longer than its threshold (a stall restarts the worker after 5 s)
    worker = Worker(kafka.bootstrap, prefix, unique("adversary"), models, tmp_path / "w.log",
                    "--train", str(TRAIN), "--end-silence", "5", "--stall-restart", "3",
                    "--tick", "0.2")
    try:
        worker.wait_ready()
        publish_events(kafka.bootstrap, topics.events, first)
        await_topic(kafka.bootstrap, topics.verdicts, all_final([first]), worker, timeout=60)
        time.sleep(6.0)  # idle
        publish_events(kafka.bootstrap, topics.events, [e for run in forged for e in run])
        signer = Signer("runner-1", RUNNER_KEYS["runner-1"])
        publish_events(kafka.bootstrap, topics.events, stolen, signer)
        produce(kafka.bootstrap, topics.events, [
            (key, json.dumps(bad_key).encode()) for key in
            (f"{prefix}-k".encode() + b"\xff", f"{prefix}-k".encode() + b"\xfe")])
        publish_events(kafka.bootstrap, topics.events,
                       [*duplicated[:3], conflict, *duplicated[3:]]
                       + [e for run in broken for e in run] + heavy
                       + [e for run in by_partition(good) for e in run] + abandoned)
        faulty = [forged[0], forged[1], stolen, duplicated, *broken, abandoned, heavy]
        verdicts = await_topic(kafka.bootstrap, topics.verdicts, all_final([*good, *faulty]),
                               worker, timeout=90)
        dead = await_topic(kafka.bootstrap, topics.dlq, lambda v: len(v) >= 6, worker,
                           timeout=30)
        again = by_id(FAILING, f"{prefix}-again")
        publish_events(kafka.bootstrap, topics.events, again)
        verdicts = await_topic(kafka.bootstrap, topics.verdicts, all_final([again]), worker,
                               timeout=60)
        assert worker.process.proc.poll() is None, worker.log_tail()
        restarts = len(worker.ready_lines()) - 1
    finally:
        worker.stop()
    final = {v["run_id"]: v for v in verdicts if v["final"]}
    batch = batch_verdicts()
    for run in good:
        original = run[0]["run_id"].replace(f"{prefix}-good-", "")
        original = example_events()[int(original)][0]["run_id"]
        got = final[run[0]["run_id"]]
        assert (got["verdict"], got["reason"], got["cause"]) == \
            (batch[original]["verdict"], batch[original]["reason"], batch[original]["cause"])
    for run in [*forged, stolen, again]:
        assert final[run[0]["run_id"]]["verdict"] == "fail"
    for run in [duplicated, *broken]:
        assert (final[run[0]["run_id"]]["verdict"], final[run[0]["run_id"]]["cause"]) == \
            ("fail", "stream_fault"), final[run[0]["run_id"]]
    assert final[heavy[0]["run_id"]]["cause"] != "stream_fault", final[heavy[0]["run_id"]]
    gone = final[abandoned[0]["run_id"]]
    assert (gone["verdict"], gone["status"]) == ("incomplete", "incomplete")
    assert "no end event for" in gone["reason"] and "(last status passed" in gone["reason"]
    reasons = sorted(d["reason"] for d in dead)
    assert reasons == sorted(["wrong_key"] * 2 + ["conflicting_duplicate"]
                             + ["bad_image"] * len(broken)), reasons
    assert versions(kafka.bootstrap, topics.models) == {model().version}  # no refinement
    assert restarts == 0 and "restarting the worker" not in worker.log_tail(10 ** 7)


def test_a_new_route_attested_by_three_runners_is_tried_in_shadow_then_used(kafka, tmp_path,
                                                                           runner_keys):
    prefix, topics, models = setup(kafka, tmp_path)
    sid = model().essential[1]
    name = model().name(sid)
    route = [drop_state(train_runs()[n], sid, f"{prefix}-route-{n}") for n in range(6)]
    worker = Worker(kafka.bootstrap, prefix, unique("route"), models, tmp_path / "w.log",
                    "--train", str(TRAIN), "--shadow-runs", "2")
    try:
        worker.wait_ready()
        for number, run in enumerate(route[:3], start=1):
            runner = f"runner-{number}"
            publish_events(kafka.bootstrap, topics.events,
                           [inline_screenshot(event.raw, TRAIN) for event in run.events],
                           Signer(runner, RUNNER_KEYS[runner]))
        await_topic(kafka.bootstrap, topics.models, lambda v: any(m["version"] == 2 for m in v),
                    worker, timeout=120)
        time.sleep(1.0)  # the worker follows the models topic
        tried = [[inline_screenshot(event.raw, TRAIN) for event in run.events]
                 for run in route[3:5]]
        publish_events(kafka.bootstrap, topics.events, [e for run in tried for e in run])
        learned = await_topic(kafka.bootstrap, topics.models,
                              lambda v: any(m["version"] == 3 for m in v), worker, timeout=120)
        time.sleep(1.0)
        after = [inline_screenshot(event.raw, TRAIN) for event in route[5].events]
        publish_events(kafka.bootstrap, topics.events, after)
        verdicts = await_topic(kafka.bootstrap, topics.verdicts, all_final([*tried, after]),
                               worker, timeout=60)
    finally:
        worker.stop()
    shadow = next(m for m in learned if m["version"] == 2)["history"][-1]
    assert shadow["action"] == "refined" and shadow["dropped"] == [name] and shadow["shadow"]
    assert sorted(shadow["runs"]) == sorted(run.run_id for run in route[:3])
    promoted = next(m for m in learned if m["version"] == 3)["history"][-1]
    assert (promoted["action"], promoted["promoted"]) == ("promoted", 2)
    final = {v["run_id"]: v for v in verdicts if v["final"]}
    # judged by the version in use while on trial, by the promoted one after
    assert [(final[run[0]["run_id"]]["verdict"], final[run[0]["run_id"]]["model_version"])
            for run in [*tried, after]] == [("fail", 1), ("fail", 1), ("pass", 3)]


def test_a_burst_after_an_idle_spell_is_no_stall(kafka, tmp_path):
    """Idle for twice the restart threshold, then a burst: the stall guard measures from the
    burst, not from the last record before the idle spell, and restarts nothing (the real
    stall beside it, which does restart: test_worker_restarts_kafka's
    ``test_a_worker_whose_topic_disappears_restarts_itself_and_counts_it``). The burst's runs
    come a partition after another, so the last partition's records wait, fetched, behind
    a second or so of the others' (a batch of those at a time), and the guard, checking five
    times a second, sees them waiting (measured from the last progress, before the idle
    spell, they stalled)."""
    prefix, topics, models = setup(kafka, tmp_path)
    first = renamed(example_events()[0], f"{prefix}-first")
    burst = by_partition([renamed(run, f"{prefix}-burst-{n}-{i}") for n in range(10)
                          for i, run in enumerate(example_events())])
    worker = Worker(kafka.bootstrap, prefix, unique("idle"), models, tmp_path / "w.log",
                    "--stall-restart", "3", "--tick", "0.2", "--no-refine")
    try:
        worker.wait_ready()
        publish_events(kafka.bootstrap, topics.events, first)
        await_topic(kafka.bootstrap, topics.verdicts, all_final([first]), worker, timeout=60)
        time.sleep(6.0)  # idle: twice --stall-restart
        publish_events(kafka.bootstrap, topics.events, [e for run in burst for e in run])
        await_topic(kafka.bootstrap, topics.verdicts, all_final(burst), worker, timeout=120)
        time.sleep(2.0)  # a tick or two after the burst
        assert worker.process.proc.poll() is None, worker.log_tail()
        restarts = len(worker.ready_lines()) - 1
    finally:
        worker.stop()
    log = worker.log_tail(10 ** 7)
    assert restarts == 0 and "restarting the worker" not in log, log[-3000:]
    assert "[ERROR]" not in log, log[-3000:]  # a healthy worker (its new group included)
