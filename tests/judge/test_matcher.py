"""The incremental matcher: statuses event by event, negatives, deadlines, snapshots."""
import json

import pytest
from devsets import DATA, REPO, SHARED, SLICE_TASKS, dev
from tracegen import as_run, events_for, make_screens

from trustlayer.judge.matcher import Matcher, judge_run
from trustlayer.judge.reasons import DEADLINE, NEGATIVE_MILESTONE
from trustlayer.judge.resume import restore, snapshot, with_rows
from trustlayer.learn.learner import learn
from trustlayer.observe.traces import read_runs


def model_with_negative():
    runs = [as_run(events_for(f"train-{n}", make_screens(n))) for n in range(3)]
    failed = as_run(events_for("failed-0", make_screens(0)[:2] + ["Error dialog\nServer said 500"],
                               outcome="failure"))
    return learn(runs + [failed], causes={"failed-0": "product_bug"})


def test_status_goes_running_then_passed_and_final_at_end():
    model = learn([as_run(events_for(f"train-{n}", make_screens(n))) for n in range(3)])
    matcher = Matcher(model)
    statuses = [matcher.feed(e).status for e in as_run(events_for("new", make_screens(4))).events]
    assert statuses[0] == "running" and statuses[-2] == "passed"
    assert matcher.status.final and matcher.status.verdict == "pass"
    assert matcher.status.coverage == 1.0


def test_early_warning_when_a_later_state_comes_before_its_milestone():
    model = learn([as_run(events_for(f"train-{n}", make_screens(n))) for n in range(3)])
    screens = make_screens(4)
    matcher = Matcher(model)
    run = as_run(events_for("new", [screens[0], screens[2]]))
    seen = [matcher.feed(e).status for e in run.events]
    assert "at_risk" in seen
    assert seen[-1] == "failed"


def test_negative_milestone_fails_the_run_at_once():
    model = model_with_negative()
    assert model.negative and model.states[model.negative[0]].negative_cause == "product_bug"
    events = as_run(events_for("new", make_screens(5)[:2] + ["Error dialog\nServer said 500"]
                               + make_screens(5)[2:])).events
    matcher = Matcher(model)
    for event in events:
        status = matcher.feed(event)
        if status.status == "failed":
            break
    assert status.detected_at_seq == 4 and "negative milestone" in status.details
    assert status.cause == "product_bug" and status.code == NEGATIVE_MILESTONE
    assert status.reason.startswith("Failed at step 4: expected ")


def test_snapshot_restore_resumes_mid_run():
    model = learn([as_run(events_for(f"train-{n}", make_screens(n))) for n in range(3)])
    events = as_run(events_for("new", make_screens(4))).events
    whole = judge_run(model, as_run(events_for("new", make_screens(4))))
    first = Matcher(model)
    for event in events[:5]:
        first.feed(event)
    resumed = restore(model, json.loads(json.dumps(snapshot(first))))
    for event in events[5:]:
        status = resumed.feed(event)
    assert status.to_json() == whole.to_json()


def test_deadline_fails_a_silent_run():
    model = learn([as_run(events_for(f"train-{n}", make_screens(n))) for n in range(3)])
    matcher = Matcher(model)
    first = as_run(events_for("new", make_screens(4))).events[0]
    matcher.feed(first)
    assert matcher.tick(first.ts + 1).status != "failed"
    status = matcher.tick(first.ts + 3600)
    assert status.status == "failed" and "not reached within" in status.details
    assert status.code == DEADLINE and "not reached within" in status.reason


def test_late_from_is_where_a_deadline_starts_to_hold():
    """The stream's timer looks at a quiet run again when its deadline may hold: never
    after the time `late` first finds one passed, at every state of a run."""
    model = learn([as_run(events_for(f"train-{n}", make_screens(n))) for n in range(3)])
    matcher, told = Matcher(model), 0
    for event in as_run(events_for("new", make_screens(4))).events:
        matcher.feed(event)
        start = matcher.late_from()
        if start is not None and not matcher.status.final:
            assert matcher.late(start - 0.01) is None and matcher.late(start + 0.01) is not None
            told += 1
    assert told >= 3


@pytest.mark.parametrize("task", [REPO / "examples" / "jupyter",
                                  *(DATA / name for name in SLICE_TASKS),
                                  dev(SHARED / "coding-dev"),
                                  dev(SHARED / "datasette-dev" / "ds-countries-filter-count")],
                         ids=lambda path: path.name)
