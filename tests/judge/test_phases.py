"""Phases: milestone-to-milestone segments of the learned graph, named after milestones."""
from __future__ import annotations

import pytest
from devsets import EXAMPLES

from trustlayer.judge.matcher import Matcher
from trustlayer.judge.phases import (
    frame_phases,
    hard_milestones,
    phase_of,
    phases,
    where,
)
from trustlayer.learn.learner import learn
from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.trace_events import Run
from trustlayer.observe.traces import read_run, read_runs


def text_run(run_id: str, screens: list[str]) -> Run:
    events = [{"kind": "state", "observation": {"text": text}} for text in screens]
    events.append({"kind": "end", "outcome": "success"})
    return Run(run_id, "t", [parse_event({"v": 1, "run_id": run_id, "task": "t", "seq": i,
                                          "ts": float(i), **e}) for i, e in enumerate(events)])


LAUNCH, HOME, TIPS, SEARCH, RESULTS = ("Launching", "Home\nsearch box", "Tips\nclose tips",
                                       "Search dialog\nquery", "Results\n3 hits")


def state_showing(model, line: str) -> str:
    return min((sid for sid, s in model.states.items() if line in s.profile.templates),
               key=lambda sid: int(sid[1:]))


@pytest.fixture(scope="module")
def model():
    return learn([text_run("a", [LAUNCH, HOME, SEARCH, RESULTS]),
                  text_run("b", [LAUNCH, HOME, TIPS, SEARCH, RESULTS]),
                  text_run("c", [LAUNCH, TIPS, HOME, SEARCH, RESULTS])])


def test_phases_cut_at_milestones_and_hold_the_states_between(model):
    found = phases(model)
    names = [model.name(s) for s in hard_milestones(model)]
    assert [p.name for p in found] == names  # one phase per milestone, named after it
    assert [p.milestone for p in found] == hard_milestones(model)
    tips = state_showing(model, "X|Tips")  # shown before Home in one run, after in another
    assert tips not in model.essential
    assert phase_of(model, tips).index == 1  # after Launching, before Home: phase 2
    assert all(p.states[-1] == p.milestone for p in found)
    assert sorted(s for p in found for s in p.states) == sorted(model.states)


def test_where_names_the_phase_and_the_milestone_before(model):
    search = state_showing(model, "X|Search dialog")
    home = state_showing(model, "X|Home")
    assert where(model, search) == f"in phase '{model.name(search)}' after '{model.name(home)}'"
    assert where(model, model.name(search)) == where(model, search)
    assert where(model, hard_milestones(model)[0]).endswith("from the start")
    assert where(model, "no such state") == ""


def test_frames_of_a_real_failed_run_fall_into_phases():
    root = EXAMPLES / "jupyter"
    model = learn(read_runs([root / "train"]))
    assert [p.name for p in phases(model)] == ["untitled.txt", "hello world", "Saving completed"]
    matcher = Matcher(model)
    for event in read_run(root / "test" / "jl-save-textfile-test-16.jsonl").events:
        status = matcher.feed(event)
    assert status.verdict == "fail"
    in_phase = frame_phases(model, matcher.history)
    assert in_phase == sorted(in_phase) and in_phase[0] == 0 and in_phase[-1] == 2
    assert where(model, status.missing[0]) == "in phase 'Saving completed' after 'hello world'"
