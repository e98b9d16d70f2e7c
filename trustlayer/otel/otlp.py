"""Read OTLP/JSON trace exports: the lines the OpenTelemetry Collector's file exporter
writes (one ``ExportTraceServiceRequest`` per line) or one such document, as flat
:class:`Span` records with plain attribute values. Trace and span ids are read as the
OTLP/JSON hex or as protobuf-JSON base64; every problem is a
:class:`~trustlayer.errors.TraceError` naming the file and line."""
from __future__ import annotations

import binascii
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustlayer.errors import TraceError
from trustlayer.observe.regular import NotReadable, read_regular
from trustlayer.strict_base64 import strict_b64decode

STATUS_ERROR = 2  # Status.code of a span that failed


@dataclass(frozen=True)
class SpanEvent:
    """An event recorded on a span (an ``exception``, an older GenAI message event)."""

    name: str
    attributes: dict[str, Any]


@dataclass(frozen=True)
class Span:
    """One span, its times in Unix seconds, its attributes as Python values."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: float
    end: float
    attributes: dict[str, Any]
    failed: bool = False
    source: str = "<otlp>"
    line: int | None = None
    resource: dict[str, Any] = field(default_factory=dict)
    status_message: str | None = None  # the status description, of a failed span mostly
    events: tuple[SpanEvent, ...] = ()


def any_value(value: dict[str, Any]) -> Any:
    """The Python value of an OTLP ``AnyValue``.

    >>> any_value({"arrayValue": {"values": [{"intValue": "3"}, {"stringValue": "a"}]}})
    [3, 'a']
    >>> any_value({"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": True}}]}})
    {'k': True}
    """
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])  # int64 travels as a JSON string
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [any_value(item) for item in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return attributes(value["kvlistValue"].get("values", []))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes(pairs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """``[{"key": k, "value": AnyValue}]`` as a dict."""
    return {pair["key"]: any_value(pair.get("value", {})) for pair in pairs}


def hex_id(text: str, size: int) -> str:
    """A trace (16 bytes) or span (8 bytes) id as lowercase hex, from hex or base64.

    >>> hex_id("AAECAwQFBgc=", 8), hex_id("0001020304050607", 8)
    ('0001020304050607', '0001020304050607')
    """
    if len(text) == 2 * size:
        int(text, 16)  # a ValueError for a malformed id
        return text.lower()
    try:
        raw = strict_b64decode(text)
    except binascii.Error:
        raise ValueError(f"id '{text[:40]}' is neither hex nor base64") from None
    if len(raw) != size:
        raise ValueError(f"id '{text[:40]}' is not {size} bytes")
    return raw.hex()


def _span(obj: dict[str, Any], resource: dict[str, Any], source: str, line: int) -> Span:
    parent = obj.get("parentSpanId") or None
    status = obj.get("status") or {}
    return Span(trace_id=hex_id(obj["traceId"], 16), span_id=hex_id(obj["spanId"], 8),
                parent_id=hex_id(parent, 8) if parent else None, name=obj.get("name", ""),
                start=int(obj["startTimeUnixNano"]) / 1e9,
                end=int(obj.get("endTimeUnixNano") or obj["startTimeUnixNano"]) / 1e9,
                attributes=attributes(obj.get("attributes", [])),
                failed=status.get("code") in (STATUS_ERROR, "STATUS_CODE_ERROR"),
                source=source, line=line, resource=resource,
                status_message=str(status["message"]) if status.get("message") else None,
                events=tuple(SpanEvent(str(event.get("name", "")),
                                       attributes(event.get("attributes", [])))
                             for event in obj.get("events", [])))


def spans_of_request(request: Any, source: str, line: int) -> Iterator[Span]:
    """The spans of one ``ExportTraceServiceRequest`` in OTLP/JSON."""
    if not isinstance(request, dict) or "resourceSpans" not in request:
        raise TraceError("not an OTLP/JSON trace export (no 'resourceSpans')", source, line)
    try:
        for resource_spans in request["resourceSpans"]:
            resource = attributes(resource_spans.get("resource", {}).get("attributes", []))
            for scope_spans in resource_spans.get("scopeSpans", []):
                for obj in scope_spans.get("spans", []):
                    yield _span(obj, resource, source, line)
    except RecursionError:  # an attribute value nested past what a walk can hold
        raise TraceError("OTLP attribute nested too deeply", source, line) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        raise TraceError(f"malformed OTLP span ({what})", source, line) from None


def read_spans(path: Path) -> list[Span]:
    """Every span of an OTLP/JSON file: JSON Lines of export requests, or one document."""
    source = str(path)
    try:  # as validate reads a trace: a FIFO or a device is refused, never waited on
        text = read_regular(path).decode("utf-8")
    except NotReadable as exc:
        raise TraceError(f"cannot be read as spans: {exc}", source) from None
    except UnicodeDecodeError:
        raise TraceError("file is not UTF-8 text", source) from None
    try:
        documents = [(1, json.loads(text))]
    except RecursionError:
        raise TraceError("JSON nested too deeply", source) from None
    except ValueError:  # JSON Lines: one request per line
        documents = []
        for number, line_text in enumerate(text.split("\n"), start=1):
            if line_text.strip():
                try:
                    documents.append((number, json.loads(line_text)))
                except ValueError as exc:
                    raise TraceError(f"not valid JSON ({exc})", source, number) from None
                except RecursionError:
                    raise TraceError("JSON nested too deeply", source, number) from None
    return [span for number, document in documents
            for span in spans_of_request(document, source, number)]


def otlp_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Files given, and the ``*.json``/``*.jsonl`` files of directories given (sorted)."""
    for path in map(Path, paths):
        if path.is_dir():
            yield from sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl")
                              and not p.is_dir())
        elif path.exists():
            yield path  # (read_spans refuses what is not a regular file)
        else:
            raise TraceError("no such file or directory", str(path))