def test_a_run_restored_at_every_event_gets_the_batch_status(task):
    """The snapshot keeps what resuming needs: file facts of the previous state (coding),
    the screen a required output is looked up on (datasette), the network answers seen
    (django), the history for causes."""
    model = learn(read_runs([task / "train"]))
    for run in read_runs([task / "test"]):
        restored, whole = Matcher(model), Matcher(model)
        for event in run.events:
            restored = restore(model, json.loads(json.dumps(snapshot(restored))))
            restored.feed(event)
            whole.feed(event)
            assert snapshot(restored) == snapshot(whole), (run.run_id, event.seq)
        if run.end is None:
            restored.close(run.events[-1].seq)
        assert restored.status.to_json() == judge_run(model, run).to_json(), run.run_id


@pytest.mark.parametrize("task", [DATA / "slugify-fix-regex-bug", dev(SHARED / "coding-dev")],
                         ids=lambda path: path.name)
def test_snapshots_written_by_older_versions_still_restore(task):
    """History rows were dicts, then lists without the fields added since (``ends``,
    ``files_moved``, ``shown``): a run resumed from either at every event gets the batch
    status."""
    model = learn(read_runs([task / "train"]))
    old_forms = (lambda row: dict(zip(("seq", "ts", "ids", "via", "novel", "ends"), row)),
                 lambda row: row[:5])
    for run in read_runs([task / "test"])[:4]:
        for old_form in old_forms:
            matcher = Matcher(model)
            for event in run.events:
                saved = json.loads(json.dumps(snapshot(matcher)))
                saved["history"] = [old_form(row) for row in saved["history"]]
                matcher = restore(model, saved)
                matcher.feed(event)
            if run.end is None:
                matcher.close(run.events[-1].seq)
            got, batch = matcher.status.to_json(), judge_run(model, run).to_json()
            # rows older than ``shown`` tell a state by its new words, not its line: the
            # same verdict, worded from less
            assert got.pop("reason").split(":")[0] == batch.pop("reason").split(":")[0]
            del got["details"], batch["details"]
            assert got == batch, run.run_id


NOTICE = "\nWould you like to get news?\nYes\nNo"


def test_a_notice_no_training_run_got_left_open_while_the_agent_worked_on_passes():
    """Lines that came over a known state and stayed while the screens beneath went on
    through the milestones are a notice, not the outcome (the popup of the problem)."""
    model = learn([as_run(events_for(f"train-{n}", make_screens(n))) for n in range(3)])
    screens = make_screens(4)
    covered = screens[:2] + [text + NOTICE for text in screens[2:]]
    status = judge_run(model, as_run(events_for("new", covered)))
    assert status.verdict == "pass" and status.coverage == 1.0, status.details


def test_a_snapshot_without_the_rows_kept_apart_is_whole_again_with_them():
    """The worker keeps a long run's older history rows apart, as they were when it sealed
    them (stream.judging.parts). The row the notice came with is matched again later: the
    snapshot keeps it, and the rows put back give every later snapshot whole."""
    model = learn([as_run(events_for(f"train-{n}", make_screens(n))) for n in range(3)])
    screens = make_screens(4)
    run = as_run(events_for("new", screens[:2] + [text + NOTICE for text in screens[2:]]))
    matcher, kept_apart, amended = Matcher(model), [], 0
    for event in run.events:
        matcher.feed(event)
        whole = json.loads(json.dumps(snapshot(matcher)))
        for rows in kept_apart:
            data = json.loads(json.dumps(snapshot(matcher, since=len(rows))))
            amended += "amended" in data
            assert len(data["history"]) == len(whole["history"]) - len(rows)
            assert with_rows(data, rows) == whole
        kept_apart.append(json.loads(json.dumps(whole["history"])))
    assert matcher.overlay.worked_beneath and amended  # a row was matched again after


def test_a_notice_that_came_over_a_screen_no_training_run_showed_passes_too():
    model = learn([as_run(events_for(f"train-{n}", make_screens(n))) for n in range(3)])
    screens, loading = make_screens(4), "Loading the application\nPlease wait"
    shown = [screens[0], loading, loading + NOTICE] + [text + NOTICE for text in screens[1:]]
    status = judge_run(model, as_run(events_for("new", shown)))
    assert status.verdict == "pass" and status.coverage == 1.0, status.details


def test_a_notice_over_the_end_that_no_work_followed_is_still_news():
    model = learn([as_run(events_for(f"train-{n}", make_screens(n))) for n in range(3)])
    screens = make_screens(4)
    for shown in (screens[:-1] + [screens[-1] + NOTICE],  # over the end state itself
                  screens + [screens[-1] + NOTICE]):  # over it after it, nothing beneath moved
        status = judge_run(model, as_run(events_for("new", shown)))
        assert status.verdict == "fail", shown[-1]
