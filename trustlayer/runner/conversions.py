"""What every importer of foreign logs shares (OpenTelemetry spans, chat message lists):
a key made a run id that is also a file name, a tool call's JSON arguments made the
action's value and args, and the runs written to a trace directory."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trustlayer.runner.sinks import TraceDir


def file_safe(key: str) -> str:
    """`key` as a run id that is also a file name.

    >>> file_safe("conv/42:a")
    'conv_42_a'
    """
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", key)
    return "_" + safe if safe.startswith(".") else safe


def run_ids(keys: Iterable[str]) -> dict[str, str]:
    """Each key as a file-safe run id (:func:`file_safe`); keys that would share one get a
    stable suffix from their own text, so no two runs are ever merged.

    >>> run_ids(["conv/42", "conv:42", "conv-7"])
    {'conv/42': 'conv_42-83b50917', 'conv:42': 'conv_42-bd08323c', 'conv-7': 'conv-7'}
    """
    keys = list(dict.fromkeys(keys))
    safe = {key: file_safe(key) for key in keys}
    shared = Counter(safe.values())
    return {key: f"{safe[key]}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"
            if shared[safe[key]] > 1 else safe[key] for key in keys}


def tool_call(arguments: str | None) -> tuple[str | None, dict[str, Any] | None]:
    """(value, args) of a tool call: an object's first text argument is the value (the
    command or query the action signature compares), the object its args.

    >>> tool_call('{"command": "ls -l", "timeout": 5}')
    ('ls -l', {'command': 'ls -l', 'timeout': 5})
    >>> tool_call("ls")
    ('ls', None)
    """
    try:
        parsed = json.loads(arguments) if arguments else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return arguments, None
    return next((v for v in parsed.values() if isinstance(v, str)), None), parsed


def write_runs(runs: dict[str, list[dict]], output: str | Path) -> None:
    """Write `runs` (validated events by run id) to the trace directory `output`, replacing
    runs of the same id."""
    sink = TraceDir(output)
    for run_id, events in runs.items():
        (sink.directory / f"{run_id}.jsonl").unlink(missing_ok=True)
        shutil.rmtree(sink.directory / "shots" / run_id, ignore_errors=True)
        for event in events:
            sink.write(event)
