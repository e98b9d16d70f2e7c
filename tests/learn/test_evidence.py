"""Evidence of the goal learned from successful runs: habits skipped with a warning,
lasting milestones required, required outputs, the run's end, and files left alone."""
import copy
import dataclasses

from devsets import DEVTRACES, SHARED
from tracegen import as_run, events_for, tool_run

from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn
from trustlayer.model import Model
from trustlayer.observe.traces import load_labels, read_runs

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
    assert status.verdict == "fail" and model.name(typed) in status.details


def test_a_required_output_given_another_value_fails():
    model = learn(TRAINING)
    assert model.required_outputs == {"tool:report": "8"}
    status = judge_run(model, run("new", [HOME, PROBE, TYPED, SAVED], "9"))
    assert status.verdict == "fail"
    assert "every successful run called it with '8'" in status.details


def test_a_run_must_end_where_successful_runs_end():
    model = learn(TRAINING)
    status = judge_run(model, run("new", [HOME, PROBE, TYPED, SAVED, HOME], "8"))
    assert status.verdict == "fail" and "not where successful runs end" in status.details


def test_the_page_every_successful_run_started_on_is_a_habit_when_they_left_it():
    table, search, result = "Table\nrow 1\nrow 2", "Table\nSearch: 8", "Result\nSearch: 8\nrow 8"
    model = learn([run(f"train-{n}", [table, search, result]) for n in range(3)])
    [start] = [sid for sid in model.essential if "X|row 1" in model.states[sid].profile.templates]
    assert start in model.incidental
    status = judge_run(model, run("elsewhere", [search, result]))
    assert status.verdict == "pass" and model.name(start) in status.warnings[0]


def screens_run(run_id: str, steps: list[tuple[str | None, str]]):
    """A run of `(action target or None when the screen changed on its own, screen)`."""
    events = []
    for target, text in steps:
        if target:
            events.append({"kind": "action", "action": {"type": "click", "target": target}})
        events.append({"kind": "state", "observation": {"text": text}})
    events.append({"kind": "end", "outcome": "success"})
    for seq, event in enumerate(events):
        event.update(v=1, run_id=run_id, task="gen-task", seq=seq, ts=1000.0 + seq)
    return as_run(events)


def test_what_the_product_showed_on_its_own_is_no_lasting_step():
    # every successful run happened to get a news toast on the home screen; some kept it
    toast = "Would you like news?\nYes\nNo"
    home, form = "Home\nFiles", "Home\nFiles\nName: report"
    saved = f"{form}\nreport saved"
    kept = [[(None, "Loading"), (None, f"{home}\n{toast}"), ("new", f"{form}\n{toast}"),
             ("save", f"{saved}\n{toast}")]]
    dismissed = [[(None, "Loading"), (None, f"{home}\n{toast}"), ("No", home), ("new", form),
                  ("save", saved)]]
    training = [screens_run(f"train-{n}", steps)
                for n, steps in enumerate(kept * 2 + dismissed * 2)]
    model = learn(training)
    [with_toast] = [sid for sid in model.essential
                    if "X|Files" in model.states[sid].profile.templates
                    and "X|Name : report" not in model.states[sid].profile.templates
                    and "X|report saved" not in model.states[sid].profile.templates]
    assert with_toast in model.incidental
    quiet = screens_run("no news", [(None, "Loading"), (None, home), ("new", form),
                                    ("save", saved)])
    assert judge_run(model, quiet).verdict == "pass"
    unsaved = screens_run("unsaved", [(None, "Loading"), (None, home), ("new", form)])
    assert judge_run(model, unsaved).verdict == "fail"


START_TREE = {"lib.py": "11", "notes.md": "22", "test_lib.py": "33"}


def coding_run(run_id: str, final_tree: dict[str, str]):
    return tool_run(run_id, [("", "", "Task: fix lib.py", START_TREE),
                             ("edit_file", "lib.py", "Edited lib.py", final_tree),
                             ("run_tests", "pytest", "3 passed", final_tree)])


def test_a_file_no_successful_run_touched_may_be_touched_but_not_removed():
    fixed = dict(START_TREE, **{"lib.py": "f1"})
    model = learn([coding_run(f"train-{n}", fixed) for n in range(3)])
    also_notes = judge_run(model, coding_run("notes", dict(fixed, **{"notes.md": "n2"})))
    assert also_notes.verdict == "pass"
    without_notes = {path: digest for path, digest in fixed.items() if path != "notes.md"}
    assert judge_run(model, coding_run("removed", without_notes)).verdict == "fail"
    assert judge_run(model, coding_run("not fixed", START_TREE)).verdict == "fail"


def changed_files(run) -> set[str]:
    trees = [e.observation.files for e in run.events if e.kind == "state" and e.observation.files]
    return {path for path in trees[-1].keys() | trees[0].keys()
            if trees[-1].get(path) != trees[0].get(path)}


@DEVTRACES
def test_real_successes_that_touched_other_files_pass_a_model_of_runs_that_did_not():
    # the cli-flag task's test successes put their test in a new file or test_release.py;
    # half of its training runs put it in test_cli_interrupt.py, which none of them touched
    root = SHARED / "coding-dev2" / "slugify-cli-flag"
    labels = load_labels(root / "test")
    successes = [r for r in read_runs([root / "test"]) if labels[r.run_id]["outcome"] == "success"]
    touched = set().union(*map(changed_files, successes))
    others = [r for r in read_runs([root / "train"]) if changed_files(r) - touched]
    assert len(others) >= 4
    model = learn(successes)
    assert {r.run_id: judge_run(model, r).verdict for r in others} == \
        {r.run_id: "pass" for r in others}


