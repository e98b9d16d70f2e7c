"""The worker started again against the real Kafka 4.4 broker (fixture `kafka`): after kill -9
of the command or of the Faust worker it supervises, after a bug that raised outside one
record's processing, and when a topic it needs disappears; no run is lost (nor one to refine
when refinement raises, without a restart)."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import urllib.request
from pathlib import Path

from finals import check_finals, copies, halves
from streamkit import (
    TRAIN,
    Worker,
    all_final,
    all_seen,
    await_committed,
    await_topic,
    example_events,
    interleave,
    long_run,
    model,
    publish_events,
    read_topic,
    renamed,
    setup,
    train_runs,
    unique,
)

from stream.commands.replay import inline_screenshot
from stream.kafka import clients
from stream.kafka.processes import free_port
from trustlayer.judge.matcher import judge_run
from trustlayer.observe.event_parsing import run_of_events


def judge_first_halves(kafka, worker: Worker, topics, app_id: str, runs: list[list[dict]],
                       first: list[dict]) -> None:
    """Once `worker` is ready, publish the runs' `first` halves and wait until every run has
    a verdict and those events are committed (their runs written to the changelog)."""
    worker.wait_ready()
    publish_events(kafka.bootstrap, topics.events, first)
    await_topic(kafka.bootstrap, topics.verdicts, all_seen(runs), worker, timeout=60)
    await_committed(kafka.bootstrap, app_id, topics.events, len(first))


def inject_fault(monkeypatch, tmp_path: Path, where: str) -> Path:
    """Make the workers started from now on raise once in `where` ("send": the first send
    of verdicts; "refine": the first refinement; see tests/stream/faults); returns the file
    the fault creates when it fires."""
    marker = tmp_path / "fault-injected"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(Path(__file__).parents[1] / "faults"), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("TRUSTLAYER_TEST_FAULT", str(marker))
    monkeypatch.setenv("TRUSTLAYER_TEST_FAULT_IN", where)
    return marker


def test_a_killed_worker_restarts_and_every_run_gets_one_final_verdict(kafka, tmp_path):
    prefix, topics, models = setup(kafka, tmp_path)
    runs = copies(5, prefix)
    first, second = halves(runs)
    app_id = unique("kill")
    worker = Worker(kafka.bootstrap, prefix, app_id, models, tmp_path / "w1.log")
    try:
        judge_first_halves(kafka, worker, topics, app_id, runs, first)
        # kill -9 in the middle of the second halves: some are published before, the rest
        # (with the runs' ends) while no worker runs, so runs are open whatever its speed
        publish_events(kafka.bootstrap, topics.events, second[:len(second) // 2])
        worker.kill()
        publish_events(kafka.bootstrap, topics.events, second[len(second) // 2:])
        before = read_topic(kafka.bootstrap, topics.verdicts, lambda v: False, timeout=1)
        open_before = len({v["run_id"] for v in before}
                          - {v["run_id"] for v in before if v["final"]})
        assert open_before > 0, "every run was final before the worker was killed"
        worker = Worker(kafka.bootstrap, prefix, app_id, models, tmp_path / "w2.log")
        ready = worker.wait_ready(timeout=90)
        values = await_topic(kafka.bootstrap, topics.verdicts, all_final(runs), worker,
                             timeout=90)
    finally:
        worker.stop()
    assert int(ready.rsplit("open runs ", 1)[1]) > 0, ready  # it resumed open runs
    check_finals(values, runs)


def test_a_long_run_written_in_parts_is_read_back_whole_by_the_next_worker(kafka, tmp_path):
    """A run of 700 events: the first worker judges 600 (the run's record is sealed in two
    parts of 256 events in the changelog) and is killed -9; the next one reads the run back
    from the changelog, judges the rest to the batch verdict, and finds a repeat of seq 3
    with other content (its digest is in a part)."""
    prefix, topics, models = setup(kafka, tmp_path)
    events = long_run(f"{prefix}-long", 700, end=True)
    app_id = unique("long")
    worker = Worker(kafka.bootstrap, prefix, app_id, models, tmp_path / "w1.log")
    try:
        worker.wait_ready()
        publish_events(kafka.bootstrap, topics.events, events[:600])
        await_committed(kafka.bootstrap, app_id, topics.events, 600)
        worker.kill()
        worker = Worker(kafka.bootstrap, prefix, app_id, models, tmp_path / "w2.log")
        ready = worker.wait_ready(timeout=90)
        publish_events(kafka.bootstrap, topics.events, events[600:])
        values = await_topic(kafka.bootstrap, topics.verdicts, all_final([events]), worker,
                             timeout=90)
        # seq 3 again, the same (ignored), then with other content (a dead letter)
        changed = {**events[3], "action": {"type": "click", "target": "elsewhere"}}
        publish_events(kafka.bootstrap, topics.events, [events[3], changed])
        dead = await_topic(kafka.bootstrap, topics.dlq, lambda v: len(v) >= 1, worker)
    finally:
        worker.stop()
    assert int(ready.rsplit("open runs ", 1)[1]) == 1, ready
    [final] = [v for v in values if v["final"]]
    batch = judge_run(model(), run_of_events(events))
    assert (final["verdict"], final["reason"]) == (batch.verdict, batch.reason)
    assert [letter["reason"] for letter in dead] == ["conflicting_duplicate"]
    assert json.loads(dead[0]["value"])["action"]["target"] == "elsewhere"


def test_the_supervisor_starts_a_killed_faust_worker_again(kafka, tmp_path):
    """kill -9 of the Faust worker that ``trustlayer worker`` runs: the command starts it
    again by itself, it resumes the open runs, and every run gets one final verdict."""
    prefix, topics, models = setup(kafka, tmp_path)
    runs = copies(3, prefix)
    first, second = halves(runs)
    app_id = unique("super")
    worker = Worker(kafka.bootstrap, prefix, app_id, models, tmp_path / "w.log")
    try:
        judge_first_halves(kafka, worker, topics, app_id, runs, first)
        faust = worker.faust_pid()
        os.kill(faust, signal.SIGKILL)
        publish_events(kafka.bootstrap, topics.events, second)
        ready = worker.wait_ready(count=2, timeout=90)
        assert worker.faust_pid() != faust
        values = await_topic(kafka.bootstrap, topics.verdicts, all_final(runs), worker,
                             timeout=90)
    finally:
        worker.stop()
    assert int(ready.rsplit("open runs ", 1)[1]) > 0, ready
    assert "the worker exited with -9; starting it again" in worker.log_tail()
    check_finals(values, runs)


def test_a_bug_outside_a_records_processing_restarts_the_worker_and_loses_no_run(
        kafka, tmp_path, monkeypatch):
    """The worker's first send of verdicts raises (a fault injected by tests/stream/faults):
    the worker stops, its supervisor starts it again, and every run gets one final verdict,
    the batch validator's. (Faust would start the judge again without the events it held.)"""
    prefix, topics, models = setup(kafka, tmp_path)
    runs = copies(2, prefix)
    marker = inject_fault(monkeypatch, tmp_path, "send")
    worker = Worker(kafka.bootstrap, prefix, unique("fault"), models, tmp_path / "w.log")
    try:
        worker.wait_ready()
        publish_events(kafka.bootstrap, topics.events, interleave(runs))
        worker.wait_ready(count=2, timeout=90)
        values = await_topic(kafka.bootstrap, topics.verdicts, all_final(runs), worker,
                             timeout=90)
    finally:
        worker.stop()
    assert marker.exists()
    assert "the judge failed: restarting the worker" in worker.log_tail()
    check_finals(values, runs)


