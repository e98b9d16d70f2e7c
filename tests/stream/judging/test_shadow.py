"""A refined version that changes what the model passes is tried in shadow: runs are judged
by both versions, disagreements counted; it is promoted after ``shadow_runs`` runs, and
rejected at once when it passes a run whose end says failure."""
from __future__ import annotations

from streamkit import (
    RUNNER_KEYS,
    TRAIN,
    as_records,
    attested,
    drop_state,
    model,
    train_runs,
)

from stream.commands.replay import inline_screenshot
from stream.judging.processor import StreamProcessor
from stream.judging.records import DictStore
from stream.judging.settings import WorkerSettings
from stream.models.refine import Refiner
from stream.models.registry import ModelRegistry

SID = model().essential[1]


def on_trial() -> ModelRegistry:
    """A registry whose task has a version in shadow that drops milestone 1, learned from
    the attested runs of three runners."""
    registry = ModelRegistry()
    registry.add(model())
    registry.add_runs(train_runs())
    refiner = Refiner(registry, runner_keys=RUNNER_KEYS)
    for n in range(3):
        result = refiner.learn_one(attested(drop_state(train_runs()[n], SID, f"r{n}"),
                                            f"runner-{n + 1}"))
    registry.add(result.model)
    assert registry.shadow(model().task) is result.model
    return registry


def route_events(number: int, run_id: str, outcome: str) -> list[dict]:
    """A training run without milestone 1's states (the new route), as stream events."""
    events = [inline_screenshot(e.raw, TRAIN)
              for e in drop_state(train_runs()[number], SID, run_id).events]
    return [*events[:-1], {**events[-1], "outcome": outcome}]


def value(proc: StreamProcessor, name: str, **labels: str) -> float:
    return proc.metrics.registry.get_sample_value(name, labels) or 0.0


def test_a_version_in_shadow_is_compared_then_promoted():
    registry = on_trial()
    shadow = registry.shadow(model().task)
    proc = StreamProcessor(registry, DictStore(), WorkerSettings(shadow_runs=2))
    first = proc.process_batch(as_records(route_events(4, "new-1", "success")))
    final = [record for _, record in first.verdicts if record["final"]]
    assert [r["verdict"] for r in final] == ["fail"] and final[0]["model_version"] == 1
    assert first.models == []
    assert value(proc, "trustlayer_shadow_disagreements_total", task=model().task,
                 used="fail", shadow="pass") == 1.0
    second = proc.process_batch(as_records(route_events(5, "new-2", "success")))
    [promoted] = second.models
    entry = promoted.history[-1]
    assert (entry["action"], entry["promoted"], entry["runs"]) == \
        ("promoted", shadow.version, ["r0", "r1", "r2"])
    assert promoted.version == shadow.version + 1
    assert value(proc, "trustlayer_shadow_runs_total", task=model().task) == 2.0
    registry.add(promoted)
    assert registry.latest(model().task) is promoted
    assert {"r0", "r1", "r2"} <= set(registry.runs[model().task])


def test_a_version_in_shadow_that_passes_a_failure_is_rejected():
    registry = on_trial()
    shadow = registry.shadow(model().task)
    proc = StreamProcessor(registry, DictStore(), WorkerSettings(shadow_runs=20))
    out = proc.process_batch(as_records(route_events(4, "bad-1", "failure")))
    [rollback] = out.models
    entry = rollback.history[-1]
    assert (entry["action"], entry["rolled_back_to"], entry["rejected_shadow"]) == \
        ("rollback", model().version, shadow.version)
    registry.add(rollback)
    assert registry.shadow(model().task) is None
    assert not {"r0", "r1", "r2"} & set(registry.pending[model().task])
    assert registry.latest(model().task) is rollback


def test_a_run_that_left_the_worker_is_not_compared_when_it_comes_back():
    """A run's partition went to another worker, which judged some of its events, and came
    back: the shadow matcher kept from before missed those events, and is not used."""
    registry, store = on_trial(), DictStore()
    records = as_records(route_events(4, "moved", "success"))
    proc = StreamProcessor(registry, store, WorkerSettings(shadow_runs=1))
    proc.process_batch(records[:5])
    proc.revoke()
    other = StreamProcessor(registry, store, WorkerSettings(shadow_runs=1))
    other.assign([0], store.items())
    other.process_batch(records[5:-1])
    other.revoke()
    proc.assign([0], store.items())
    out = proc.process_batch(records[-1:])
    assert [r["final"] for _, r in out.verdicts] == [True]
    assert out.models == [] and value(proc, "trustlayer_shadow_runs_total",
                                      task=model().task) == 0.0
