"""Issue 42's probes of online refinement on the real broker: a success whose timestamps one
runner stretched (``t0 + i * 1e6``) refines nothing and a stuck run is still flagged at its
deadline; a rollback's runs stay out of the next refinement, are listed by ``models show``
and come back only by ``models release``."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from streamkit import (
    RUNNER_KEYS,
    TIMER_END_SILENCE,
    TIMER_FLOOR,
    TRAIN,
    Worker,
    all_final,
    await_topic,
    example_events,
    model,
    publish_events,
    renamed,
    setup,
    train_runs,
    unique,
)

from stream.commands.replay import inline_screenshot
from stream.models.attest import KEYS_ENV, Signer

TASK = model().task


@pytest.fixture
def runner_keys(tmp_path, monkeypatch) -> None:
    """The workers trust runner-1..4, each with its own key."""
    path = tmp_path / "runners.json"
    path.write_text(json.dumps({r: k.decode() for r, k in RUNNER_KEYS.items()}))
    monkeypatch.setenv(KEYS_ENV, str(path))


def trustlayer(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trustlayer.cli", *args], capture_output=True,
                          text=True, timeout=60)


def training_run(number: int, run_id: str) -> list[dict]:
    return renamed([inline_screenshot(e.raw, TRAIN) for e in train_runs()[number].events],
                   run_id)


def stretched(events: list[dict]) -> list[dict]:
    t0 = events[0]["ts"]
    return [{**event, "ts": t0 + i * 1e6} for i, event in enumerate(events)]


def version(bootstrap: str, topic: str, number: int, worker: Worker) -> dict:
    """Version `number` of the task's model, once it is on the models topic."""
    values = await_topic(bootstrap, topic, lambda v: any(m["version"] == number for m in v),
                         worker, timeout=120, decode=json.loads)
    return next(m for m in values if m["version"] == number)


def test_stretched_timestamps_refine_nothing_and_rollback_sticks(kafka, tmp_path, runner_keys):
    prefix, topics, models = setup(kafka, tmp_path, TIMER_FLOOR)
    runner = Signer("runner-1", RUNNER_KEYS["runner-1"])
    forged = stretched(training_run(2, f"{prefix}-stretched"))
    stuck = renamed(example_events()[0], f"{prefix}-stuck")[:6]
    honest, later = training_run(3, f"{prefix}-honest"), training_run(4, f"{prefix}-later")
    common = ["--broker", kafka.bootstrap, "--topics", prefix]
    worker = Worker(kafka.bootstrap, prefix, unique("gate"), models, tmp_path / "w.log",
                    "--train", str(TRAIN), "--end-silence", str(TIMER_END_SILENCE))
    try:
        worker.wait_ready()
        publish_events(kafka.bootstrap, topics.events, forged, runner)
        publish_events(kafka.bootstrap, topics.events, stuck)
        verdicts = await_topic(kafka.bootstrap, topics.verdicts, all_final([forged, stuck]),
                               worker, timeout=180)
        time.sleep(1.0)  # a refinement would be published with the forged run's verdict
        publish_events(kafka.bootstrap, topics.events, honest, runner)
        refined = version(kafka.bootstrap, topics.models, 2, worker)
        rollback = trustlayer("models", "rollback", TASK, "1", *common)
        time.sleep(1.0)  # the worker follows the models topic
        publish_events(kafka.bootstrap, topics.events, later, runner)
        after = version(kafka.bootstrap, topics.models, 4, worker)
        show = trustlayer("models", "show", TASK, *common)
        release = trustlayer("models", "release", TASK, honest[0]["run_id"], *common)
        released = version(kafka.bootstrap, topics.models, 5, worker)
        shown_after = trustlayer("models", "show", TASK, *common)
    finally:
        worker.stop()
    final = {v["run_id"]: v for v in verdicts if v["final"]}
    # a run that went silent is at risk past the (unstretched) deadline of version 1, then
    # ends incomplete: its runner may be gone, so it is nobody's fault until known
    stuck_final = final[stuck[0]["run_id"]]
    assert (stuck_final["status"], stuck_final["cause"]) == ("incomplete", "stream_fault")
    assert stuck_final["model_version"] == 1
    assert "lasted" in stuck_final["reason"] or "not reached within" in stuck_final["reason"]
    # the forged run made no version: the first one is the honest run's
    assert refined["history"][-1]["runs"] == [honest[0]["run_id"]]
    assert forged[0]["run_id"] not in refined["training_runs"]
    assert rollback.returncode == 0, rollback.stderr
    assert f"quarantined runs {honest[0]['run_id']}" in rollback.stdout
    assert after["history"][-1]["runs"] == [later[0]["run_id"]]
    assert honest[0]["run_id"] not in after["training_runs"]
    assert show.returncode == 0, show.stderr
    assert f"{honest[0]['run_id']}  (by the rollback of version 3)" in show.stdout
    assert release.returncode == 0, release.stderr
    assert released["history"][-1]["released"] == [honest[0]["run_id"]]
    assert "quarantined runs: none" in shown_after.stdout
