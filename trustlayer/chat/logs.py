"""Find the conversations in chat log files: a JSON list of messages, a JSON object with
``messages`` (or tau-bench's ``traj``), a JSON list of such lists or objects, or JSON Lines
with one list or object per line. Every problem is a
:class:`~trustlayer.errors.TraceError` naming the file, and the line or the conversation."""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trustlayer.errors import MALFORMED_JSON, TraceError

MESSAGE_KEYS = ("messages", "traj")  # where an object holds its list (traj: tau-bench)
SUFFIXES = (".json", ".jsonl")


@dataclass(frozen=True)
class Conversation:
    """One message list and where it was found; `record` is the object that held it
    (empty for a bare list), for what it says beside the messages (``task_id``,
    ``reward``)."""

    messages: list[Any]
    source: str
    index: int  # its place in the file, from 0
    line: int | None  # its line in a JSON Lines file
    record: dict[str, Any]

    def error(self, problem: str, message: int | None = None) -> TraceError:
        """`problem` of `message` (an index) of this conversation, said where it is.

        >>> Conversation([], "log.json", 2, None, {}).error("no role", 5).args[0]
        'log.json: conversation 2, message 5: no role'
        """
        place = "" if self.line is not None else f"conversation {self.index}"
        said = "" if message is None else f"message {message}"
        where = ", ".join(part for part in (place, said) if part)
        return TraceError(f"{where}: {problem}" if where else problem, self.source, self.line)


def chat_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Expand files and folders into chat log files (``.json``, ``.jsonl``; folders sorted)."""
    for path in map(Path, paths):
        if path.is_dir():
            yield from sorted(p for p in path.iterdir() if p.suffix in SUFFIXES)
        elif path.exists():
            yield path
        else:
            raise TraceError("no such file or directory", str(path))


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and "role" in item


def _conversation(item: Any, source: str, index: int, line: int | None) -> Conversation:
    if isinstance(item, list):
        return Conversation(item, source, index, line, {})
    key = next((k for k in MESSAGE_KEYS if isinstance(item, dict) and k in item), None)
    if key is None or not isinstance(item[key], list):
        where = f"conversation {index}: " if line is None else ""
        raise TraceError(f"{where}expected a list of messages or an object with a "
                         f"'messages' list, got {type(item).__name__}", source, line)
    return Conversation(item[key], source, index, line, item)


def _parse(text: str, source: str, line: int | None) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise TraceError("JSON nested too deep", source, line, MALFORMED_JSON) from None
    except ValueError as exc:
        raise TraceError(f"not valid JSON ({str(exc)[:200]})", source, line,
                         MALFORMED_JSON) from None


def read_conversations(path: Path) -> list[Conversation]:
    """The conversations of the chat log file `path`, in file order."""
    source = str(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise TraceError("file is not UTF-8 text", source) from None
    if path.suffix == ".jsonl":
        lines = [(number, line) for number, line in enumerate(text.split("\n"), 1)
                 if line.strip()]
        found = [_conversation(_parse(line, source, number), source, index, number)
                 for index, (number, line) in enumerate(lines)]
    else:
        document = _parse(text, source, None)
        if isinstance(document, list) and (not document or _is_message(document[0])):
            found = [Conversation(document, source, 0, None, {})]
        elif isinstance(document, list):
            found = [_conversation(item, source, index, None)
                     for index, item in enumerate(document)]
        else:
            found = [_conversation(document, source, 0, None)]
    if not found or not any(c.messages for c in found):
        raise TraceError("no messages in file", source)
    return found
