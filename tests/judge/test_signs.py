"""Signs of failure are never outweighed by milestones: each learned from real runs (the
dev traces, and where it can the slice the repository ships in tests/data), each shown on a
real run changed in the one way it names."""
import json
import shutil
from functools import cache
from pathlib import Path

import pytest
from devsets import DATA, DEVTRACES, SHARED, dev
from tracegen import tool_run

from trustlayer.judge.matcher import Matcher, judge_run
from trustlayer.judge.resume import restore, snapshot
from trustlayer.learn.learner import learn
from trustlayer.model import Model
from trustlayer.observe.traces import read_run, read_runs

CLI_FLAG = SHARED / "coding-dev2" / "slugify-cli-flag"
RENAME = SHARED / "django-dev" / "dj-rename-category"
CODE = DATA / "slugify-fix-regex-bug"  # a coding agent's runs, shipped
NETWORK = DATA / "dj-search-open"  # a browser agent's runs with their requests, shipped


@cache
def model_of(task: Path) -> Model:
    """The model learned from `task`'s training runs."""
    return learn(read_runs([task / "train"]))


@pytest.fixture(scope="module")
def cli_flag_model():
    return model_of(CLI_FLAG)


def events_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def judged(model, events: list[dict], tmp_path: Path, shots: Path | None = None):
    """The status of `events` written as a run (with the `shots` folder of their images)."""
    if shots is not None and not (tmp_path / "shots").exists():
        shutil.copytree(shots, tmp_path / "shots" / shots.name)
    path = tmp_path / f"{events[0]['run_id']}.jsonl"
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    return judge_run(model, read_run(path))


def renumbered(events: list[dict]) -> list[dict]:
    return [dict(event, seq=number) for number, event in enumerate(events)]


@DEVTRACES
def test_the_signs_are_learned_from_what_successful_runs_did(cli_flag_model):
    assert "tool:run_tests" in cli_flag_model.checks
    assert cli_flag_model.check_files == ["slugify/__main__.py"]
    assert any("failed" in shape for shape in cli_flag_model.overcome["tool:run_tests"])
    assert "tests/test_release.py" in cli_flag_model.added_only
    assert any("F|unchanged slugify/__main__.py" in lines
               for lines in cli_flag_model.gone_lines.values())


#: a successful run of each coding task, beside the task
PASSING_CODE = [(CODE, "test/slugify-fix-regex-bug-test-20"),
                dev(CLI_FLAG, "train/slugify-cli-flag-train-01", id="cli-flag")]


@pytest.mark.parametrize(("task", "run"), PASSING_CODE)
def test_a_successful_run_passes_and_the_same_run_reporting_failure_fails(task, run, tmp_path):
    events = events_of(task / f"{run}.jsonl")
    assert judged(model_of(task), events, tmp_path).verdict == "pass"
    events[-1]["self_report"] = "failure"
    status = judged(model_of(task), events, tmp_path)
    assert status.verdict == "fail" and "reported that it failed" in status.details


@DEVTRACES
def test_a_last_test_report_with_failures_fails_whatever_milestones_say(cli_flag_model, tmp_path):
    red = next(event for event in events_of(CLI_FLAG / "train" / "slugify-cli-flag-train-07.jsonl")
               if event["kind"] == "state" and " failed" in event["observation"]["text"])
    events = events_of(CLI_FLAG / "train" / "slugify-cli-flag-train-01.jsonl")
    last_test = max(i for i, event in enumerate(events) if event["kind"] == "action"
                    and event["action"]["target"] == "run_tests")
    answer = events[last_test + 1]["observation"]
    answer["text"] = red["observation"]["text"]
    status = judged(cli_flag_model, events, tmp_path)
    assert status.verdict == "fail", status.reason
    assert "run_tests report still showed" in status.details and "went on to fix" in status.details


@pytest.mark.parametrize(("task", "run"), PASSING_CODE)
def test_a_run_that_never_checks_its_edit_fails(task, run, tmp_path):
    events = events_of(task / f"{run}.jsonl")
    first_test = min(i for i, event in enumerate(events) if event["kind"] == "action"
                     and event["action"]["target"] == "run_tests")
    status = judged(model_of(task), renumbered(events[:first_test] + events[-1:]), tmp_path)
    assert status.verdict == "fail" and "never checked its work" in status.details
    assert status.cause == "agent_error"


