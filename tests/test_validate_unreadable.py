"""`trustlayer validate` on a folder with corrupt trace files judges every file that reads
and reports each one that does not in one line; it exits 2 only when nothing could be
judged, or at the first bad file with `--strict`."""
from __future__ import annotations

import json

import pytest

from trustlayer.cli import main
from trustlayer.runner import Run, TraceDir


def record(folder, run_id: str) -> None:
    with Run("greet", TraceDir(folder), run_id) as run:
        run.state(text="Welcome. Who are you?")
        run.action("type", "Name", "Ada")
        run.state(text="Hello Ada, you are signed in")
        run.end("success")


@pytest.fixture
def model(tmp_path):
    for number in range(3):
        record(tmp_path / "train", f"train-{number}")
    assert main(["-q", "learn", str(tmp_path / "train"), "-o", str(tmp_path / "m.json")]) == 0
    return str(tmp_path / "m.json")


def corrupt(folder) -> list[str]:
    """Two bad files beside the good runs: a seq gap, and a line that is not JSON."""
    record(folder, "good-1")
    record(folder, "good-2")
    lines = (folder / "good-1.jsonl").read_text().splitlines()
    gap = json.loads(lines[1]) | {"run_id": "gap", "seq": 2}
    (folder / "gap.jsonl").write_text(lines[0].replace("good-1", "gap") + "\n"
                                      + json.dumps(gap) + "\n")
    (folder / "torn.jsonl").write_text('{"v": 1, "run_id": "torn", "ta\n')
    return [str(folder / "gap.jsonl"), str(folder / "torn.jsonl")]


def test_every_good_file_is_judged_and_each_bad_one_reported(tmp_path, model, capsys):
    bad = corrupt(tmp_path / "runs")
    capsys.readouterr()
    assert main(["-q", "validate", model, str(tmp_path / "runs"), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert sorted(json.loads(line)["run_id"] for line in out.splitlines()) == ["good-1",
                                                                                "good-2"]
    problems = err.strip().splitlines()
    assert [line.split(": ")[2].split(":")[0] for line in problems] == bad
    assert "seq 2 skips: expected 1" in problems[0] and "not valid JSON" in problems[1]
    assert all(line.startswith("trustlayer validate: error: ") and "(not judged" in line
               for line in problems)


def test_the_report_judges_the_good_files_too(tmp_path, model, capsys):
    corrupt(tmp_path / "runs")
    assert main(["-q", "validate", model, str(tmp_path / "runs"), "--report",
                 str(tmp_path / "r.html")]) == 0
    out, err = capsys.readouterr()
    assert "2 passed" in out and err.count("(not judged") == 2
    assert (tmp_path / "r.html").stat().st_size > 0


def test_strict_stops_at_the_first_bad_file(tmp_path, model, capsys):
    bad = corrupt(tmp_path / "runs")
    capsys.readouterr()
    assert main(["-q", "validate", model, str(tmp_path / "runs"), "--strict"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip().splitlines() == [
        f"trustlayer validate: error: {bad[0]}:2: seq 2 skips: expected 1"]


def test_nothing_readable_is_exit_2_naming_every_file(tmp_path, model, capsys):
    bad = corrupt(tmp_path / "runs")
    for good in ("good-1", "good-2"):
        (tmp_path / "runs" / f"{good}.jsonl").unlink()
    capsys.readouterr()
    assert main(["-q", "validate", model, str(tmp_path / "runs")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 2
    assert all(path in err for path in bad)
