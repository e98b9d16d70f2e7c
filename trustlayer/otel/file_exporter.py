"""An OpenTelemetry SDK span exporter that writes what the Collector's file exporter
writes: one OTLP/JSON ``ExportTraceServiceRequest`` per line (ids in hex, as the OTLP/JSON
encoding asks). For agents that export to a file rather than a collector, and for the
tests' fixtures (written by the real SDK). Needs the ``otel`` extra."""
from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from trustlayer.otel.otlp import hex_id

ID_FIELDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}


def _hex_ids(value: Any) -> Any:
    """`value` with the base64 ids protobuf's JSON gives turned into OTLP/JSON hex."""
    if isinstance(value, list):
        return [_hex_ids(item) for item in value]
    if isinstance(value, dict):
        return {key: hex_id(item, ID_FIELDS[key]) if key in ID_FIELDS and item
                else _hex_ids(item) for key, item in value.items()}
    return value


class OtlpJsonFileExporter(SpanExporter):
    """Appends each exported batch to `path` as one OTLP/JSON line."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        request = _hex_ids(MessageToDict(encode_spans(spans)))
        with self._lock, open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(request, separators=(",", ":")) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing is held open between batches."""
