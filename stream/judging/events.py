"""Reading one record of ``trustlayer.events`` safely.

:func:`decode_event` turns any ``(key, value)`` pair of bytes into an event or a
:class:`~stream.deadletter.Rejected` with a DLQ reason and a message naming the record
(topic, partition, offset); it never raises anything else, whatever the bytes (invalid
UTF-8, JSON nested 10,000 deep, a 400-digit ``ts``, ``NaN``, a list instead of an object).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from stream.deadletter import Rejected
from stream.models.attest import read_canonical
from trustlayer.errors import TraceError, cut
from trustlayer.model import Model
from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.json_fit import MAX_NESTING, few_brackets
from trustlayer.observe.trace_events import Event

#: Up to this many bytes, counting an event's brackets costs less than json_fit's walk of
#: its values; past it the walk costs less (a screenshot's data URI: many bytes, few values).
COUNTED_BYTES = 8192


class Models(Protocol):
    """Where the model of a task is found (a :class:`~stream.models.registry.ModelRegistry`)."""

    def latest(self, task: str) -> Model | None: ...


@dataclass
class Decoded:
    """A record that reads as an event: the event, its JSON object, its task's newest model
    and the object's canonical JSON (:func:`stream.models.attest.canonical`) when reading
    gave it (None: not yet made)."""

    event: Event
    obj: dict
    model: Model | None
    body: bytes | None = None


def load_json(value: bytes | None, where: str) -> Any:
    """`value` parsed as JSON; :class:`Rejected` for bytes that are not (RecursionError of
    deep nesting and ValueError of huge numbers included)."""
    try:
        return json.loads(value or b"")
    except RecursionError:
        raise Rejected("too_deep", f"{where}: JSON nested deeper than {MAX_NESTING} levels") \
            from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise Rejected("malformed_json", f"{where}: not valid JSON ({exc})") from None


def decode_event(key: bytes | None, value: bytes | None, where: str, models: Models,
                 images_dir: Any = None) -> Decoded:
    """The event of one ``trustlayer.events`` record (key ``run_id``); `where` names the
    record in messages. Raises :class:`Rejected` and nothing else for a bad record."""
    read = read_canonical(value) if value else None
    obj, body = read if read is not None else (load_json(value, where), None)
    # what orjson read has string keys and no lone surrogate: with few brackets, it is fit
    # without json_fit's walk of it (3 % of a worker's time)
    fit = read is not None and value is not None and len(value) <= COUNTED_BYTES \
        and few_brackets(value)
    if not isinstance(obj, dict):  # (parse_event would read a string as JSON text again)
        raise Rejected("wrong_schema", f"{where}: an event must be a JSON object, not "
                       f"{type(obj).__name__}")
    task = obj.get("task")
    model = models.latest(task) if isinstance(task, str) else None
    try:
        event = parse_event(obj, source=where, base_dir=images_dir,
                            settings=model.settings if model else None, fit=fit)
    except TraceError as exc:
        raise Rejected(exc.code, str(exc)) from None
    try:  # exactly: a replaced byte would let two keys of one run reach two partitions
        run_key = None if key is None else key.decode("utf-8")
    except UnicodeDecodeError:
        run_key = None
    if run_key != event.run_id:
        raise Rejected("wrong_key", f"{where}: record key {_short(run_key)} is not the event's "
                       f"run_id {_short(event.run_id)} (a run's events must share a partition)")
    return Decoded(event, obj, model, body)


def _short(text: str | None, limit: int = 200) -> str:
    """`text` quoted for a message, cut to about `limit` characters."""
    return repr(text) if text is None else cut(repr(text), limit)
