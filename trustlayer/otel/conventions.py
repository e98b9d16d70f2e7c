"""What a span says about an agent's run, in either telemetry convention:

- OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name`` =
  ``invoke_agent``/``execute_tool``/``chat``; messages read by :mod:`.messages`);
- OpenInference (``openinference.span.kind`` = ``AGENT``/``TOOL``/``LLM``).

Each span becomes a :class:`Step`: the run it belongs to, a tool call (with its read-only
hint and its error, if the span failed or recorded an exception), a model call (the user's
new message and what the assistant said), or nothing; the attributes a step did not use
are kept."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from trustlayer.otel.messages import (
    assistant_text,
    genai_messages,
    new_turn,
    openinference_messages,
)
from trustlayer.otel.otlp import Span

GENAI_OPERATION, OI_KIND = "gen_ai.operation.name", "openinference.span.kind"
# a tool's read-only hint (MCP's readOnlyHint) where a runner records it on the tool span
READ_ONLY, OI_READ_ONLY = "gen_ai.tool.read_only", "tool.read_only"
AGENT_VERSION, SERVICE_VERSION = "gen_ai.agent.version", "service.version"
RUN_KEYS = ("gen_ai.conversation.id", "session.id")  # which spans make one run


@dataclass
class Step:
    """One span read: `kind` is ``agent`` (the run's root), ``tool`` or ``message`` (a
    model call: `heard` the user's new text, `said` the assistant's)."""

    kind: str
    span: Span
    tool: str | None = None
    arguments: str | None = None
    result: str | None = None
    read_only: bool | None = None
    error: str | None = None
    heard: str | None = None
    said: str | None = None
    image: str | None = None  # a data: URI
    agent: str | None = None
    version: str | None = None
    unused: dict[str, Any] = field(default_factory=dict)


def run_key(span: Span) -> str | None:
    """The conversation or session the span belongs to, if it says."""
    return next((str(span.attributes[k]) for k in RUN_KEYS if k in span.attributes), None)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _read_only(value: Any) -> bool | None:
    """A read-only hint as telemetry carries it (a boolean, or its text)."""
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}.get(str(value).lower()) if value is not None else None


def span_error(span: Span) -> str | None:
    """The failure a span recorded, one ``error: ...`` line per exception event or else
    for its ERROR status (its description), or None when it did not fail."""
    lines = []
    for event in span.events:
        if event.name == "exception":
            kind, said = (event.attributes.get(f"exception.{k}") for k in ("type", "message"))
            lines.append("error: " + ": ".join(str(p) for p in (kind, said) if p))
    if span.failed and not lines:
        lines.append(f"error: {span.status_message}" if span.status_message else "error")
    return "\n".join(lines) or None


def _tool(span: Span, attrs: dict[str, Any], name: str, arguments: str, result: str,
          read_only: str) -> Step:
    return Step("tool", span, tool=attrs.pop(name, None) or span.name,
                arguments=_text(attrs.pop(arguments, None)),
                result=_text(attrs.pop(result, None)),
                read_only=_read_only(attrs.pop(read_only, None)), error=span_error(span),
                unused=attrs)


def _agent(span: Span, attrs: dict[str, Any], name: str) -> Step:
    version = attrs.pop(AGENT_VERSION, None)
    return Step("agent", span, agent=attrs.pop(name, None),
                version=None if version is None else str(version), unused=attrs)


def _genai(span: Span) -> Step | None:
    attrs = dict(span.attributes)
    operation = attrs.pop(GENAI_OPERATION, None)
    if operation == "invoke_agent":
        return _agent(span, attrs, "gen_ai.agent.name")
    if operation == "execute_tool":
        return _tool(span, attrs, "gen_ai.tool.name", "gen_ai.tool.call.arguments",
                     "gen_ai.tool.call.result", READ_ONLY)
    if operation in ("chat", "text_completion", "generate_content"):
        heard, image = new_turn(genai_messages(span, attrs, output=False))
        said = assistant_text(genai_messages(span, attrs, output=True))
        return Step("message", span, heard=heard, said=said, image=image, unused=attrs)
    return None


def _openinference(span: Span) -> Step | None:
    attrs = dict(span.attributes)
    kind = str(attrs.pop(OI_KIND, "")).upper()
    if kind == "AGENT":
        return _agent(span, attrs, "agent.name")
    if kind == "TOOL":
        return _tool(span, attrs, "tool.name", "input.value", "output.value", OI_READ_ONLY)
    if kind == "LLM":
        heard, image = new_turn(openinference_messages(attrs, output=False))
        said = assistant_text(openinference_messages(attrs, output=True)) or \
            _text(attrs.pop("output.value", None))
        return Step("message", span, heard=heard, said=said or None, image=image,
                    unused=attrs)
    return None


def step_of(span: Span) -> Step | None:
    """The step `span` records, or None for a span of neither convention's kinds."""
    if GENAI_OPERATION in span.attributes:
        step = _genai(span)
    elif OI_KIND in span.attributes:
        step = _openinference(span)
    else:
        return None
    if step is not None:  # the run id says it already
        step.unused = {k: v for k, v in step.unused.items() if k not in RUN_KEYS}
    return step