def test_files_changing_with_no_action_fail_unless_successful_runs_saw_it():
    fixed = dict(START_TREE, **{"lib.py": "f1"})
    lost = tool_run("lost", [("", "", "Task: fix lib.py", START_TREE),
                             ("edit_file", "lib.py", "Edited lib.py", fixed),
                             ("run_tests", "pytest", "3 passed", fixed),
                             ("", "", "[session closed]", START_TREE)])  # the work is gone
    model = learn([coding_run(f"train-{n}", fixed) for n in range(3)])
    assert not model.files_change_alone
    status = judge_run(model, lost)
    assert status.verdict == "fail" and status.cause == "product_bug"
    assert "no action of the agent" in status.details and status.detected_at_seq == 5
    # where successful runs' files changed on their own too (a formatter), it is no news
    reformatted = dict(fixed, **{"lib.py": "f2"})
    formatted = [tool_run(f"fmt-{n}", [("", "", "Task: fix lib.py", START_TREE),
                                       ("edit_file", "lib.py", "Edited lib.py", fixed),
                                       ("", "", "Reformatted lib.py", reformatted),
                                       ("run_tests", "pytest", "3 passed", reformatted)])
                 for n in range(3)]
    assert learn(formatted).files_change_alone


def query_run(run_id: str, query: str, result: str, answer: str, page: str = "Query"):
    """Open the database page, run `query`, read `result`, report `answer`."""
    pages = [("/db", "db", "Database\nRun SQL"),
             ("/db", f"db: {query}", f"{page}\n{query}\n{result}\nRun SQL")]
    events = []
    for number, (url, title, text) in enumerate(pages):
        if number:
            events.append({"kind": "action", "action": {"type": "type", "target": "editor",
                                                        "value": query}})
        events.append({"kind": "state", "observation": {"url": f"http://h{url}", "title": title,
                                                        "text": text}})
    events.append({"kind": "action", "action": {"type": "tool", "target": "report_answer",
                                                "value": answer}})
    events.append({"kind": "end", "outcome": "success"})
    for seq, event in enumerate(events):
        event.update(v=1, run_id=run_id, task="sql-task", seq=seq, ts=1000.0 + seq)
    return as_run(events)


def test_a_run_that_gave_their_answer_where_they_gave_it_ends_as_they_end():
    queries = ["select count(*) from works", "select n from totals where kind = 'works'",
               "select sum(n) from counts"]
    model = learn([query_run(f"train-{n}", q, "78", "78") for n, q in enumerate(queries)])
    assert model.required_outputs == {"tool:report_answer": "78"}
    # another correct query, its result in another shape
    another_query = query_run("another", "select sum(n) from totals where kind = 'works'",
                              "sum(n)\n78", "78")
    assert judge_run(model, another_query).verdict == "pass"
    assert judge_run(model, query_run("wrong", queries[0], "81", "81")).verdict == "fail"
    error = query_run("error", queries[0], "database is locked", "78", page="Error 500")
    assert judge_run(model, error).verdict == "fail"


def test_who_is_to_blame_for_a_wrong_answer_is_what_the_screen_showed():
    queries = ["select count(*) from works", "select n from totals where kind = 'works'",
               "select sum(n) from counts"]
    model = learn([query_run(f"train-{n}", q, "78", "78") for n, q in enumerate(queries)])
    # the screen showed what successful runs read off it, and the agent reported another
    misread = judge_run(model, query_run("misread", queries[0], "78", "87"))
    assert misread.verdict == "fail" and misread.cause == "agent_error"
    assert "its screen showed that value" in misread.details
    # the product showed another value where they read it, and the agent reported it
    shown = judge_run(model, query_run("shown", queries[0], "81", "81"))
    assert shown.verdict == "fail" and shown.cause == "product_bug"


def test_an_end_shows_what_every_run_ending_there_showed_of_its_work():
    model = learn(TRAINING)
    [end] = model.accepting
    # the end state's members lacked the receipt (say, some were from before the save)
    model.states[end].profile = model.states[end].profile.with_optional(["X|receipt 7"])
    model = dataclasses.replace(model, end_evidence={end: ["X|receipt 7"]})
    with_receipt = run("receipt", [HOME, PROBE, TYPED, f"{SAVED}\nreceipt 7"], "8")
    assert judge_run(model, with_receipt).verdict == "pass"
    assert judge_run(model, run("no receipt", [HOME, PROBE, TYPED, SAVED], "8")).verdict == "fail"
    assert Model.from_json(model.to_json()).end_evidence == {end: ["X|receipt 7"]}


def test_negatives_make_a_new_model_and_leave_the_learned_one_as_it_was():
    from trustlayer.learn.learner import with_negatives

    model = learn([screens_run(f"train-{n}", [(None, "Editor open"), ("save", "File saved")])
                   for n in range(2)])
    negative = copy.deepcopy(next(iter(model.states.values())))
    negative.id = "n0"
    states, negatives = dict(model.states), list(model.negative)
    more = with_negatives(model, [negative])
    assert more is not model and more.negative == [*negatives, "n0"] and "n0" in more.states
    assert model.states == states and model.negative == negatives
