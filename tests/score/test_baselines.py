"""The five baselines as pure functions, and `trustlayer eval --baselines` on real traces."""
from __future__ import annotations

import base64
import io
import json
import shutil
from pathlib import Path

import pytest
from devsets import DATA, EXAMPLES
from PIL import Image

from trustlayer.cli import main
from trustlayer.learn.learner import learn
from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.trace_events import Run
from trustlayer.observe.traces import read_runs
from trustlayer.score import baselines
from trustlayer.score.baselines import FAIL, NOT_APPLICABLE, PASS


def make_run(run_id: str, states: list[dict], actions: list[dict | None] | None = None,
             self_report: str | None = "success", outcome: str = "success") -> Run:
    """A run alternating action -> state, from observation dicts (text, files or
    data-URI screenshots)."""
    events, seq = [], 0
    actions = actions or [None] * len(states)
    for observation, action in zip(states, actions):
        if action is not None:
            events.append({"kind": "action", "action": action})
        events.append({"kind": "state", "observation": observation})
    end = {"kind": "end", "outcome": outcome}
    if self_report:
        end["self_report"] = self_report
    events.append(end)
    parsed = []
    for seq, event in enumerate(events):
        parsed.append(parse_event({"v": 1, "run_id": run_id, "task": "t", "seq": seq,
                                   "ts": 100.0 + seq, **event}))
    return Run(run_id, "t", parsed)


def text(body: str) -> dict:
    return {"text": body}


