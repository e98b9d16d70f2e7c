"""Final verdicts out as OpenTelemetry ``gen_ai.evaluation.result`` events (GenAI
semantic conventions): evaluation name ``trustlayer.verdict``, score label ``pass`` or
``fail``, score value the coverage, explanation the reason; the event carries the run's
conversation id and, for a run imported from OpenTelemetry, its trace (so an
observability tool shows the verdict on the agent's own trace). Off unless asked for
(``trustlayer validate --otel-verdicts URL``); needs the ``otel`` extra."""
from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from trustlayer.observe.trace_events import Run

EVENT_NAME = "gen_ai.evaluation.result"
EVALUATION_NAME = "trustlayer.verdict"


def verdict_attributes(record: Mapping[str, Any]) -> dict[str, Any]:
    """The event's attributes for one verdict record (``validate --format json``).

    >>> attributes = verdict_attributes({"run_id": "r1", "task": "t", "verdict": "fail",
    ...     "coverage": 0.5, "reason": "never saved", "cause": "agent_error"})
    >>> attributes["gen_ai.evaluation.score.label"]
    'fail'
    """
    attributes = {"gen_ai.evaluation.name": EVALUATION_NAME,
                  "gen_ai.evaluation.score.label": record["verdict"],
                  "gen_ai.evaluation.score.value": float(record["coverage"]),
                  "gen_ai.evaluation.explanation": record.get("reason") or "",
                  "gen_ai.conversation.id": record["run_id"],
                  "trustlayer.task": record.get("task") or "",
                  "trustlayer.cause": record.get("cause") or ""}
    return {key: value for key, value in attributes.items() if value != ""}


def trace_link(run: Run) -> tuple[str, str] | None:
    """(trace id, span id) of the agent span a run was imported from (``meta.otel`` of its
    end event, see :mod:`trustlayer.otel.convert`), or None."""
    for event in reversed(run.events):
        otel = (event.meta or {}).get("otel")
        if isinstance(otel, dict) and otel.get("trace_id") and otel.get("span_id"):
            return str(otel["trace_id"]), str(otel["span_id"])
    return None


def _context(link: tuple[str, str] | None) -> Context | None:
    if link is None:
        return None
    span = SpanContext(int(link[0], 16), int(link[1], 16), is_remote=True,
                       trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return set_span_in_context(NonRecordingSpan(span))


class VerdictExporter:
    """Emits verdict events through `provider` (an SDK LoggerProvider; by default one
    that sends OTLP/HTTP to `endpoint`, e.g. ``http://collector:4318/v1/logs``)."""

    def __init__(self, provider: LoggerProvider | None = None, endpoint: str | None = None):
        if provider is None:
            from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
            provider = LoggerProvider(resource=Resource.create({"service.name": "trustlayer"}))
            provider.add_log_record_processor(BatchLogRecordProcessor(
                OTLPLogExporter(endpoint=endpoint)))
        self.provider = provider
        self.logger = provider.get_logger("trustlayer")

    def emit(self, record: Mapping[str, Any], link: tuple[str, str] | None = None) -> None:
        """One verdict event (only final verdicts are worth one: the caller's filter)."""
        self.logger.emit(event_name=EVENT_NAME, attributes=verdict_attributes(record),
                         context=_context(link), timestamp=time.time_ns())

    def close(self) -> None:
        """Send what is buffered and stop."""
        self.provider.shutdown()


def export_verdicts(records: Iterable[Mapping[str, Any]], runs: Iterable[Run],
                    endpoint: str) -> int:
    """Send one event per verdict record to the OTLP/HTTP `endpoint`, each linked to the
    trace its run came from; returns how many were sent."""
    links = {run.run_id: trace_link(run) for run in runs}
    exporter = VerdictExporter(endpoint=endpoint)
    sent = 0
    try:
        for record in records:
            exporter.emit(record, links.get(record["run_id"]))
            sent += 1
    finally:
        exporter.close()
    return sent
