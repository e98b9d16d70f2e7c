"""Small things a careless fleet or user does, each answered with a clear message or a valid
file (issue 29, point 8): timestamps in milliseconds, control characters in a run id's JUnit
record, ``learn -o`` onto a directory, a report written to a full device."""
from __future__ import annotations

import subprocess
import sys
import xml.dom.minidom

import pytest
from devsets import EXAMPLES

from trustlayer.errors import TraceError
from trustlayer.observe.event_parsing import parse_event
from trustlayer.show.ci import junit_xml

TRAIN = EXAMPLES / "jupyter" / "train"


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trustlayer.cli", *argv, "-q"],
                          capture_output=True, text=True, timeout=300, check=False)


def test_a_timestamp_in_milliseconds_is_refused():
    event = {"v": 1, "run_id": "r", "task": "t", "seq": 0, "ts": 1795995228437,
             "kind": "action", "action": {"type": "wait"}}
    with pytest.raises(TraceError, match="Unix time in seconds, not milliseconds"):
        parse_event(event)
    assert parse_event({**event, "ts": 1795995228.437}).ts == 1795995228.437


def test_junit_with_control_characters_in_a_run_id_is_valid_xml():
    records = [{"run_id": "run\x00\x1b[31m", "verdict": "fail", "coverage": 0.5,
                "reason": "bad\x07 thing", "cause": "agent_error", "missing": []}]
    text = junit_xml(records, "task")
    document = xml.dom.minidom.parseString(text.encode("utf-8"))
    [case] = document.getElementsByTagName("testcase")
    assert case.getAttribute("name") == "run\\x00\\x1b[31m"


def test_learn_onto_a_directory_says_so_and_leaves_nothing(tmp_path):
    target = tmp_path / "models"
    target.mkdir()
    done = cli("learn", str(TRAIN), "-o", str(target))
    assert done.returncode == 2
    assert f"trustlayer learn: error: {target}: a directory, not a model file" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models"]


def test_a_report_to_a_full_device_names_it(tmp_path):
    model = tmp_path / "model.json"
    assert cli("learn", str(TRAIN), "-o", str(model)).returncode == 0
    runs = str(EXAMPLES / "jupyter" / "test")
    for argv in (("validate", str(model), runs, "--format", "json", "-o", "/dev/full"),
                 ("report", str(model), runs, "-o", "/dev/full")):
        done = cli(*argv)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert f"trustlayer {argv[0]}: error: /dev/full: No space left on device" in done.stderr


def test_a_reader_that_closes_the_pipe_is_no_error(tmp_path):
    """`trustlayer validate … | head -1`: the lines nobody reads are dropped quietly."""
    model = tmp_path / "model.json"
    assert cli("learn", str(TRAIN), "-o", str(model)).returncode == 0
    runs = str(EXAMPLES / "jupyter" / "test")
    validate = subprocess.Popen([sys.executable, "-m", "trustlayer.cli", "validate", str(model),
                                 runs, "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert validate.stdout is not None and validate.stderr is not None
    validate.stdout.close()  # the reader is gone before the first line is written
    errors = validate.stderr.read().decode()
    assert validate.wait() == 0, errors
    assert errors == "", errors


def test_an_image_given_as_the_model_is_named_in_words(tmp_path):
    image = tmp_path / "model.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    done = cli("show", str(image))
    assert done.returncode == 2 and "codec" not in done.stderr, done.stderr
    assert f"{image}: not a JSON model file: it holds binary data (a PNG image)" in done.stderr


def test_progress_bars_stay_out_of_a_log_file(tmp_path, monkeypatch):
    """Standard error written to a file (a CI log) gets no bar redrawn with carriage returns."""
    from trustlayer.inputs import progress
    with open(tmp_path / "ci.log", "w") as log:
        monkeypatch.setattr(sys, "stderr", log)
        bar = progress([1, 2, 3], "reading", quiet=False)
        assert list(bar) == [1, 2, 3] and bar.disable  # no bar drawn, however slow
    assert (tmp_path / "ci.log").read_text() == ""