def test_a_bug_in_refinement_loses_no_run_to_refine(kafka, tmp_path, monkeypatch):
    """The worker's first refinement of a finished successful run raises (tests/stream/faults):
    Faust's supervisor starts the crashed refine agent again, the stall guard finds the
    finished-runs record undelivered and seeks back to it, and the run is refined then
    (version 2 on the models topic); the judge goes on meanwhile (no restart)."""
    prefix, topics, models = setup(kafka, tmp_path)
    # a training run again: refinement merges it (it changes nothing the gate guards)
    success = renamed([inline_screenshot(e.raw, TRAIN) for e in train_runs()[2].events],
                      f"{prefix}-success")
    marker = inject_fault(monkeypatch, tmp_path, "refine")
    worker = Worker(kafka.bootstrap, prefix, unique("refault"), models, tmp_path / "w.log",
                    "--train", str(TRAIN))
    try:
        worker.wait_ready()
        publish_events(kafka.bootstrap, topics.events, success)
        versions = await_topic(kafka.bootstrap, topics.models,
                               lambda v: any(m["version"] == 2 for m in v), worker, timeout=90,
                               decode=json.loads)
    finally:
        worker.stop()
    assert marker.exists()
    log = worker.log_tail()
    assert "Crashed reason=RuntimeError('injected fault')" in log
    assert "finished-runs', partition=" in log and "resuming and seeking back" in log
    assert "restarting" not in log
    refined = next(m for m in versions if m["version"] == 2)
    assert refined["history"][-1]["runs"] == [success[0]["run_id"]]


def test_a_worker_whose_topic_disappears_restarts_itself_and_counts_it(kafka, tmp_path):
    """The finished-runs topic is deleted under a running worker: its assignment leaves the
    topic out, so after --stall-restart seconds the worker stops, its supervisor starts it
    again (which creates the topic again), and trustlayer_stalls_total counts the restart."""
    prefix, topics, models = setup(kafka, tmp_path)
    app_id = unique("gone")
    port = free_port()
    worker = Worker(kafka.bootstrap, prefix, app_id, models, tmp_path / "w.log", "--train",
                    str(TRAIN), "--stall-restart", "5", "--metrics-port", str(port))

    async def delete() -> None:
        async with clients.admin(kafka.bootstrap) as client:
            await client.delete_topics([f"{app_id}-finished-runs"])

    try:
        worker.wait_ready()
        first = worker.faust_pid()
        asyncio.run(delete())
        deadline = time.monotonic() + 120
        while worker.faust_pid() == first and time.monotonic() < deadline:
            time.sleep(0.2)
        ready = len(worker.ready_lines())  # the new Faust worker takes seconds to be ready
        assert worker.faust_pid() != first, worker.log_tail()
        worker.wait_ready(count=ready + 1, timeout=90)
        run = renamed(example_events()[0], f"{prefix}-after")
        publish_events(kafka.bootstrap, topics.events, run)
        await_topic(kafka.bootstrap, topics.verdicts, all_final([run]), worker, timeout=60)
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    finally:
        worker.stop()
    assert "restarting the worker" in worker.log_tail()
    assert 'trustlayer_stalls_total{action="restarted"} 1.0' in metrics.decode(), \
        worker.log_tail()
