"""W3C trace context (``traceparent``) on a run: a runner that names the trace its agent
ran in (``meta.traceparent`` on its events, e.g. ``Run(task, sink, meta={"traceparent":
new_traceparent()})``, or the header OpenTelemetry's propagator writes) gets its verdict
linked to that trace, as runs imported from OpenTelemetry are."""
from __future__ import annotations

import re
import secrets

from trustlayer.observe.trace_events import Run

TRACEPARENT = "traceparent"
# version 00: 32 hex digits of trace id, 16 of parent span id, 2 of flags (all-zero ids invalid)
_FORMAT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


def new_traceparent() -> str:
    """A fresh ``traceparent`` (random ids, sampled).

    >>> parse_traceparent(new_traceparent()) is not None
    True
    """
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


def parse_traceparent(value: object) -> tuple[str, str] | None:
    """(trace id, span id) of a W3C ``traceparent`` value, or None if it is not one.

    >>> parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    ('4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7')
    >>> parse_traceparent("00-" + "0" * 32 + "-00f067aa0ba902b7-01") is None
    True
    """
    found = _FORMAT.match(value.strip().lower()) if isinstance(value, str) else None
    if found is None or not int(found[1], 16) or not int(found[2], 16):
        return None
    return found[1], found[2]


def run_trace(run: Run) -> tuple[str, str] | None:
    """(trace id, span id) of the first ``meta.traceparent`` of `run`'s events, or None."""
    for event in run.events:
        link = parse_traceparent((event.meta or {}).get(TRACEPARENT))
        if link is not None:
            return link
    return None
