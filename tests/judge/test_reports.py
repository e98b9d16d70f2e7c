"""A milestone that is a tool's report on the finished work (the whole suite's result) is
met by the report asked for another way with other counts, never by the same request
with other counts or by a report in words no successful run showed."""
from tracegen import tool_run

from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn
from trustlayer.observe.templates import shape_of

FIXED = {"lib.py": "f" * 64}


def run(run_id: str, command: str, report: str, files: dict[str, str] | None = None):
    """Read the task, fix lib.py, run `command` (printing `report`), close the session."""
    fixed = files or {"lib.py": f"{run_id:f<64}"[:64].replace("-", "0")}
    return tool_run(run_id, [
        ("", "", "Task: fix the parser bug", {"lib.py": "0" * 64}),
        ("edit_file", "", "Edited lib.py", fixed),
        ("run_tests", command,
         f"$ {command}\n........ [100%]\n{report} in 0.52s\n[exit code 0]", fixed),
        ("", "", "[session closed]", fixed)])


TRAINING = [run(f"train-{n}", "pytest -q", f"{40 + n} passed, 5 skipped") for n in range(4)]


def test_shape_of_a_report_keeps_its_words():
    assert shape_of("X|45 passed , 5 skipped") == shape_of("X|141 passed , 7 skipped")
    assert shape_of("X|45 passed , 5 skipped") != shape_of("X|45 passed , 5 failed")


def test_the_report_asked_for_another_way_passes_with_a_note():
    model = learn(TRAINING)
    report = next(s for s in model.transient
                  if "X|[ exit code 0 ]" in model.states[s].profile.templates)
    status = judge_run(model, run("targeted", "pytest -q tests/test_parser.py",
                                  "9 passed, 1 skipped"))
    assert status.verdict == "pass", status.reason
    assert status.warnings == [f"showed '{model.name(report)}' with other counts than every "
                               "successful run"]


def test_the_same_request_with_other_counts_fails():
    model = learn(TRAINING)
    status = judge_run(model, run("one-test-fewer", "pytest -q", "40 passed, 4 skipped"))
    assert status.verdict == "fail" and "never reached" in status.details


def test_a_report_in_new_words_fails_however_asked():
    model = learn(TRAINING)
    status = judge_run(model, run("red", "pytest -q tests/test_parser.py", "8 passed, 1 failed"))
    assert status.verdict == "fail"


def reports(run_id: str, commands: list[str]):
    """Fix lib.py, then run each test command (successful runs ran their own file's tests,
    then the whole suite)."""
    fixed = {"lib.py": "f" * 64}
    counts = {"pytest -q tests/test_parser.py": 9, "pytest -q": 45}
    steps = [("", "", "Task: fix the parser bug", {"lib.py": "0" * 64}),
             ("edit_file", "", "Edited lib.py", fixed)]
    steps += [("run_tests", command, f"$ {command}\n........ [100%]\n{counts[command]} passed in "
               "0.52s\n[exit code 0]", fixed) for command in commands]
    return tool_run(run_id, steps + [("", "", "[session closed]", fixed)])


def test_one_report_meets_the_reports_successful_runs_made_one_after_another():
    both = ["pytest -q tests/test_parser.py", "pytest -q"]
    model = learn([reports(f"train-{n}", both) for n in range(3)])
    assert len([s for s in model.essential if s in model.transient]) == 2
    assert judge_run(model, reports("whole suite only", both[1:])).verdict == "pass"
    assert judge_run(model, reports("no report", [])).verdict == "fail"
