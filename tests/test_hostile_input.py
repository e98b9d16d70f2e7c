"""Hostile input on the command line: any bytes as a trace, a tampered model file, swapped
arguments give a verdict or a clear error with exit code 2, never a traceback.

The big counts (≥1,000 mutated traces) are ``tests/hostile.py`` run as a script."""
import json
import random
import re
from pathlib import Path

import pytest
from hostile import mutate_trace, run_cli, tamper_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tracegen import events_for, make_screens, write_run

from trustlayer.cli import build_parser
from trustlayer.errors import EXIT_BAD_INPUT
from trustlayer.observe.traces import read_run

FAST = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> dict[str, Path]:
    """A model learned from generated text-only runs, and one run to judge."""
    root = tmp_path_factory.mktemp("hostile")
    train, test = root / "train", root / "test"
    train.mkdir()
    test.mkdir()
    for number in range(3):
        write_run(train, events_for(f"train-{number}", make_screens(number)))
    good = write_run(test, events_for("new", make_screens(7)))
    assert run_cli(["-q", "learn", str(train), "-o", str(root / "model.json")]).code == 0
    return {"root": root, "model": root / "model.json", "run": good, "test": test}


def assert_clear(outcome, path: Path | None = None) -> None:
    assert outcome.traceback is None, outcome.traceback
    assert outcome.code in (0, 1, 2), outcome
    if outcome.code == EXIT_BAD_INPUT:
        assert re.match(r"trustlayer [a-z]+: error: ", outcome.stderr), outcome.stderr
        if path is not None:
            assert str(path) in outcome.stderr, outcome.stderr


@FAST
@given(st.binary(max_size=400))
def test_any_bytes_as_a_trace_file_give_a_verdict_or_an_error_naming_the_file(task, data):
    path = task["root"] / "bytes.jsonl"
    path.write_bytes(data)
    assert_clear(run_cli(["-q", "validate", str(task["model"]), str(path)]), path)


@FAST
@given(st.randoms(use_true_random=False))
def test_mutated_traces_give_a_verdict_or_an_error_naming_file_and_line(task, rng):
    path = task["root"] / "mutated.jsonl"
    path.write_bytes(mutate_trace(task["run"].read_text(), rng))
    outcome = run_cli(["-q", "validate", str(task["model"]), str(path)])
    assert_clear(outcome, path)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.randoms(use_true_random=False))
def test_tampered_models_are_used_or_refused_never_a_traceback(task, rng):
    path = task["root"] / "tampered.json"
    path.write_text(json.dumps(tamper_model(json.loads(task["model"].read_text()), rng)))
    for command in ("validate", "show"):
        argv = ["-q", command, str(path)] + ([str(task["run"])] if command == "validate" else [])
        outcome = run_cli(argv)
        # a model tampered to another task is used: then the run is refused, by its file
        assert_clear(outcome, task["run"] if "model is for" in outcome.stderr else path)


@pytest.mark.parametrize("tamper, where", [
    (lambda m: m["settings"].update(phash_same=-1), "settings.phash_same"),
    (lambda m: m["settings"].update(ssim_same=3.5), "settings.ssim_same"),
    (lambda m: m["timing"]["time_to_reach"][m["essential"][0]].update(max=-5.0),
     "timing.time_to_reach."),
    (lambda m: m["essential"].append("s999"), "essential["),
    (lambda m: m["edges"][0].update(target="s999"), "edges[0].target"),
    (lambda m: m["nearest_milestone"].update(s999="START"), "nearest_milestone.s999"),
    (lambda m: m["states"][0].update(phashes=[12]), "states[0].phashes[0]"),
    (lambda m: m["states"][0].update(members=[["train-0", -3]]), "states[0].members[0][1]"),
    (lambda m: m["states"][0].update(tolerance=-0.5), "states[0].tolerance"),
    (lambda m: m.update(version="1"), "version"),
    (lambda m: m["states"][0]["profile"].update(salient=[]), "states[0].profile.salient"),
])
def test_a_forged_model_is_refused_with_where_and_what(task, tamper, where, tmp_path):
    data = json.loads(task["model"].read_text())
    tamper(data)
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(data))
    edited = run_cli(["-q", "validate", str(path), str(task["run"])])
    assert edited.code == EXIT_BAD_INPUT and edited.traceback is None
    assert f"{path}: the model was changed after `trustlayer learn` wrote it" in edited.stderr
    # a model made by hand still gets every structural check
    outcome = run_cli(["-q", "validate", "--unsigned-ok", str(path), str(task["run"])])
    assert outcome.code == EXIT_BAD_INPUT and outcome.traceback is None
    assert f"{path}: {where}" in outcome.stderr, outcome.stderr


def test_a_model_edited_to_ask_less_is_refused_unless_made_by_hand(task, tmp_path):
    """Emptying the essential chain would pass a failing run: the digest refuses the file."""
    data = json.loads(task["model"].read_text())
    data.update(essential=[], soft=[])
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    refused = run_cli(["-q", "validate", str(path), str(task["run"])])
    assert refused.code == EXIT_BAD_INPUT and refused.stderr.count("\n") == 1
    assert "digest does not match" in refused.stderr and "--unsigned-ok" in refused.stderr
    del data["digest"]
    path.write_text(json.dumps(data))
    unsigned = run_cli(["-q", "validate", str(path), str(task["run"])])
    assert unsigned.code == EXIT_BAD_INPUT and "has no digest" in unsigned.stderr
    assert run_cli(["-q", "validate", "--unsigned-ok", str(path), str(task["run"])]).code \
        in (0, 1)


