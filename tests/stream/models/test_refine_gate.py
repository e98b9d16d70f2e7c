"""Issue 42's probes of online refinement, without a broker: one runner's key cannot stretch
the deadlines (or change anything else that decides a verdict), learned times stay bounded
even when K runners agree, a rollback's runs stay out of later versions until released, and
runners sharing a key are refused."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from streamkit import RUNNER_KEYS, attested, example_events, model, relabel, train_runs

from stream.models.attest import KEYS_ENV, runner_keys, shared_keys
from stream.models.gate import gated_changes, slower
from stream.models.refine import Refiner
from stream.models.registry import ModelRegistry
from trustlayer.judge.deadlines import deadline, learned_silence
from trustlayer.judge.matcher import Matcher
from trustlayer.learn.learner import TIME_CEILING, TIME_STRETCH, learn, time_bound
from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.trace_events import Run

TASK = model().task


def seeded() -> tuple[Refiner, ModelRegistry]:
    registry = ModelRegistry()
    registry.add(model())
    registry.add_runs(train_runs())
    return Refiner(registry, runner_keys=RUNNER_KEYS), registry


def stretched(run: Run, new_id: str) -> Run:
    """`run` as `new_id`, its i-th event at ``t0 + i * 1e6`` (the probe's forged success)."""
    t0 = run.events[0].ts
    events = [replace(e, run_id=new_id, ts=t0 + i * 1e6,
                      raw={**e.raw, "run_id": new_id, "ts": t0 + i * 1e6})
              for i, e in enumerate(run.events)]
    return Run(new_id, run.task, events)


def stuck_fails(chosen, after: float) -> bool:
    """Does a run of `chosen` stuck after its first three events fail `after` seconds on?"""
    matcher = Matcher(chosen)
    for raw in example_events()[0][:3]:
        matcher.feed(parse_event(raw))
    assert matcher.start_ts is not None
    return matcher.tick(matcher.start_ts + after).status == "failed"


def longest_deadline(chosen) -> float:
    return max(deadline(stats, chosen.settings) or 0.0
               for per_state in chosen.timing.values() for stats in per_state.values())


def test_learned_times_are_bounded_by_the_median_and_a_ceiling():
    assert time_bound([13.0, 15.0, 21.0]) == 21.0
    assert time_bound([13.0, 15.0, 21.0, 3e7]) == TIME_STRETCH * 18.0
    assert time_bound([3e7] * 5) == TIME_CEILING


def test_one_runner_stretching_its_timestamps_changes_no_deadline():
    learner, registry = seeded()
    forged = attested(stretched(train_runs()[2], "stretched"), "runner-1")
    assert learner.runner(forged) == "runner-1"
    assert slower(model(), forged)  # it misses deadlines the model in use sets
    result = learner.learn_one(forged)
    assert result.model is None and result.held == ["stretched"], result.reason
    assert "misses the deadline" in result.reason and "(1 of 3)" in result.reason
    assert registry.latest(TASK) is model()
    # a stuck run still fails at the deadline it failed at before
    limit = longest_deadline(model())
    assert stuck_fails(registry.latest(TASK), limit + 1)
    # an honest run of the same runner later is not held back by the forged one
    honest = learner.learn_one(attested(relabel(train_runs()[3], "honest"), "runner-1"))
    assert honest.model is not None and honest.merged == ["honest"], honest.reason
    assert "stretched" not in honest.model.training_runs
    assert longest_deadline(honest.model) == limit


def test_k_runners_stretching_their_timestamps_change_the_deadlines_only_in_shadow_and_bounded():
    """K runners may change the deadlines, in a version tried in shadow first; still no
    learned time exceeds ten medians or a day (not the probe's 3e7 s)."""
    learner, _ = seeded()
    results = [learner.learn_one(attested(stretched(train_runs()[n], f"stretched-{n}"),
                                          f"runner-{n + 1}")) for n in range(3)]
    tried = results[-1]
    assert tried.model is not None and tried.model.history[-1]["shadow"] is True, tried.reason
    assert tried.held == ["stretched-0", "stretched-1", "stretched-2"]
    assert any(change.startswith("deadline to") for change in
               tried.model.history[-1]["changes"])
    factor = model().settings.deadline_factor
    for per_state in tried.model.timing.values():
        for stats in per_state.values():
            assert stats["bound"] <= min(TIME_STRETCH * stats["median"], TIME_CEILING)
    assert learned_silence(tried.model) <= factor * TIME_CEILING
    assert stuck_fails(tried.model, longest_deadline(tried.model) + 1)


def test_every_part_that_decides_a_verdict_is_gated():
    assert gated_changes(model(), model()) == []
    last = model().essential[-1]
    guarded = replace(model(), end_evidence={last: ["X|saved"]}, negative=[last],
                      required_words={"notes.txt": ["hello"]})
    assert gated_changes(guarded, model()) == ["end evidence", "negative milestones",
                                               "required words"]
    renamed_state = replace(guarded, end_evidence={"another id": ["X|saved"]})
    assert "end evidence" not in gated_changes(guarded, renamed_state)
    slow = replace(model(), timing={kind: {sid: {**stats, "bound": 1000.0}
                                           for sid, stats in per_state.items()}
                                    for kind, per_state in model().timing.items()})
    found = gated_changes(model(), slow)
    assert any(line.startswith("deadline to reach") and line.endswith("-> 3000 s")
               for line in found)
    assert any(line.startswith("end-of-run silence") for line in found)


def test_a_version_changing_a_gated_part_needs_k_runners():
    """Runs the model passes on time, whose version would still change what decides a
    verdict (here the learner's required words are made to differ), are held until K
    runners vouch for them, then tried in shadow."""
    def learner_changing_words(runs, settings, **options):
        return replace(learn(runs, settings, **options), required_words={"a.txt": ["hello"]})
    registry = ModelRegistry()
    registry.add(model())
    registry.add_runs(train_runs())
    refiner = Refiner(registry, runner_keys=RUNNER_KEYS, learner=learner_changing_words)
    one = refiner.learn_one(attested(relabel(train_runs()[2], "one"), "runner-1"))
    assert one.model is None and "required words" in one.reason and "(1)" in one.reason
    two = refiner.learn_one(attested(relabel(train_runs()[3], "two"), "runner-2"))
    assert two.model is None and two.held == ["one", "two"] and "(2)" in two.reason
    three = refiner.learn_one(attested(relabel(train_runs()[4], "three"), "runner-3"))
    assert three.model is not None and three.model.history[-1]["shadow"] is True
    assert three.model.history[-1]["changes"] == ["required words"]
    assert registry.latest(TASK) is model()


def test_a_rollback_quarantines_its_runs_until_released():
    learner, registry = seeded()
    merged = learner.learn_one(attested(relabel(train_runs()[2], "merged"), "runner-1"))
    assert merged.model is not None
    registry.add(merged.model)
    rolled = registry.rollback(TASK, model().version)
    assert rolled.history[-1]["quarantined"] == ["merged"]
    registry.add(rolled)
    assert registry.quarantined(TASK) == {"merged": rolled.version}
    again = learner.learn_one(attested(relabel(train_runs()[2], "merged"), "runner-1"))
    assert again.model is None and "quarantined by the rollback" in again.reason
    later = learner.learn_one(attested(relabel(train_runs()[3], "later"), "runner-1"))
    assert later.model is not None and "merged" not in later.model.training_runs
    assert "later" in later.model.training_runs
    registry.add(later.model)
    # a later rollback does not quarantine the rolled-back runs twice, nor release them
    assert registry.quarantined(TASK) == {"merged": rolled.version}
    with pytest.raises(KeyError, match="not quarantined"):
        registry.release(TASK, ["later"])
    released = registry.release(TASK, ["merged"])
    registry.add(released)
    assert registry.quarantined(TASK) == {} and released.history[-1]["released"] == ["merged"]
    after = learner.learn_one(attested(relabel(train_runs()[4], "after"), "runner-1"))
    assert after.model is not None and "merged" in after.model.training_runs


def test_a_rejected_shadow_version_quarantines_its_runs():
    learner, registry = seeded()
    tried = [learner.learn_one(attested(stretched(train_runs()[n], f"s-{n}"),
                                        f"runner-{n + 1}")) for n in range(3)][-1]
    assert tried.model is not None
    registry.add(tried.model)
    rejected = registry.rollback(TASK, model().version, rejected_shadow=tried.model.version)
    registry.add(rejected)
    assert set(registry.quarantined(TASK)) == {"s-0", "s-1", "s-2"}
    assert registry.shadow(TASK) is None and registry.latest(TASK) is rejected


def test_runners_sharing_a_key_are_refused_naming_them(tmp_path, monkeypatch):
    """The probe's keys: three runner ids with one secret (and a local runner)."""
    key = "one secret for three runner ids, long enough"
    path = tmp_path / "runners.json"
    path.write_text(json.dumps({"local": "the local runner's own key, long enough",
                                "r1": key, "r2": key, "r3": key}))
    monkeypatch.setenv(KEYS_ENV, str(path))
    with pytest.raises(OSError, match="runners r1, r2, r3 share one key"):
        runner_keys()
    worker = subprocess.run([sys.executable, "-m", "trustlayer.cli", "worker", "--broker",
                             "127.0.0.1:1"], capture_output=True, text=True, timeout=120)
    assert worker.returncode == 2
    assert worker.stderr.strip().splitlines() == [
        f"trustlayer worker: error: {path}: runners r1, r2, r3 share one key: each runner "
        "needs its own secret to count as independent"]
    shared = {"runner-1": RUNNER_KEYS["runner-1"], "runner-2": RUNNER_KEYS["runner-1"]}
    assert shared_keys(shared) is not None and shared_keys(RUNNER_KEYS) is None
    with pytest.raises(ValueError, match="runner-1, runner-2 share one key"):
        Refiner(ModelRegistry(), runner_keys=shared)
