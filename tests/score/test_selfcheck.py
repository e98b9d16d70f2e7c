"""The learn-time self-check: training runs against their own model (also with every
screenshot re-encoded: same pixels, other bytes) and leave-one-out."""
import shutil
from pathlib import Path

import numpy as np
import pytest
from devsets import DATA, DEVTRACES, EXAMPLES, SHARED, dev
from PIL import Image

from trustlayer.cli import main
from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn
from trustlayer.model import Model
from trustlayer.observe.traces import read_runs
from trustlayer.score.selfcheck import check, without_image_bytes

JUPYTER_TRAIN = EXAMPLES / "jupyter" / "train"
SCREEN_SETS = [JUPYTER_TRAIN, DATA / "dj-search-open" / "train",
               *(dev(SHARED / task / "train", id=task) for task in (
                   "datasette-dev/ds-json-export-row", "django-dev/dj-rename-category",
                   "django-dev/dj-search-open"))]


def reencode(source: Path, target: Path) -> int:
    """Copy a trace folder with every PNG saved again (same pixels, other bytes); return
    how many screenshots changed bytes."""
    shutil.copytree(source, target)
    changed = 0
    for png in target.rglob("*.png"):
        before = png.read_bytes()
        with Image.open(png) as image:
            pixels = np.asarray(image.convert("RGBA"))
            image.save(png, format="PNG", compress_level=1)
        with Image.open(png) as again:
            assert np.array_equal(np.asarray(again.convert("RGBA")), pixels)
        changed += png.read_bytes() != before
    return changed


@pytest.mark.parametrize("source", SCREEN_SETS, ids=lambda path: path.parent.name)
def test_training_runs_pass_their_own_model_with_screenshots_reencoded(source, tmp_path):
    model = learn(read_runs([source]))
    copy = tmp_path / "copy"
    assert reencode(source, copy) > 0
    for run in read_runs([copy]):
        status = judge_run(model, run)
        assert status.verdict == "pass", (source, run.run_id, status.reason)


def test_without_image_bytes_drops_every_digest():
    model = learn(read_runs([JUPYTER_TRAIN]))
    blind = without_image_bytes(model)
    assert any(state.image_shas for state in model.states.values())
    assert not any(state.image_shas for state in blind.states.values())
    assert not blind.ending.image_shas and model == learn(read_runs([JUPYTER_TRAIN]))


@DEVTRACES
def test_leave_one_out_names_the_runs_a_model_of_the_others_fails():
    runs = read_runs([SHARED / "datasette-dev" / "ds-json-export-row" / "train"])
    report = check(learn(runs), runs)
    assert report.own_failures == [] and report.runs == 8
    # measured: 6 of 8 pass; the others ended on a JSON shape only they showed
    assert report.loo_failures and 0.5 <= report.loo_pass_rate < 1.0
    lines = report.lines()
    assert lines[0].startswith("self-check: 8/8") and "leave-one-out: " in lines[1]
    assert any(run_id in "\n".join(lines) for run_id, _ in report.loo_failures)


@DEVTRACES
def test_cli_learn_prints_the_self_check_and_check_exits_on_failures(tmp_path, capsys):
    model = tmp_path / "m.json"
    train = SHARED / "coding-dev2" / "slugify-cli-flag" / "train"
    assert main(["-q", "learn", str(train), "-o", str(model)]) == 0
    out = capsys.readouterr().out  # results on standard output: `> out.txt` keeps them
    assert "self-check: 8/8 training runs pass their own model" in out
    assert main(["-q", "check", str(model), str(train)]) == 0
    assert "leave-one-out: 8/8" in capsys.readouterr().out
    assert main(["-q", "check", str(model), str(JUPYTER_TRAIN)]) == 2  # another task's runs
    assert "model is for 'slugify-cli-flag'" in capsys.readouterr().err


def test_learn_from_few_runs_reports_leave_one_out_and_the_milestones_it_doubts(tmp_path, capsys):
    train = JUPYTER_TRAIN
    few = tmp_path / "few"
    (few / "shots").mkdir(parents=True)
    for name in ("jl-save-textfile-train-01", "jl-save-textfile-train-05"):
        shutil.copy(train / f"{name}.jsonl", few)
        shutil.copytree(train / "shots" / name, few / "shots" / name)
    assert main(["-q", "learn", str(few), "-o", str(tmp_path / "m.json")]) == 0
    said = capsys.readouterr().out
    assert "leave-one-out: " in said and "/2 training runs pass" in said
    runs = read_runs([few])
    report = check(Model.load(tmp_path / "m.json"), runs)
    names = {state.name for state in Model.load(tmp_path / "m.json").states.values()}
    assert set(report.doubted) <= names
    assert all(f"doubted milestone: '{name}'" in said for name in report.doubted)
