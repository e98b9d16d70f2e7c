"""Model registry (versions, change log, rollback) and online refinement with the K-bypass
guard, without a broker."""
from __future__ import annotations

from dataclasses import replace

import pytest
from streamkit import drop_state, model, relabel, train_runs

from stream.refine import Refiner, bypassed_milestones, is_success
from stream.registry import ModelRegistry, decode_model, encode_model, milestone_diff


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


def test_only_successes_are_learned_from():
    assert is_success("success") and not is_success("failure")
    assert not is_success("unknown", "pass") and is_success("unknown", "pass", use_verdicts=True)
    registry = seeded_registry()
    refiner = Refiner(registry)
    failed = relabel(train_runs()[0], "failed-run")
    failed.events[-1] = replace(failed.events[-1], outcome="failure")
    result = refiner.learn_one(failed, verdict="pass")
    assert result.model is None and "not a successful run" in result.reason


def test_a_successful_run_makes_a_new_version_with_its_diff():
    registry = seeded_registry()
    result = Refiner(registry).learn_one(relabel(train_runs()[2], "online-1"))
    assert result.model is not None and result.merged == ["online-1"]
    assert result.model.version == model().version + 1
    entry = result.model.history[-1]
    assert entry["action"] == "refined" and entry["runs"] == ["online-1"]
    assert entry["dropped"] == [] and entry["parent"] == model().version
    assert "online-1" in result.model.training_runs
    assert "online-1" in registry.runs[model().task]
    # the same run again changes nothing
    registry.add(result.model)
    assert Refiner(registry).learn_one(relabel(train_runs()[2], "online-1")).model is None


def test_a_milestone_is_dropped_only_after_k_successful_runs_bypassed_it():
    sid, name = milestone(1)
    registry = seeded_registry()
    refiner = Refiner(registry)  # K = settings.drop_after_bypasses = 2
    assert model().settings.drop_after_bypasses == 2
    one = drop_state(train_runs()[0], sid, "bypass-1")
    assert bypassed_milestones(model(), one) == [name]
    held = refiner.learn_one(one)
    assert held.model is None and held.held == ["bypass-1"]
    assert f"'{name}' (1 of 2)" in held.reason
    assert "bypass-1" in registry.pending[model().task]

    two = drop_state(train_runs()[1], sid, "bypass-2")
    merged = refiner.learn_one(two)
    assert merged.model is not None, merged.reason
    assert sorted(merged.merged) == ["bypass-1", "bypass-2"]
    assert merged.diff["dropped"] == [name] and merged.bypasses == {name: 2}
    assert merged.model.history[-1]["dropped"] == [name]
    assert name not in [merged.model.name(s) for s in merged.model.essential]
    assert not registry.pending[model().task]


def test_a_higher_k_holds_more_runs():
    sid, _ = milestone(1)
    refiner = Refiner(seeded_registry(), drop_after=3)
    assert refiner.learn_one(drop_state(train_runs()[0], sid, "b1")).model is None
    assert refiner.learn_one(drop_state(train_runs()[1], sid, "b2")).model is None
    assert refiner.learn_one(drop_state(train_runs()[2], sid, "b3")).model is not None


def test_refinement_needs_the_training_runs():
    registry = ModelRegistry()
    registry.add(model())
    result = Refiner(registry).learn_one(relabel(train_runs()[0], "x"))
    assert result.model is None and "--train" in result.reason


def test_the_stream_modules_doctests():
    import doctest

    import stream.console
    import stream.deadletter
    import stream.refine
    import stream.registry
    import stream.replay
    import stream.stall
    import stream.topics

    for module in (stream.console, stream.deadletter, stream.refine, stream.registry, stream.replay,
                   stream.stall, stream.topics):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__
