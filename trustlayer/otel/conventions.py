"""What a span says about an agent's run, in either telemetry convention:

- OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name`` =
  ``invoke_agent``/``execute_tool``/``chat``; messages as JSON in
  ``gen_ai.input.messages``/``gen_ai.output.messages``, parts typed ``text``/``blob``);
- OpenInference (``openinference.span.kind`` = ``AGENT``/``TOOL``/``LLM``; messages
  flattened as ``llm.output_messages.0.message.content``).

Each span becomes a :class:`Step`: the run it belongs to, a tool call, an agent message
(text and any image), or nothing; the attributes a step did not use are kept."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from trustlayer.otel.otlp import Span

GENAI_OPERATION, OI_KIND = "gen_ai.operation.name", "openinference.span.kind"
RUN_KEYS = ("gen_ai.conversation.id", "session.id")  # which spans make one run


@dataclass
class Step:
    """One span read: `kind` is ``agent`` (the run's root), ``tool`` or ``message``."""

    kind: str
    span: Span
    tool: str | None = None
    arguments: str | None = None
    result: str | None = None
    text: str | None = None
    image: str | None = None  # a data: URI
    agent: str | None = None
    unused: dict[str, Any] = field(default_factory=dict)


def run_key(span: Span) -> str | None:
    """The conversation or session the span belongs to, if it says."""
    return next((str(span.attributes[k]) for k in RUN_KEYS if k in span.attributes), None)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _genai_parts(messages: Any, roles: tuple[str, ...]) -> tuple[str | None, str | None]:
    """Text and last image of the GenAI `messages` (JSON text or a list) of `roles`."""
    if isinstance(messages, str):
        try:
            messages = json.loads(messages)
        except ValueError:
            return messages, None
    texts, image = [], None
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("role") not in roles:
            continue
        for part in message.get("parts", []):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(str(part.get("content", "")))
            elif kind == "blob" and str(part.get("mime_type", "")).startswith("image/"):
                image = f"data:{part['mime_type']};base64,{part.get('content', '')}"
            elif kind == "uri" and str(part.get("uri", "")).startswith("data:image/"):
                image = part["uri"]
    return ("\n".join(texts) or None), image


def _genai(span: Span) -> Step | None:
    attrs = dict(span.attributes)
    operation = attrs.pop(GENAI_OPERATION, None)
    if operation == "invoke_agent":
        return Step("agent", span, agent=attrs.pop("gen_ai.agent.name", None), unused=attrs)
    if operation == "execute_tool":
        return Step("tool", span, tool=attrs.pop("gen_ai.tool.name", None) or span.name,
                    arguments=_text(attrs.pop("gen_ai.tool.call.arguments", None)),
                    result=_text(attrs.pop("gen_ai.tool.call.result", None)), unused=attrs)
    if operation in ("chat", "text_completion", "generate_content"):
        text, _ = _genai_parts(attrs.pop("gen_ai.output.messages", None), ("assistant",))
        _, image = _genai_parts(attrs.pop("gen_ai.input.messages", None), ("user", "tool"))
        return Step("message", span, text=text, image=image, unused=attrs)
    return None


def _indexed(attrs: dict[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """OpenInference's flattened lists: ``prefix.N.rest`` → ``{N: {rest: value}}``,
    taken out of `attrs`."""
    pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.(.+)")
    found: dict[int, dict[str, Any]] = {}
    for key in [k for k in attrs if k.startswith(prefix + ".")]:
        if match := pattern.fullmatch(key):
            found.setdefault(int(match[1]), {})[match[2]] = attrs.pop(key)
    return found


def _openinference(span: Span) -> Step | None:
    attrs = dict(span.attributes)
    kind = str(attrs.pop(OI_KIND, "")).upper()
    if kind == "AGENT":
        return Step("agent", span, agent=attrs.pop("agent.name", None), unused=attrs)
    if kind == "TOOL":
        return Step("tool", span, tool=attrs.pop("tool.name", None) or span.name,
                    arguments=_text(attrs.pop("input.value", None)),
                    result=_text(attrs.pop("output.value", None)), unused=attrs)
    if kind == "LLM":
        said = [m.get("message.content") for _, m in
                sorted(_indexed(attrs, "llm.output_messages").items())
                if m.get("message.role", "assistant") == "assistant"]
        images = [value for _, message in sorted(_indexed(attrs, "llm.input_messages").items())
                  for key, value in sorted(message.items())
                  if key.endswith("message_content.image.image.url")
                  and str(value).startswith("data:image/")]
        text = "\n".join(str(t) for t in said if t) or _text(attrs.pop("output.value", None))
        return Step("message", span, text=text or None, image=images[-1] if images else None,
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
