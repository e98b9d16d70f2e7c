"""Code lines every successful run removed (read from the diffs its tools printed) must be
removed by a new run too; a file changed without a diff is not judged."""
import hashlib

from tracegen import tool_run

from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn
from trustlayer.observe.edits import RemovalLedger, diff_changes, required_removals
from trustlayer.observe.trace_events import Run

TASK = "Task: move helper() from a.py to b.py"
OLD = "def helper(x):\n    return x * 2\n"
MOVED = ("Edited a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,2 @@\n-def helper(x):\n"
         "-    return x * 2\n+from b import helper\n")
WRAPPED = ("Edited a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n def helper(x):\n"
           "-    return x * 2\n+    return _b.helper(x)\n")
PUT_BACK = "Edited a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,3 @@\n+def helper(x):\n"


def coding_run(run_id: str, edits: list[tuple[str, str]]) -> Run:
    """A run that edits a.py once per `(tool, text)` in `edits`, then passes its tests."""
    files = {"a.py": "0" * 64, "b.py": "1" * 64}
    steps = [("", "", TASK, dict(files))]
    for number, (tool, text) in enumerate(edits, 1):
        files["a.py"] = hashlib.sha256(f"{run_id} {number}".encode()).hexdigest()
        steps.append((tool, "", text, dict(files)))
    steps += [("run_tests", "pytest -q", "$ pytest -q\n3 passed in 0.4s", files),
              ("", "", "[session closed]", files)]
    return tool_run(run_id, steps)


TRAINING = [coding_run(f"train-{n}", [("edit_file", MOVED)]) for n in range(3)]


def test_diffs_are_read_per_file_with_lines_masked():
    assert diff_changes(MOVED) == {"a.py": ({"def helper(x):", "return x * 2"},
                                            {"from b import helper"})}


def test_a_line_put_back_later_is_not_removed():
    ledger = RemovalLedger()
    ledger.observe(MOVED, {"a.py"})
    ledger.observe(PUT_BACK, {"a.py"})
    assert ledger.removed == {"a.py": {"return x * 2"}}
    assert ledger.missing({"a.py": ["def helper(x):"]}) == [("a.py", "def helper(x):")]


def test_a_line_put_back_inside_a_longer_one_is_not_removed_until_that_goes():
    extended = "--- a/a.py\n+++ b/a.py\n-def helper(x):\n+def helper(x): # TODO\n"
    ledger = RemovalLedger({"a.py": ["def helper(x):"]})
    ledger.observe(extended, {"a.py"})
    assert ledger.missing({"a.py": ["def helper(x):"]}) == [("a.py", "def helper(x):")]
    ledger.observe("--- a/a.py\n+++ b/a.py\n-def helper(x): # TODO\n", {"a.py"})
    assert ledger.missing({"a.py": ["def helper(x):"]}) == []


def test_lines_every_successful_run_removed_are_learned():
    assert required_removals(TRAINING) == {"a.py": ["def helper(x):", "return x * 2"]}
    varied = TRAINING[:2] + [coding_run("train-x", [("edit_file", WRAPPED)])]
    assert required_removals(varied) == {"a.py": ["return x * 2"]}


def test_a_run_that_kept_what_every_successful_run_removed_fails():
    model = learn(TRAINING)
    same = judge_run(model, coding_run("same", [("edit_file", MOVED)]))
    assert same.verdict == "pass", same.reason
    status = judge_run(model, coding_run("wrapper", [("edit_file", WRAPPED)]))
    assert status.verdict == "fail" and status.cause == "agent_error"
    assert status.details == ("every successful run removed `def helper(x):` from a.py; "
                             "this run's edits kept it")


def test_a_file_changed_without_a_diff_is_not_judged():
    model = learn(TRAINING)
    status = judge_run(model, coding_run("sed", [("shell", "[exit code 0]")]))
    assert status.verdict == "pass", status.reason
