"""Real recorded traces: the floors honestly measured on ../shared/traces (see README)."""
import json
import re
import shutil

import pytest
from devsets import DEV_TASKS, DEVTRACES, EXAMPLES, SHARED

from trustlayer.cli import main
from trustlayer.errors import ModelError
from trustlayer.judge.batch import judge_paths
from trustlayer.learn.learner import learn
from trustlayer.model import Model
from trustlayer.observe.traces import load_labels, read_runs
from trustlayer.score.scores import score
from trustlayer.score.selfcheck import check

# (failure F1, cause F1) floors per task, a little under what score.py measures (README)
FLOORS = {"jupyter-dev": (0.95, 0.9), "coding-dev": (0.95, 0.9),
          "coding-dev2/slugify-cli-flag": (0.93, 0.9),
          "coding-dev2/slugify-fix-regex-bug": (0.95, 0.9),
          "datasette-dev/ds-countries-filter-count": (0.95, 0.75),
          "datasette-dev/ds-json-export-row": (0.95, 0.85),
          "django-dev/dj-rename-category": (0.95, 0.75), "django-dev/dj-search-open": (0.95, 0.9)}
# failure F1 floors learned from three of the eight training runs (score.py's
# --train-runs 3: the first, the middle and the last), a little under what it measures
FEW_RUN_FLOORS = {"jupyter-dev": 0.95, "coding-dev": 0.95, "coding-dev2/slugify-cli-flag": 0.93,
                  "coding-dev2/slugify-fix-regex-bug": 0.93,
                  "datasette-dev/ds-countries-filter-count": 0.95,
                  "datasette-dev/ds-json-export-row": 0.85,
                  "django-dev/dj-rename-category": 0.95, "django-dev/dj-search-open": 0.85}
# failed runs whose mistake only hidden acceptance tests reveal (no trace can show it)
UNSEEN_FAILURES = {"coding-dev2/slugify-cli-flag": 1}
END_REASONS = ("never reached", "negative milestone", "not where successful runs end",
               "every successful run removed", "made go", "went on to fix",
               "never checked its work", "only added lines", "reported that it failed",
               "never added", "which no successful run received", "typed and showed",
               "every successful run called it", "no action of the agent")


@pytest.fixture(scope="module", params=DEV_TASKS)
def dev_set(request):
    root = SHARED / request.param
    return request.param, root, learn(read_runs([root / "train"]))


@DEVTRACES
def test_training_runs_pass_their_own_model_without_image_bytes(dev_set):
    _, root, model = dev_set
    runs = read_runs([root / "train"])
    report = check(model, runs, loo=False)
    assert report.own_failures == [] and report.runs == len(runs)


@DEVTRACES
def test_dev_set_meets_its_floor_without_llm_calls(dev_set):
    name, root, model = dev_set
    verdicts = judge_paths(model, [str(root / "test")], quiet=True)
    summary = score(verdicts, load_labels(root / "test")).summary()
    failure_floor, cause_floor = FLOORS[name]
    assert summary["f1"] >= failure_floor, summary
    assert summary["cause_f1"] >= cause_floor, summary
    assert sum(v["llm_calls"] for v in verdicts) == 0


