"""``observation.network``: the HTTP responses a page received since the previous state."""
from __future__ import annotations

from typing import Any, NamedTuple

from trustlayer.errors import TraceError


class Response(NamedTuple):
    """One HTTP response the page received since the previous state (``network``)."""

    method: str
    path: str
    status: int
    type: str


def parse_network(value: Any, source: str, line: int | None) -> tuple[Response, ...]:
    """``observation.network``: a list of ``{method, path, status, type}`` (None: none)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TraceError("observation.network must be a list of responses", source, line)
    responses = []
    for number, entry in enumerate(value):
        where = f"observation.network[{number}]"
        if not isinstance(entry, dict):
            raise TraceError(f"{where} must be an object {{method, path, status, type}}",
                             source, line)
        status = entry.get("status")
        if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
            raise TraceError(f"{where}.status must be an HTTP status (100-599)", source, line)
        texts = [entry.get(name, "") for name in ("method", "path", "type")]
        if not all(isinstance(text, str) for text in texts):
            raise TraceError(f"{where}: method, path and type must be strings", source, line)
        responses.append(Response(texts[0], texts[1], status, texts[2]))
    return tuple(responses)
