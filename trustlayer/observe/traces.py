"""Read and validate agent traces (format version 1, see docs/TRACE_FORMAT.md).

A trace file is JSON Lines, one event per line, one run per file. Every problem is a
:class:`~trustlayer.errors.TraceError` naming the file and line, never a traceback.
Screenshots are read by :mod:`trustlayer.observe.images`.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustlayer.errors import BAD_IMAGE, MALFORMED_JSON, TOO_DEEP, TraceError
from trustlayer.observe.canonical import mask
from trustlayer.observe.images import ImageRef, ScreenshotPrint, load_image, parse_screenshot_print
from trustlayer.observe.json_fit import MAX_NESTING, json_problem
from trustlayer.observe.network import Response, parse_network
from trustlayer.observe.regular import LineTooLong, NotReadable, regular_lines
from trustlayer.settings import Settings

FORMAT_VERSION = 1
EVENT_KINDS = ("state", "action", "end")
#: The largest ts taken (in the year 5138): a ts in milliseconds is a thousand times more,
#: and read as seconds it made the stream's deadlines fail runs the validator passed.
MAX_TS = 1e11
ACTION_TYPES = ("click", "key", "type", "scroll", "wait", "navigate", "tool", "api", "message")
OUTCOMES = ("success", "failure", "unknown")
SELF_REPORTS = ("success", "failure")
LABEL_CAUSES = ("product_bug", "agent_error", None)
OBSERVATION_CONTENT = ("screenshot", "screenshot_fingerprint", "text", "a11y", "files")


@dataclass(frozen=True)
class Action:
    """What the agent did."""

    type: str
    target: str | None = None
    value: str | None = None
    args: dict[str, Any] | None = None
    #: whether a tool or api call only reads, as the tool declares it; None: unknown
    read_only: bool | None = None

    @property
    def call(self) -> str:
        """The name of the call across runs: its type and target (``tool:run_tests``)."""
        return f"{self.type}:{self.target or ''}"

    def signature(self) -> str:
        """A short canonical form of the action, used to compare actions across runs:
        type, target and value (for tools: the path or command word), volatile parts
        masked."""
        if self.type in ("tool", "api"):
            subject = (self.args or {}).get("path") or (self.value or "").split(" ", 1)[0]
        else:
            subject = self.value or ""
        return mask(f"{self.type}:{self.target or ''}:{subject}")


@dataclass(frozen=True)
class Observation:
    """What the runner observed in one state."""

    screenshot: ImageRef | None = None
    screenshot_print: ScreenshotPrint | None = None
    text: str | None = None
    a11y: Any = None
    url: str | None = None
    title: str | None = None
    files: dict[str, str] | None = None
    label: str | None = None
    network: tuple[Response, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def shown_text(self) -> str:
        """What the state shows as one string, white space folded: its title, text and
        accessibility tree (where typed text is looked for, verbatim)."""
        return " ".join(" ".join(self.shown_parts()).split())

    def shown_parts(self) -> list[str]:
        """Its title, text and accessibility tree, as they came."""
        return [self.title or "", self.text or "",
                self.a11y if isinstance(self.a11y, str) else
                json.dumps(self.a11y, ensure_ascii=False) if self.a11y else ""]


@dataclass(frozen=True)
class Event:
    """One validated trace event."""

    run_id: str
    task: str
    seq: int
    ts: float
    kind: str
    observation: Observation | None = None
    action: Action | None = None
    outcome: str | None = None
    self_report: str | None = None
    meta: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass
class Run:
    """All events of one run, in `seq` order."""

    run_id: str
    task: str
    events: list[Event]
    source: str = "<memory>"

    @property
    def states(self) -> list[Event]:
        return [e for e in self.events if e.kind == "state"]

    @property
    def end(self) -> Event | None:
        return self.events[-1] if self.events and self.events[-1].kind == "end" else None

    @property
    def outcome(self) -> str | None:
        return self.end.outcome if self.end else None


def _require(obj: dict, name: str, kind: type | tuple, source: str, line: int | None) -> Any:
    if name not in obj:
        raise TraceError(f"missing required field '{name}'", source, line)
    value = obj[name]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise TraceError(f"field '{name}' must be {_type_name(kind)}, got {type(value).__name__}",
                         source, line)
    return value


def _type_name(kind: type | tuple) -> str:
    if isinstance(kind, tuple):  # (int, float), the only pair asked for
        return "a number"
    return {"str": "a string", "int": "an integer", "dict": "an object"}.get(kind.__name__,
                                                                             kind.__name__)


def _optional_str(obj: dict, name: str, source: str, line: int | None) -> str | None:
    value = obj.get(name)
    if value is not None and not isinstance(value, str):
        raise TraceError(f"field '{name}' must be a string", source, line)
    return value


def _parse_observation(obj: Any, base_dir: Path | None, settings: Settings, source: str,
                       line: int | None) -> Observation:
    if not isinstance(obj, dict):
        raise TraceError("field 'observation' must be an object", source, line)
    if not any(obj.get(name) is not None for name in OBSERVATION_CONTENT):
        raise TraceError("observation needs at least one of screenshot, text, a11y, files "
                         "(or a screenshot_fingerprint)", source, line)
    screenshot = obj.get("screenshot")
    if screenshot is not None and not isinstance(screenshot, str):
        raise TraceError("observation.screenshot must be a string", source, line, BAD_IMAGE)
    a11y = obj.get("a11y")
    if a11y is not None and not isinstance(a11y, (str, dict, list)):
        raise TraceError("observation.a11y must be an object or a string", source, line)
    files = obj.get("files")
    if files is not None and (not isinstance(files, dict)
                              or not all(isinstance(v, str) for v in files.values())):
        raise TraceError("observation.files must be an object {path: sha256}", source, line)
    printed = obj.get("screenshot_fingerprint")
    known = {"screenshot", "screenshot_fingerprint", "text", "a11y", "url", "title", "files",
             "label", "network"}
    return Observation(
        screenshot=load_image(screenshot, base_dir, settings, source, line) if screenshot else None,
        screenshot_print=None if printed is None else
        parse_screenshot_print(printed, settings, source, line),
        text=_optional_str(obj, "text", source, line), a11y=a11y,
        url=_optional_str(obj, "url", source, line),
        title=_optional_str(obj, "title", source, line),
        files=files, label=_optional_str(obj, "label", source, line),
        network=parse_network(obj.get("network"), source, line),
        extra={k: v for k, v in obj.items() if k not in known})


def _parse_action(obj: Any, source: str, line: int | None) -> Action:
    if not isinstance(obj, dict):
        raise TraceError("field 'action' must be an object", source, line)
    action_type = _require(obj, "type", str, source, line)
    if action_type not in ACTION_TYPES:
        raise TraceError(f"action.type '{action_type}' is not one of {', '.join(ACTION_TYPES)}",
                         source, line)
    args = obj.get("args")
    if args is not None and not isinstance(args, dict):
        raise TraceError("action.args must be an object", source, line)
    read_only = obj.get("read_only")
    if read_only is not None and not isinstance(read_only, bool):
        raise TraceError(f"action.read_only must be true or false, got {type(read_only).__name__}",
                         source, line)
    value = obj.get("value")
    return Action(action_type, _optional_str(obj, "target", source, line),
                  None if value is None else str(value), args, read_only)


def parse_event(obj: dict | str | bytes, *, source: str = "<stream>", line: int | None = None,
                base_dir: Path | None = None, settings: Settings | None = None) -> Event:
    """Validate one event (a dict or its JSON text) and return it as an :class:`Event`.

    Raises
    ------
    TraceError
        For malformed JSON, missing or mistyped fields, unknown kinds, bad images.
    """
    settings = settings or Settings()
    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except RecursionError:
            raise TraceError(f"JSON nested deeper than {MAX_NESTING} levels", source,
                             line, TOO_DEEP) from None
        except ValueError as exc:  # bad JSON or UTF-8, a number of over 4,300 digits
            raise TraceError(f"not valid JSON ({exc})", source, line, MALFORMED_JSON) from None
    if not isinstance(obj, dict):
        raise TraceError("an event must be a JSON object", source, line)
    problem = json_problem(obj)
    if problem:
        raise TraceError(problem.message, source, line, problem.code)
    version = _require(obj, "v", int, source, line)
    if version != FORMAT_VERSION:
        raise TraceError(f"format version {version} is not supported (this reads version "
                         f"{FORMAT_VERSION})", source, line)
    run_id = _require(obj, "run_id", str, source, line)
    task = _require(obj, "task", str, source, line)
    if not run_id or not task:
        raise TraceError("run_id and task must not be empty", source, line)
    seq = _require(obj, "seq", int, source, line)
    if seq < 0:
        raise TraceError(f"seq must be 0 or more, got {seq}", source, line)
    ts = _require(obj, "ts", (int, float), source, line)
    if not (isinstance(ts, float) and math.isfinite(ts) or isinstance(ts, int)
            and abs(ts) < 2 ** 53):
        raise TraceError("ts must be a finite number of seconds", source, line)
    if ts > MAX_TS:
        raise TraceError(f"ts {ts} is after the year 5000: it must be Unix time in seconds, "
                         "not milliseconds", source, line)
    ts = float(ts)
    kind = _require(obj, "kind", str, source, line)
    meta = obj.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise TraceError("field 'meta' must be an object", source, line)
    common = dict(run_id=run_id, task=task, seq=seq, ts=ts, kind=kind, meta=meta, raw=obj)
    if kind == "state":
        observation = _parse_observation(obj.get("observation"), base_dir, settings, source, line) \
            if "observation" in obj else None
        if observation is None:
            raise TraceError("a state event needs an 'observation'", source, line)
        return Event(observation=observation, **common)
    if kind == "action":
        if "action" not in obj:
            raise TraceError("an action event needs an 'action'", source, line)
        return Event(action=_parse_action(obj["action"], source, line), **common)
    if kind == "end":
        outcome = _require(obj, "outcome", str, source, line)
        if outcome not in OUTCOMES:
            raise TraceError(f"outcome '{outcome}' is not one of {', '.join(OUTCOMES)}", source,
                             line)
        self_report = _optional_str(obj, "self_report", source, line)
        if self_report is not None and self_report not in SELF_REPORTS:
            raise TraceError(f"self_report '{self_report}' is not success or failure", source, line)
        return Event(outcome=outcome, self_report=self_report, **common)
    raise TraceError(f"kind '{kind}' is not one of {', '.join(EVENT_KINDS)}", source, line)


def run_of_events(objs: Iterable[dict], base_dir: Path | None = None,
                  source: str = "<stream>") -> Run:
    """A run from its events as JSON objects, in any order (e.g. gathered from a stream);
    raises :class:`TraceError` for an event that does not read."""
    events = sorted((parse_event(obj, source=source, base_dir=base_dir) for obj in objs),
                    key=lambda event: event.seq)
    if not events:
        raise TraceError("no events", source)
    return Run(events[0].run_id, events[0].task, events, source)


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
