"""The real runs the repository ships in tests/data are what tests/data/README.md says:
byte-for-byte copies of dev traces, with their original labels, and nothing else."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from devsets import DATA, DEVTRACES, SHARED, SLICE_TASKS


def splits(task: str) -> list[Path]:
    return [DATA / task / split for split in ("train", "test")]


@pytest.mark.parametrize("task", SLICE_TASKS)
def test_each_split_labels_exactly_its_runs(task):
    for split in splits(task):
        labels = json.loads((split / "labels.json").read_text(encoding="utf-8"))
        runs = sorted(path.stem for path in split.glob("*.jsonl"))
        assert sorted(labels) == runs and len(runs) >= 2, split
        assert {path.name for path in (split / "shots").glob("*")} <= set(runs), split


@DEVTRACES
@pytest.mark.parametrize("task", SLICE_TASKS)
def test_every_shipped_file_is_a_copy_of_a_dev_trace_with_its_labels(task):
    origin = SHARED / SLICE_TASKS[task]
    for split in splits(task):
        labels = json.loads((split / "labels.json").read_text(encoding="utf-8"))
        for path in sorted(split.rglob("*.*")):
            if path.name == "labels.json":
                continue
            inside = path.relative_to(split).as_posix()  # NAME.jsonl or shots/RUN/NNN.png
            originals = [found for found in origin.glob(f"**/{inside}")
                         if found.read_bytes() == path.read_bytes()]
            assert originals, f"{path}: no identical file under {origin}"
            if path.suffix == ".jsonl":
                original_labels = json.loads((originals[0].parent / "labels.json").read_text())
                assert labels[path.stem] == original_labels[path.stem], path
