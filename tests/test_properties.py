"""Properties of learning and matching on generated runs (hypothesis)."""
import random

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tracegen import MILESTONES, as_run, events_for, make_screens

from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn

EXTRA_SCREENS = ("Loading spinner", "News toast: would you like updates?", "Help menu open\nAbout",
                 "Sidebar detour\nRunning kernels")
extras = st.lists(st.tuples(st.integers(0, len(MILESTONES)), st.sampled_from(EXTRA_SCREENS)),
                  max_size=3)


def training_runs(extra_lists):
    return [as_run(events_for(f"train-{n}", make_screens(n, extra)))
            for n, extra in enumerate(extra_lists)]


@settings(max_examples=15, deadline=None)
@given(st.lists(extras, min_size=2, max_size=5))
def test_every_training_run_passes_its_own_model(extra_lists):
    runs = training_runs(extra_lists)
    model = learn(runs)
    for run in runs:
        assert judge_run(model, run).verdict == "pass", run.run_id


# extras before the last milestone: the run still ends where successful runs end
extras_on_the_way = st.lists(st.tuples(st.integers(0, len(MILESTONES) - 1),
                                       st.sampled_from(EXTRA_SCREENS)), max_size=3)


@settings(max_examples=15, deadline=None)
@given(st.lists(extras, min_size=2, max_size=4), extras_on_the_way, st.integers(0, 5))
def test_extra_states_never_turn_a_pass_into_a_fail(extra_lists, inserted, run_number):
    model = learn(training_runs(extra_lists))
    like_training = extra_lists[0]
    plain = as_run(events_for("new", make_screens(run_number + 10, like_training)))
    assert judge_run(model, plain).verdict == "pass"
    more = like_training + inserted + [(2, "Unseen popup")]
    busy = as_run(events_for("new", make_screens(run_number + 10, more)))
    assert judge_run(model, busy).verdict == "pass"


@settings(max_examples=15, deadline=None)
@given(st.lists(extras, min_size=2, max_size=4), st.integers(0, 5))
def test_a_run_that_ends_on_an_unseen_screen_fails(extra_lists, run_number):
    model = learn(training_runs(extra_lists))
    screens = make_screens(run_number + 10, extra_lists[0]) + ["Error 500\nInternal failure"]
    status = judge_run(model, as_run(events_for("new", screens)))
    assert status.verdict == "fail" and "not where successful runs end" in status.details


@settings(max_examples=15, deadline=None)
@given(st.lists(extras, min_size=2, max_size=4), st.data())
def test_removing_an_essential_state_always_fails(extra_lists, data):
    runs = training_runs(extra_lists)
    model = learn(runs)
    hard = [s for s in model.essential if s not in model.soft]
    assume(hard)  # screens seen at different points by different runs can leave none
    removed = data.draw(st.sampled_from(hard))
    dropped_seqs = {seq for run_id, seq in model.states[removed].members if run_id == "train-0"}
    screens = [e.observation.text for e in runs[0].events
               if e.kind == "state" and e.seq not in dropped_seqs]
    status = judge_run(model, as_run(events_for("new", screens)))
    assert status.verdict == "fail"
    assert model.name(removed) in status.missing or model.name(removed) in status.details


@settings(max_examples=10, deadline=None)
@given(st.lists(extras, min_size=2, max_size=5), st.randoms(use_true_random=False))
def test_order_of_training_runs_does_not_change_the_essential_chain(extra_lists,
                                                                     rng: random.Random):
    runs = training_runs(extra_lists)
    shuffled = runs[:]
    rng.shuffle(shuffled)
    first, second = learn(runs), learn(shuffled)
    assert [first.name(s) for s in first.essential] == [second.name(s) for s in second.essential]
    assert first == second
