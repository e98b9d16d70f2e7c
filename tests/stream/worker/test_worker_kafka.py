"""The streaming worker against the real Kafka 4.4 broker (fixture `kafka`): the demo equals
the batch validator; two workers share runs and one leaves; a backlog past the fetch buffer;
bad events go to the DLQ; hot swap, refinement, rollback and history through the models
topic; runs replayed with fingerprints instead of images. (The worker started again:
test_worker_restarts_kafka.py.)"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request

from finals import check_finals, copies, halves
from streamkit import (
    EXAMPLES,
    TEST,
    TIMER_END_SILENCE,
    TIMER_FLOOR,
    TRAIN,
    CpuHogs,
    Worker,
    all_final,
    all_seen,
    await_topic,
    bad_records,
    batch_verdicts,
    example_events,
    interleave,
    model,
    produce,
    publish_events,
    read_topic,
    renamed,
    setup,
    train_runs,
    unique,
)

from stream.commands.demo import ready_partitions
from stream.commands.replay import inline_screenshot
from stream.kafka.processes import free_port


def trustlayer(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trustlayer.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_demo_once_gives_the_batch_validators_verdicts(tmp_path):
    """`trustlayer demo --once --format json` (its own embedded Kafka) = `trustlayer validate
    --format json`, run for run."""
    demo = trustlayer("demo", str(EXAMPLES), "--once", "--format", "json", timeout=180)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert trustlayer("learn", str(TRAIN), "-o", str(tmp_path / "m.json")).returncode == 0
    validate = trustlayer("validate", str(tmp_path / "m.json"), str(TEST), "--format", "json")
    batch = {r["run_id"]: r for r in map(json.loads, validate.stdout.splitlines())}
    streamed = {r["run_id"]: r for r in map(json.loads, demo.stdout.splitlines())}
    assert len(demo.stdout.splitlines()) == len(streamed) == len(batch) == 6
    for run_id, expected in batch.items():
        got = streamed[run_id]
        assert {k: got[k] for k in expected} == expected, run_id
        assert got["status"] in ("passed", "failed") and got["model_version"] == 1
        assert got["detected_at_seq"] is not None


def test_the_full_demo_with_refinement_finishes_under_a_cpu_hog():
    """`trustlayer demo` as the README says (its own Kafka, refinement on, replay at speed
    1) while another process keeps a core busy: every run gets its final verdict."""
    with CpuHogs(1, seconds=300):
        demo = trustlayer("demo", "--timeout", "200", timeout=260)
    assert demo.returncode == 0, demo.stderr[-6000:]
    assert "every run has its final verdict" in demo.stdout, demo.stdout[-3000:]
    assert all(run[0]["run_id"] in demo.stdout for run in example_events()), demo.stdout[-3000:]


def test_two_workers_share_the_runs_and_one_leaves(kafka, tmp_path):
    """A second worker joins while the first is busy, they share the partitions, then the
    first leaves while runs are open: every run still gets one final verdict."""
    prefix, topics, models = setup(kafka, tmp_path)
    runs = copies(8, prefix)
    first, second = halves(runs)
    app_id = unique("pair")
    one = Worker(kafka.bootstrap, prefix, app_id, models, tmp_path / "w1.log")
    two = None
    try:
        one.wait_ready()
        publish_events(kafka.bootstrap, topics.events, first)
        two = Worker(kafka.bootstrap, prefix, app_id, models, tmp_path / "w2.log")
        line_two = two.wait_ready()
        line_one = one.wait_ready(count=2)  # the rebalance after the second one joined
        parts = [set(ready_partitions(line)) for line in (line_one, line_two)]
        assert parts[0] and parts[1] and not parts[0] & parts[1], parts
        assert parts[0] | parts[1] == {0, 1, 2, 3}
        await_topic(kafka.bootstrap, topics.verdicts, all_seen(runs), one, two, timeout=60)
        publish_events(kafka.bootstrap, topics.events, second)
        time.sleep(0.3)
        one.stop()  # leaves the group; the other takes its partitions over
        line = two.wait_ready(count=2, timeout=60)
        assert "[0, 1, 2, 3]" in line
        values = await_topic(kafka.bootstrap, topics.verdicts, all_final(runs), one, two,
                             timeout=90)
    finally:
        one.stop()
        if two is not None:
            two.stop()
    check_finals(values, runs)


def test_two_workers_started_together_on_a_backlog_lose_no_event(kafka, tmp_path):
    """Two workers of a new group start at once on runs published before: the first one
    alone fetches a share of the backlog, the second one joins, and the partitions it keeps
    were never committed. Every run gets the batch validator's verdict (none fails as
    missing events: records fetched and dropped around the rebalance are read again)."""
    prefix, topics, models = setup(kafka, tmp_path)
    runs = copies(60, prefix)
    publish_events(kafka.bootstrap, topics.events, interleave(runs))
    app_id = unique("together")
    workers = [Worker(kafka.bootstrap, prefix, app_id, models, tmp_path / f"w{k}.log",
                      "--reorder-timeout", "5") for k in range(2)]
    try:
        values = await_topic(kafka.bootstrap, topics.verdicts, all_final(runs), *workers,
                             timeout=120)
    finally:
        for worker in workers:
            worker.stop()
    check_finals(values, runs, excuse_timer=False)


def test_a_backlog_past_the_fetch_buffer_pauses_fetching_and_loses_no_event(kafka, tmp_path):
    """Runs published before the worker starts, more than its fetch buffer holds: fetching
    pauses while the judge catches up and resumes after, and every run gets the batch
    validator's verdict."""
    prefix, topics, models = setup(kafka, tmp_path)
    runs = copies(6, prefix)
    publish_events(kafka.bootstrap, topics.events, interleave(runs))
    port = free_port()
    worker = Worker(kafka.bootstrap, prefix, unique("backlog"), models, tmp_path / "w.log",
                    "--fetch-buffer", "0.05", "--metrics-port", str(port))
    try:
        worker.wait_ready()
        values = await_topic(kafka.bootstrap, topics.verdicts, all_final(runs), worker,
                             timeout=90)
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    finally:
        worker.stop()
    check_finals(values, runs)
    pauses = re.search(rb"^trustlayer_fetch_pauses_total (\S+)", metrics, re.M)
    assert pauses and float(pauses.group(1)) > 0, "fetching never paused"


