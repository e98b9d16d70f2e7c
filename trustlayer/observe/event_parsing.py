"""Events of a trace read from JSON, every field checked: a problem is a
:class:`~trustlayer.errors.TraceError` naming the source and line, never a traceback.
Screenshots are read by :mod:`trustlayer.observe.images`."""
from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trustlayer.errors import BAD_IMAGE, MALFORMED_JSON, TOO_DEEP, TraceError
from trustlayer.observe.images import load_image, parse_screenshot_print
from trustlayer.observe.json_fit import MAX_NESTING, json_problem
from trustlayer.observe.network import parse_network
from trustlayer.observe.trace_events import (
    ACTION_TYPES,
    EVENT_KINDS,
    FORMAT_VERSION,
    OUTCOMES,
    SELF_REPORTS,
    Action,
    Event,
    Observation,
    Run,
    as_given,
)
from trustlayer.settings import Settings

#: The largest ts taken (in the year 5138): a ts in milliseconds is a thousand times more,
#: and read as seconds it made the stream's deadlines fail runs the validator passed.
MAX_TS = 1e11
OBSERVATION_CONTENT = ("screenshot", "screenshot_fingerprint", "text", "a11y", "files")


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
    return as_given(
        Observation,
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
    return as_given(Action, type=action_type, target=_optional_str(obj, "target", source, line),
                    value=None if value is None else str(value), args=args, read_only=read_only)


def parse_event(obj: dict | str | bytes, *, source: str = "<stream>", line: int | None = None,
                base_dir: Path | None = None, settings: Settings | None = None,
                fit: bool = False) -> Event:
    """Validate one event (a dict or its JSON text) and return it as an :class:`Event`;
    `fit`: the dict is known to be within the limits of :mod:`.json_fit` (its reader
    checked them).

    Raises
    ------
    TraceError
        For malformed JSON, missing or mistyped fields, unknown kinds, bad images.
    """
    obj = obj if fit and isinstance(obj, dict) else _decoded(obj, source, line)
    common = _header(obj, source, line)
    kind = common["kind"]
    if kind not in EVENT_KINDS:
        raise TraceError(f"kind '{kind}' is not one of {', '.join(EVENT_KINDS)}", source, line)
    if kind == "state":
        common["observation"] = _state_observation(obj, base_dir, settings or Settings(),
                                                   source, line)
    elif kind == "action":
        if "action" not in obj:
            raise TraceError("an action event needs an 'action'", source, line)
        common["action"] = _parse_action(obj["action"], source, line)
    else:
        common["outcome"], common["self_report"] = _ending(obj, source, line)
    return as_given(Event, **common)


def _decoded(obj: dict | str | bytes, source: str, line: int | None) -> dict:
    """The event as a JSON object within the limits of :mod:`.json_fit`."""
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
    return obj


def _header(obj: dict, source: str, line: int | None) -> dict[str, Any]:
    """The fields every event has, checked, and its parts (None until read): the fields of
    its :class:`Event`."""
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
    ts = _timestamp(obj, source, line)
    kind = _require(obj, "kind", str, source, line)
    meta = obj.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise TraceError("field 'meta' must be an object", source, line)
    return dict(run_id=run_id, task=task, seq=seq, ts=ts, kind=kind, observation=None,
                action=None, outcome=None, self_report=None, meta=meta, raw=obj)


def _timestamp(obj: dict, source: str, line: int | None) -> float:
    ts = _require(obj, "ts", (int, float), source, line)
    if not (isinstance(ts, float) and math.isfinite(ts) or isinstance(ts, int)
            and abs(ts) < 2 ** 53):
        raise TraceError("ts must be a finite number of seconds", source, line)
    if ts > MAX_TS:
        raise TraceError(f"ts {ts} is after the year 5000: it must be Unix time in seconds, "
                         "not milliseconds", source, line)
    return float(ts)


def _state_observation(obj: dict, base_dir: Path | None, settings: Settings, source: str,
                       line: int | None) -> Observation:
    if "observation" not in obj:
        raise TraceError("a state event needs an 'observation'", source, line)
    return _parse_observation(obj["observation"], base_dir, settings, source, line)


def _ending(obj: dict, source: str, line: int | None) -> tuple[str, str | None]:
    """An end event's outcome and self-report, checked."""
    outcome = _require(obj, "outcome", str, source, line)
    if outcome not in OUTCOMES:
        raise TraceError(f"outcome '{outcome}' is not one of {', '.join(OUTCOMES)}", source,
                         line)
    self_report = _optional_str(obj, "self_report", source, line)
    if self_report is not None and self_report not in SELF_REPORTS:
        raise TraceError(f"self_report '{self_report}' is not success or failure", source, line)
    return outcome, self_report


def run_of_events(objs: Iterable[dict], base_dir: Path | None = None,
                  source: str = "<stream>") -> Run:
    """A run from its events as JSON objects, in any order (e.g. gathered from a stream);
    raises :class:`TraceError` for an event that does not read."""
    events = sorted((parse_event(obj, source=source, base_dir=base_dir) for obj in objs),
                    key=lambda event: event.seq)
    if not events:
        raise TraceError("no events", source)
    return Run(events[0].run_id, events[0].task, events, source)
