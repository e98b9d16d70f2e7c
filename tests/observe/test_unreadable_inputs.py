"""Inputs the batch commands must neither crash nor hang on: screenshots whose pixels do not
decode give the run a final ``fail`` with cause ``stream_fault`` naming the event (exit 1,
no traceback), and a FIFO, a huge sparse file or an oversized data URI is refused before it
is read (exit 2)."""
from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from brokenimages import BREAKAGES, BROKEN_SEQ, RUN, broken_run
from devsets import EXAMPLES

from trustlayer.errors import TraceError
from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.traces import read_run
from trustlayer.settings import Settings

TRAIN = EXAMPLES / "jupyter" / "train"


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "model.json"
    cli("learn", str(TRAIN), "-o", str(path))
    return path


def cli(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``trustlayer ...`` in a subprocess (a hang fails the test instead of blocking it)."""
    return subprocess.run([sys.executable, "-m", "trustlayer.cli", *argv, "-q"],
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_an_undecodable_screenshot_fails_the_run_as_a_stream_fault(model_file, tmp_path,
                                                                   breakage):
    broken_run(tmp_path, BREAKAGES[breakage])
    done = cli("validate", str(model_file), str(tmp_path), "--format", "json")
    assert "Traceback" not in done.stderr and done.returncode == 1, done.stderr
    [verdict] = [json.loads(line) for line in done.stdout.splitlines()]
    assert (verdict["run_id"], verdict["verdict"], verdict["cause"]) == (RUN, "fail",
                                                                         "stream_fault")
    assert verdict["reason"].startswith(f"event seq {BROKEN_SEQ} cannot be judged: screenshot ")
    assert f"s{BROKEN_SEQ}.png does not decode" in verdict["reason"]


def test_a_report_of_an_undecodable_screenshot_says_so_without_a_traceback(model_file,
                                                                        tmp_path):
    """The report judges a run as ``validate`` does: a stream fault, not a refusal."""
    broken_run(tmp_path / "runs", BREAKAGES["truncated"])
    for argv, code in ((("validate", str(model_file), str(tmp_path / "runs"), "--report",
                         str(tmp_path / "r.html")), 1),
                       (("report", str(model_file), str(tmp_path / "runs"), "-o",
                         str(tmp_path / "r.html")), 0)):
        done = cli(*argv)
        assert done.returncode == code and "Traceback" not in done.stderr, done.stderr
        page = (tmp_path / "r.html").read_text(encoding="utf-8")
        assert "s5.png does not decode (OSError: image file is truncated)" in page


def test_a_fifo_among_the_traces_is_refused_not_waited_for(model_file, tmp_path):
    broken_run(tmp_path, lambda data: data)
    os.mkfifo(tmp_path / "zz.jsonl")
    # validate reports it and judges the other run (exit 2 only with --strict); learn stops
    for argv, codes in ((("validate", str(model_file), str(tmp_path)), (0, 1)),
                        (("validate", str(model_file), str(tmp_path), "--strict"), (2,)),
                        (("learn", str(tmp_path), "-o", str(tmp_path / "m.json")), (2,))):
        done = cli(*argv, timeout=60)
        assert done.returncode in codes, done.stderr
        assert "zz.jsonl is not a regular file (a FIFO)" in done.stderr
        assert "Traceback" not in done.stderr


def state(screenshot: str) -> dict:
    return {"v": 1, "run_id": "r", "task": "t", "seq": 0, "ts": 1.0, "kind": "state",
            "observation": {"screenshot": screenshot}}


def test_a_huge_sparse_screenshot_is_refused_before_it_is_read(tmp_path):
    with open(tmp_path / "huge.png", "wb") as file:
        file.truncate(2 * 1024 ** 3)  # 2 GB, no block written: reading it would take them
    with pytest.raises(TraceError, match=r"huge.png has 2147483648 bytes, over the limit of "
                                         r"20971520"):
        parse_event(state("huge.png"), base_dir=tmp_path)


def test_a_screenshot_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe.png")
    with pytest.raises(TraceError, match=r"pipe.png is not a regular file \(a FIFO\)"):
        parse_event(state("pipe.png"), base_dir=tmp_path)


def test_an_oversized_data_uri_is_refused_before_it_is_decoded():
    uri = "data:image/png;base64," + base64.b64encode(b"\0" * 3000).decode()
    with pytest.raises(TraceError, match="over the limit of 2000 \\(setting max_image_bytes\\)"):
        parse_event(state(uri), settings=Settings(max_image_bytes=2000))


def test_a_trace_file_fifo_is_refused(tmp_path):
    os.mkfifo(tmp_path / "run.jsonl")
    with pytest.raises(TraceError, match="not a regular file"):
        read_run(tmp_path / "run.jsonl")


def test_a_line_longer_than_one_event_may_be_is_refused_without_reading_it_whole(tmp_path):
    """A one-line trace of megabytes (here past the limit of small settings) is refused at
    its line, having read no more than a chunk past the limit."""
    from trustlayer.errors import TraceError
    from trustlayer.observe.traces import max_line_bytes, read_run
    from trustlayer.settings import Settings

    settings = Settings(max_image_bytes=3000)
    path = tmp_path / "long.jsonl"
    event = '{"v": 1, "run_id": "r", "task": "t", "seq": 0, "ts": 0, "kind": "state", '
    path.write_text(event + '"observation": {"text": "ok"}}\n' + event
                    + '"observation": {"text": "' + "x" * (3 << 20) + '"}}\n')
    with pytest.raises(TraceError) as refused:
        read_run(path, settings)
    assert refused.value.line == 2 and f"longer than {max_line_bytes(settings)}" in str(
        refused.value)