def test_bad_events_land_in_the_dlq_with_their_reason_and_the_worker_goes_on(kafka, tmp_path):
    prefix, topics, models = setup(kafka, tmp_path)
    images = tmp_path / "images"
    images.mkdir()
    (tmp_path / "outside.png").write_bytes(b"not even an image")
    bad = bad_records(images)
    good = renamed(example_events()[0], f"{prefix}-good")
    worker = Worker(kafka.bootstrap, prefix, unique("dlq"), models, tmp_path / "w.log",
                    "--images", str(images))
    try:
        worker.wait_ready()
        produce(kafka.bootstrap, topics.events, [(k.encode(), v) for k, v, _ in bad])
        publish_events(kafka.bootstrap, topics.events, good)
        dead = await_topic(kafka.bootstrap, topics.dlq, lambda v: len(v) >= len(bad), worker,
                           timeout=60)
        verdicts = await_topic(kafka.bootstrap, topics.verdicts, all_final([good]), worker,
                               timeout=60)
    finally:
        worker.stop()
    assert sorted(d["reason"] for d in dead) == sorted(reason for _, _, reason in bad)
    by_value = {d.get("value"): d for d in dead}
    for key, value, reason in bad:
        if value.startswith(b"\xff"):
            continue
        record = by_value[value.decode()]
        assert record["reason"] == reason and record["key"] == key and record["error"]
    [final] = [v for v in verdicts if v["final"]]
    assert final["verdict"] == batch_verdicts()[example_events()[0][0]["run_id"]]["verdict"]


