"""Chat-completions message lists into runs of the trace format, conversation convention:
the system prompt is no event; a user message is a ``state`` (its text); an assistant's
content a ``message`` action to ``user``; each of its ``tool_calls`` a ``tool`` action
(target the function, args its parsed arguments, value the first text argument) whose
``tool`` message (by ``tool_call_id``) is the ``state`` after it. Logs carry no times:
event n is stamped n seconds, as only the order counts."""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from trustlayer.chat.logs import Conversation, chat_files, read_conversations
from trustlayer.errors import TraceError
from trustlayer.observe.trace_events import OUTCOMES
from trustlayer.runner.conversions import file_safe, tool_call
from trustlayer.runner.events import EventBuilder

SKIPPED_ROLES = ("system", "developer")  # instructions to the agent, not the run
ROLES = (*SKIPPED_ROLES, "user", "assistant", "tool")


def read_only_of(tool: str, patterns: Sequence[str] | None) -> bool | None:
    """Whether `tool` only reads, by the fnmatch `patterns` of the tools that do; None
    (unknown) without patterns.

    >>> read_only_of("get_user", ["get_*", "search_*"]), read_only_of("book", ["get_*"])
    (True, False)
    """
    return None if patterns is None else any(fnmatchcase(tool, p) for p in patterns)


def content_text(content: Any) -> str | None:
    """The text of a message's `content`: a string, or the text of its list of parts
    (other parts, such as images, are left out).

    >>> content_text([{"type": "text", "text": "Hi"}, {"type": "image_url"}, "there"])
    'Hi\\nthere'
    """
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ValueError(f"content must be a string or a list of parts, got "
                         f"{type(content).__name__}")
    texts = [part if isinstance(part, str) else part.get("text") for part in content
             if isinstance(part, str) or isinstance(part, dict) and part.get("type") == "text"]
    return "\n".join(str(text) for text in texts if text is not None)


class _Replay:
    """The events of one conversation, message by message; remembers the tool calls
    made so that each tool message answers one."""

    def __init__(self, events: EventBuilder, read_only: Sequence[str] | None):
        self.events, self.read_only = events, read_only
        self.calls: set[str] = set()  # the ids of the tool calls made so far

    def _ts(self) -> float:
        return float(self.events.seq)

    def message(self, message: Any) -> list[dict[str, Any]]:
        if not isinstance(message, dict):
            raise ValueError(f"a message must be an object, got {type(message).__name__}")
        role = message.get("role")
        if role not in ROLES:
            raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
        text = content_text(message.get("content"))
        if role == "user":
            return [self.events.state(text=text, ts=self._ts())] if text else []
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id is not None and str(call_id) not in self.calls:
                raise ValueError(f"tool_call_id {call_id!r} answers no earlier tool call")
            return [self.events.state(text=text or "", ts=self._ts())]
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list):
                raise ValueError("tool_calls must be a list")
            said = [self.events.message(text, ts=self._ts())] if text else []
            return said + [self._call(call) for call in calls]
        return []

    def _call(self, call: Any) -> dict[str, Any]:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) \
                or not function["name"]:
            raise ValueError("a tool call needs function.name")
        name, arguments = function["name"], function.get("arguments")
        if isinstance(arguments, dict):  # some logs keep them parsed
            arguments = json.dumps(arguments)
        if arguments is not None and not isinstance(arguments, str):
            raise ValueError("function.arguments must be a JSON string")
        value, args = tool_call(arguments)
        if call.get("id") is not None:
            self.calls.add(str(call["id"]))
        return self.events.action("tool", name, value, args,
                                  read_only=read_only_of(name, self.read_only), ts=self._ts())


def _outcome(conversation: Conversation, default: str) -> str:
    """tau-bench's ``reward`` (1: success, less: failure), else `default`."""
    reward = conversation.record.get("reward")
    if isinstance(reward, (int, float)) and not isinstance(reward, bool):
        return "success" if reward >= 1 else "failure"
    return default


def conversation_events(conversation: Conversation, run_id: str, task: str,
                        read_only: Sequence[str] | None = None,
                        outcome: str = "unknown") -> list[dict[str, Any]]:
    """The validated events of `conversation` (ending with an ``end`` event)."""
    replay = _Replay(EventBuilder(run_id, task), read_only)
    out: list[dict[str, Any]] = []
    for number, message in enumerate(conversation.messages):
        try:
            out += replay.message(message)
        except (ValueError, TraceError) as exc:  # said at the message it came from
            text = exc.message if isinstance(exc, TraceError) else str(exc)
            raise conversation.error(text, number) from None
    if not out:
        raise conversation.error("no user, assistant or tool message to make a run of")
    return out + [replay.events.end(_outcome(conversation, outcome), ts=float(len(out)))]


def convert(paths: Iterable[str | Path], task: str | None = None,
            read_only: Sequence[str] | None = None,
            outcome: str = "unknown") -> dict[str, list[dict[str, Any]]]:
    """The runs of the chat logs under `paths`, as validated events by run id
    (``STEM-INDEX``, or ``STEM`` for a file of one conversation). `task` names the task
    (default: the file's stem; a record's ``task_id`` is added to it)."""
    if outcome not in OUTCOMES:
        raise ValueError(f"outcome {outcome!r} is not one of {', '.join(OUTCOMES)}")
    paths = list(paths)
    runs: dict[str, list[dict[str, Any]]] = {}
    files = list(chat_files(paths))
    if not files:
        raise TraceError("no .json or .jsonl chat logs", ", ".join(map(str, paths)))
    for path in files:
        conversations = read_conversations(path)
        for conversation in conversations:
            key = path.stem if len(conversations) == 1 else f"{path.stem}-{conversation.index}"
            run_id = file_safe(key)
            if run_id in runs:
                raise TraceError(f"run id '{run_id}' is made by another file too (rename "
                                 "one)", str(path))
            name = task or path.stem
            if "task_id" in conversation.record:
                name = f"{name}-{conversation.record['task_id']}"
            runs[run_id] = conversation_events(conversation, run_id, name, read_only, outcome)
    return runs