@pytest.mark.parametrize("name", DEV_TASKS)
@DEVTRACES
def test_three_training_runs_meet_their_floor_and_pass_no_failure_the_trace_shows(name):
    root = SHARED / name
    runs = read_runs([root / "train"])
    model = learn([runs[0], runs[len(runs) // 2], runs[-1]])
    summary = score(judge_paths(model, [str(root / "test")], quiet=True),
                    load_labels(root / "test")).summary()
    assert summary["f1"] >= FEW_RUN_FLOORS[name], summary
    assert summary["confusion"]["fn"] <= UNSEEN_FAILURES.get(name, 0), summary


@DEVTRACES
def test_every_training_run_passes_and_reasons_name_milestones(dev_set):
    _, root, model = dev_set
    verdicts = judge_paths(model, [str(root / "train")], quiet=True)
    assert {v["verdict"] for v in verdicts} == {"pass"}
    failing = [v for v in judge_paths(model, [str(root / "test")], quiet=True)
               if v["verdict"] == "fail"]
    names = {model.name(s) for s in model.essential}
    ends = " or ".join(model.name(s) for s in model.accepting)
    for verdict in failing:
        assert any(said in verdict["details"] for said in END_REASONS), verdict["details"]
        assert set(verdict["missing"]) <= names | {ends}
        assert verdict["cause"] in ("product_bug", "agent_error")


MAX_REASON_WORDS = 25
INTERNAL_ACTION = re.compile(r"\b\w+:\S*:")  # an action signature, type:target:value
SHORT_REASON = re.compile(r"Failed at step \d+: expected .+; .*\bshowed\b.* instead "
                          r"\((product fault|agent error)\)\.$")


@DEVTRACES
def test_reasons_are_one_sentence_of_expected_versus_shown(dev_set):
    """A person reads the reason: the step, what successful runs showed there, what this
    run showed instead, who is to blame; the decision path is in its details."""
    _, root, model = dev_set
    for verdict in judge_paths(model, [str(root / "test")], quiet=True):
        reason = verdict["reason"]
        assert len(reason.split()) <= MAX_REASON_WORDS, reason
        assert not INTERNAL_ACTION.search(reason), reason
        assert verdict["code"] and verdict["details"], verdict
        assert "unknown state" not in reason and verdict["run_id"] not in reason, reason
        if verdict["verdict"] == "fail":
            assert SHORT_REASON.match(reason), reason
            assert reason.startswith(f"Failed at step {verdict['step']}:"), verdict


def test_a_reason_quotes_the_line_no_successful_run_showed():
    """The evidence verbatim (a tool's error line), not the loose words it holds."""
    root = SHARED / "coding-dev"
    model = learn(read_runs([root / "train"]))
    run = root / "test" / "slugify-move-unicode-filter-test-03.jsonl"
    verdicts = judge_paths(model, [str(run)], quiet=True)
    assert "showed 'pytest: error: unrecognized arguments: --timeout=120'" in verdicts[0]["reason"]


@DEVTRACES
def test_model_file_round_trip(dev_set, tmp_path):
    _, _, model = dev_set
    model.save(tmp_path / "m.json")
    assert Model.load(tmp_path / "m.json") == model


@DEVTRACES
def test_newer_model_format_is_refused(dev_set, tmp_path):
    _, _, model = dev_set
    data = model.to_json()
    data["format"] = 99
    (tmp_path / "new.json").write_text(json.dumps(data))
    with pytest.raises(ModelError, match="format 99 is newer"):
        Model.load(tmp_path / "new.json")


@DEVTRACES
def test_names_are_distinct(dev_set):
    _, _, model = dev_set
    names = [s.name for s in model.states.values()]
    assert len(names) == len(set(names)) and all(names)


def test_verdicts_ignore_the_runs_own_outcome(tmp_path):
    root = EXAMPLES / "jupyter" / "test"
    model = learn(read_runs([EXAMPLES / "jupyter" / "train"]))
    blind = tmp_path / "test"
    blind.mkdir()
    for path in sorted(root.glob("*.jsonl"))[:6]:
        shutil.copytree(root / "shots" / path.stem, blind / "shots" / path.stem)
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        for event in lines:
            if event["kind"] == "end":  # (a self-report of failure is evidence: kept)
                event["outcome"] = "success"
        (blind / path.name).write_text("".join(json.dumps(e) + "\n" for e in lines))
    original = judge_paths(model, [str(p) for p in sorted(root.glob("*.jsonl"))[:6]], quiet=True)
    assert judge_paths(model, [str(blind)], quiet=True) == original


def test_cli_learn_validate_eval_show(tmp_path, capsys):
    examples = EXAMPLES / "jupyter"
    model_path = tmp_path / "model.json"
    assert main(["-q", "learn", str(examples / "train"), "-o", str(model_path)]) == 0
    assert "self-check: 8/8" in capsys.readouterr().out
    assert main(["-q", "validate", str(model_path), str(examples / "test"),
                 "--format", "json"]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {"run_id", "task", "verdict", "coverage", "reason", "cause", "missing", "warnings",
            "llm_calls"} <= set(lines[0])
    labels = load_labels(examples / "test")
    assert {v["run_id"]: v["verdict"] == "fail" for v in lines} == \
        {rid: lab["outcome"] == "failure" for rid, lab in labels.items()}
    assert main(["-q", "validate", str(model_path), str(examples / "train")]) == 0
    assert capsys.readouterr().out.count("PASS ") == 8
    assert main(["-q", "eval", str(model_path), str(examples / "test"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["f1"] == 1.0 and summary["runs"] == len(labels)
    assert main(["-q", "show", str(model_path)]) == 0
    assert "essential chain:" in capsys.readouterr().out
