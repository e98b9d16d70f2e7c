"""Runner-side fingerprinting: a run whose screenshots travel as fingerprints is judged
exactly as the run with its images, and a bad fingerprint is refused with file and line."""
import base64
import json
from pathlib import Path

import pytest
from devsets import EXAMPLES

from trustlayer.cli import main
from trustlayer.errors import TraceError
from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn
from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.runner_prints import fingerprint_screenshots
from trustlayer.observe.traces import read_run, read_runs, trace_files
from trustlayer.settings import Settings

JUPYTER = EXAMPLES / "jupyter"


def fingerprinted_copy(source: Path, target: Path) -> Path:
    """The runs under `source` written to `target` with every screenshot fingerprinted."""
    target.mkdir()
    for path in trace_files([source]):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        (target / path.name).write_text("".join(
            json.dumps(fingerprint_screenshots(e, path.parent)) + "\n" for e in lines))
    return target


def test_fingerprinted_runs_get_the_same_verdicts_without_images(tmp_path):
    model = learn(read_runs([JUPYTER / "train"]))
    printed_dir = fingerprinted_copy(JUPYTER / "test", tmp_path / "printed")
    assert not list(printed_dir.glob("**/*.png"))
    printed = {run.run_id: run for run in read_runs([printed_dir])}
    shots = 0
    for run in read_runs([JUPYTER / "test"]):
        other = printed[run.run_id]
        for original, copy in zip(run.states, other.states):
            assert copy.observation.screenshot is None
            shots += original.observation.screenshot is not None
            assert (copy.observation.screenshot_print is not None) == \
                (original.observation.screenshot is not None)
        expected, got = judge_run(model, run), judge_run(model, other)
        assert (got.status, got.reason, got.cause, got.matched) == \
            (expected.status, expected.reason, expected.cause, expected.matched), run.run_id
    assert shots > 0


def test_a_model_learned_from_fingerprinted_runs_is_the_same(tmp_path):
    printed = fingerprinted_copy(JUPYTER / "train", tmp_path / "printed")
    assert learn(read_runs([printed])).to_json() == learn(read_runs([JUPYTER / "train"])).to_json()


GOOD = {"sha256": "a" * 64, "phash": "0123456789abcdef",
        "thumbnail": base64.b64encode(bytes(64 * 64)).decode()}


@pytest.mark.parametrize("printed, message", [
    ("x", "must be an object"),
    ({**GOOD, "sha256": "xyz"}, "sha256 must be 64 lowercase hex digits"),
    ({**GOOD, "phash": 12}, "phash must be 16 lowercase hex digits"),
    ({**GOOD, "thumbnail": "!!"}, "thumbnail must be base64"),
    ({**GOOD, "thumbnail": "AAAA"}, "thumbnail has 3 bytes, not 64x64 gray pixels"),
])
def test_bad_fingerprints_are_refused_with_file_and_line(tmp_path, printed, message):
    events = [{"v": 1, "run_id": "r", "task": "t", "seq": 0, "ts": 1.0, "kind": "state",
               "observation": {"screenshot_fingerprint": printed}},
              {"v": 1, "run_id": "r", "task": "t", "seq": 1, "ts": 2.0, "kind": "end",
               "outcome": "success"}]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    with pytest.raises(TraceError) as error:
        read_run(path)
    assert str(error.value).startswith(f"{path}:1: ") and message in str(error.value)
    assert main(["validate", str(path), str(path)]) == 2


def test_the_thumbnail_must_have_the_models_size():
    event = {"v": 1, "run_id": "r", "task": "t", "seq": 0, "ts": 1.0, "kind": "state",
             "observation": {"screenshot_fingerprint": GOOD}}
    assert parse_event(event).observation.screenshot_print.phash == 0x0123456789abcdef
    with pytest.raises(TraceError, match="not 32x32 gray pixels"):
        parse_event(event, settings=Settings(thumbnail_size=32))
