"""Trace text cannot forge what shows it: a run id or an action target holding new lines,
workflow commands, Markdown, HTML or terminal escapes reaches the terminal, the job log and
the step summary as the text it is (trustlayer.show.escape)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from devsets import EXAMPLES

#: the issue's payloads: a run id that breaks out of a code fence into workflow commands,
#: a heading and raw HTML; a target that clears the terminal and retitles it
RUN_ID = ("r1\n```\n## INJECTED <img src=x onerror=alert(1)>\n::error title=FORGED::all runs "
          "passed\n::add-mask::trustlayer\r## FORGED <details><img src=y>\n")
TARGET = "menu Settings\x1b[2J\x1b]0;TITLE\x07"
FAILING = EXAMPLES / "jupyter" / "test" / "jl-save-textfile-test-08.jsonl"  # clicks Settings


def forged(directory: Path) -> Path:
    """The failing example run under the hostile run id, its Settings click on the target."""
    events = [json.loads(line) for line in FAILING.read_text().splitlines() if line.strip()]
    for event in events:
        event["run_id"] = RUN_ID
        if event.get("action", {}).get("target") == "menu Settings":
            event["action"]["target"] = TARGET
    path = directory / "forged.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    shots = Path("shots") / FAILING.stem  # its screenshots, where its events say they are
    if not (directory / shots).exists():
        shutil.copytree(FAILING.parent / shots, directory / shots)
    return path


def trustlayer(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trustlayer.cli", *args], capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "model.json"
    assert trustlayer("learn", str(EXAMPLES / "jupyter" / "train"), "-o", str(path)
                      ).returncode == 0
    return path


def assert_one_line_each(text: str) -> None:
    assert not any(line.startswith("::") for line in text.splitlines()), text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), repr(text)


def test_the_terminal_and_the_log_show_the_text_as_it_is(model, tmp_path):
    judged = trustlayer("validate", "--verbose", str(model), str(forged(tmp_path)))
    assert judged.returncode == 1, judged.stderr
    assert_one_line_each(judged.stdout + judged.stderr)
    assert "r1\\n```\\n## INJECTED" in judged.stdout and "\\x1b[2J" in judged.stdout


def test_an_error_quoting_the_run_id_is_one_escaped_line(model, tmp_path):
    mixed = forged(tmp_path)
    lines = mixed.read_text().splitlines()
    lines[1] = lines[1].replace(json.dumps(RUN_ID), json.dumps("other"))
    mixed.write_text("\n".join(lines) + "\n")
    refused = trustlayer("validate", "--strict", str(model), str(mixed))
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "::error" in refused.stderr
    assert_one_line_each(refused.stderr)


def test_the_step_summary_renders_the_run_id_as_text(model, tmp_path):
    summary = tmp_path / "summary.md"
    trustlayer("validate", str(model), str(forged(tmp_path)), "--markdown", str(summary))
    markdown = summary.read_text()
    assert "<img" not in markdown and "<details>" not in markdown and "\r" not in markdown
    assert [line for line in markdown.splitlines() if line.startswith("#")] == [
        "### trustlayer: jl-save-textfile"]
    table = [line for line in markdown.splitlines() if line.startswith("|")]
    assert len(table) == 3 and "❌ fail" in table[2]  # header, delimiter, the run's row


def test_a_log_record_quoting_a_run_id_is_one_line():
    import logging

    from trustlayer.show.escape import escape_log_records

    escape_log_records()
    record = logging.getLogger("stream.judging").makeRecord(
        "stream.judging", logging.WARNING, __file__, 1, "run %s refused", (RUN_ID,), None)
    assert "\n" not in record.getMessage() and "\\n::error" in record.getMessage()
    other = logging.getLogger("aiokafka").makeRecord("aiokafka", logging.WARNING, __file__, 1,
                                                     "a\nb", (), None)
    assert other.getMessage() == "a\nb"  # other libraries' records are left as they are