def test_hot_swap_refinement_rollback_and_history(kafka, tmp_path):
    """A success that changes nothing the refinement gate guards (a training run again)
    refines the model (v2 on the models topic); a run under way finishes on v1, a run
    started after v2 is judged by v2; rollback publishes v1's body as v3; the history lists
    them; /metrics exports the worker's series."""
    prefix, topics, models = setup(kafka, tmp_path)
    task = model().task
    by_outcome = {run[-1]["outcome"]: run for run in example_events()}
    under_way = renamed(by_outcome["failure"], f"{prefix}-under-way")
    success = renamed([inline_screenshot(e.raw, TRAIN) for e in train_runs()[2].events],
                      f"{prefix}-success")
    later = renamed(by_outcome["failure"], f"{prefix}-later")
    port = free_port()
    worker = Worker(kafka.bootstrap, prefix, unique("swap"), models, tmp_path / "w.log",
                    "--train", str(TRAIN), "--metrics-port", str(port))
    decode = json.loads
    try:
        worker.wait_ready()
        publish_events(kafka.bootstrap, topics.events, under_way[:5])
        await_topic(kafka.bootstrap, topics.verdicts, all_seen([under_way]), worker, timeout=30)
        publish_events(kafka.bootstrap, topics.events, success)
        versions = await_topic(kafka.bootstrap, topics.models,
                               lambda v: any(m["version"] == 2 for m in v), worker, timeout=60,
                               decode=decode)
        time.sleep(1.0)  # the worker follows the models topic
        publish_events(kafka.bootstrap, topics.events, under_way[5:] + later)
        values = await_topic(kafka.bootstrap, topics.verdicts,
                             all_final([under_way, later, success]), worker, timeout=60)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
            metrics = page.read().decode()
    finally:
        worker.stop()
    refined = next(m for m in versions if m["version"] == 2)
    assert refined["history"][-1]["action"] == "refined"
    assert refined["history"][-1]["runs"] == [success[0]["run_id"]]
    final = {v["run_id"]: v for v in values if v["final"]}
    assert final[under_way[0]["run_id"]]["model_version"] == 1
    assert final[later[0]["run_id"]]["model_version"] == 2
    assert final[success[0]["run_id"]]["model_version"] == 1
    for name in ("trustlayer_events_total", "trustlayer_runs_total", "trustlayer_failures_total",
                 "trustlayer_failure_causes_total", "trustlayer_unknown_states_total",
                 "trustlayer_verdict_latency_seconds_bucket", "trustlayer_open_runs",
                 "trustlayer_model_version", "trustlayer_dlq_records_total"):
        assert f"\n{name}{{" in metrics, name
    assert f'trustlayer_model_version{{task="{task}"}} 2.0' in metrics

    common = ["--broker", kafka.bootstrap, "--topics", prefix]
    rollback = trustlayer("models", "rollback", task, "1", *common, timeout=60)
    assert rollback.returncode == 0, rollback.stderr
    assert "version 3 = version 1" in rollback.stdout
    history = trustlayer("models", "history", task, *common, "--format", "json", timeout=60)
    entries = [json.loads(line) for line in history.stdout.splitlines()]
    assert [(e["version"], e["action"]) for e in entries] == \
        [(1, "loaded"), (2, "refined"), (3, "rollback")]
    assert entries[2]["rolled_back_to"] == 1
    text = trustlayer("models", "history", task, *common, timeout=60).stdout
    assert "v3  rollback" in text and "(body of v1)" in text
    assert f"quarantined: {success[0]['run_id']}" in text
    missing = trustlayer("models", "rollback", task, "9", *common, timeout=60)
    assert missing.returncode == 2 and "no version 9" in missing.stderr


def test_the_timer_ends_a_run_that_goes_silent_incomplete_never_a_product_bug(kafka, tmp_path):
    """No more events after a few: past a learned deadline (a state that lasts far longer
    than in successful runs) the run is at risk, and after the end silence it ends
    incomplete with cause stream_fault: its runner or the broker may have gone away."""
    prefix, topics, models = setup(kafka, tmp_path, TIMER_FLOOR)
    silent = renamed(example_events()[0], f"{prefix}-silent")[:6]
    worker = Worker(kafka.bootstrap, prefix, unique("timer"), models, tmp_path / "w.log",
                    "--end-silence", str(TIMER_END_SILENCE))
    try:
        worker.wait_ready()
        publish_events(kafka.bootstrap, topics.events, silent)
        values = await_topic(kafka.bootstrap, topics.verdicts, all_final([silent]), worker,
                             timeout=120)
    finally:
        worker.stop()
    [final] = [v for v in values if v["final"]]
    assert final["status"] == "incomplete" and final["cause"] == "stream_fault"
    assert "lasted" in final["reason"] or "not reached within" in final["reason"]
    at_risk = next(v for v in values if v["status"] == "at_risk" and not v["final"])
    assert at_risk["reason"].startswith("no event for")
    # no deadline is shorter than the model's floor, in the run's own time
    assert TIMER_FLOOR <= at_risk["verdict_ts"] - silent[-1]["ts"] < TIMER_END_SILENCE
    assert final["verdict_ts"] - silent[-1]["ts"] >= TIMER_END_SILENCE


def test_replay_with_fingerprints_sends_small_events_and_gets_the_same_verdicts(kafka, tmp_path):
    """`trustlayer replay --fingerprint`, as a fingerprinting runner publishes: no image
    crosses the broker, and every run's final verdict is the batch validator's."""
    prefix, topics, models = setup(kafka, tmp_path)
    worker = Worker(kafka.bootstrap, prefix, unique("printed"), models, tmp_path / "w.log")
    try:
        worker.wait_ready()
        replay = trustlayer("replay", str(TEST), "--fingerprint", "--speed", "0",
                            "--broker", kafka.bootstrap, "--topics", prefix)
        assert replay.returncode == 0, replay.stderr[-2000:]
        values = await_topic(kafka.bootstrap, topics.verdicts, all_final(example_events()),
                             worker, timeout=90)
    finally:
        worker.stop()
    check_finals(values, [list(run) for run in example_events()])
    events = read_topic(kafka.bootstrap, topics.events, lambda v: False, timeout=2)
    states = [e["observation"] for e in events if e["kind"] == "state"]
    assert states and all("screenshot" not in o for o in states)
    assert sum("screenshot_fingerprint" in o for o in states) > 0
    inline = sum(len(json.dumps(e)) for run in example_events() for e in run)
    assert sum(len(json.dumps(e)) for e in events) < inline / 2

