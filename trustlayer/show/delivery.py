"""Whether verdicts sent to an OpenTelemetry endpoint got there (``validate
--otel-verdicts URL``): the URL checked before anything is judged, and the export's own
errors collected, so that verdicts that could not be delivered make the command fail
instead of a log line going by. The OpenTelemetry SDK reports a batch it gave up on only
in its log, at ERROR, from its exporters' loggers; that is what is collected. A run of
the runner library that carries a W3C ``traceparent`` is linked to that trace."""
from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from trustlayer.errors import UsageError
from trustlayer.observe.trace_context import run_trace
from trustlayer.observe.trace_events import Run

EXPORTER_LOGGER = "opentelemetry.exporter"


def check_endpoint(url: str, option: str = "--otel-verdicts") -> None:
    """Raise :class:`UsageError` unless `url` is an http(s) URL with a host.

    >>> check_endpoint("http://collector:4318/v1/logs")
    >>> try:
    ...     check_endpoint("collector:4318")
    ... except UsageError as error:
    ...     print(error)
    --otel-verdicts collector:4318: not an http(s) URL with a host (e.g. http://collector:4318/v1/logs)
    """
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:  # a port that is no number
        port_ok = False
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise UsageError(f"{option} {url}: not an http(s) URL with a host (e.g. "
                         "http://collector:4318/v1/logs)")


class _Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def export_errors() -> Iterator[list[str]]:
    """The errors the OpenTelemetry exporters log inside the block (empty: delivered)."""
    collected = _Collected()
    logger = logging.getLogger(EXPORTER_LOGGER)
    logger.addHandler(collected)
    try:
        yield collected.messages
    finally:
        logger.removeHandler(collected)


def send_verdicts(records: Sequence[Mapping[str, Any]], runs: Sequence[Run],
                  endpoint: str) -> bool:
    """Send the verdicts to the OTLP/HTTP `endpoint`; False (and why, on standard error)
    when they could not all be delivered."""
    from trustlayer.otel.verdicts import export_verdicts  # the otel extra, only when asked
    with export_errors() as errors:
        export_verdicts(records, [_linked(run) for run in runs], endpoint)
    if errors:
        print(f"trustlayer validate: error: verdicts not delivered to {endpoint} "
              f"({errors[-1]})", file=sys.stderr)
    return not errors


def _linked(run: Run) -> Run:
    """`run` with its ``meta.traceparent`` (a runner's W3C trace context) given as the link
    the exporter reads (``meta.otel`` of its last event), unless it has one of its own
    (imported from OpenTelemetry)."""
    link = run_trace(run)
    if link is None or not run.events or any("otel" in (e.meta or {}) for e in run.events):
        return run
    last = run.events[-1]
    meta = {**(last.meta or {}), "otel": {"trace_id": link[0], "span_id": link[1]}}
    return replace(run, events=[*run.events[:-1], replace(last, meta=meta)])
