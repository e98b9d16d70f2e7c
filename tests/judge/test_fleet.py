"""One command for a fleet: ``validate``, ``report`` and ``eval`` given a folder of models
judge each run by its task's model, exactly as ``validate MODEL.json`` would, and name the
runs no model is for."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from devsets import EXAMPLES

from trustlayer.cli import main

TASKS = {"jupyter": EXAMPLES / "jupyter", "trip": EXAMPLES / "tool-calling"}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fleet") / "models"
    folder.mkdir()
    for name, task in TASKS.items():
        assert main(["-q", "learn", str(task / "train"), "-o", str(folder / f"{name}.json")]) == 0
    return folder


@pytest.fixture(scope="module")
def stranger(tmp_path_factory) -> Path:
    """A run of a task no model is for."""
    folder = tmp_path_factory.mktemp("stranger")
    source = next((EXAMPLES / "jupyter" / "test").glob("*.jsonl"))
    lines = [json.loads(line) for line in source.read_text().splitlines()]
    for line in lines:
        line["task"], line["run_id"] = "unmodelled-task", "stranger-1"
    (folder / "stranger-1.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    shots = source.parent / "shots"
    if shots.is_dir():
        shutil.copytree(shots, folder / "shots")
    return folder


def _verdicts(capsys, *argv: str) -> tuple[int, list[dict], str]:
    code = main(["-q", "validate", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_each_run_is_judged_by_its_tasks_model_as_one_model_would(models, capsys):
    code, fleet, _ = _verdicts(capsys, str(models), *(str(t / "test") for t in TASKS.values()))
    single = []
    for name, task in TASKS.items():
        single += _verdicts(capsys, str(models / f"{name}.json"), str(task / "test"))[1]
    assert code == 1
    assert {r["task"] for r in fleet} == {"jl-save-textfile", "trip-berlin-lisbon"}
    assert sorted(fleet, key=lambda r: r["run_id"]) == sorted(single, key=lambda r: r["run_id"])


def test_runs_without_a_model_are_named_and_the_others_judged(models, stranger, capsys):
    code, records, err = _verdicts(capsys, str(models), str(TASKS["trip"] / "test"),
                                   str(stranger))
    assert code == 1 and "stranger-1" not in {r["run_id"] for r in records}
    assert len(records) == len(list((TASKS["trip"] / "test").glob("*.jsonl")))
    assert "no model for task 'unmodelled-task'" in err and "stranger-1.jsonl" in err


def test_nothing_to_judge_is_bad_input(models, stranger, capsys):
    assert main(["-q", "validate", str(models), str(stranger)]) == 2
    assert "holds no model for the tasks of the runs given (unmodelled-task)" in \
        capsys.readouterr().err


def test_two_models_of_one_task_are_refused(models, tmp_path, capsys):
    for copy in ("a.json", "b.json"):
        shutil.copy(models / "trip.json", tmp_path / copy)
    assert main(["-q", "validate", str(tmp_path), str(TASKS["trip"] / "test")]) == 2
    assert "a second model of task 'trip-berlin-lisbon'" in capsys.readouterr().err


def test_a_folder_of_traces_first_is_still_the_mix_up(models, capsys):
    assert main(["-q", "validate", str(TASKS["trip"] / "test"), str(models / "trip.json")]) == 2
    assert "the model comes first" in capsys.readouterr().err


def test_report_writes_one_page_per_task(models, stranger, tmp_path, capsys):
    assert main(["-q", "report", str(models), str(TASKS["trip"] / "test"), str(stranger),
                 "-o", str(tmp_path / "reports")]) == 0
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == \
        ["trip-berlin-lisbon.html"]
    assert "no model for task 'unmodelled-task'" in capsys.readouterr().err


def test_eval_scores_a_labelled_folder_with_the_fleets_models(models, capsys):
    folder = TASKS["trip"] / "test"
    assert main(["-q", "eval", str(models / "trip.json"), str(folder), "--json"]) == 0
    single = json.loads(capsys.readouterr().out)
    assert main(["-q", "eval", str(models), str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == single