@DEVTRACES
def test_a_run_taking_lines_out_of_a_pinned_test_fails(cli_flag_model):
    # the test run's agent edited the test every successful run only added to
    status = judge_run(cli_flag_model,
                       read_run(CLI_FLAG / "test" / "slugify-cli-flag-test-04.jsonl"))
    assert status.verdict == "fail" and "out of tests/test_release.py" in status.details


@DEVTRACES
def test_a_run_taking_lines_out_of_a_file_no_successful_run_changed_fails():
    # three successful runs that never touched the pinned test: the failure still shows
    runs = read_runs([CLI_FLAG / "train"])[5:]
    model = learn(runs)
    assert "tests/test_release.py" not in model.changed_files + model.added_only
    assert all(judge_run(model, run).verdict == "pass" for run in runs)
    for failed in ("slugify-cli-flag-test-04", "slugify-cli-flag-test-07"):
        status = judge_run(model, read_run(CLI_FLAG / "test" / f"{failed}.jsonl"))
        assert status.verdict == "fail" and status.cause == "agent_error"
        assert "out of tests/test_release.py, which no successful run changed" in status.details


@DEVTRACES
def test_from_few_runs_only_the_words_the_goal_names_are_required(cli_flag_model):
    # all eight runs added `SUPPRESS` (how they hid the option's default): from three,
    # a shared habit cannot be told from a need, and the goal never names it
    few = learn(read_runs([CLI_FLAG / "train"])[5:]).required_words["slugify/__main__.py"]
    assert "SUPPRESS" in cli_flag_model.required_words["slugify/__main__.py"]
    assert "SUPPRESS" not in few and "lines" in few


@DEVTRACES
def test_another_objects_page_with_the_same_pixels_is_not_the_end():
    model = model_of(RENAME)
    # renamed another category: its page looks exactly like the right one's, its address not
    other = judge_run(model, read_run(RENAME / "test" / "dj-rename-category-test-20.jsonl"))
    assert other.verdict == "fail" and other.cause == "agent_error"
    # renamed another category and went back to the list: the old name is still listed
    listed = judge_run(model, read_run(RENAME / "test" / "dj-rename-category-test-05.jsonl"))
    assert listed.verdict == "fail" and "every successful run's work made go" in listed.details


@pytest.mark.parametrize(("task", "run"), [
    (CODE, "slugify-fix-regex-bug-test-10"),
    dev(CLI_FLAG, "slugify-cli-flag-test-04", id="cli-flag")])
def test_signs_survive_a_snapshot(task, run):
    model = model_of(task)
    events = read_run(task / "test" / f"{run}.jsonl").events
    matcher = Matcher(model)
    for event in events[:-1]:
        matcher.feed(event)
    resumed = restore(model, json.loads(json.dumps(snapshot(matcher))))
    assert resumed.feed(events[-1]).verdict == "fail"


# a run that could not write a file (the product refused the write) and then stopped, the
# step of the refusal and what the product said
REFUSED_WRITES = [
    dev(SHARED / "coding-dev2" / "slugify-fix-regex-bug", "slugify-fix-regex-bug-test-02", 8,
        "Error writing slugify/slugify.py: OSError: [Errno 27]", id="never-checked"),
    dev(CLI_FLAG, "slugify-cli-flag-test-13", 14,
        "Error writing slugify/__main__.py: PermissionError:", id="failures-left")]


@pytest.mark.parametrize(("task", "run", "step", "error"), REFUSED_WRITES)
def test_a_sign_the_product_caused_quotes_what_it_said_at_that_step(task, run, step, error):
    model, judged_run = model_of(task), read_run(task / "test" / f"{run}.jsonl")
    status, events = judge_run(model, judged_run), judged_run.events
    assert (status.verdict, status.cause, status.step) == ("fail", "product_bug", step)
    assert f"the screen showed '{error}" in status.reason, status.reason
    # a record written before the step of the news was kept: still the product's fault
    matcher = Matcher(model)
    for event in events[:-1]:
        matcher.feed(event)
    record = json.loads(json.dumps(snapshot(matcher)))
    signs = record["signs"]
    for kept_as_flag, at in (("news_since_report", "report_news_at"),
                             ("news_since_change", "change_news_at")):
        signs[kept_as_flag] = signs.pop(at) is not None
    status = restore(model, record).feed(events[-1])
    assert (status.verdict, status.cause) == ("fail", "product_bug"), status.reason


