"""docs/trace-event.schema.json (for runners in other languages) agrees with the reader:
every shipped event validates, events the runner library writes validate, and events the
reader refuses for a schema reason are refused by the schema too."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest
from devsets import DATA, DEVTRACES, EXAMPLES, REPO, SHARED

from trustlayer.runner import EventBuilder

SCHEMA = REPO / "docs" / "trace-event.schema.json"


@lru_cache(maxsize=1)
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def shipped_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.jsonl"))


@pytest.mark.parametrize("root", [EXAMPLES, DATA, pytest.param(SHARED, marks=DEVTRACES)],
                         ids=["examples", "data", "shared"])
def test_every_shipped_event_validates(root):
    files = shipped_files(root)
    assert files, f"no traces under {root}"
    problems, count = [], 0
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            if line.strip():
                count += 1
                problems += [f"{path}:{number}: {error.message}"
                             for error in validator().iter_errors(json.loads(line))]
    assert problems == [], problems[:5]
    assert count > 100


def test_what_the_runner_library_writes_validates():
    events = EventBuilder("r", "t", fingerprint=True)
    written = [events.state(text="a", network=[{"method": "GET", "path": "/", "status": 200,
                                                 "type": "document"}]),
               events.action("tool", "bash", "ls", {"cwd": "/"}),
               events.action("tool", "get_order", "42", read_only=True),
               events.message("Order 42 is cancelled."),
               events.state(files={"a.py": "0" * 64}, a11y={"role": "tree", "name": ""}),
               events.end("failure", "success")]
    for event in written:
        validator().validate(event)


GOOD = {"v": 1, "run_id": "r", "task": "t", "seq": 0, "ts": 1.5, "kind": "state",
        "observation": {"text": "hi"}}


@pytest.mark.parametrize("change", [
    {"v": 2}, {"seq": -1}, {"ts": "now"}, {"kind": "teleport"}, {"run_id": ""},
    {"observation": {"url": "http://x/"}}, {"observation": {"text": None}},
    {"observation": {"screenshot": "../secret.png"}},
    {"observation": {"screenshot": "/etc/passwd"}},
    {"observation": {"text": "x", "files": {"a": 1}}},
    {"observation": {"text": "x", "network": [{"method": "GET", "path": "/"}]}},
    {"observation": {"text": "x", "network": [{"method": "GET", "path": "/", "status": 42,
                                                "type": "xhr"}]}},
    {"observation": {"screenshot_fingerprint": {"sha256": "0", "phash": "0", "thumbnail": ""}}},
    {"kind": "action", "action": {"type": "fly"}}, {"kind": "end"},
    {"kind": "end", "outcome": "done"},
])
def test_events_the_format_refuses_are_refused(change):
    assert not validator().is_valid({**GOOD, **change})
    assert validator().is_valid(GOOD)
