"""The messages of a model call, in each form telemetry carries them, as plain
:class:`Said` records (role, text, image):

- GenAI semantic conventions: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON,
  parts typed ``text``/``blob``/``uri``);
- their older forms: flattened ``gen_ai.prompt.N.role``/``.content`` and
  ``gen_ai.completion.N...`` attributes, and span events (``gen_ai.content.prompt`` /
  ``gen_ai.content.completion`` holding JSON lists; ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message``, ``gen_ai.choice``);
- OpenInference: ``llm.input_messages.N.message.role``/``.content``/``.contents.M...``.

The attributes read are taken out of the dict given, so the rest travels in ``meta``."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from trustlayer.otel.otlp import Span

ROLE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
               "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool",
               "gen_ai.choice": "assistant"}
OUTPUT_EVENTS = ("gen_ai.choice", "gen_ai.content.completion")


@dataclass(frozen=True)
class Said:
    """One message: who, its text (parts joined), its last image as a ``data:`` URI."""

    role: str
    text: str | None = None
    image: str | None = None


def _loaded(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def said(message: Any, role: str | None = None) -> Said | None:
    """A message in any of the forms (``parts``, ``content`` text or list), or None.

    >>> said({"role": "user", "parts": [{"type": "text", "content": "Hi"}]})
    Said(role='user', text='Hi', image=None)
    """
    message = _loaded(message)
    if not isinstance(message, dict):
        return None
    role = str(message.get("role") or role or "")
    parts = message.get("parts")
    content = message.get("content")
    if parts is None:
        parts = content if isinstance(content, list) else \
            [{"type": "text", "content": content}] if content is not None else []
    texts, image = [], None
    for part in parts if isinstance(parts, list) else []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            text = part.get("content", part.get("text"))
            texts.append(text if isinstance(text, str) else json.dumps(text))
        elif kind == "blob" and str(part.get("mime_type", "")).startswith("image/"):
            image = f"data:{part['mime_type']};base64,{part.get('content', '')}"
        elif kind == "uri" and str(part.get("uri", "")).startswith("data:image/"):
            image = part["uri"]
    return Said(role, "\n".join(texts) or None, image)


def _listed(value: Any) -> list[Said]:
    value = _loaded(value)
    if isinstance(value, str):  # plain text, as some older instrumentations wrote it
        return [Said("", value)]
    return [m for m in map(said, value if isinstance(value, list) else []) if m]


def indexed(attrs: dict[str, Any], prefix: str) -> dict[int, dict[str, Any]]:
    """Flattened lists: ``prefix.N.rest`` → ``{N: {rest: value}}``, taken out of `attrs`."""
    pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.(.+)")
    found: dict[int, dict[str, Any]] = {}
    for key in [k for k in attrs if k.startswith(prefix + ".")]:
        if match := pattern.fullmatch(key):
            found.setdefault(int(match[1]), {})[match[2]] = attrs.pop(key)
    return found


def _flattened(attrs: dict[str, Any], prefix: str) -> list[Said]:
    return [Said(str(m.get("role", "")), None if m.get("content") is None
                 else str(m["content"])) for _, m in sorted(indexed(attrs, prefix).items())]


def _from_events(span: Span, output: bool) -> list[Said]:
    found: list[Said] = []
    for event in span.events:
        if (event.name in OUTPUT_EVENTS) != output:
            continue
        if event.name in ("gen_ai.content.prompt", "gen_ai.content.completion"):
            # gen_ai.content.prompt holds gen_ai.prompt, gen_ai.content.completion
            # gen_ai.completion
            found += _listed(event.attributes.get(event.name.replace("content.", "")))
        elif event.name in ROLE_EVENTS:
            message = event.attributes.get("message", event.attributes)
            found += [m for m in [said(message, ROLE_EVENTS[event.name])] if m]
    return found


def genai_messages(span: Span, attrs: dict[str, Any], output: bool) -> list[Said]:
    """The input (or `output`) messages of a GenAI model-call span, in whichever form."""
    name = "gen_ai.output.messages" if output else "gen_ai.input.messages"
    if name in attrs:
        return _listed(attrs.pop(name))
    flattened = _flattened(attrs, "gen_ai.completion" if output else "gen_ai.prompt")
    return flattened or _from_events(span, output)


def openinference_messages(attrs: dict[str, Any], output: bool) -> list[Said]:
    """The input (or `output`) messages of an OpenInference LLM span."""
    found = []
    prefix = "llm.output_messages" if output else "llm.input_messages"
    for _, message in sorted(indexed(attrs, prefix).items()):
        images = [value for key, value in sorted(message.items())
                  if key.endswith("message_content.image.image.url")
                  and str(value).startswith("data:image/")]
        texts = [str(value) for key, value in sorted(message.items())
                 if key == "message.content" or key.endswith("message_content.text")]
        found.append(Said(str(message.get("message.role", "assistant" if output else "")),
                          "\n".join(texts) or None, images[-1] if images else None))
    return found


def new_turn(messages: list[Said]) -> tuple[str | None, str | None]:
    """What this call added to the conversation: the text of the user's messages after
    the last assistant message (a call's input repeats the whole history) and the last
    image of those user and tool messages.

    >>> new_turn([Said("user", "Hi"), Said("assistant", "Hello"), Said("user", "Cancel")])
    ('Cancel', None)
    """
    last = max((n for n, m in enumerate(messages) if m.role == "assistant"), default=-1)
    fresh = messages[last + 1:]
    texts = [m.text for m in fresh if m.role in ("user", "human") and m.text]
    images = [m.image for m in fresh if m.role in ("user", "human", "tool") and m.image]
    return "\n".join(texts) or None, images[-1] if images else None


def assistant_text(messages: list[Said]) -> str | None:
    """The text the assistant said in `messages` (output messages of unknown role count)."""
    texts = [m.text for m in messages if m.role in ("assistant", "") and m.text]
    return "\n".join(texts) or None
