"""Strict reading of trace files: every bad input gives one clear error with file and line."""
import base64
import io
import json
import re
from pathlib import Path

import pytest
from PIL import Image

from trustlayer.cli import main
from trustlayer.errors import TraceError
from trustlayer.observe.event_parsing import parse_event, run_of_events
from trustlayer.observe.images import ImageRef
from trustlayer.observe.traces import read_run, read_runs, read_training
from trustlayer.settings import Settings

GOOD = [
    {"v": 1, "run_id": "r1", "task": "t", "seq": 0, "ts": 1.0, "kind": "state",
     "observation": {"text": "Home"}},
    {"v": 1, "run_id": "r1", "task": "t", "seq": 1, "ts": 2.0, "kind": "action",
     "action": {"type": "click", "target": "Search"}},
    {"v": 1, "run_id": "r1", "task": "t", "seq": 2, "ts": 3.0, "kind": "end", "outcome": "success"},
]


def png_bytes(size=(8, 8)) -> bytes:
    out = io.BytesIO()
    Image.new("L", size, 128).save(out, format="PNG")
    return out.getvalue()


def write(tmp_path: Path, events, name="r1.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events))
    return path


def test_reads_a_good_run(tmp_path):
    run = read_run(write(tmp_path, GOOD))
    assert (run.run_id, run.task, len(run.states), run.outcome) == ("r1", "t", 1, "success")


@pytest.mark.parametrize("broken, line, message", [
    (lambda ev: ev[:1] + ["{not json"] + ev[2:], 2, "not valid JSON"),
    (lambda ev: [dict(ev[0], seq=0), dict(ev[1], seq=0), ev[2]], 2, "seq 0 does not increase"),
    (lambda ev: [ev[0], dict(ev[1], seq=2), ev[2]], 2, "seq 2 skips"),
    (lambda ev: [{k: v for k, v in ev[0].items() if k != "task"}] + ev[1:], 1,
     "missing required field 'task'"),
    (lambda ev: [dict(ev[0], kind="thought")] + ev[1:], 1, "kind 'thought' is not one of"),
    (lambda ev: [dict(ev[0], observation={"url": "x"})] + ev[1:], 1, "at least one of"),
    (lambda ev: ev[:2] + [dict(ev[2], outcome="maybe")], 3, "outcome 'maybe'"),
    (lambda ev: [dict(ev[0], v=2)] + ev[1:], 1, "format version 2 is not supported"),
    (lambda ev: [ev[0], dict(ev[1], run_id="other")] + ev[2:], 2, "one run per file"),
    (lambda ev: [ev[0], dict(ev[1], action={"type": "teleport"})] + ev[2:], 2, "action.type"),
    (lambda ev: [dict(ev[0], ts="noon")] + ev[1:], 1, "field 'ts' must be a number"),
    (lambda ev: ev + [dict(ev[1], seq=3)], 4, "after the run's 'end'"),
])
def test_bad_lines_name_file_and_line(tmp_path, broken, line, message):
    path = write(tmp_path, broken([dict(e) for e in GOOD]))
    with pytest.raises(TraceError) as error:
        read_run(path)
    assert error.value.line == line
    assert message in str(error.value)
    assert str(error.value).startswith(f"{path}:{line}: ")


def with_screenshot(ref: str) -> list:
    return [dict(GOOD[0], observation={"screenshot": ref})] + GOOD[1:]


def test_screenshot_by_path_and_data_uri_are_read_lazily(tmp_path):
    (tmp_path / "shots").mkdir()
    (tmp_path / "shots" / "a.png").write_bytes(png_bytes())
    run = read_run(write(tmp_path, with_screenshot("shots/a.png")))
    shot = run.states[0].observation.screenshot
    assert shot._gray is None and shot.gray().size == (8, 8)
    uri = "data:image/png;base64," + base64.b64encode(png_bytes()).decode()
    run = read_run(write(tmp_path, with_screenshot(uri), "r2.jsonl"))
    assert run.states[0].observation.screenshot


def test_a_run_from_stream_events_in_any_order():
    run = run_of_events(list(reversed(GOOD)))
    assert [e.seq for e in run.events] == [0, 1, 2] and run.outcome == "success"
    with pytest.raises(TraceError, match="missing required field 'seq'"):
        run_of_events([{k: v for k, v in GOOD[0].items() if k != "seq"}])


@pytest.mark.parametrize("colors", [2, 16, 256])
def test_palette_screenshots_turn_gray_exactly_as_pillow_converts_them(colors):
    pixels = bytes((x * 37 + y * 11) % 256 for y in range(48) for x in range(64))
    image = Image.merge("RGB", [Image.frombytes("L", (64, 48), pixels)] * 2
                        + [Image.frombytes("L", (64, 48), pixels[::-1])]).quantize(colors)
    out = io.BytesIO()
    image.save(out, format="PNG")
    assert ImageRef(out.getvalue(), "p.png").gray().tobytes() == image.convert("L").tobytes()


@pytest.mark.parametrize("setup, ref, message", [
    (lambda d: None, "shots/missing.png", "screenshot file not found"),
    (lambda d: (d / "outside.png").write_bytes(png_bytes()), "../outside.png",
     "leaves the trace directory"),
    (lambda d: None, "/etc/passwd", "leaves the trace directory"),
    (lambda d: (d / "t" / "notes.png").write_text("hello"), "notes.png",
     "is not a PNG, JPEG or WebP image"),
    (lambda d: (d / "t" / "huge.png").write_bytes(png_bytes((300, 300))), "huge.png",
     "over the limit"),
    (lambda d: None, "data:image/png;base64,!!!", "not valid base64"),
    (lambda d: None, "data:text/plain;base64,aGk=", "must be 'data:image/"),
])
def test_bad_screenshots_are_refused(tmp_path, setup, ref, message):
    (tmp_path / "t").mkdir()
    setup(tmp_path)
    path = write(tmp_path / "t", with_screenshot(ref))
    with pytest.raises(TraceError, match=message) as error:
        read_run(path, Settings(max_image_pixels=50_000))
    assert error.value.line == 1


def test_a_screenshot_seen_before_is_checked_again_against_each_limit(tmp_path):
    """Its header is read once (by the bytes' digest); the pixel limit is still applied to
    every read, and the same bytes give the same size."""
    uri = "data:image/png;base64," + base64.b64encode(png_bytes((300, 300))).decode()
    path = write(tmp_path, with_screenshot(uri))
    assert read_run(path).states[0].observation.screenshot.size == (300, 300)
    with pytest.raises(TraceError, match="over the limit"):
        read_run(path, Settings(max_image_pixels=50_000))
    assert read_run(path).states[0].observation.screenshot.size == (300, 300)


def test_stream_events_without_an_image_directory_refuse_paths():
    with pytest.raises(TraceError, match="no image directory"):
        parse_event(dict(GOOD[0], observation={"screenshot": "a.png"}))


def test_directories_ignore_non_trace_files(tmp_path):
    write(tmp_path, GOOD)
    (tmp_path / "labels.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("hi")
    assert [r.run_id for r in read_runs([tmp_path])] == ["r1"]


def test_cli_exits_2_with_the_location_and_no_traceback(tmp_path, capsys):
    bad = write(tmp_path, [GOOD[0], "{oops", GOOD[2]])
    assert main(["-q", "learn", str(bad), "-o", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: not valid JSON" in err and "Traceback" not in err
    assert main(["-q", "validate", str(tmp_path / "missing.json"), str(bad)]) == 2
    assert "model file not found" in capsys.readouterr().err


@pytest.mark.parametrize("network, said", [
    ({"method": "GET"}, "observation.network must be a list"),
    (["GET / 200"], "observation.network[0] must be an object"),
    ([{"method": "GET", "path": "/", "status": 999, "type": "document"}],
     "observation.network[0].status must be an HTTP status"),
    ([{"method": 1, "path": "/", "status": 200, "type": "document"}],
     "method, path and type must be strings"),
])
def test_a_malformed_network_field_is_refused_with_its_place(tmp_path, network, said):
    event = {"v": 1, "run_id": "r", "task": "t", "seq": 0, "ts": 1.0, "kind": "state",
             "observation": {"text": "x", "network": network}}
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(event) + "\n")
    with pytest.raises(TraceError, match=re.escape(said)) as caught:
        read_run(path)
    assert str(caught.value).startswith(f"{path}:1:")


def test_a_training_set_is_its_runs_and_the_causes_its_labels_give():
    """Folders and files alike: the labels.json beside them gives the failed runs' causes."""
    examples = Path(__file__).resolve().parents[2] / "examples" / "jupyter" / "test"
    runs, causes = read_training([examples])
    assert {run.run_id for run in runs} == set(causes)
    assert causes["jl-save-textfile-test-11"] == "product_bug"
    one = examples / "jl-save-textfile-test-08.jsonl"
    runs, causes = read_training([one])
    assert [run.run_id for run in runs] == ["jl-save-textfile-test-08"]
    assert causes["jl-save-textfile-test-08"] == "agent_error"
