"""Model registry (versions, change log, rollback) and online refinement without a broker:
only attested successes are learned from, and a change to what the model passes needs K
independent runners."""
from __future__ import annotations

from dataclasses import replace

import pytest
from streamkit import RUNNER_KEYS, TEST, attested, drop_state, model, relabel, train_runs

from stream.models.refine import Refiner, bypassed_milestones, is_success
from stream.models.registry import ModelRegistry, decode_model, encode_model, milestone_diff
from trustlayer.judge.matcher import judge_run
from trustlayer.observe.traces import read_runs


def seeded_registry() -> ModelRegistry:
    registry = ModelRegistry()
    registry.add(model())
    registry.add_runs(train_runs())
    return registry


def milestone(number: int) -> tuple[str, str]:
    sid = model().essential[number]
    return sid, model().name(sid)


def test_a_model_version_round_trips_through_its_record():
    assert decode_model(encode_model(model())) == model()


def test_diff_matches_milestones_by_their_observations_not_ids():
    assert milestone_diff(None, model())["added"] == [model().name(s) for s in model().essential]
    assert milestone_diff(model(), model()) == {"added": [], "dropped": []}


def test_history_rollback_and_adopted_files():
    registry = ModelRegistry()
    first = registry.adopt(model())
    assert first.version == model().version and first.history[-1]["action"] == "loaded"
    registry.add(first)
    assert registry.adopt(model()) is None  # the same body again: nothing to publish
    second = registry.derive(model(), "refined", runs=["r1"])
    registry.add(second)
    assert second.version == first.version + 1 and registry.latest(model().task) is second
    rolled = registry.rollback(model().task, first.version)
    registry.add(rolled)
    assert rolled.version == second.version + 1
    assert rolled.to_json()["states"] == first.to_json()["states"]
    history = registry.history(model().task)
    assert [e["action"] for e in history] == ["loaded", "refined", "rollback"]
    assert [e["version"] for e in history] == [1, 2, 3]
    assert history[2]["rolled_back_to"] == 1 and history[2]["parent"] == 2
    assert history[1]["runs"] == ["r1"]
    assert registry.get(model().task, 1) is first  # every version is kept
    with pytest.raises(KeyError, match="no version 9"):
        registry.rollback(model().task, 9)


def refiner(**options) -> tuple[Refiner, ModelRegistry]:
    registry = seeded_registry()
    return Refiner(registry, runner_keys=RUNNER_KEYS, **options), registry


def test_only_attested_successes_are_learned_from():
    assert is_success("success", runner="runner-1") and not is_success("failure", runner="r")
    assert not is_success("success")  # a claim nobody vouches for
    assert not is_success("unknown", "pass") and is_success("unknown", "pass", use_verdicts=True)
    learner, _ = refiner()
    failed = relabel(train_runs()[0], "failed-run")
    failed.events[-1] = replace(failed.events[-1], outcome="failure")
    result = learner.learn_one(attested(failed, "runner-1"), verdict="pass")
    assert result.model is None and "not a trusted success" in result.reason
    unsigned = learner.learn_one(relabel(train_runs()[2], "unsigned"))
    assert unsigned.model is None and "attested by no known runner" in unsigned.reason
    forged = attested(relabel(train_runs()[2], "forged"), "runner-1",
                      {"runner-1": b"a key the workers do not hold, long enough"})
    assert learner.learn_one(forged).model is None


def test_an_attestation_binds_every_event_of_the_run():
    run = attested(relabel(train_runs()[2], "bound"), "runner-1")
    learner, _ = refiner()
    assert learner.runner(run) == "runner-1"
    changed = replace(run.events[1], raw={**run.events[1].raw, "ts": run.events[1].ts + 1})
    assert learner.runner(replace(run, events=[run.events[0], changed, *run.events[2:]])) is None
    assert learner.runner(relabel(run, "elsewhere")) is None  # the outcome on another run


def test_a_successful_run_makes_a_new_version_with_its_diff():
    learner, registry = refiner()
    result = learner.learn_one(attested(relabel(train_runs()[2], "online-1"), "runner-1"))
    assert result.model is not None and result.merged == ["online-1"]
    assert result.model.version == model().version + 1
    entry = result.model.history[-1]
    assert entry["action"] == "refined" and entry["runs"] == ["online-1"]
    assert entry["dropped"] == [] and entry["parent"] == model().version
    assert "online-1" in result.model.training_runs
    assert "online-1" in registry.runs[model().task]
    # the same run again changes nothing
    registry.add(result.model)
    again = Refiner(registry, runner_keys=RUNNER_KEYS)
    assert again.learn_one(attested(relabel(train_runs()[2], "online-1"), "runner-1")).model \
        is None