# a run whose request Django answered with its plain 500 error page, and that request
SERVER_ERRORS = [(NETWORK, "dj-search-open-test-10", "GET /admin/library/book/75/change/"),
                 dev(RENAME, "dj-rename-category-test-09", "POST /admin/library/category/",
                     id="rename")]


@pytest.mark.parametrize(("task", "run", "request_line"), SERVER_ERRORS)
def test_a_server_error_no_successful_run_received_is_the_products_fault(task, run, request_line):
    model = model_of(task)
    assert all(status < 400 for status in model.statuses)
    status = judge_run(model, read_run(task / "test" / f"{run}.jsonl"))
    assert status.verdict == "fail" and status.cause == "product_bug"
    assert status.details.startswith(f"the server answered {request_line}")


@pytest.mark.parametrize(("task", "run"), [
    (NETWORK, "dj-search-open-train-07"),
    dev(RENAME, "dj-rename-category-train-01", id="rename")])
def test_a_later_good_answer_to_the_same_request_makes_an_error_good(task, run, tmp_path):
    model = model_of(task)
    events = events_of(task / "train" / f"{run}.jsonl")
    states = [event for event in events if event["kind"] == "state"]
    request = {"method": "GET", "path": "/admin/jsi18n/", "type": "script"}
    states[-2]["observation"]["network"] = [dict(request, status=503)]
    states[-1]["observation"]["network"] = []
    shots = task / "train" / "shots" / run
    assert "answered GET /admin/jsi18n/ with 503" in judged(model, events, tmp_path, shots).details
    states[-1]["observation"]["network"] = [dict(request, status=200)]
    assert judged(model, events, tmp_path, shots).verdict == "pass"


@DEVTRACES
def test_an_end_showing_the_typed_text_otherwise_fails():
    model = model_of(RENAME)
    assert model.end_texts == ["Crime & Mystery"]
    # "Crime &Mystery" saved: the same words, not the text every successful run typed
    status = judge_run(model, read_run(RENAME / "test" / "dj-rename-category-test-17.jsonl"))
    assert status.verdict == "fail" and "without showing 'Crime & Mystery'" in status.details


def test_where_successful_runs_disagree_on_checking_a_run_that_does_not_passes_with_a_warning():
    start, fixed = {"lib.py": "11"}, {"lib.py": "f1"}
    task = ("", "", "Task: fix lib.py", start)
    edit = ("edit_file", "lib.py", "Edited lib.py", fixed)
    tested = ("run_tests", "pytest", "3 passed", fixed)
    model = learn([tool_run("train-0", [task, edit, tested]),
                   tool_run("train-1", [task, edit, tested]),
                   tool_run("train-2", [task, edit])])
    assert model.checks == [] and model.some_checks == ["tool:run_tests"]
    unchecked = judge_run(model, tool_run("unchecked", [task, edit]))
    assert unchecked.verdict == "pass"
    assert any("did not check its work afterwards" in w for w in unchecked.warnings)
    checked = judge_run(model, tool_run("checked", [task, edit, tested]))
    assert checked.verdict == "pass" and not checked.warnings


@DEVTRACES
def test_a_row_holding_the_text_the_agent_typed_is_its_own_choice_not_another_row():
    # three training runs left the description empty ('-'); this success typed one
    model = learn(read_runs([RENAME / "train" / f"dj-rename-category-train-0{n}.jsonl"
                             for n in (1, 5, 8)]))
    described = judge_run(model, read_run(RENAME / "test" / "dj-rename-category-test-07.jsonl"))
    assert described.verdict == "pass", described.reason
    # the new name typed after the old one is no typed text put in a row of theirs
    appended = judge_run(model, read_run(RENAME / "test" / "dj-rename-category-test-14.jsonl"))
    assert appended.verdict == "fail"
