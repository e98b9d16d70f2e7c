"""The same learner without screenshots: a tool-calling agent (states are tool results as
text, examples/tool-calling) and a coding agent (states are `files` snapshots plus tool
output, ../shared/traces/coding-dev)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from devsets import DEVTRACES, REPO, SHARED

from trustlayer.cli import main
from trustlayer.judge.batch import judge_paths
from trustlayer.judge.phases import phases
from trustlayer.learn.learner import learn
from trustlayer.observe.traces import load_labels, read_runs
from trustlayer.score.scores import score

TOOLS = REPO / "examples" / "tool-calling"
CODING = SHARED / "coding-dev"


def without_pixels(model) -> bool:
    return all(not s.phashes and not s.thumbnails and not s.image_shas and s.structural
               for s in model.states.values())


@pytest.fixture(scope="module")
def tool_model():
    runs = read_runs([TOOLS / "train"])
    assert all(e.observation.screenshot is None for r in runs for e in r.states)
    return learn(runs)


def test_the_committed_tool_traces_are_what_the_script_writes(tmp_path):
    copy = tmp_path / "tool-calling"
    copy.mkdir()
    (copy / "make_traces.py").write_text((TOOLS / "make_traces.py").read_text())
    subprocess.run([sys.executable, str(copy / "make_traces.py")], check=True)
    for split in ("train", "test"):
        made = sorted(p.name for p in (copy / split).iterdir())
        assert made == sorted(p.name for p in (TOOLS / split).iterdir())
        for name in made:
            assert (copy / split / name).read_text() == (TOOLS / split / name).read_text(), name


def test_tool_results_as_text_give_the_task_milestones(tool_model):
    assert without_pixels(tool_model)
    names = [tool_model.name(s) for s in tool_model.essential]
    assert names[0] == "user request" and names[-1] == "send_email: sent"
    assert "book_hotel: confirmed" in names
    assert [p.name for p in phases(tool_model)] == names


def test_tool_calling_runs_are_judged_with_causes(tool_model):
    labels = load_labels(TOOLS / "test")
    verdicts = judge_paths(tool_model, [str(TOOLS / "test")], quiet=True)
    summary = score(verdicts, labels).summary()
    assert summary["accuracy"] == 1.0 and summary["cause_f1"] == 1.0, summary["wrong"]
    by_run = {v["run_id"]: v for v in verdicts}
    porto = next(r for r, lab in labels.items() if lab["cause"] == "agent_error"
                 and "BER-OPO" in (TOOLS / "test" / f"{r}.jsonl").read_text())
    assert "called search_flights (BER-OPO)" in by_run[porto]["details"], by_run[porto]["details"]


def test_eval_with_baselines_on_tool_calling(tool_model, tmp_path, capsys):
    tool_model.save(tmp_path / "tools.json")
    assert main(["-q", "eval", str(tmp_path / "tools.json"), str(TOOLS / "test"), "--baselines",
                 "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)
    judges = {j["judge"]: j for j in result["judges"]}
    assert judges["visual regression"]["runs"] == 0  # nothing visual to compare
    assert judges["trustlayer"]["f1"] == 1.0
    assert judges["self-report"]["recall"] < 1.0  # the agent believed its failures succeeded


@DEVTRACES
def test_coding_agent_milestones_are_file_states():
    model = learn(read_runs([CODING / "train"]))
    assert without_pixels(model)
    facts = [t for sid in model.essential for t in model.states[sid].profile.salient_templates
             if t.startswith("F|")]
    # the new module is required: it exists and is the run's work
    assert {"F|exists slugify / _unicode . py",
            "F|changed slugify / _unicode . py"} <= set(facts), \
        facts[:20]
    verdicts = judge_paths(model, [str(CODING / "test")], quiet=True)
    summary = score(verdicts, load_labels(CODING / "test")).summary()
    assert summary["f1"] >= 0.9 and summary["precision"] == 1.0, summary