def png(colour, size=(32, 24), dot=None) -> dict:
    image = Image.new("RGB", size, colour)
    if dot:
        image.putpixel((3, 3), dot)
    out = io.BytesIO()
    image.save(out, "PNG")
    return {"screenshot": "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()}


HOME, EDITOR, SAVED = text("Home\nOpen a file"), text("Editor\nhello world"), \
    text("Saved\nhello world\nall changes saved")
CLICK_OPEN = {"type": "click", "target": "Open"}
TYPE_HELLO = {"type": "type", "target": "editor", "value": "hello world"}
SAVE = {"type": "key", "value": "Control+s"}


@pytest.fixture(scope="module")
def reference_runs() -> list[Run]:
    return [make_run(f"ref-{n}", [HOME, EDITOR, SAVED], [None, CLICK_OPEN, SAVE])
            for n in range(2)]


@pytest.fixture(scope="module")
def model(reference_runs):
    return learn(reference_runs)


def test_self_report_believes_the_agent():
    assert baselines.self_report(make_run("a", [HOME], self_report="failure")) == (FAIL, None)
    assert baselines.self_report(make_run("b", [HOME], self_report="success")) == (PASS, None)
    assert baselines.self_report(make_run("c", [HOME], self_report=None)) == (PASS, None)


def test_record_and_replay_allows_repeats_but_no_extra_or_skipped_state(model):
    assert baselines.record_and_replay(model, make_run("same", [HOME, EDITOR, SAVED]))[0] == PASS
    repeated = make_run("again", [HOME, HOME, EDITOR, SAVED, SAVED])
    assert baselines.record_and_replay(model, repeated)[0] == PASS
    detour = make_run("detour", [HOME, text("Settings\ntheme dark"), EDITOR, SAVED])
    assert baselines.record_and_replay(model, detour)[0] == FAIL
    skipped = make_run("skip", [HOME, SAVED])
    assert baselines.record_and_replay(model, skipped)[0] == FAIL
    assert baselines.recorded_paths(model) == {"ref-0": ["s0", "s1", "s2"],
                                               "ref-1": ["s0", "s1", "s2"]}


def test_final_state_check_reads_only_the_last_state(model):
    assert baselines.final_state(model, make_run("ok", [EDITOR, SAVED]))[0] == PASS
    assert baselines.final_state(model, make_run("no", [HOME, EDITOR]))[0] == FAIL


def test_trajectory_superset_ignores_order_and_extras(reference_runs):
    reordered = make_run("r", [HOME, EDITOR, SAVED, HOME],
                         [TYPE_HELLO, SAVE, CLICK_OPEN, {"type": "scroll"}])
    assert baselines.trajectory_superset(reference_runs, reordered)[0] == PASS
    missing = make_run("m", [HOME, EDITOR], [None, CLICK_OPEN])
    assert baselines.trajectory_superset(reference_runs, missing)[0] == FAIL


def test_visual_regression_uses_playwrights_default_threshold():
    reference = make_run("ref", [png("white"), png("navy")])
    # a colour change below pixelmatch's 0.2 YIQ threshold is no difference
    faint = make_run("faint", [png((252, 252, 252)), png("navy")])
    assert baselines.visual_regression([reference], faint)[0] == PASS
    # one clearly different pixel fails (maxDiffPixels 0)
    dotted = make_run("dot", [png("white", dot=(0, 0, 0)), png("navy")])
    assert baselines.visual_regression([reference], dotted)[0] == FAIL
    resized = make_run("size", [png("white", size=(33, 24)), png("navy")])
    assert baselines.visual_regression([reference], resized)[0] == FAIL
    shorter = make_run("short", [png("white")])
    assert baselines.visual_regression([reference], shorter)[0] == FAIL
    assert baselines.visual_regression([make_run("t", [HOME])], make_run("u", [HOME])) \
        == (NOT_APPLICABLE, None)


@pytest.fixture(scope="module")
def jupyter():
    root = EXAMPLES / "jupyter"
    train = read_runs([root / "train"])
    return root, train, learn(train)


def test_every_training_run_replays_and_matches_itself(jupyter):
    _, train, model = jupyter
    for run in train:
        assert baselines.record_and_replay(model, run)[0] == PASS, run.run_id
        assert baselines.visual_regression(train, run)[0] == PASS, run.run_id
        assert baselines.trajectory_superset(train, run)[0] == PASS, run.run_id
        assert baselines.final_state(model, run)[0] == PASS, run.run_id


def small_task(tmp_path: Path, name: str, source: Path, tests: list[str]) -> Path:
    """A task folder with all of `source`/train and a few labelled test runs."""
    task = tmp_path / name
    shutil.copytree(source / "train", task / "train")
    (task / "test").mkdir(parents=True)
    labels = json.loads((source / "test" / "labels.json").read_text())
    for run_id in tests:
        shutil.copy(source / "test" / f"{run_id}.jsonl", task / "test")
        if (source / "test" / "shots" / run_id).is_dir():
            shutil.copytree(source / "test" / "shots" / run_id, task / "test" / "shots" / run_id)
    (task / "test" / "labels.json").write_text(json.dumps({r: labels[r] for r in tests}))
    return task


def test_eval_over_task_folders_prints_and_writes_the_table(tmp_path, capsys):
    root = tmp_path / "tasks"
    small_task(root, "jupyter", EXAMPLES / "jupyter",
               [f"jl-save-textfile-test-{n:02d}" for n in (5, 8, 11, 20)])
    small_task(root, "coding", DATA / "slugify-fix-regex-bug",
               [f"slugify-fix-regex-bug-test-{n:02d}" for n in (10, 20)])
    table = tmp_path / "table.md"
    assert main(["-q", "eval", str(root), "--baselines", "--markdown", str(table)]) == 0
    out = capsys.readouterr().out
    for judge in ["trustlayer", *baselines.BASELINES]:
        assert out.count(judge) >= 3, judge  # two tasks and overall
    assert "learned from 8 runs in" in out and "overall (2 tasks, 6 test runs)" in out
    markdown = table.read_text()
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert len(rows) == 3 * 8  # header, rule, six judges; per task and overall
    assert "| visual regression | 0 | n/a |" in markdown  # coding traces have no screenshots
    assert markdown.count("| --- | ---: |") == 3


def test_eval_model_dir_baselines_json(tmp_path, capsys, jupyter):
    root, _, model = jupyter
    task = small_task(tmp_path, "jl", root, ["jl-save-textfile-test-05",
                                              "jl-save-textfile-test-08"])
    model.save(tmp_path / "model.json")
    assert main(["-q", "eval", str(tmp_path / "model.json"), str(task / "test"), "--baselines",
                 "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)
    judges = {j["judge"]: j for j in result["judges"]}
    assert set(judges) == {"trustlayer", *baselines.BASELINES}
    assert all(j["runs"] == 2 for j in judges.values())
    assert judges["trustlayer"]["accuracy"] == 1.0
    assert judges["self-report"]["cause_f1"] is None
    # without train/ beside DIR the baselines need --reference
    assert main(["-q", "eval", str(tmp_path / "model.json"), str(root / "test"),
                 "--baselines", "--reference", str(tmp_path / "nowhere")]) == 2