def test_a_milestone_is_dropped_only_after_k_independent_runners_bypassed_it():
    sid, name = milestone(1)
    learner, registry = refiner()  # K = CORROBORATION = 3
    one = drop_state(train_runs()[0], sid, "bypass-1")
    assert bypassed_milestones(model(), one) == [name]
    held = learner.learn_one(attested(one, "runner-1"))
    assert held.model is None and held.held == ["bypass-1"]
    assert f"'{name}' (1 of 3)" in held.reason
    assert "bypass-1" in registry.pending[model().task]
    # the same runner again corroborates nothing
    again = learner.learn_one(attested(drop_state(train_runs()[1], sid, "bypass-1b"), "runner-1"))
    assert again.model is None and f"'{name}' (1 of 3)" in again.reason
    two = learner.learn_one(attested(drop_state(train_runs()[2], sid, "bypass-2"), "runner-2"))
    assert two.model is None and f"'{name}' (2 of 3)" in two.reason

    three = drop_state(train_runs()[3], sid, "bypass-3")
    tried = learner.learn_one(attested(three, "runner-3"))
    assert tried.model is not None, tried.reason
    runs = ["bypass-1", "bypass-1b", "bypass-2", "bypass-3"]
    assert tried.merged == [] and tried.held == runs  # held until the version is promoted
    assert tried.diff["dropped"] == [name] and tried.bypasses[name] == 3
    entry = tried.model.history[-1]
    assert entry["dropped"] == [name] and entry["shadow"] is True and entry["runs"] == runs
    assert name not in [tried.model.name(s) for s in tried.model.essential]
    # tried in shadow: runs still start on the version in use, refinement waits
    registry.add(tried.model)
    assert registry.latest(model().task) is model() and registry.shadow(model().task) is \
        tried.model
    waiting = learner.learn_one(attested(relabel(train_runs()[4], "meanwhile"), "runner-1"))
    assert waiting.model is None and f"version {tried.model.version} is on trial" in \
        waiting.reason
    promoted = registry.derive(tried.model, "promoted", parent=tried.model, runs=runs)
    registry.add(promoted)
    assert registry.latest(model().task) is promoted and registry.shadow(model().task) is None
    assert set(runs) <= set(registry.runs[model().task])
    assert set(registry.pending[model().task]) == {"meanwhile"}


def test_a_lower_k_holds_fewer_runs():
    sid, _ = milestone(1)
    learner, _ = refiner(drop_after=2)
    assert learner.learn_one(attested(drop_state(train_runs()[0], sid, "b1"), "runner-1")).model \
        is None
    assert learner.learn_one(attested(drop_state(train_runs()[1], sid, "b2"), "runner-2")).model \
        is not None


def test_refinement_needs_the_training_runs():
    registry = ModelRegistry()
    registry.add(model())
    result = Refiner(registry, runner_keys=RUNNER_KEYS).learn_one(
        attested(relabel(train_runs()[0], "x"), "runner-1"))
    assert result.model is None and "--train" in result.reason


def test_attested_successes_of_a_failing_run_from_two_runners_change_nothing():
    """The poisoning of issue 29: a failing run claimed a success twice (here even attested
    by two real runners, as with stolen keys) is held back, and the model still fails it."""
    failing = next(run for run in read_runs([TEST]) if run.run_id == "jl-save-textfile-test-11")
    assert judge_run(model(), failing).verdict == "fail"
    learner, registry = refiner()
    for number, runner in enumerate(("runner-1", "runner-2")):
        claimed = relabel(failing, f"poison-{number}")
        claimed.events[-1] = replace(claimed.events[-1], outcome="success")
        result = learner.learn_one(attested(claimed, runner))
        assert result.model is None and result.held == [f"poison-{number}"], result.reason
        assert f"({number + 1} of 3)" in result.reason
    assert registry.latest(model().task) is model()
    assert judge_run(registry.latest(model().task), failing).verdict == "fail"
