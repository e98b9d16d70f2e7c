"""Generated runs of a small text-only task, for property tests.

A task is a chain of milestone screens; runs differ by optional extra screens
(spinners, toasts, detours), a file name chosen by the run, and clock times.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.trace_events import Run

MILESTONES = ("Home", "Search dialog", "Search results", "Details page", "Confirmation")


def screen(name: str, run_file: str, clock: str) -> str:
    """Text of one milestone screen: its own lines, a volatile clock, the run's file."""
    return "\n".join([f"{name} screen", f"{name} panel for {run_file}.txt", f"Updated {clock}",
                      f"Status: {name.lower()} ready"])


def events_for(run_id: str, screens: Sequence[str], outcome: str = "success") -> list[dict]:
    """Events of a run that shows `screens` in order, one click between each."""
    events: list[dict] = []
    ts = 1000.0
    for number, text in enumerate(screens):
        if number:
            events.append({"kind": "action",
                           "action": {"type": "click", "target": f"next {number}"}})
        events.append({"kind": "state", "observation": {"text": text}})
    events.append({"kind": "end", "outcome": outcome})
    for seq, event in enumerate(events):
        ts += 1.0
        event.update(v=1, run_id=run_id, task="gen-task", seq=seq, ts=ts)
    return events


def make_screens(run_number: int, extras: Sequence[tuple[int, str]] = (),
                 drop: Sequence[str] = ()) -> list[str]:
    """Milestone screens of run `run_number`, with `(position, text)` extras inserted
    before the milestone at `position`, and the milestones named in `drop` left out."""
    run_file = ["report", "notes", "draft", "memo", "summary", "letter"][run_number % 6]
    out: list[str] = []
    for position, name in enumerate(MILESTONES):
        out += [text for at, text in extras if at == position]
        if name not in drop:
            out.append(screen(name, run_file, f"{9 + position}:{10 + run_number:02d}"))
    out += [text for at, text in extras if at >= len(MILESTONES)]
    return out


def as_run(events: list[dict]) -> Run:
    parsed = [parse_event(e) for e in events]
    return Run(parsed[0].run_id, parsed[0].task, parsed)


def write_run(directory: Path, events: list[dict]) -> Path:
    path = directory / f"{events[0]['run_id']}.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def tool_run(run_id: str, steps: Sequence[tuple[str, str, str, dict[str, str]]],
             outcome: str = "success") -> Run:
    """A coding agent's run: a first state (the task), then for each `(tool, value, text,
    files)` in `steps` the tool call (without a tool: none) and the state it led to."""
    events: list[dict] = []
    for tool, value, text, files in steps:
        if tool:
            events.append({"kind": "action", "action": {"type": "tool", "target": tool,
                                                        "value": value or None}})
        events.append({"kind": "state", "observation": {"text": text, "files": dict(files)}})
    events.append({"kind": "end", "outcome": outcome})
    for seq, event in enumerate(events):
        event.update(v=1, run_id=run_id, task="tool-task", seq=seq, ts=1000.0 + seq)
    return as_run(events)
