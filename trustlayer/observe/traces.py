"""Read and validate agent trace files (format version 1, see docs/TRACE_FORMAT.md).

A trace file is JSON Lines, one event per line, one run per file, each line read by
:mod:`trustlayer.observe.event_parsing`. Every problem is a
:class:`~trustlayer.errors.TraceError` naming the file and line, never a traceback.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from trustlayer.errors import TraceError
from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.regular import LineTooLong, NotReadable, regular_lines
from trustlayer.observe.trace_events import LABEL_CAUSES, Event, Run
from trustlayer.settings import Settings


def read_run(path: str | Path, settings: Settings | None = None) -> Run:
    """Read one `.jsonl` trace file as a :class:`Run`, validating every line."""
    path = Path(path)
    source = str(path)
    events: list[Event] = []
    for number, line_text in enumerate(_lines(path, settings or Settings()), start=1):
        if not line_text.strip():
            continue
        event = parse_event(line_text, source=source, line=number, base_dir=path.parent,
                            settings=settings)
        _check_sequence(events, event, source, number)
        events.append(event)
    if not events:
        raise TraceError("no events in file", source)
    return Run(events[0].run_id, events[0].task, events, source)


def max_line_bytes(settings: Settings) -> int:
    """The most bytes one line of a trace file may hold: one event with the largest
    screenshot inline (base64 of ``max_image_bytes``) and a mebibyte beside it."""
    return settings.max_image_bytes * 4 // 3 + (1 << 20)


def _lines(path: Path, settings: Settings) -> Iterator[str]:
    """The text lines of the trace file at `path` (ended by "\n" only: a raw U+2028, U+0085
    or form feed is allowed inside a JSON string), each refused past :func:`max_line_bytes`
    without being read whole."""
    source = str(path)
    try:
        for number, line in enumerate(regular_lines(path, max_line_bytes(settings)), start=1):
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                raise TraceError("file is not UTF-8 text", source, number) from None
            yield text
    except FileNotFoundError:
        raise TraceError("file not found", source) from None
    except NotReadable as exc:  # a FIFO would block the reader until someone writes
        raise TraceError(f"cannot be read as a trace: {exc}", source) from None
    except LineTooLong as exc:
        raise TraceError(str(exc), source, exc.line) from None


def _check_sequence(previous: list[Event], event: Event, source: str, line: int) -> None:
    expected = len(previous)
    if previous and previous[-1].kind == "end":
        raise TraceError("event after the run's 'end' event", source, line)
    if previous and event.run_id != previous[0].run_id:
        raise TraceError(f"run_id '{event.run_id}' differs from the file's run "
                         f"'{previous[0].run_id}' (one run per file)", source, line)
    if previous and event.task != previous[0].task:
        raise TraceError(f"task '{event.task}' differs from the run's task '{previous[0].task}'",
                         source, line)
    if event.seq != expected:
        problem = "does not increase" if event.seq < expected else "skips"
        raise TraceError(f"seq {event.seq} {problem}: expected {expected}", source, line)


def trace_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Expand files and directories into `.jsonl` trace files (directories sorted)."""
    for path in map(Path, paths):
        if path.is_dir():
            yield from sorted(path.glob("*.jsonl"))
        elif path.exists():
            yield path  # (read_run refuses what is not a regular file)
        else:
            raise TraceError("no such file or directory", str(path))


def read_runs(paths: Iterable[str | Path], settings: Settings | None = None) -> list[Run]:
    """Read every run under `paths` (files or directories of `.jsonl` files)."""
    runs = [read_run(path, settings) for path in trace_files(paths)]
    seen: dict[str, str] = {}
    for run in runs:
        if run.run_id in seen:
            raise TraceError(f"run_id '{run.run_id}' also in {seen[run.run_id]}", run.source)
        seen[run.run_id] = run.source
    return runs


def read_training(paths: Sequence[str | Path],
                  read: Callable[[Sequence[str | Path]], list[Run]] = read_runs,
                  ) -> tuple[list[Run], dict[str, str | None]]:
    """What learning takes from the trace files and folders `paths`: their runs (read by
    `read`) and, from the ``labels.json`` of the folders they are or are in, the causes of
    their failed runs (negative milestones are learned from those)."""
    causes: dict[str, str | None] = {}
    for path in map(Path, paths):
        folder = path if path.is_dir() else path.parent
        if (folder / "labels.json").is_file():
            causes.update({rid: label.get("cause") for rid, label in load_labels(folder).items()})
    return read(paths), causes


def load_labels(directory: str | Path) -> dict[str, dict[str, Any]]:
    """Read `labels.json` of a labelled trace directory:
    ``{run_id: {"outcome": "success"|"failure", "cause": "product_bug"|"agent_error"|null}}``."""
    path = Path(directory) / "labels.json"
    try:
        labels = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TraceError("labels.json not found (needed for evaluation)", str(path)) from None
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested too deep
        raise TraceError(f"not valid JSON ({str(exc)[:200]})", str(path)) from None
    if not isinstance(labels, dict):
        raise TraceError("labels.json must map run_id to {outcome, cause}", str(path))
    for run_id, label in labels.items():
        if not isinstance(label, dict) or label.get("outcome") not in ("success", "failure") \
                or label.get("cause") not in LABEL_CAUSES:
            raise TraceError(f"label of '{run_id}' must be {{\"outcome\": \"success\"|"
                             f"\"failure\", \"cause\": \"product_bug\"|\"agent_error\"|null}}",
                             str(path))
    return labels
