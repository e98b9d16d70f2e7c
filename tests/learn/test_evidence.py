"""Evidence of the goal learned from successful runs: habits skipped with a warning,
lasting milestones required, required outputs, and the run's end."""
from tracegen import as_run, events_for

from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn

HOME, PROBE = "Home screen\nWelcome", "Probe output\nvalue check passed"
TYPED, SAVED = "Editor\nhello world", "Editor\nhello world\nSaved to notes.txt"


def run(run_id: str, screens: list[str], answer: str | None = None):
    events = events_for(run_id, screens)
    if answer is not None:  # the agent reports an answer before the run ends
        end = events[-1]
        events.insert(-1, dict(end, kind="action", action={"type": "tool", "target": "report",
                                                           "value": answer}))
        del events[-2]["outcome"]
        for seq, event in enumerate(events):
            event["seq"] = seq
    return as_run(events)


TRAINING = [run(f"train-{n}", [HOME, PROBE, TYPED, SAVED], "8") for n in range(3)]


def test_a_habit_every_successful_run_had_may_be_skipped_with_a_warning():
    model = learn(TRAINING)
    probe = next(sid for sid, state in model.states.items()
                 if "X|Probe output" in state.profile.templates)
    assert probe in model.essential and probe in model.incidental and probe in model.soft
    status = judge_run(model, run("new", [HOME, TYPED, SAVED], "8"))
    assert status.verdict == "pass"
    assert status.warnings == [f"took a route no successful run took: skipped "
                               f"'{model.name(probe)}'"]


def test_a_milestone_that_left_something_lasting_is_required():
    model = learn(TRAINING)
    typed = next(sid for sid in model.essential
                 if model.states[sid].profile.templates == ["X|Editor", "X|hello world"])
    assert typed not in model.soft
    status = judge_run(model, run("new", [HOME, PROBE, "Editor\nhello", SAVED], "8"))
    assert status.verdict == "fail" and model.name(typed) in status.reason


def test_a_required_output_given_another_value_fails():
    model = learn(TRAINING)
    assert model.required_outputs == {"tool:report": "8"}
    status = judge_run(model, run("new", [HOME, PROBE, TYPED, SAVED], "9"))
    assert status.verdict == "fail"
    assert "every successful run called it with '8'" in status.reason


def test_a_run_must_end_where_successful_runs_end():
    model = learn(TRAINING)
    status = judge_run(model, run("new", [HOME, PROBE, TYPED, SAVED, HOME], "8"))
    assert status.verdict == "fail" and "not where successful runs end" in status.reason