@pytest.mark.parametrize("old, new, message", [
    ('"version": 1', '"version": ' + "9" * 5000, "not a JSON model file"),
    ('"version": 1', '"version": ' + "[" * 100_000 + "]" * 100_000, "not a JSON model file"),
])
def test_a_model_file_json_cannot_hold_is_an_error(task, tmp_path, old, new, message):
    path = tmp_path / "model.json"
    text = json.dumps(json.loads(task["model"].read_text()))
    assert old in text
    path.write_text(text.replace(old, new, 1))
    outcome = run_cli(["-q", "validate", str(path), str(task["run"])])
    assert outcome.code == EXIT_BAD_INPUT and outcome.traceback is None, outcome
    assert f"{path}: {message}" in outcome.stderr


def test_the_learned_model_passes_its_own_check(task):
    assert run_cli(["-q", "validate", str(task["model"]), str(task["run"])]).code == 0


def test_swapped_arguments_say_the_model_comes_first(task):
    outcome = run_cli(["validate", str(task["test"]), str(task["model"])])
    assert outcome.code == EXIT_BAD_INPUT and outcome.traceback is None
    assert "is a folder, not a model file; the model comes first" in outcome.stderr
    outcome = run_cli(["validate", str(task["run"]), str(task["model"])])
    assert outcome.code == EXIT_BAD_INPUT and "is a trace file" in outcome.stderr


def test_raw_line_separators_inside_json_strings_are_valid(task, tmp_path):
    events = events_for("odd", make_screens(5))
    odd = "note\u2028with a line separator\u0085and NEL\x0c"
    events[0]["meta"] = {"note": odd}
    events[0]["observation"]["label"] = odd
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events),
                    encoding="utf-8")
    assert "\u2028" in path.read_text(encoding="utf-8")
    assert read_run(path).events[0].observation.label == odd
    assert run_cli(["-q", "validate", str(task["model"]), str(path)]).code == 0


@pytest.mark.parametrize("line, message", [
    ("[" * 100_000 + "]" * 100_000, "JSON nested deeper than 200 levels"),
    ('{"v": 1, "ts": ' + "9" * 5000 + "}", "not valid JSON"),
    ('{"v": 1, "run_id": "\\ud800"}', "string '\\ud800' holds a lone surrogate"),
])
def test_poison_lines_are_refused_with_the_line(tmp_path, task, line, message):
    path = tmp_path / "poison.jsonl"
    path.write_text(line + "\n")
    outcome = run_cli(["-q", "validate", str(task["model"]), str(path)])
    assert outcome.code == EXIT_BAD_INPUT, outcome
    assert f"{path}:1: {message}" in outcome.stderr


def test_a_ts_too_large_for_a_float_is_refused(tmp_path, task):
    events = events_for("big", make_screens(5))
    events[1]["ts"] = 10 ** 400
    path = write_run(tmp_path, events)
    outcome = run_cli(["-q", "validate", str(task["model"]), str(path)])
    assert outcome.code == EXIT_BAD_INPUT
    assert f"{path}:2: ts must be a finite number" in outcome.stderr


@pytest.mark.parametrize("labels", ['{"train-0": "success"}', '{"train-0": {"outcome": "yes"}}',
                                    "\xff\xfe", "[" * 5000])
def test_bad_labels_are_an_error_naming_the_file(task, tmp_path, labels):
    folder = tmp_path / "train"
    folder.mkdir()
    for number in range(2):
        write_run(folder, events_for(f"train-{number}", make_screens(number)))
    (folder / "labels.json").write_bytes(labels.encode("latin-1"))
    outcome = run_cli(["-q", "learn", str(folder), "-o", str(tmp_path / "m.json")])
    assert outcome.code == EXIT_BAD_INPUT and outcome.traceback is None
    assert f"{folder / 'labels.json'}: " in outcome.stderr


def test_learn_on_mutated_runs_learns_or_says_which_file(tmp_path):
    rng = random.Random(7)
    for case in range(8):
        folder = tmp_path / f"case{case}"
        folder.mkdir()
        paths = [write_run(folder, events_for(f"train-{n}", make_screens(n))) for n in range(3)]
        paths[0].write_bytes(mutate_trace(paths[0].read_text(), rng, gentle=case % 2 == 0))
        outcome = run_cli(["-q", "learn", str(folder), "-o", str(folder / "model.json")])
        assert_clear(outcome)
        assert outcome.code == 0 or str(paths[0]) in outcome.stderr


def test_unreadable_output_path_is_bad_input(task, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    outcome = run_cli(["-q", "learn", str(task["test"]), "-o", str(blocker / "model.json")])
    assert outcome.code == EXIT_BAD_INPUT and outcome.traceback is None


def test_quiet_after_the_subcommand_version_and_exit_codes_in_help(task, capsys):
    assert run_cli(["validate", "-q", str(task["model"]), str(task["run"])]).code == 0
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version"])
    assert capsys.readouterr().out.startswith("trustlayer ")
    for argv in (["--help"], ["validate", "--help"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(argv)
        text = capsys.readouterr().out
        assert "exit codes:" in text and "1  some run failed" in text and "2  bad input" in text
